"""Parse a HIP source with libclang: the device-side compile job, real HIP headers or our stub.

The clang resource directory is found at run time (the PyPI wheel ships libclang without one).
Real mode uses the machine's HIP headers; stub mode uses `stub/hip/*.h` (package data) and
`-nogpuinc`. Error diagnostics fail the parse with the compiler's message; warnings are kept.
"""

from __future__ import annotations

import functools
import os
import shlex
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from clang.cindex import Diagnostic, Index, TranslationUnit

from rocm_perf.clang_resources import ROCTX_DECLARATIONS, find_resource_dir
from rocm_perf.errors import RocmPerfError

STUB_DIR = Path(__file__).resolve().parent / "stub"
DEFAULT_ARCH = "gfx90a"
# Flags of a build command line that change what the preprocessor and the parser see.
_JOINED_FLAGS = ("-D", "-U", "-I", "-std=", "-isystem", "-iquote", "-include")
_SEPARATE_FLAGS = ("-D", "-U", "-I", "-isystem", "-iquote", "-include")


class ParseError(RocmPerfError):
    """A source that does not parse; `errors` holds each error diagnostic in the parsed file as
    (line, column, message), so that a guard can name the first one's line."""

    def __init__(self, message: str, errors: list[tuple[int, int, str]]):
        super().__init__(message)
        self.errors = errors


@dataclass(frozen=True)
class ParseSetup:
    """How sources are parsed on this machine."""

    mode: str  # "real" (the machine's HIP headers) or "stub" (our stub header)
    resource_dir: Path
    hip_root: Path | None  # --rocm-path in real mode
    args: tuple[str, ...]


@dataclass
class ParsedSource:
    """One parse: the bytes libclang saw (offsets index into them) and its translation unit."""

    path: Path
    data: bytes
    tu: TranslationUnit = field(repr=False)
    setup: ParseSetup
    flags: tuple[str, ...]
    warnings: list[str]
    _top_level: list | None = field(default=None, repr=False)
    # (line, column, message) of each error in the file, when parsed with tolerate_errors
    errors: list[tuple[int, int, str]] = field(default_factory=list)

    def top_level(self) -> list:
        """The translation unit's top-level cursors written in this file (computed once: the
        headers contribute tens of thousands of declarations to skip)."""
        if self._top_level is None:
            from rocm_perf.source.cursors import main_file_children

            self._top_level = main_file_children(self.tu.cursor)
        return self._top_level


def find_hip_root() -> Path | None:
    """The prefix whose include/hip/hip_runtime.h is the machine's real HIP header, if any."""
    candidates = [os.environ.get("ROCM_PATH"), "/opt/rocm", "/usr"]
    for root in candidates:
        if root and (Path(root) / "include" / "hip" / "hip_runtime.h").is_file():
            return Path(root)
    return None


@functools.cache
def parse_setup(mode: str | None = None) -> ParseSetup:
    """Real HIP headers when the machine has them, else our stub. $ROCM_PERF_SOURCE_MODE or
    `mode` ("real" / "stub") forces one."""
    mode = mode or os.environ.get("ROCM_PERF_SOURCE_MODE") or None
    resource_dir = find_resource_dir()
    hip_root = find_hip_root()
    if mode is None:
        mode = "real" if hip_root is not None else "stub"
    if mode == "real":
        if hip_root is None:
            raise RocmPerfError("real HIP headers requested but no include/hip/hip_runtime.h found")
        args = [
            "-x", "hip", f"--offload-arch={DEFAULT_ARCH}", f"--rocm-path={hip_root}", "-nogpulib",
            "--cuda-device-only", "-resource-dir", str(resource_dir), "-std=c++17",
            "-Wno-unused-result",
        ]  # fmt: skip
    elif mode == "stub":
        args = [
            "-x", "hip", f"--offload-arch={DEFAULT_ARCH}", "-nogpuinc", "-nogpulib",
            "--cuda-device-only", "-resource-dir", str(resource_dir), "-std=c++17",
            "-isystem", str(STUB_DIR), "-include", "__clang_hip_runtime_wrapper.h",
        ]  # fmt: skip
    else:
        raise RocmPerfError(f"unknown source parse mode {mode!r}: expected 'real' or 'stub'")
    args += ["-idirafter", str(ROCTX_DECLARATIONS)]  # roctx where the machine's ROCm has no headers for it
    return ParseSetup(mode, resource_dir, hip_root if mode == "real" else None, tuple(args))


