"""Can libclang parse HIP here? Asked before any work by every command that needs it.

`optimize` used to find out after building and measuring its baseline (half a minute and more);
this check costs a library load and a parse of a two-line kernel against the stub header (tens of
milliseconds: clang's HIP wrapper header, which alone takes over a second to parse, is asked for by
`__has_include` instead of parsed), so a machine without clang's resource headers stops at once
with the one command to run.
"""

from __future__ import annotations

import functools
from pathlib import Path

from clang.cindex import Diagnostic, Index, LibclangError, TranslationUnitLoadError

from rocm_perf.clang_resources import install_hint
from rocm_perf.errors import RocmPerfError
from rocm_perf.source.parse import parse_setup

_CHECK_FILE = "rocm-perf-libclang-check.hip"  # never written: handed to libclang as unsaved content
_WRAPPER = "__clang_hip_runtime_wrapper.h"
_CHECK_SOURCE = (
    f"#if !__has_include(<{_WRAPPER}>)\n#error no {_WRAPPER} among the clang resource headers\n#endif\n"
    "#include <hip/hip_runtime.h>\n"  # the stub's, which includes the resource dir's stddef.h
    "__global__ void check(float *x) { x[threadIdx.x] = 1.0f; }\n"
).encode()


def _without_wrapper(args: tuple[str, ...]) -> list[str]:
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-include":
            skip = True
        else:
            kept.append(a)
    return kept


@functools.cache
def require_libclang() -> str:
    """Return where the clang resource headers were found when libclang loads, finds them and
    parses a HIP kernel on this machine; else raise RocmPerfError naming the command to run.

    The parse uses the stub HIP header: what it proves is the library and the resource headers,
    which both header modes need. A success is remembered for the process."""
    setup = parse_setup("stub")  # RocmPerfError naming the install command when no headers are found
    path = str(Path.cwd() / _CHECK_FILE)
    try:
        tu = Index.create().parse(path, args=_without_wrapper(setup.args), unsaved_files=[(path, _CHECK_SOURCE)])
    except (LibclangError, OSError, TranslationUnitLoadError) as e:
        raise RocmPerfError(f"libclang cannot be loaded or cannot parse ({e}); run: {install_hint()} "
                            "and reinstall the libclang wheel (pip install --force-reinstall libclang)") from None
    errors = [d.spelling for d in tu.diagnostics if d.severity >= Diagnostic.Error]
    if errors:
        raise RocmPerfError(f"libclang cannot parse HIP with the clang headers in {setup.resource_dir} "
                            f"({errors[0]}); run: {install_hint()}  (or set ROCM_PERF_CLANG_RESOURCE_DIR)")
    return str(setup.resource_dir)
