"""The host runtime's headers, precompiled once per compiler and flags, for every later host build.

Parsing the runtime's headers (and the standard headers they pull in) is about a fifth of the
CPU of a host build (docs/performance.md). GCC reads a precompiled header in its place when it
finds `hip/hip_runtime.h.gch` in an include directory searched before the header's own, and
silently reads the header itself when the `.gch` cannot be used: other macros defined first,
other options, or `#include <hip/hip_runtime.h>` not the unit's first include (GCC manual,
"Using Precompiled Headers"). So a `.gch` can make a build faster but never changes what it
compiles, with one exception GCC does not check: a header in the user's source directory that
shadows a standard header the runtime includes (a `vector` or `stdint.h` beside the `.cu`).
`usable_for` refuses those.

The precompiled headers live in the user's cache directory ($ROCM_PERF_CACHE_DIR, else
$XDG_CACHE_HOME/rocm-perf, else ~/.cache/rocm-perf), one folder per key: the compiler (its path
and `--version`), the flags, and the content of every runtime header. A runtime edited, a
compiler upgraded or a flag changed is another key. Only the newest `KEEP` are kept (each is
about 100 MB). Any failure to make one (not GCC, a full disk, a read-only cache) means the
build goes on without it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from rocm_perf.atomic_file import write_atomic

RUNTIME_DIR = Path(__file__).resolve().parent / "host_runtime"
HEADER = Path("hip") / "hip_runtime.h"
KEEP = 8
# Opting out: ROCM_PERF_HOST_PCH=0 (builds then parse the headers each time, as before).
ENV_SWITCH = "ROCM_PERF_HOST_PCH"


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


def key(identity: str, flags: list[str], cwd: Path) -> str:
    text = "\n".join([identity, runtime_digest(), str(cwd), *flags])  # cwd: relative -I paths
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def precompiled_dir(compiler: str, flags: list[str], cwd: Path | None = None, timeout: float = 300) -> Path | None:
    """A directory holding `hip/hip_runtime.h.gch` made with `flags` (the build's own, with the
    runtime's `-I` in its place, without the source's directory), made now if it is not in the
    cache; None where there is none to be had. Put it on the include path before the runtime's."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return None
    identity = gcc_identity(compiler)
    if identity is None:
        return None
    cwd = Path(cwd or Path.cwd()).resolve()
    folder = cache_root() / "host-pch" / key(identity, flags, cwd)
    gch = folder / f"{HEADER}.gch"
    if gch.is_file() and (folder / "headers.txt").is_file():
        try:
            os.utime(folder)  # the newest are kept
        except OSError:
            pass
        return folder
    try:
        return _make(compiler, flags, folder, cwd, timeout)
    except (OSError, subprocess.SubprocessError):
        return None


def _make(compiler: str, flags: list[str], folder: Path, cwd: Path, timeout: float) -> Path | None:
    (folder / HEADER.parent).mkdir(parents=True, exist_ok=True)
    gch = folder / f"{HEADER}.gch"
    tmp = gch.with_name(f".{gch.name}.tmp-{os.getpid()}")
    deps = folder / f".deps.tmp-{os.getpid()}"
    # The .gch is made from a file that includes the runtime's header (so that the header is marked
    # #pragma once inside it), and stands beside a header of the same name for every later
    # `#include <hip/hip_runtime.h>` of the unit, which GCC reads instead of a second .gch: it
    # reaches the runtime's, which the .gch has marked as read.
    source = folder / "precompiled.h"
    write_atomic(source, f'#include "{RUNTIME_DIR / HEADER}"\n', durable=False)
    write_atomic(folder / HEADER, "// rocm-perf: see host_pch.py\n#include_next <hip/hip_runtime.h>\n", durable=False)
    argv = [compiler, *flags, "-MD", "-MF", str(deps), "-x", "c++-header", str(source), "-o", str(tmp)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        if done.returncode != 0:
            return None
        headers = _header_names(deps.read_text(encoding="utf-8", errors="replace"), compiler)
        write_atomic(folder / "headers.txt", "\n".join(headers) + "\n", durable=False)
        os.replace(tmp, gch)  # whole or absent: a build beside this one never reads half a .gch
    finally:
        tmp.unlink(missing_ok=True)
        deps.unlink(missing_ok=True)
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


def _prune(parent: Path) -> None:
    """Keep the `KEEP` most recently used precompiled headers."""
    try:
        entries = sorted((p for p in parent.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in entries[KEEP:]:
        if time.time() - old.stat().st_mtime > 60:  # not one a build beside this one just made
            shutil.rmtree(old, ignore_errors=True)
