"""Compile first: a build per content, and what a built program is.

- `build_key`: the content hash a build is cached under: the rendered source's bytes, the flags,
  the backend and its compiler (`compiler_identity`: its path and `--version`). Two candidates
  that render the same source share one build, and a resumed run never rebuilds what it built.
- `location_flags`: builds are made independent of the directory they are made in
  (`-fmacro-prefix-map=DIR/=`, GCC and clang alike): a `__FILE__` in an error macro then names
  `source.cu` in every build, so that builds of the same code in two trial directories are
  byte-identical.
- `code_identity`: a hash of what a built program runs: the ELF file's executable sections and
  read-only data (a program on the rocm backend carries its device code objects there too);
  identical code in two builds gives the same hash, whatever the notes or symbols say. A file
  that is not ELF (a test double) is hashed whole.
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
from functools import lru_cache
from pathlib import Path

SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHT_NOBITS = 8
SHT_NOTE = 7


def location_flags(source: Path) -> list[str]:
    """Flags that keep the build directory out of the built program."""
    return [f"-fmacro-prefix-map={Path(source).resolve().parent}/="]


@lru_cache(maxsize=16)
def _compiler_version(compiler: str) -> str:
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unknown ({e})"
    return " ".join(done.stdout.splitlines()[:2])


def compiler_identity(backend) -> str:
    """The backend, its device and its compiler (path and version), as one line for build keys."""
    compiler = getattr(backend, "compiler", None)
    if compiler is None and getattr(backend, "name", "") == "rocm":
        from rocm_perf.backends.hipcc import find_hipcc

        compiler = find_hipcc()
    version = _compiler_version(str(compiler)) if compiler else ""
    return f"{backend.name} | {backend.describe()} | {compiler or '-'} | {version}"


def build_key(source: bytes, flags: list[str], compiler: str) -> str:
    """The content hash of one build (hex, 20 characters)."""
    h = hashlib.sha256()
    for part in (source, "\0".join(flags).encode(), compiler.encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:20]


def code_identity(path: Path) -> str:
    """sha256 of a built program's code: its ELF executable and read-only data sections (name and
    bytes, in file order), or of the whole file when it is not an ELF file."""
    data = Path(path).read_bytes()
    sections = elf_sections(data)
    h = hashlib.sha256()
    if sections is None:
        h.update(data)
        return "file:" + h.hexdigest()
    for name, flags, kind, payload in sections:
        if not flags & SHF_ALLOC or kind in (SHT_NOBITS, SHT_NOTE):
            continue
        if flags & SHF_EXECINSTR or name.startswith((".rodata", ".hip_fatbin", ".nv_fatbin")):
            h.update(name.encode() + b"\0" + hashlib.sha256(payload).digest())
    return "elf:" + h.hexdigest()


def elf_sections(data: bytes) -> list[tuple[str, int, int, bytes]] | None:
    """(name, flags, type, bytes) of every section of an ELF file (32 or 64 bit, either byte
    order), or None when `data` is not one. After the ELF specification's header layout."""
    if len(data) < 52 or data[:4] != b"\x7fELF":
        return None
    wide = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    try:
        if wide:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
            header = order + "IIQQQQIIQQ"
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
            header = order + "IIIIIIIIII"
        raw = []
        for i in range(shnum):
            name, kind, flags, _addr, offset, size, *_ = struct.unpack_from(header, data, shoff + i * shentsize)
            raw.append((name, kind, flags, offset, size))
        names_at = raw[shstrndx][3]
        out = []
        for name, kind, flags, offset, size in raw:
            end = data.index(b"\0", names_at + name)
            payload = b"" if kind == SHT_NOBITS else data[offset: offset + size]
            out.append((data[names_at + name: end].decode(errors="replace"), flags, kind, payload))
        return out
    except (struct.error, IndexError, ValueError):
        return None
