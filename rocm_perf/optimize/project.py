"""A project: a source tree with its own build, as `optimize --project`, `profile --project` and
sweep project targets take it.

The user's tree is only ever read. Its files (those `git` would track or offer to add: what its
`.gitignore` files do not exclude) are copied into the run; the user's build command runs in a
copy; the user's run command, started in the built copy, makes the timed process(es). A
candidate is a copy of the baseline's tree with one file changed. On the host backend the build
and the runs see the hipcc-compatible wrapper (backends/host_toolchain.py), so ordinary make and
CMake projects build for the CPU unmodified.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError

DEFAULT_MAX_FILES = 5000
KERNEL_SUFFIXES = (".cu", ".hip")
_GLOBAL = re.compile(r"\b__global__\b")


@dataclass
class Project:
    """What `--project DIR --build CMD --run CMD [--source REL ...]` name."""

    root: Path
    build: str
    run: str
    sources: list[str] = field(default_factory=list)  # relative to root; empty: every kernel source

    def recorded(self) -> dict:
        return {"root": str(Path(self.root).resolve()), "build": self.build, "run": self.run, "sources": list(self.sources)}


# ---- which files: .gitignore respected --------------------------------------------------------


def _git_files(root: Path) -> list[str] | None:
    """Files git tracks or would add under `root` (relative to it), or None outside a git work tree."""
    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                                text=True, timeout=60)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                                 "--", "."], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    names = [n.decode("utf-8", errors="surrogateescape") for n in listed.stdout.split(b"\0") if n]
    # ls-files lists a deleted-but-tracked file too: only files that exist are copied.
    return sorted(n for n in names if (root / n).is_file() and not (root / n).is_symlink())


@dataclass
class _IgnoreRule:
    base: str  # the directory of the .gitignore, relative to the root ('' for the root)
    regex: re.Pattern
    negate: bool
    directory_only: bool


def _glob_regex(pattern: str) -> str:
    """gitignore glob -> regex over a relative path ('/'-separated)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
        elif c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _read_ignore_rules(gitignore: Path, base: str) -> list[_IgnoreRule]:
    rules = []
    try:
        lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return rules
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        body = _glob_regex(line)
        regex = re.compile(body if anchored else f"(?:.*/)?{body}")
        rules.append(_IgnoreRule(base, regex, negate, directory_only))
    return rules


def _ignored(rules: list[_IgnoreRule], rel: str, is_dir: bool) -> bool:
    """gitignore's verdict: the last rule that matches decides."""
    verdict = False
    for rule in rules:
        if rule.directory_only and not is_dir:
            continue
        if rule.base:
            if not rel.startswith(rule.base + "/"):
                continue
            local = rel[len(rule.base) + 1 :]
        else:
            local = rel
        if rule.regex.fullmatch(local):
            verdict = not rule.negate
    return verdict


def _walk_files(root: Path, limit: int) -> list[str]:
    """Files under `root` that its .gitignore files do not exclude (outside git: our own reading)."""
    files: list[str] = []
    rules: list[_IgnoreRule] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            rules += _read_ignore_rules(Path(dirpath) / ".gitignore", rel_dir)
        kept = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d == ".git" or os.path.islink(os.path.join(dirpath, d)) or _ignored(rules, rel, True):
                continue
            kept.append(d)
        dirnames[:] = kept
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            full = os.path.join(dirpath, f)
            if os.path.islink(full) or not os.path.isfile(full) or _ignored(rules, rel, False):
                continue
            files.append(rel)
            if len(files) > limit:
                return files  # enough to know it is too many
    return sorted(files)


def project_files(root: Path, max_files: int = DEFAULT_MAX_FILES) -> list[str]:
    """The files of the project tree to copy (relative paths), .gitignore respected.

    RocmPerfError (one line) when the directory is missing or holds more than `max_files`."""
    root = Path(root)
    if not root.is_dir():
        raise RocmPerfError(f"{root}: no such project directory")
    files = _git_files(root)
    counted = "" if files is None else str(len(files))
    if files is None:
        files = _walk_files(root, max_files)  # stops counting past the limit
    if len(files) > max_files:
        how_many = counted or f"more than {max_files}"
        raise RocmPerfError(
            f"{root}: the project has {how_many} files to copy, over --max-files {max_files} (every candidate is a "
            "copy of the tree): list build outputs and data in .gitignore, or raise --max-files")
    if not files:
        raise RocmPerfError(f"{root}: the project directory has no files to copy (all ignored by .gitignore?)")
    return files


