"""C++ symbol demangling through the system's c++filt (or llvm-cxxfilt)."""

from __future__ import annotations

import shutil

from rocm_perf import process


def demangle_all(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled for every name; a name the tool cannot demangle maps to itself.

    Without c++filt or llvm-cxxfilt, every name maps to itself.
    """
    unique = list(dict.fromkeys(n for n in names if n))
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not unique or tool is None:
        return {n: n for n in unique}
    done = process.run([tool, *unique], timeout=30)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(unique):
        return {n: n for n in unique}
    return dict(zip(unique, lines))
