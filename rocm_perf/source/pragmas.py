"""Unroll pragmas wrapping a loop, in every spelling: `#pragma unroll [N]`, `#pragma clang loop
unroll_count(N)`, `#pragma nounroll`, `_Pragma(...)`, and a macro around `_Pragma`."""

from __future__ import annotations

import re

from clang.cindex import Cursor, CursorKind

from rocm_perf.source.cursors import skip_space_and_comments, text
from rocm_perf.source.parse import ParsedSource

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?!\()[ \t]*(.*)$", re.MULTILINE)


def _directive_end(data: bytes, pos: int) -> int:
    """The end of one pragma item starting at `pos`: a `#pragma` line (with continuations), a
    `_Pragma(...)`, or a macro name (with its arguments, if any)."""
    if data.startswith(b"#", pos):
        end = pos
        while True:
            nl = data.find(b"\n", end)
            if nl < 0:
                return len(data)
            if data[:nl].rstrip(b"\r").endswith(b"\\"):
                end = nl + 1
                continue
            return nl if data[nl - 1 : nl] != b"\r" else nl - 1
    end = pos
    while end < len(data) and (data[end : end + 1].isalnum() or data[end : end + 1] == b"_"):
        end += 1
    after = skip_space_and_comments(data, end)
    if data[after : after + 1] == b"(":
        depth = 0
        for i in range(after, len(data)):
            if data[i : i + 1] == b"(":
                depth += 1
            elif data[i : i + 1] == b")":
                depth -= 1
                if depth == 0:
                    return i + 1
    return end


def unroll_pragma(parsed: ParsedSource, loop: Cursor, parent: Cursor | None, macros: dict[str, str]) -> tuple[str, int, int] | None:
    """The unroll pragma among those wrapping the loop (an attributed statement whose extent
    starts at the first of them): its text, first byte and end."""
    if parent is None or parent.kind != CursorKind.UNEXPOSED_STMT:
        return None
    data = parsed.data
    pos, loop_start = parent.extent.start.offset, loop.extent.start.offset
    while pos < loop_start:
        end = min(_directive_end(data, pos), loop_start)
        written = text(data, pos, end).strip()
        if "unroll" in written or (written.isidentifier() and "unroll" in macros.get(written, "")):
            return written, pos, end
        if end <= pos:
            return None
        pos = skip_space_and_comments(data, end)
    return None


def pragma_factor(pragma: str, macros: dict[str, str]) -> int | None:
    """`#pragma unroll 4`, `unroll(4)`, `unroll_count(4)` -> 4; `nounroll`, `unroll(disable)` -> 1."""
    written = macros.get(pragma, pragma) if pragma.isidentifier() else pragma
    if "nounroll" in written or "unroll(disable)" in written:
        return 1
    match = re.search(r"unroll(?:_count)?\s*\(?\s*(\d+)", written)
    return int(match.group(1)) if match else None


def macro_definitions(parsed: ParsedSource) -> dict[str, str]:
    """`#define NAME text` lines of the file (continuations joined). Read from the bytes: the
    parse's macro records are incomplete for macros inside a precompiled preamble."""
    source = parsed.data.decode("utf-8", errors="replace").replace("\\\r\n", " ").replace("\\\n", " ")
    return {m.group(1): m.group(2) for m in _DEFINE.finditer(source)}
