"""Where a for loop sits and what its body declares: what a rewrite needs to know before it moves
the loop's init out of the header or puts several copies of the body side by side.

- `in_block`: the loop is a statement of a `{ }` block, so statements can go before and after it
  (the body of an `if` without braces is one statement: a rewrite there needs its own block);
- `name_free`: the induction variable's name is spelled nowhere else in that block (nor in the
  header or parameters of what the block belongs to), and no code expanded from a macro after the
  loop refers to it: a declaration `int i = 0;` hoisted out of the header clashes with nothing
  and hides no other `i` from the code after the loop;
- `body_declares`: the names the body declares at its top level; copies of such a body side by
  side need a block each, a body that declares nothing needs none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clang.cindex import Cursor, CursorKind, TokenKind

from rocm_perf.source.cursors import tokens_between, walk
from rocm_perf.source.parse import ParsedSource


@dataclass
class LoopScope:
    in_block: bool = False
    name_free: bool = False
    body_declares: list[str] = field(default_factory=list)


def _declared_names(statement: Cursor) -> list[str]:
    if statement.kind != CursorKind.DECL_STMT:
        return []
    return [c.spelling or "<unnamed>" for c in statement.get_children() if c.kind.is_declaration()]


def body_declarations(body: Cursor) -> list[str]:
    """Names declared at the top level of a loop body (a single-statement body: if it is a declaration)."""
    if body.kind != CursorKind.COMPOUND_STMT:
        return _declared_names(body)
    return [name for child in body.get_children() for name in _declared_names(child)]


def _spelled_outside(parsed: ParsedSource, name: str, begin: int, end: int, hole: tuple[int, int]) -> bool:
    tokens = tokens_between(parsed.tu, str(parsed.path), begin, end)
    return any(t.kind == TokenKind.IDENTIFIER and t.spelling == name and not hole[0] <= t.extent.start.offset < hole[1]
               for t in tokens)  # fmt: skip


def _referred_after(block: Cursor, name: str, after: int) -> bool:
    """A cursor after `after` in the block that names `name` (macro expansions included: their
    cursors exist though their tokens are the macro's)."""
    for child in block.get_children():
        if child.extent.end.offset <= after:
            continue
        for node in walk(child):
            if node.spelling == name and node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.VAR_DECL,
                                                       CursorKind.MEMBER_REF_EXPR, CursorKind.PARM_DECL):  # fmt: skip
                if node.extent.start.offset >= after:
                    return True
    return False


def loop_scope(parsed: ParsedSource, loop: Cursor, ancestors: list[Cursor], body: Cursor, var: Cursor | None) -> LoopScope:
    """The scope facts of one canonical for loop; `ancestors` are its AST parents, nearest last
    (an unroll pragma puts an attributed statement between a loop and its block)."""
    scope = LoopScope(body_declares=body_declarations(body))
    chain = list(ancestors)
    statement_start = loop.extent.start.offset
    while chain and chain[-1].kind == CursorKind.UNEXPOSED_STMT:  # `#pragma unroll N` around the loop
        statement_start = min(statement_start, chain[-1].extent.start.offset)
        chain.pop()
    if not chain or chain[-1].kind != CursorKind.COMPOUND_STMT:
        return scope
    scope.in_block = True
    block = chain[-1]
    owner = chain[-2] if len(chain) >= 2 else block  # the function or statement the block belongs to
    if var is None:
        return scope
    name = var.spelling
    hole = (statement_start, loop.extent.end.offset)
    begin = min(owner.extent.start.offset, block.extent.start.offset)
    spelled = _spelled_outside(parsed, name, begin, block.extent.end.offset, hole)
    scope.name_free = not spelled and not _referred_after(block, name, loop.extent.end.offset)
    return scope