def build_flags(flags: list[str] | tuple[str, ...] | str) -> list[str]:
    """The preprocessor/language flags of a build command line (-D -U -I -std -isystem -iquote
    -include); everything else (optimization, arch, outputs) does not change the parse."""
    items = shlex.split(flags) if isinstance(flags, str) else list(flags)
    kept: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        if item in _SEPARATE_FLAGS and i + 1 < len(items):
            kept += [item, items[i + 1]]
            i += 2
            continue
        if item.startswith(_JOINED_FLAGS):
            kept.append(item)
        i += 1
    return kept


def _format(d: Diagnostic) -> str:
    where = d.location.file.name if d.location.file else "<command line>"
    return f"{where}:{d.location.line}:{d.location.column}: {d.spelling}"


# One translation unit per (file, arguments), re-parsed for new contents: the headers' precompiled
# preamble (built on the first re-parse) makes later re-parses about ten times faster. A re-parse invalidates the
# previous cursors, so analyses keep plain data only (see analysis.py), and PARSE_LOCK serializes.
_INDEX: Index | None = None
_TU_CACHE: OrderedDict[tuple, TranslationUnit] = OrderedDict()
_TU_CACHE_SIZE = 4
_OPTIONS = (
    TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD  # macro definitions and uses
    | TranslationUnit.PARSE_PRECOMPILED_PREAMBLE
)
PARSE_LOCK = threading.RLock()


def _translation_unit(path: Path, args: list[str], data: bytes) -> TranslationUnit:
    global _INDEX
    if _INDEX is None:
        _INDEX = Index.create()
    key = (str(path), tuple(args))
    unsaved = [(str(path), data)]
    tu = _TU_CACHE.get(key)
    if tu is not None:
        _TU_CACHE.move_to_end(key)
        tu.reparse(unsaved_files=unsaved)
        return tu
    tu = _INDEX.parse(str(path), args=args, unsaved_files=unsaved, options=_OPTIONS)
    # A unit that does not compile is not kept: a re-parse over its preamble drops the preamble's
    # own errors (a header not found) and reports what follows from them instead, so the same
    # bytes would read differently the second time.
    if not any(d.severity >= Diagnostic.Error for d in tu.diagnostics):
        _TU_CACHE[key] = tu
        while len(_TU_CACHE) > _TU_CACHE_SIZE:
            _TU_CACHE.popitem(last=False)
    return tu


def parse_bytes(path: Path, data: bytes, flags=(), *, mode: str | None = None, tolerate_errors: bool = False) -> ParsedSource:
    """Parse `data` as if it were the file at `path` (its includes resolve next to it).

    Hold PARSE_LOCK while using the result: the next parse of the same file re-uses its
    translation unit. Raises ParseError (a RocmPerfError) with the first error diagnostics when the
    source does not compile, unless `tolerate_errors` (libclang builds an AST all the same: the
    result's `errors` lists them).
    """
    setup = parse_setup(mode)
    user = build_flags(flags)
    path = Path(path).resolve()
    # Strict C++ would reject a stray NUL; ctypes would silently cut the buffer there.
    if b"\0" in data:
        raise RocmPerfError(f"{path}: contains a NUL byte; not a source file")
    with PARSE_LOCK:
        tu = _translation_unit(path, list(setup.args) + user, data)
        errors, warnings, located = [], [], []
        for d in tu.diagnostics:
            if d.severity >= Diagnostic.Error:
                errors.append(_format(d))
                if d.location.file is not None and d.location.file.name == str(path):
                    located.append((d.location.line, d.location.column, d.spelling))
            elif d.severity == Diagnostic.Warning:
                warnings.append(_format(d))
    if errors and not tolerate_errors:
        shown = "; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
        raise ParseError(f"{path}: does not parse ({setup.mode} HIP headers): {shown}", located)
    return ParsedSource(path, data, tu, setup, tuple(user), warnings, errors=located)


def parse_file(path: Path, flags=(), *, mode: str | None = None) -> ParsedSource:
    """Parse a source file from disk (read once; the file is never written)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read: {e.strerror}") from None
    return parse_bytes(path, data, flags, mode=mode)
