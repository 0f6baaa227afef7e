"""Walking libclang cursors and reading their bytes.

Offsets are byte offsets into the parsed buffer (libclang counts bytes, `\\r` included), so text
is always sliced from bytes and decoded afterwards.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Iterator

from clang.cindex import Cursor, CursorKind, SourceLocation, SourceRange, Token, TokenKind, TranslationUnit, conf

LOOP_KINDS = {
    CursorKind.FOR_STMT: "for",
    CursorKind.WHILE_STMT: "while",
    CursorKind.DO_STMT: "do",
    CursorKind.CXX_FOR_RANGE_STMT: "range-for",
}


def text(data: bytes, start: int, end: int) -> str:
    """Bytes [start, end) as text; undecodable bytes survive a round trip (surrogateescape)."""
    return data[start:end].decode("utf-8", errors="surrogateescape")


def span(cursor: Cursor) -> tuple[int, int]:
    return cursor.extent.start.offset, cursor.extent.end.offset


def in_file(cursor: Cursor, path: str) -> bool:
    f = cursor.location.file
    return f is not None and f.name == path


def walk(cursor: Cursor) -> Iterator[Cursor]:
    """Pre-order: the cursor, then every descendant."""
    yield cursor
    for child in cursor.get_children():
        yield from walk(child)


@functools.cache
def _is_from_main_file():
    fn = conf.lib.clang_Location_isFromMainFile
    fn.argtypes = [SourceLocation]
    fn.restype = ctypes.c_int
    return fn


def from_main_file(cursor: Cursor) -> bool:
    """Written in the parsed file (after macro expansion), not in a header. One C call: the
    translation unit has tens of thousands of header declarations to skip."""
    return bool(_is_from_main_file()(cursor.location))


def main_file_children(cursor: Cursor) -> list[Cursor]:
    return [c for c in cursor.get_children() if from_main_file(c)]


def walk_all(cursors: list[Cursor]) -> Iterator[Cursor]:
    """Pre-order over several trees (e.g. a parse's top-level cursors of the main file)."""
    for cursor in cursors:
        yield from walk(cursor)


def strip_implicit(cursor: Cursor) -> Cursor:
    """Look through implicit casts and parentheses to the expression underneath."""
    while cursor.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.PAREN_EXPR):
        children = list(cursor.get_children())
        if len(children) != 1:
            break
        cursor = children[0]
    return cursor


def tokens_between(tu: TranslationUnit, path: str, start: int, end: int) -> list[Token]:
    """Raw tokens of the main file whose first byte lies in [start, end), comments dropped.

    Built from byte offsets: an extent that starts at a macro use yields no tokens."""
    file = tu.get_file(path)
    extent = SourceRange.from_locations(SourceLocation.from_offset(tu, file, start), SourceLocation.from_offset(tu, file, end))
    return [t for t in tu.get_tokens(extent=extent) if t.kind != TokenKind.COMMENT and t.extent.start.offset < end]


def skip_space_and_comments(data: bytes, pos: int) -> int:
    """The first offset at or after `pos` that is not whitespace or inside a comment."""
    n = len(data)
    while pos < n:
        if data[pos : pos + 1].isspace():
            pos += 1
        elif data.startswith(b"//", pos):
            nl = data.find(b"\n", pos)
            pos = n if nl < 0 else nl + 1
        elif data.startswith(b"/*", pos):
            close = data.find(b"*/", pos + 2)
            pos = n if close < 0 else close + 2
        else:
            break
    return pos


def line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def indentation(data: bytes, pos: int) -> tuple[str, bool]:
    """The whitespace before `pos` on its line, and whether only whitespace precedes it there."""
    begin = line_start(data, pos)
    before = data[begin:pos]
    if before.strip(b" \t") == b"":
        return before.decode("ascii"), True
    lead = len(before) - len(before.lstrip(b" \t"))
    return before[:lead].decode("ascii"), False


def newline_of(data: bytes) -> str:
    """The file's own line ending (CRLF when its first line ends so)."""
    nl = data.find(b"\n")
    return "\r\n" if nl > 0 and data[nl - 1 : nl] == b"\r" else "\n"


def decl_key(cursor: Cursor | None) -> tuple | None:
    """An identity for a declaration that survives re-fetching the cursor."""
    if cursor is None or cursor.location.file is None:
        return None
    return (cursor.location.file.name, cursor.location.offset, cursor.spelling)


def referenced_var(cursor: Cursor) -> Cursor | None:
    node = strip_implicit(cursor)
    if node.kind == CursorKind.DECL_REF_EXPR and node.referenced is not None:
        return node.referenced
    return None


def base_var(cursor: Cursor) -> Cursor | None:
    """The variable an lvalue expression is rooted in: `p.n`, `a[i]`, `x` -> p, a, x."""
    node = strip_implicit(cursor)
    while node.kind in (CursorKind.MEMBER_REF_EXPR, CursorKind.ARRAY_SUBSCRIPT_EXPR):
        children = list(node.get_children())
        if not children:
            return None
        node = strip_implicit(children[0])
    return referenced_var(node)
