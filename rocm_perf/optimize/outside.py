"""What a project's build reads outside the project's directory, made available to its copies.

Real repositories build one folder against its siblings: `-I../common`, `../<name>-cuda/reference.h`
as a make prerequisite, `../<name>-cuda/main.cu` as a source. A run copies only the project's own
tree, so those paths are brought in separately:

- Which: named with `--with PATH`, reported by the `rocm-perf-hipcc` wrapper (its dependency
  pass lists the outside files a compile reads, backends/host_outside.py), and read from a failed
  baseline build's complaints (make's "No rule to make target", any "No such file or directory");
  when make only says it has no rule for a target of the tree (a pattern rule's outside
  prerequisite is missing, so the rule does not apply), from the rules make tried, in a build
  run again with make's implicit-rule trace (`--debug=i`).
- Where: every outside file is copied once into the run's store (`RUN/outside/files/`), read-only
  (mode 0444), and hashed. A copy of the project tree that builds is then laid out inside a
  *nest* that mirrors the user's directories down to the deepest `..` any outside path needs:
  `W.nest/<the project's path below that ancestor>/` is the tree, every outside file is a symlink
  at its own relative position, and `W` itself is a symlink to the tree. Relative paths in the
  build resolve physically, as they would in the user's checkout.
- Proof: after every build the store's files are hashed again (a build that wrote one fails);
  `originals_changed` compares the user's files with the digests taken when they were copied.

The user's outside files are only ever read, once, when they are copied.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.backends.host_outside import COPY_ENV, MAX_DEPTH, ORIGIN_ENV, REPORT_ENV, STORE_ENV
from rocm_perf.errors import RocmPerfError

STORE = "outside"
MANIFEST = "manifest.json"
MAX_ATTEMPTS = 60  # baseline builds retried while each failure names new outside files

# Complaints that name a missing path (make, the compiler, CMake, cp and most tools).
_NO_RULE = re.compile(r"No rule to make target [`'\"]([^'`\"]+)['\"]")
_NO_SUCH = re.compile(r"(?:^|[\s:'\"`(])([^\s:'\"`()]+)['\"]?: No such file or directory")
_CANNOT_STAT = re.compile(r"cannot (?:stat|access|open)[^'`\"]*[`'\"]([^'`\"]+)['\"]")
_CMAKE_SOURCE = re.compile(r"Cannot find source file:\s*\n?\s*(\S+)")
_CMAKE_DIR = re.compile(r"given source\s+\"([^\"]+)\"\s+which is not an existing")
_ENTERING = re.compile(r"^\S*make(?:\[\d+\])?: Entering directory [`'\"]([^'`\"]+)['\"]")
_LEAVING = re.compile(r"^\S*make(?:\[\d+\])?: Leaving directory")
_GCC_AT = re.compile(r"^([^\s:]+):\d+(?::\d+)?: (?:fatal )?error: ([^\s:]+): No such file")
# GNU make's --debug=i lines naming a prerequisite it tried (`%.o: %.cu ../x-cuda/reference.h`, the
# rule dropped in silence when the header is missing): the outside ones that exist are what it needs
# (it also tries names that exist nowhere, `../x-cuda/RCS/reference.h,v` of its built-in rules).
_MAKE_TRIED = re.compile(r"^\s*(?:Trying (?:rule|implicit) prerequisite|Looking for a rule with intermediate file) "
                         r"[`'\"]([^'`\"]+)['\"]")
MAKE_TRACE = "--debug=i"  # GNU make's implicit-rule trace, taken from MAKEFLAGS by make and its sub-makes


def _resolve_strict(path: Path, shown: str) -> Path:
    """`path` with its symlinks resolved; RocmPerfError naming a symlink loop."""
    try:
        return path.resolve(strict=True)
    except RuntimeError as e:  # Python < 3.13 raises RuntimeError for a loop
        raise RocmPerfError(f"{shown}: a symlink loop ({e})") from e
    except OSError as e:
        if e.errno == 40:  # ELOOP
            raise RocmPerfError(f"{shown}: a symlink loop (it resolves back to itself)") from e
        raise RocmPerfError(f"{shown}: {e.strerror or e}") from e


def relative_to_root(root: Path, path: Path) -> str:
    """`path` relative to the project `root`, lexically normalized (`../common/x.h`)."""
    return Path(os.path.relpath(os.path.normpath(str(path)), os.path.normpath(str(root)))).as_posix()


def steps_up(rel: str) -> int:
    """How many leading `..` a canonical relative path takes."""
    n = 0
    for part in rel.split("/"):
        if part != "..":
            break
        n += 1
    return n


def is_outside(rel: str) -> bool:
    return rel == ".." or rel.startswith("../")


def expand(origin: Path, rel: str, limit: int, shown: str | None = None) -> list[str]:
    """The files an outside path names (itself, or every file below a directory), relative to
    `origin`. RocmPerfError (one line) for a symlink loop or a directory of more than `limit` files."""
    shown = shown or rel
    full = origin / rel
    if full.is_symlink() or full.exists():
        real = _resolve_strict(full, shown)
    else:
        raise RocmPerfError(f"{shown}: no such file or directory (outside the project {origin})")
    if real.is_file():
        return [rel]
    if not real.is_dir():
        raise RocmPerfError(f"{shown}: not a file or directory")
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(full, followlinks=True):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            if d == ".git":
                continue
            shown_d = f"{shown}/{(here / d).relative_to(full).as_posix()}"
            target = _resolve_strict(here / d, shown_d)
            real_here = here.resolve()
            if target == real_here or target in real_here.parents:
                raise RocmPerfError(f"{shown_d}: a symlink loop (it leads back to {target}); name the files the "
                                    "build needs with --with instead")
            kept.append(d)  # a second name for a directory is listed under both names: a build may use either
        dirnames[:] = kept
        for f in sorted(filenames):
            p = here / f
            if p.is_symlink():
                _resolve_strict(p, f"{shown}/{p.relative_to(full).as_posix()}")
            if not p.is_file():
                continue
            out.append(relative_to_root(origin, p))
            if len(out) > limit:
                raise RocmPerfError(
                    f"{shown}: an outside directory of more than {limit} files (over --max-files {limit}); name the "
                    "files or smaller folders the build reads with --with, or raise --max-files")
    return sorted(out)


def run_command_paths(root: Path, run: str | None) -> list[str]:
    """The files outside the project that the run command names as arguments (HeCBench's `./main
    ../x-cuda/data.csv`), relative to the project root: it runs from the top of the built copy, so
    they resolve as in the user's checkout once they are brought in. Files only (a folder is named
    with --with), and only those that exist."""
    try:
        words = shlex.split(run or "")
    except ValueError:  # unbalanced quotes: the shell will say so when the command runs
        return []
    found: list[str] = []
    for word in words:
        for part in (word, word.partition("=")[2]):  # ../data.csv, --input=../data.csv
            if "/" not in part or part.startswith("/"):
                continue
            rel = relative_to_root(root, Path(root) / part)
            full = Path(root) / rel
            if is_outside(rel) and steps_up(rel) <= MAX_DEPTH and full.is_file() and rel not in found:
                found.append(rel)
    return found


def with_paths_relative(root: Path, paths: list[str]) -> list[str]:
    """`--with PATH` arguments (relative to the current directory, or absolute) as outside paths
    relative to the project `root`; RocmPerfError (one line) for one inside it or missing."""
    out = []
    root = Path(root).absolute()
    for name in paths:
        rel = relative_to_root(root, Path(name).absolute())
        if not is_outside(rel):
            raise RocmPerfError(f"--with {name}: inside the project {root}, which is copied whole already; --with "
                                "names files or folders outside it that the build reads")
        full = root / rel
        if not (full.exists() or full.is_symlink()):
            raise RocmPerfError(f"--with {name}: no such file or directory")
        if rel not in out:
            out.append(rel)
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class OutsideStore:
    """The run's read-only copies of the files a project's build reads outside its root."""

    directory: Path  # RUN/outside
    origin: Path  # the user's project root (resolved)
    files: dict[str, str] = field(default_factory=dict)  # path relative to origin (../x) -> sha256 at copy time
    read: set[str] = field(default_factory=set)  # what the compiler's dependency output named as read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    # ---- the store on disk --------------------------------------------------------------

    @classmethod
    def open(cls, run_dir: Path, origin: Path) -> "OutsideStore":
        """The store of a run (empty when the run has none yet)."""
        directory = Path(run_dir) / STORE
        store = cls(directory, Path(origin).resolve())
        manifest = directory / MANIFEST
        if manifest.is_file():
            data = json.loads(manifest.read_text())
            store.origin = Path(data.get("origin") or store.origin)
            store.files = dict(data.get("files", {}))
            store.read = set(data.get("read", []))
        return store

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps({"origin": str(self.origin), "files": dict(sorted(self.files.items())),
                                   "read": sorted(self.read)}, indent=1))
        os.replace(tmp, self.directory / MANIFEST)

    def _in_run(self, rel: str) -> bool:
        """Whether outside path `rel` is in the run directory itself (a run under the user's
        checkout: a compiler names the copies it read by their place in the store, and a nest's
        files lie there too): the run's own files are never the user's outside files."""
        run_dir = self.directory.resolve().parent
        return run_dir in Path(os.path.normpath(self.origin / rel)).resolve().parents

    def stored(self, rel: str) -> Path:
        """Where the copy of outside file `rel` lives: files/up<N>/<the rest>."""
        n = steps_up(rel)
        return self.directory / "files" / f"up{n}" / "/".join(rel.split("/")[n:])

    @property
    def depth(self) -> int:
        return max((steps_up(r) for r in self.files), default=0)

    def add(self, rels: list[str], limit: int) -> list[str]:
        """Copy outside paths (files or directories, relative to the origin) into the store;
        returns the files that were new. RocmPerfError for bad input (one line)."""
        new: list[str] = []
        with self._lock:
            for rel in rels:
                if not is_outside(rel):
                    raise RocmPerfError(f"{rel}: inside the project {self.origin}, so it is copied with the tree "
                                        "already; --with takes paths outside it")
                if steps_up(rel) > MAX_DEPTH or steps_up(rel) >= len(self.origin.parts):
                    raise RocmPerfError(f"{rel}: {steps_up(rel)} directories above the project {self.origin}; an "
                                        f"outside path may climb at most {MAX_DEPTH}")
                for f in expand(self.origin, rel, limit):
                    if f in self.files or self._in_run(f):
                        continue
                    if len(self.files) + len(new) >= limit:
                        raise RocmPerfError(f"{rel}: the build reads more than {limit} files outside the project "
                                            f"(over --max-files {limit}); raise --max-files")
                    target = self.stored(f)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if target.exists():
                        target.chmod(0o644)
                    data = (self.origin / f).read_bytes()  # the user's file: read, once
                    target.write_bytes(data)
                    target.chmod(0o444)
                    self.files[f] = hashlib.sha256(data).hexdigest()
                    new.append(f)
            if new:
                self._save()
        return new

    def note_read(self, rels: set[str]) -> None:
        with self._lock:
            if not rels <= self.read:
                self.read |= rels
                self._save()

    def verify(self, what: str) -> None:
        """The store's copies as they were copied; RocmPerfError naming one a build wrote."""
        for rel, digest in sorted(self.files.items()):
            path = self.stored(rel)
            if not path.is_file() or sha256_file(path) != digest:
                raise RocmPerfError(f"{what}: the build wrote {rel}, a read-only copy of a file outside the project "
                                    f"(the user's file is untouched: builds see copies); a build must write only inside its tree")

    def originals_changed(self) -> list[str]:
        """Outside files of the user's that differ now from what was copied (edited during the run)."""
        changed = []
        for rel, digest in sorted(self.files.items()):
            path = self.origin / rel
            try:
                if sha256_file(path) != digest:
                    changed.append(rel)
            except OSError:
                changed.append(rel)
        return changed

    def summary(self) -> dict:
        """What a report says about the outside files (the digests prove what the builds saw)."""
        h = hashlib.sha256()
        for rel, digest in sorted(self.files.items()):
            h.update(f"{rel}\0{digest}\n".encode())
        return {"files": sorted(self.files), "read": sorted(self.read), "digest": h.hexdigest(),
                "changed_since": self.originals_changed()}

    # ---- laying out a copy of the tree ------------------------------------------------------

    def layout(self, work: Path) -> tuple[Path, Path]:
        """(the nest of `work`, where the tree goes inside it) for the current depth."""
        depth = self.depth
        anchor = self.origin.parents[depth - 1]
        return Path(work).parent / f"{Path(work).name}.nest", Path(work).parent / f"{Path(work).name}.nest" / self.origin.relative_to(anchor)

    def link_files(self, work: Path) -> None:
        """Symlinks to the store's copies at their relative positions around `work`'s tree."""
        if not self.files:
            return
        nest, tree = self.layout(work)
        for rel in self.files:
            link = Path(os.path.normpath(tree / rel))
            if link.is_symlink() or link.exists():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(self.stored(rel), link.parent), link)


_STORES: dict[Path, OutsideStore] = {}
_STORES_LOCK = threading.Lock()


def run_store(run_dir: Path, origin: Path) -> OutsideStore:
    """The one store object of a run in this process (its builds run in threads and may add to it)."""
    key = Path(run_dir).resolve()
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = OutsideStore.open(run_dir, origin)
        return _STORES[key]


def build_variables(store: OutsideStore, tree: Path, report: Path) -> dict[str, str]:
    """What the wrapper needs to report a build's outside reads (backends/host_outside.py)."""
    return {REPORT_ENV: str(report), COPY_ENV: str(Path(tree).resolve()), ORIGIN_ENV: str(store.origin),
            STORE_ENV: str(store.directory / "files")}


def remove_work(work: Path) -> None:
    """A copy of the tree a build used (a plain directory, or a symlink into its nest) and its nest."""
    work = Path(work)
    nest = work.parent / f"{work.name}.nest"
    if work.is_symlink():
        work.unlink()
    elif work.exists():
        shutil.rmtree(work)
    if nest.exists():
        shutil.rmtree(nest)


def place_tree(copy_into, work: Path, store: OutsideStore | None) -> Path:
    """A fresh copy of the tree at `work` (`copy_into(dest)` writes it), laid out in a nest when
    the store has outside files; returns the tree's real directory."""
    remove_work(work)
    if store is None or not store.files:
        copy_into(work)
        return Path(work)
    nest, tree = store.layout(work)
    copy_into(tree)
    store.link_files(work)
    os.symlink(os.path.relpath(tree, Path(work).parent), work)
    return tree


# ---- which outside paths a failed build names -----------------------------------------------


def complaints(log: str, cwd: Path) -> list[Path]:
    """Paths a build log says are missing, made absolute against the directory each was meant
    from (make's "Entering directory" lines; a compiler's including file)."""
    found: list[Path] = []
    dirs = [Path(cwd)]
    for line in log.splitlines():
        m = _ENTERING.match(line)
        if m:
            dirs.append(Path(m.group(1)))
            continue
        if _LEAVING.match(line) and len(dirs) > 1:
            dirs.pop()
            continue
        here = dirs[-1]
        names: list[tuple[str, Path]] = []
        gcc = _GCC_AT.match(line)
        if gcc:  # an include: relative to the including file (quote form), else unknown here
            includer = Path(gcc.group(1))
            includer = includer if includer.is_absolute() else here / includer
            names.append((gcc.group(2), includer.parent))
        else:
            for pattern in (_NO_RULE, _CANNOT_STAT, _CMAKE_DIR, _NO_SUCH):
                names += [(m.group(1), here) for m in pattern.finditer(line)]
        for name, base in names:
            name = name.strip().rstrip(".,;")
            if not name or name.startswith("-"):
                continue
            p = Path(name)
            found.append(Path(os.path.normpath(p if p.is_absolute() else base / p)))
    for m in _CMAKE_SOURCE.finditer(log):  # CMake prints the name on the next line, relative to the source dir
        p = Path(m.group(1))
        found.append(Path(os.path.normpath(p if p.is_absolute() else Path(cwd) / p)))
    return found


def make_found_no_rule(log: str) -> bool:
    """Whether a failed build's log has make's "No rule to make target" (for any target): then a
    run with make's implicit-rule trace can say which prerequisites the rule lacked."""
    return _NO_RULE.search(log) is not None


def with_make_trace(env: dict[str, str]) -> dict[str, str]:
    """`env` with make's implicit-rule trace added to MAKEFLAGS (the user's own flags kept)."""
    flags = env.get("MAKEFLAGS", os.environ.get("MAKEFLAGS", ""))
    # Variables given on make's command line follow a lone `--` in MAKEFLAGS (`s -- CC=clang`, under
    # a make run as `make test X=1`): the flag goes before them, or make takes it for a target.
    words = flags.split(" ")
    if "--" in words:
        at = words.index("--")
        return {**env, "MAKEFLAGS": " ".join(words[:at] + [MAKE_TRACE] + words[at:]).strip()}
    return {**env, "MAKEFLAGS": f"{flags} {MAKE_TRACE}".strip()}


def tried_outside(trace: str, cwd: Path, tree: Path, origin: Path) -> list[str]:
    """From a build run with make's implicit-rule trace: the prerequisites make tried that lie
    outside the project and exist in the user's checkout, relative to the project root."""
    found: list[str] = []
    dirs = [Path(cwd)]
    for line in trace.splitlines():
        entering = _ENTERING.match(line)
        if entering:
            dirs.append(Path(entering.group(1)))
        elif _LEAVING.match(line) and len(dirs) > 1:
            dirs.pop()
        elif m := _MAKE_TRIED.match(line):
            p = Path(m.group(1))
            rel = relative_to_root(tree, Path(os.path.normpath(p if p.is_absolute() else dirs[-1] / p)))
            if (is_outside(rel) and steps_up(rel) <= MAX_DEPTH and rel not in found
                    and ((Path(origin) / rel).is_file() or (Path(origin) / rel).is_symlink())):
                found.append(rel)
    return found


def missing_outside(log: str, cwd: Path, tree: Path, origin: Path) -> tuple[list[str], list[str]]:
    """From a failed build's log: (outside paths that exist in the user's checkout, outside paths
    that exist nowhere), both relative to the project root."""
    available, absent = [], []
    for path in complaints(log, cwd):
        rel = relative_to_root(tree, path)
        if not is_outside(rel) or steps_up(rel) > MAX_DEPTH:
            continue
        target = available if (Path(origin) / rel).exists() or (Path(origin) / rel).is_symlink() else absent
        if rel not in target:
            target.append(rel)
    return available, absent


def read_report(path: Path) -> tuple[list[str], set[str]]:
    """The wrapper's report: (outside files a failed compile needs, outside files compiles read)."""
    needed: list[str] = []
    read: set[str] = set()
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return needed, read
    for line in lines:
        kind, _, rel = line.partition(" ")
        if kind == "needs" and rel and rel not in needed:
            needed.append(rel)
        elif kind == "read" and rel:
            read.add(rel)
    return needed, read
