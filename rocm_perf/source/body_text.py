"""A loop body's text as a rewrite copies it: with or without its braces, moved to another
indentation, comments and line breaks as written (LF line endings; the rewrite restores the file's)."""

from __future__ import annotations

from rocm_perf.source.cursors import indentation, text
from rocm_perf.source.loops import LoopInfo


def reindent(block: str, old: str, new: str) -> str:
    """Every line after the first moved from indentation `old` to `new` (a line indented less than
    `old` keeps its own; blank lines become empty). The first line is the caller's to place."""
    lines = block.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old) :])
        else:
            out.append(line)
    return "\n".join(out)


def _lf(s: str) -> str:
    return s.replace("\r\n", "\n")


def _statement_indent(data: bytes, loop: LoopInfo, unit: str) -> str:
    """The indentation a single-statement body is written at: its own line's, else one unit in."""
    own, starts_line = indentation(data, loop.body_start)
    return own if starts_line else loop.indent + unit


def body_copy(data: bytes, loop: LoopInfo, unit: str, at: str, braced: bool) -> str:
    """The body as one copy placed at indentation `at` (its first line without it): `{ ... }` when
    `braced`, else its statements alone."""
    body = _lf(text(data, loop.body_start, loop.body_end))
    if loop.body_is_compound:
        if braced:
            return reindent(body, loop.indent, at)
        head, newline, rest = body[1:-1].partition("\n")
        lines = ([head.strip()] if head.strip() else []) + (rest.split("\n") if newline else [])
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines:
            return ";"
        if len(lines) == 1:
            return lines[0].strip()
        own_lines = [l for l in (lines[1:] if head.strip() else lines) if l.strip()]
        first_own = own_lines[0] if own_lines else ""
        base = first_own[: len(first_own) - len(first_own.lstrip(" \t"))]
        return reindent("\n".join([lines[0].strip()] + [l.rstrip() for l in lines[1:]]), base, at)
    statement = reindent(body.strip(), _statement_indent(data, loop, unit), at)
    return "{ " + statement + " }" if braced else statement


def loop_body(data: bytes, loop: LoopInfo, unit: str, at: str) -> str:
    """The body as written, to follow a loop header placed at indentation `at`: a block moves with
    the header (after a space), a single statement keeps its own line when it had one."""
    body = _lf(text(data, loop.body_start, loop.body_end))
    if loop.body_is_compound:
        return " " + reindent(body, loop.indent, at)
    own, starts_line = indentation(data, loop.body_start)
    if not starts_line:
        return " " + reindent(body.strip(), loop.indent + unit, at + unit)
    return "\n" + at + unit + reindent(body.strip(), own, at + unit)
