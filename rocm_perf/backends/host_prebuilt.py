"""The host runtime prebuilt once per compiler and flags, for every later host build.

A host build compiled the runtime with the user's code every time: parsing its headers (and
the standard headers under them) and generating its own functions again, about 4 s of the
5 s a one-kernel program took (docs/performance.md). Two things made once take that away:

- the runtime's object (`runtime.o`, from host_runtime/runtime_object.cpp): the one definition
  of each function the headers mark ROCM_PERF_OUTLINED (rocm_perf_host/outline.h); a unit built
  with ROCM_PERF_HOST_PREBUILT only declares them and links the object. What runs per block and
  per GPU thread stays inline in the unit, where the compiler can see the kernel.
- a precompiled `hip/hip_runtime.h.gch`. GCC reads it in the header's place when it finds it
  in an include directory searched before the header's own, and silently reads the header
  itself when it cannot be used: other macros defined first, other options, or
  `#include <hip/hip_runtime.h>` not the unit's first include (GCC manual, "Using Precompiled
  Headers"). So it can make a build faster but never changes what it compiles, with one
  exception GCC does not check: a header in the user's source directory that shadows a standard
  header the runtime includes (a `vector` or `stdint.h` beside the `.cu`). `usable_for` refuses
  those, and the build then compiles the whole runtime as before.

They live in the user's cache directory ($ROCM_PERF_CACHE_DIR, else $XDG_CACHE_HOME/rocm-perf,
else ~/.cache/rocm-perf), one folder per key: the compiler (its path and `--version`), the
flags but their header search folders and path maps (without_search_paths), and the content of
every runtime file. A runtime edited, a compiler upgraded or a flag
changed is another key. Only the newest `KEEP` are kept (each is about 100 MB). An entry is made by
the second build with its flags, not the first: flags built with once would pay 12 s for it. Only GCC's are
made; any failure to make one (another compiler, a full disk, a read-only cache) means the build
goes on without it. ROCM_PERF_PREBUILT_RUNTIME=0 turns both off.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
import uuid
from functools import lru_cache
from pathlib import Path

from rocm_perf.atomic_file import write_atomic

RUNTIME_DIR = Path(__file__).resolve().parent / "host_runtime"
HEADER = Path("hip") / "hip_runtime.h"
OBJECT_SOURCE = RUNTIME_DIR / "runtime_object.cpp"
OBJECT = "runtime.o"
# What a unit that links the object defines (outline.h).
PREBUILT_DEFINE = "-DROCM_PERF_HOST_PREBUILT=1"
# The symbols a unit and the object name by their runtime configuration (the end of runtime.h):
# a link error naming one is a unit that configures the runtime itself, built then without.
CONFIGURATION_SYMBOL = "rocm_perf_prebuilt_runtime_"
KEEP = 8
# Opting out: ROCM_PERF_PREBUILT_RUNTIME=0 (builds then compile the whole runtime each time).
ENV_SWITCH = "ROCM_PERF_PREBUILT_RUNTIME"


def cache_root() -> Path:
    """Where rocm-perf keeps what it can always make again."""
    explicit = os.environ.get("ROCM_PERF_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rocm-perf"


@lru_cache(maxsize=None)
def runtime_digest(runtime_dir: Path = RUNTIME_DIR) -> str:
    """A hash of every file of the runtime: an edited header is another key."""
    h = hashlib.sha256()
    for path in sorted(p for p in runtime_dir.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(runtime_dir)).encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=None)
def gcc_identity(compiler: str) -> str | None:
    """The compiler's path and version if it is GCC (the only one whose `.gch` lookup is silent
    on a mismatch), else None."""
    path = shutil.which(compiler)
    if path is None:
        return None
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or "Free Software Foundation" not in done.stdout or "clang" in done.stdout.lower():
        return None
    return f"{os.path.realpath(path)}\n{done.stdout}"


@lru_cache(maxsize=None)
def _system_include_dirs(compiler: str) -> tuple[Path, ...]:
    """The compiler's own `#include <...>` directories, in search order."""
    try:
        done = subprocess.run([compiler, "-x", "c++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ()
    dirs, inside = [], False
    for line in done.stderr.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" "):
            dirs.append(Path(os.path.normpath(line.strip())))
    return tuple(dirs)


# Options that name where headers are searched or how paths are printed: they differ per candidate
# (each build's own folder, each copy of a project's tree) and do not change the runtime's code, so
# an entry is made without them; a searched folder that shadows a header the runtime reads makes
# the entry unusable for that build instead (usable_for).
_SEARCH_OPTIONS = ("-I", "-iquote", "-isystem", "-idirafter")
_SHADOWING = ("-I", "-isystem")  # searched before the standard folders for <...>
_PATH_MAPS = ("-fmacro-prefix-map=", "-ffile-prefix-map=", "-fdebug-prefix-map=")


def without_search_paths(flags: list[str], cwd: Path) -> tuple[list[str], list[Path]]:
    """(the flags without header search folders and path maps, the folders that could shadow a
    standard header: -I and -isystem, resolved against `cwd`)."""
    kept, shadowing = [], []
    i = 0
    while i < len(flags):
        flag = flags[i]
        option = next((o for o in _SEARCH_OPTIONS if flag.startswith(o)), None)  # -I DIR or -IDIR
        if option is not None:
            folder = flags[i + 1] if flag == option and i + 1 < len(flags) else flag[len(option):]
            i += 2 if flag == option else 1
            if option in _SHADOWING and (cwd / folder).resolve() != RUNTIME_DIR:
                shadowing.append(cwd / folder)
            continue
        if not flag.startswith(_PATH_MAPS):
            kept.append(flag)
        i += 1
    return kept, shadowing


def key(identity: str, flags: list[str], cwd: Path) -> str:
    text = "\n".join([identity, runtime_digest(), str(cwd), *flags])  # cwd: relative paths (-include)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def prebuilt_dir(compiler: str, flags: list[str], cwd: Path | None = None, timeout: float = 300,
                 with_object: bool = True, source_dirs: tuple[Path, ...] = ()) -> Path | None:
    """A folder holding `hip/hip_runtime.h.gch` and, `with_object`, the runtime's object, made with
    `flags` (the build's own, less its header search folders and path maps) now if they are not
    in the cache; None where there are none to be had, or where one of the build's -I folders or
    `source_dirs` (the folders the build searches besides its flags) holds a header the runtime
    reads. A build then adds `unit_flags(folder)` before the runtime's `-I`, and links
    `object_path(folder)`."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return None
    identity = gcc_identity(compiler)
    if identity is None:
        return None
    cwd = Path(cwd or Path.cwd()).resolve()
    flags, shadowing = without_search_paths(list(flags), cwd)
    shadowing = [*source_dirs, *shadowing]
    flags = [*flags, "-I", str(RUNTIME_DIR), *([PREBUILT_DEFINE] if with_object else [])]
    folder = cache_root() / "host-pch" / key(identity, flags, cwd)
    if _ready(folder, with_object):
        return folder if usable_for(folder, shadowing) else None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        # An entry costs two whole-runtime builds to make: flags built with once (a `profile` with
        # its own -D, most of the test suite) would pay for one never read. The first build with
        # these flags leaves a mark and goes without; the second makes the entry.
        seen = _seen_mark(folder)
        if not seen.exists():
            seen.touch()
            return None
        # One maker per entry: builds beside this one, in other processes or threads, wait for it.
        with open(folder.parent / f"{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            made = folder if _ready(folder, with_object) else _make(compiler, flags, folder, cwd, timeout, with_object)
        return made if made is not None and usable_for(made, shadowing) else None
    except (OSError, subprocess.SubprocessError):
        return None


def _ready(folder: Path, with_object: bool) -> bool:
    if not (gch_path(folder).is_file() and (folder / "headers.txt").is_file()
            and (not with_object or object_path(folder).is_file())):
        return False
    try:
        os.utime(folder)  # the newest are kept
    except OSError:
        pass
    return True


def unit_flags(folder: Path) -> list[str]:
    """What a unit compiled against the prebuilt runtime in `folder` adds, before the runtime's `-I`."""
    return [PREBUILT_DEFINE, "-I", str(folder)] if object_path(folder).is_file() else ["-I", str(folder)]


