"""The HIP libraries on the host backend: which ones a translation unit uses, and what its compile
and link then need.

A unit uses a library when one of its files includes the library's headers (`<thrust/...>`,
`<hipcub/...>`, `<hipblas.h>`, `<hiprand/...>`, `<rocrand/...>`, `<rccl.h>`); the headers
themselves are the host runtime's (host_runtime/: hipcub/, hipblas/, hiprand/, rocrand/, rccl/),
except rocThrust's, which are Debian's Thrust (libthrust-dev) run on its OpenMP system with the
runtime's tracing layer (rocm_perf_host/thrust_trace.h). hipBLAS computes with a CPU BLAS
(Debian's OpenBLAS, libopenblas-dev).
"""

from __future__ import annotations

import ctypes.util
import re
from pathlib import Path

from rocm_perf.errors import RocmPerfError

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([A-Za-z_]+)(?:/|\.h)', re.MULTILINE)
# The first component an #include names -> the library it belongs to.
LIBRARY_OF = {"thrust": "rocthrust", "hipcub": "hipcub", "cub": "hipcub", "hipblas": "hipblas", "hiprand": "hiprand",
              "rocrand": "hiprand", "rccl": "rccl"}
THRUST_HEADERS = (Path("/usr/include/thrust/version.h"), Path("/usr/local/include/thrust/version.h"))
THRUST_FLAGS = ["-fopenmp", "-DTHRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP", "-include", "rocm_perf_host/thrust_trace.h"]
# Linked into every host program, kept only when an object needs it (--as-needed): the OpenMP
# runtime of rocThrust's units, the CPU BLAS of hipBLAS's.
AS_NEEDED = ["-Wl,--push-state,--as-needed", "-lgomp", "-Wl,--pop-state"]
# Link options of the real libraries -> what the host build links instead ([] : header-only here).
LINKED_AS = {"-lhipblas": ["-lopenblas"], "-lrocblas": ["-lopenblas"], "-lhipcub": [], "-lrocprim": [],
             "-lrocthrust": [], "-lhiprand": [], "-lrocrand": [], "-lrccl": []}


def used_libraries(texts) -> set[str]:
    """The HIP libraries the sources `texts` include."""
    found = set()
    for text in texts:
        for m in _INCLUDE.finditer(text):
            library = LIBRARY_OF.get(m.group(1))
            if library:
                found.add(library)
    return found


def compile_flags(libraries: set[str]) -> list[str]:
    """Flags a unit using `libraries` compiles with; RocmPerfError naming a missing package."""
    flags: list[str] = []
    if "rocthrust" in libraries:
        if not any(p.is_file() for p in THRUST_HEADERS):
            raise RocmPerfError("rocThrust on the host backend runs Debian's Thrust headers, which are not installed: "
                                "apt-get install libthrust-dev")
        flags += THRUST_FLAGS
    return flags


def link_flags(libraries: set[str]) -> list[str]:
    """Libraries a program whose units use `libraries` links (after its objects)."""
    flags: list[str] = []
    if "rocthrust" in libraries:
        flags.append("-fopenmp")
    if "hipblas" in libraries:
        flags += blas_link_flags()
    return flags


def blas_link_flags() -> list[str]:
    if ctypes.util.find_library("openblas") is None:
        raise RocmPerfError("hipBLAS on the host backend computes with OpenBLAS, which is not installed: "
                            "apt-get install libopenblas-dev")
    return ["-lopenblas"]


def replaced_link_option(option: str) -> list[str] | None:
    """What the host build links for a real library's `-l` option, or None when it is not one."""
    if option not in LINKED_AS:
        return None
    return blas_link_flags() if LINKED_AS[option] == ["-lopenblas"] else []
