"""The hipcc wrapper's part in bringing a project's outside files into its copy: the compiler's
dependency output says which files outside the project a compile reads.

A project build runs in a copy of the project's tree (optimize/project.py); files it reads from
beside the tree (`-I../common`, `#include "../x-cuda/reference.h"`, `../x-cuda/main.cu` as a
source) are brought in by optimize/outside.py. When the build runs with `ROCM_PERF_OUTSIDE_REPORT`
set, the wrapper appends to that file:

- `needs REL` for every outside file a *failed* compile would read: the compile's dependency pass
  (`-MM -MG`) is run again with the paths that point outside the copy, and the sources themselves,
  mapped onto the user's checkout (`ROCM_PERF_PROJECT_ORIGIN`), only reading it;
- `read REL` for every outside file a successful compile read (from its `-MMD` output), so the run
  can say which outside files its builds depended on.

REL is relative to the project root (`../common/timer.h`). Nothing here ever writes outside the
wrapper's own temporary directory and the report.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPORT_ENV = "ROCM_PERF_OUTSIDE_REPORT"
COPY_ENV = "ROCM_PERF_PROJECT_COPY"  # the tree being built (physical path)
ORIGIN_ENV = "ROCM_PERF_PROJECT_ORIGIN"  # the user's project root
STORE_ENV = "ROCM_PERF_OUTSIDE_STORE"  # the run's read-only copies (what the copy's links point to)
MAX_DEPTH = 6

PATH_OPTIONS = ("-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros")
DEPENDENCY_OPTIONS = {"-M", "-MM", "-MD", "-MMD", "-MP", "-MG"}
DEPENDENCY_WITH_ARGUMENT = {"-MF", "-MT", "-MQ"}


def active() -> bool:
    return bool(os.environ.get(REPORT_ENV) and os.environ.get(COPY_ENV) and os.environ.get(ORIGIN_ENV))


def _rel(base: Path, path: Path) -> str:
    return Path(os.path.relpath(os.path.normpath(str(path)), os.path.normpath(str(base)))).as_posix()


def _outside(rel: str) -> bool:
    if not (rel == ".." or rel.startswith("../")):
        return False
    return len([p for p in rel.split("/") if p == ".."]) <= MAX_DEPTH


class Mapper:
    """Paths of a compile in the copy, as they are in the user's checkout."""

    def __init__(self, copy: Path, origin: Path):
        self.copy = Path(os.path.normpath(str(copy)))
        self.origin = Path(os.path.normpath(str(origin)))
        self.kept: list[Path] = []  # absolute paths outside the copy that exist as given (system, /opt/...)
        # The nest the copy is laid out in (optimize/outside.py: `W.nest/<path>/`), where what lies
        # beside the copy is only the outside files found so far; None when the copy is not nested.
        self.nest = next((p for p in self.copy.parents if p.name.endswith(".nest")), None)

    def __call__(self, path: Path) -> Path:
        a = Path(os.path.normpath(str(path)))
        rel = _rel(self.copy, a)
        inside = not rel.startswith("..")
        # A path beside the copy, in its nest (`-I../x-cuda` there holds only the outside files found
        # so far), is the user's: mapped first; one elsewhere that exists (/opt/rocm/include) is kept.
        if not inside and a.exists() and (self.nest is None or not a.is_relative_to(self.nest)):
            self.kept.append(a)
            return a
        if inside or _outside(rel):
            mapped = Path(os.path.normpath(str(self.origin / rel)))
            if mapped.exists():
                return mapped
        return a


def _mapped_flags(flags: list[str], cwd: Path, mapper: Mapper) -> list[str]:
    """The compile flags with their paths absolute and mapped, dependency options dropped."""
    out: list[str] = []
    i = 0
    while i < len(flags):
        f = flags[i]
        if f in DEPENDENCY_OPTIONS:
            i += 1
            continue
        if f in DEPENDENCY_WITH_ARGUMENT:
            i += 2
            continue
        if f in PATH_OPTIONS and i + 1 < len(flags):
            out += [f, str(mapper(cwd / flags[i + 1]))]
            i += 2
            continue
        joined = next((o for o in sorted(PATH_OPTIONS, key=len, reverse=True) if f.startswith(o) and len(f) > len(o)), None)
        out.append(f if joined is None else joined + str(mapper(cwd / f[len(joined):])))
        i += 1
    return out