def object_path(folder: Path) -> Path:
    return folder / OBJECT


def _make(compiler: str, flags: list[str], folder: Path, cwd: Path, timeout: float, with_object: bool) -> Path | None:
    (folder / HEADER.parent).mkdir(parents=True, exist_ok=True)
    gch = gch_path(folder)
    tag = f"tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # builds in threads of one process make entries too
    tmp = gch.with_name(f".{gch.name}.{tag}")
    tmp_object = folder / f".{OBJECT}.{tag}"
    deps = folder / f".deps.{tag}"
    # The .gch is made from a file that includes the runtime's header (so that the header is marked
    # #pragma once inside it), and stands beside a header of the same name for every later
    # `#include <hip/hip_runtime.h>` of the unit, which GCC reads instead of a second .gch: it
    # reaches the runtime's, which the .gch has marked as read.
    source = folder / "precompiled.h"
    write_atomic(source, f'#include "{RUNTIME_DIR / HEADER}"\n', durable=False)
    write_atomic(folder / HEADER, "// rocm-perf: see host_prebuilt.py\n#include_next <hip/hip_runtime.h>\n", durable=False)
    try:
        if with_object:
            done = subprocess.run([compiler, *flags, "-c", str(OBJECT_SOURCE), "-o", str(tmp_object)],
                                  capture_output=True, text=True, timeout=timeout, cwd=cwd)
            if done.returncode != 0:
                return None
        argv = [compiler, *flags, "-MD", "-MF", str(deps), "-x", "c++-header", str(source), "-o", str(tmp)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        if done.returncode != 0:
            return None
        headers = _header_names(deps.read_text(encoding="utf-8", errors="replace"), compiler)
        write_atomic(folder / "headers.txt", "\n".join(headers) + "\n", durable=False)
        # Each whole or absent: a build beside this one never reads half a file. The object goes
        # in first: a folder with a .gch and no object is one still being made.
        if with_object:
            os.replace(tmp_object, object_path(folder))
        os.replace(tmp, gch)
    finally:
        for leftover in (tmp, tmp_object, deps):
            leftover.unlink(missing_ok=True)
    _prune(folder.parent)
    return folder


def _header_names(make_rule: str, compiler: str) -> list[str]:
    """The names, as an `#include` spells them, of the headers the precompiled header read:
    `vector`, `bits/stl_vector.h`, `stdint.h`, `rocm_perf_host/runtime.h`."""
    roots = (RUNTIME_DIR, *_system_include_dirs(compiler))
    names = set()
    body = make_rule.replace("\\\n", " ").split(":", 1)[-1]
    for word in body.split():
        path = Path(os.path.normpath(word))
        for root in roots:
            if root in path.parents:
                names.add(str(path.relative_to(root)))
                break
    return sorted(names)


def gch_path(folder: Path) -> Path:
    return folder / f"{HEADER}.gch"


def usable_for(folder: Path, user_dirs: list[Path]) -> bool:
    """Whether a build that also searches `user_dirs` (before the standard ones) would read the same
    headers as the precompiled header did: none of their names is in one of `user_dirs`."""
    try:
        names = (folder / "headers.txt").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return not any((d / name).exists() for d in user_dirs for name in names)


def _seen_mark(folder: Path) -> Path:
    return folder.parent / f"{folder.name}.seen"


def _prune(parent: Path) -> None:
    """Keep the `KEEP` most recently used precompiled headers, and the marks of flags built with
    once (_seen_mark) for a week."""
    try:
        entries = sorted((p for p in parent.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
        marks = [p for p in parent.iterdir() if p.suffix == ".seen" and not (parent / p.stem).is_dir()]
    except OSError:
        return
    for old in entries[KEEP:]:
        if time.time() - old.stat().st_mtime > 60:  # not one a build beside this one just made
            shutil.rmtree(old, ignore_errors=True)
            for mark in (f"{old.name}.lock", f"{old.name}.seen"):
                (parent / mark).unlink(missing_ok=True)
    for mark in marks:
        try:
            if time.time() - mark.stat().st_mtime > 7 * 86400:
                mark.unlink()
        except OSError:
            pass
