"""The rewritten region formatted in the user's own style: `clang-format` (the PyPI package's
binary, else one on PATH) on the region's lines only, with the `.clang-format` (or
`_clang-format`) that governs the file.

Where no style file governs the file, nothing is run: the templates already indent with the
file's own unit, and clang-format's built-in styles would impose someone else's (2-space LLVM
indentation, `T *p`). The search for the style file goes up from the file's directory, as
clang-format's own does, and stops at a run directory (one holding `ledger.db`): the copy of the
user's style the run made when it started (optimize/command.py) sits there, and a run without
one is a run of a file no style governed. The formatted text replaces the region only when every
byte outside it is unchanged; otherwise the region stays as rendered.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

STYLE_FILES = (".clang-format", "_clang-format")
RUN_MARKER = "ledger.db"  # a run directory's root (optimize/ledger.py)


def style_file_for(path: Path) -> Path | None:
    """The clang-format style file that governs `path`, or None."""
    directory = Path(path).resolve().parent
    for folder in [directory, *directory.parents]:
        for name in STYLE_FILES:
            if (folder / name).is_file():
                return folder / name
        if (folder / RUN_MARKER).exists():
            return None
    return None


@functools.cache
def clang_format_binary() -> str | None:
    """The PyPI package's clang-format (a dependency of rocm-perf), else one on PATH."""
    try:
        import clang_format  # the PyPI wheel: its binary sits inside the package

        executable = Path(clang_format.get_executable("clang-format"))
        if executable.is_file():
            return str(executable)
    except (ImportError, AttributeError):
        pass
    return shutil.which("clang-format")


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def format_region(path: Path, original: bytes, rewritten: bytes, start: int, length: int) -> tuple[bytes, bytes, str]:
    """(rewritten, its region, how it was formatted) with the region [start, start + length) of
    `rewritten` run through clang-format when a style file governs `path`; unchanged otherwise."""
    region = rewritten[start : start + length]
    style = style_file_for(path)
    binary = clang_format_binary() if style is not None else None
    if style is None or binary is None or not region.strip():
        return rewritten, region, ""
    first, last = _line_of(rewritten, start), _line_of(rewritten, start + max(0, length - 1))
    argv = [binary, f"--style=file:{style}", f"--lines={first}:{last}", f"--assume-filename={Path(path).name}"]
    try:  # bytes in, bytes out: the file's encoding and line endings are its own
        done = subprocess.run(argv, input=rewritten, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return rewritten, region, ""
    if done.returncode != 0:
        return rewritten, region, ""
    formatted = done.stdout
    tail = len(rewritten) - (start + length)
    if formatted[:start] != rewritten[:start] or formatted[len(formatted) - tail :] != rewritten[start + length :]:
        return rewritten, region, ""  # clang-format reached outside the region: keep it as rendered
    new_region = formatted[start : len(formatted) - tail]
    return formatted, new_region, f"clang-format ({style})"