def copy_files(root: Path, files: list[str], dest: Path) -> None:
    """Copy `files` (relative to `root`) into `dest`, keeping their modes and times."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)  # a copy a killed run left half-done
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(root) / rel, target)


def copy_tree(src: Path, dest: Path) -> None:
    """A copy of a pristine tree of the run (all of it: it holds only the project's files)."""
    if Path(dest).exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True)


def kernel_sources(root: Path, files: list[str]) -> list[str]:
    """The .cu/.hip files that define a kernel (`__global__` outside comments and strings)."""
    from rocm_perf.backends.launch_prepass import blank_literals

    found = []
    for rel in files:
        if not rel.endswith(KERNEL_SUFFIXES):
            continue
        text = (Path(root) / rel).read_text(encoding="utf-8", errors="replace")
        if _GLOBAL.search(blank_literals(text)):
            found.append(rel)
    return found


def resolve_sources(root: Path, requested: list[str], files: list[str]) -> list[str]:
    """`--source` paths as paths relative to the project root, checked: inside the tree, copied."""
    root = Path(root).resolve()
    out = []
    for name in requested:
        path = Path(name)
        full = (path if path.is_absolute() else root / path).resolve()
        if not full.is_relative_to(root):
            raise RocmPerfError(f"{name}: outside the project {root}; --source takes files inside it")
        rel = full.relative_to(root).as_posix()
        if not full.is_file():
            raise RocmPerfError(f"{name}: no such file in the project {root}")
        if rel not in files:
            raise RocmPerfError(f"{name}: ignored by the project's .gitignore, so it is not copied into the run")
        out.append(rel)
    return out


def file_digests(root: Path, files: list[str]) -> dict[str, str]:
    return {rel: hashlib.sha256((Path(root) / rel).read_bytes()).hexdigest() for rel in files}


def tree_digest(digests: dict[str, str]) -> str:
    """One hash of a set of files and their contents."""
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(f"{rel}\0{digests[rel]}\n".encode())
    return h.hexdigest()


# ---- building and running ------------------------------------------------------------------


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b|Error|No such file|not found|cannot", line):
            return line.strip()[:300]
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1][:300] if lines else "no output"


def build_tree(tree: Path, command: str, env: dict[str, str], timeout: float, log: Path, what: str) -> None:
    """Run the user's build command in `tree`; RocmPerfError (one line) when it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["/bin/sh", "-c", command], cwd=tree, env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        log.write_text(f"$ {command}\n(timed out after {timeout:g} s)\n{e.stdout or ''}{e.stderr or ''}")
        raise RocmPerfError(f"{what}: the build command `{command}` timed out after {timeout:g} s (log: {log})") from e
    log.write_text(f"$ {command}\n(in {tree})\n{done.stdout}{done.stderr}\n(exit {done.returncode})\n")
    if done.returncode != 0:
        raise RocmPerfError(f"{what}: the build command `{command}` failed (exit {done.returncode}) in a copy of the "
                            f"tree: {_first_error(done.stdout + chr(10) + done.stderr)} (log: {log})")


def build_environment(backend, bin_dir: Path) -> dict[str, str]:
    """What the build and run commands see on `backend`: on the host backend, the wrapper."""
    if getattr(backend, "name", "") != "host":
        return {}
    from rocm_perf.backends.host_toolchain import host_build_environment

    return host_build_environment(bin_dir, warp_size=getattr(backend, "warp_size", 64))


def run_argv(command: str) -> list[str]:
    """The run command as a process: through the shell, as the user typed it."""
    return ["/bin/sh", "-c", command]


def include_flags(tree: Path, files: list[str]) -> list[str]:
    """-I flags for parsing a project's sources alone: the tree's root and every directory that
    holds a header (the build's own flags are not known here)."""
    dirs = {Path(".")}
    for rel in files:
        if rel.endswith((".h", ".hpp", ".hh", ".cuh", ".hxx", ".inc")):
            dirs.add(Path(rel).parent)
    return [f"-I{Path(tree) / d}" for d in sorted(dirs)]
