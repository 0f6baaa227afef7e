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
from typing import Callable

from rocm_perf import process
from rocm_perf.disk_space import check_space
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.outside import (MAX_ATTEMPTS, OutsideStore, build_variables, make_found_no_rule, missing_outside,
                                        place_tree, read_report, run_store, tried_outside, with_make_trace)

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


# g++'s line in the user's code that instantiated a failing template ("main.cu:89:30:   required
# from here"): where a library call the host runtime lacks was made (its static_assert is in our header).
_REQUIRED_FROM = re.compile(r"^(\S+?:\d+(?::\d+)?):\s+required from here")


# make's own failures ("make[1]: *** No rule to make target ...") and its bookkeeping lines: a make
# run from a make (MAKELEVEL set, as under `make test`) says "Entering/Leaving directory" around all.
_MAKE_FAILURE = re.compile(r"^\S*make(\[\d+\])?: \*\*\* ")
_MAKE_DIRECTORY = re.compile(r"^\S*make(\[\d+\])?: (Entering|Leaving) directory ")


def _first_error(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _MAKE_DIRECTORY.match(line.strip()):  # its path may hold "error"
            continue
        if _MAKE_FAILURE.match(line.strip()) or re.search(r"\berror\b|Error|No such file|not found|cannot", line):
            if "rocm-perf host backend:" in line:  # the host runtime refusing a call: say the caller's line
                where = next((m.group(1) for earlier in reversed(lines[:i]) if (m := _REQUIRED_FROM.match(earlier.strip()))),
                             None)
                if where:
                    return f"{where}: {line[line.index('rocm-perf host backend:'):].strip()}"[:300]
            return line.strip()[:300]
    lines = [l.strip() for l in text.splitlines() if l.strip() and not _MAKE_DIRECTORY.match(l.strip())]
    return lines[-1][:300] if lines else "no output"


def _run_build(tree: Path, command: str, env: dict[str, str], timeout: float, log: Path, what: str) -> tuple[int, str]:
    """Run the user's build command in `tree`: (exit status, its output), the log written."""
    log.parent.mkdir(parents=True, exist_ok=True)
    # process.run: the build and everything it starts end with it, on a timeout, or when rocm-perf
    # dies. One stream, in order (exec 2>&1): make's "Entering directory" lines say where a later
    # complaint was made.
    done = process.run(["/bin/sh", "-c", "exec 2>&1\n" + command], cwd=tree, env=env, timeout=timeout)
    output = done.stdout + done.stderr
    if done.timed_out:
        log.write_text(f"$ {command}\n(timed out after {timeout:g} s)\n{output}")
        raise RocmPerfError(f"{what}: the build command `{command}` timed out after {timeout:g} s (log: {log})")
    if done.returncode != 0:
        check_space(tree, output)  # a full disk is not a failure of the build
    log.write_text(f"$ {command}\n(in {tree})\n{output}\n(exit {done.returncode})\n")
    return done.returncode, output


def _build_failed(what: str, command: str, status: int, output: str, log: Path, outside: str = "") -> RocmPerfError:
    return RocmPerfError(f"{what}: the build command `{command}` failed (exit {status}) in a copy of the tree: "
                         f"{_first_error(output)} (log: {log}){outside}")


def build_tree(tree: Path, command: str, env: dict[str, str], timeout: float, log: Path, what: str) -> None:
    """Run the user's build command in `tree`; RocmPerfError (one line) when it fails."""
    status, output = _run_build(tree, command, env, timeout, log, what)
    if status != 0:
        raise _build_failed(what, command, status, output, log)


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")


def _outside_advice(available: list[str], absent: list[str], origin: Path) -> str:
    """What a failed build's message adds about the paths it reads outside the project."""
    parts = []
    if available:
        parts.append(f"it reads {_shown(available)} outside the project: add --with PATH for each (repeatable)")
    if absent:
        parts.append(f"it reads {_shown(absent)} outside the project, which {'is' if len(absent) == 1 else 'are'} not "
                     f"in {origin.parent} either (made by another build? build that first, then add --with PATH)")
    return "".join(f"; {p}" for p in parts)


def build_copy(copy_into: Callable[[Path], None], work: Path, command: str, env: dict[str, str], timeout: float, log: Path,
               what: str, store: OutsideStore | None = None, discover: bool = False,
               limit: int = DEFAULT_MAX_FILES) -> Path:
    """A fresh copy of the tree at `work` (written by `copy_into(dest)`), built by the user's
    command; returns `work`. With a `store` the outside files it holds are laid out around the copy
    (optimize/outside.py) and checked unchanged after the build. With `discover` (a baseline build),
    a build that fails on paths outside the project that the user's checkout has gets them copied
    into the store and runs again; one that fails with make's "No rule to make target" and names
    nothing new runs once more with make's implicit-rule trace, which names the prerequisites a
    pattern rule lacked. RocmPerfError (one line) when it fails, naming the outside paths it could
    not find and the flag to add."""
    layout = None
    traced = False  # whether this attempt runs with make's implicit-rule trace (outside.MAKE_TRACE)
    plain, plain_absent = "", []  # the last untraced attempt's output and absent paths: what a failure says
    for _ in range(MAX_ATTEMPTS):
        depth = store.depth if store is not None else 0
        if layout != depth:
            tree = place_tree(copy_into, work, store)
            layout = depth
        else:
            store.link_files(work)  # same depth: the new outside files join the copy as it is
        laid_out = set(store.files) if store is not None else set()
        extra = {}
        report = log.parent / f"{log.name}.outside"
        if store is not None:
            report.unlink(missing_ok=True)
            extra = build_variables(store, tree, report)
        build_env = {**env, **extra}
        if traced:  # its own log: the build's log stays the untraced one a failure message names
            status, output = _run_build(tree, command, with_make_trace(build_env), timeout,
                                        log.with_name(f"{log.stem}.make-trace{log.suffix}"), what)
        else:
            status, output = _run_build(tree, command, build_env, timeout, log, what)
        needs, reads = read_report(report) if store is not None else ([], set())
        report.unlink(missing_ok=True)
        if status == 0:
            if store is not None:
                store.verify(what)
                store.note_read(reads)
            return Path(work)
        if store is None:
            raise _build_failed(what, command, status, output, log)
        physical = Path(tree).resolve()
        if traced:
            available, absent = tried_outside(output, physical, physical, store.origin), plain_absent
            output = plain
        else:
            available, absent = missing_outside(output, physical, physical, store.origin)
            plain, plain_absent = output, absent
        if discover:
            store.add(list(dict.fromkeys(needs + available)), limit)
        if discover and set(store.files) <= laid_out and not traced and make_found_no_rule(output):
            traced = True  # once a stall: the trace is long, and a rule it cannot explain stays unexplained
            continue
        traced = False
        if not discover or set(store.files) <= laid_out:  # (another build of the baseline may have added them)
            raise _build_failed(what, command, status, output, log,
                                _outside_advice([a for a in needs + available if a not in store.files], absent, store.origin))
    raise _build_failed(what, command, status, output, log, f"; still failing after {MAX_ATTEMPTS} rounds of outside files")


def build_run_tree(run_dir: Path, project: dict, pristine: Path, work: Path, env: dict[str, str], timeout: float,
                   discover: bool, limit: int = DEFAULT_MAX_FILES) -> Path:
    """A run's build of one of its pristine trees (the baseline's, a candidate's) at `work`, with
    the run's outside files around it (`discover`: the baseline's builds, which may find more);
    the log is `work`'s sibling `<name>.build.log`."""
    store = run_store(run_dir, Path(project["root"]))
    return build_copy(lambda dest: copy_tree(pristine, dest), work, project["build"], env, timeout,
                      Path(work).parent / f"{Path(work).name}.build.log", project["root"], store=store, discover=discover,
                      limit=limit)


def build_environment(backend, bin_dir: Path) -> dict[str, str]:
    """What the build and run commands see on `backend`: on the host backend, the wrapper."""
    if getattr(backend, "name", "") != "host":
        return {}
    from rocm_perf.backends.host_toolchain import host_build_environment

    return host_build_environment(bin_dir, warp_size=getattr(backend, "warp_size", 64))


def run_argv(command: str) -> list[str]:
    """The run command as a process: through the shell, as the user typed it."""
    return ["/bin/sh", "-c", command]


HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".hxx", ".inc")


def include_flags(tree: Path, files: list[str], run_dir: Path | None = None) -> list[str]:
    """-I flags for parsing a project's sources alone: the tree's root and every directory that
    holds a header (the build's own flags are not known here), and with the `run_dir`, every
    directory of the run's outside copies that holds a header, and the ones above it up to the
    store's root (`-I../common` and `-I..` of a build both find theirs)."""
    dirs = {Path(".")}
    for rel in files:
        if rel.endswith(HEADER_SUFFIXES):
            dirs.add(Path(rel).parent)
    flags = [f"-I{Path(tree) / d}" for d in sorted(dirs)]
    if run_dir is not None and (Path(run_dir) / "outside").is_dir():
        store = OutsideStore.open(run_dir, Path(tree))  # the manifest names the origin
        outside_dirs: set[Path] = set()
        for rel in store.files:
            if rel.endswith(HEADER_SUFFIXES):
                stored = store.stored(rel).parent
                while stored != store.directory / "files" and store.directory / "files" in stored.parents:
                    outside_dirs.add(stored)
                    stored = stored.parent
        flags += [f"-I{d}" for d in sorted(outside_dirs)]
    return flags