def dependencies(text: str) -> list[str]:
    """The prerequisites of a make-style dependency listing (`-M` output, a `.d` file)."""
    text = text.replace("\\\n", " ").replace("\\ ", "\0")
    deps: list[str] = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        target, _, rest = line.partition(": ")
        if not rest and line.endswith(":"):
            continue  # -MP's phony targets
        for word in rest.split():
            word = word.replace("\0", " ")
            if word not in deps:
                deps.append(word)
    return deps


def _append(lines: list[str]) -> None:
    if not lines:
        return
    with open(os.environ[REPORT_ENV], "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def report_needs(sources: list[Path], flags: list[str], include_dirs: list[Path], quote_dirs: list[Path], cwd: Path,
                 work: Path, runtime_dir: Path, cxx: str) -> list[str]:
    """After a failed compile: the outside files it would read, mapped onto the user's checkout;
    appended to the report as `needs REL` (and returned)."""
    from rocm_perf.backends.host_sources import prepare_unit
    from rocm_perf.errors import RocmPerfError

    copy, origin = Path(os.environ[COPY_ENV]), Path(os.environ[ORIGIN_ENV])
    store = os.environ.get(STORE_ENV)
    mapper = Mapper(copy, origin)
    needs: list[str] = []

    def note(path: Path) -> None:
        if store and stored_relative(os.path.realpath(path), store) is not None:
            return  # a run copy of an outside file (the compiler names a header by where it found it)
        rel = _rel(origin, path)
        if not _outside(rel) or Path(os.path.normpath(str(copy / rel))).exists():
            return  # inside the project, or the copy has it already
        if any(Path(os.path.normpath(str(path))).is_relative_to(k) for k in mapper.kept):
            return  # found where it is (an absolute path outside), not beside the copy
        if Path(os.path.normpath(str(path))).is_relative_to(runtime_dir) or not Path(path).exists():
            return
        if rel not in needs:
            needs.append(rel)

    mapped_flags = _mapped_flags(flags, cwd, mapper)
    for n, source in enumerate(sources):
        mapped_source = mapper(source)
        note(mapped_source)
        if not mapped_source.is_file():
            continue
        try:
            unit = prepare_unit(mapped_source, work / f"deps{n}", include_dirs=[mapper(d) for d in include_dirs],
                                quote_dirs=[mapper(d) for d in quote_dirs], runtime_dir=runtime_dir)
        except RocmPerfError:
            continue
        shadows = {str(shadow): original for original, shadow in unit.shadowed.items()}
        argv = [cxx, "-std=c++17", "-I", str(runtime_dir), "-iquote", str(mapped_source.parent), *mapped_flags,
                "-include", "hip/hip_runtime.h", "-MM", "-MG", "-x", "c++", str(unit.compile_path)]
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            continue
        for dep in dependencies(done.stdout):
            if dep == str(unit.compile_path):
                continue
            path = Path(shadows.get(dep, dep))
            note(path if path.is_absolute() else work / path)
    _append([f"needs {rel}" for rel in needs])
    return needs


def stored_relative(real: str, store: str) -> str | None:
    """The outside path (`../common/x.h`) whose run copy is `real` (store/up<N>/<rest>), or None."""
    prefix = os.path.realpath(store) + os.sep
    if not real.startswith(prefix):
        return None
    up, _, rest = real[len(prefix):].partition(os.sep)
    if not up.startswith("up") or not up[2:].isdigit() or not rest:
        return None
    return "../" * int(up[2:]) + Path(rest).as_posix()


def report_reads(dep_file: Path, cwd: Path, source: Path | None = None) -> None:
    """After a successful compile: the outside files its dependency file names (the run's
    read-only copies, however the compile reached them), appended to the report as `read REL`."""
    store = os.environ.get(STORE_ENV)
    if not store:
        return
    try:
        text = Path(dep_file).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    reads = set()
    for dep in dependencies(text) + ([str(source)] if source is not None else []):
        rel = stored_relative(os.path.realpath(cwd / dep), store)
        if rel is not None:
            reads.add(f"read {rel}")
    _append(sorted(reads))
