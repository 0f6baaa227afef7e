"""Loops in a kernel and in the `__device__` helpers it calls: header parts, induction variable,
step, constant trip count, nesting depth, canonical form, block-uniform trip counts; body flags
(body_flags.py) and an existing unroll pragma (pragmas.py).

Loop ids are `KERNEL:FUNCTION:ORDINAL:LINE`: the kernel's name, the function the loop is written
in (the kernel itself or a helper), the loop's 1-based position in a pre-order walk of that
function's body, and its 1-based line. The same file and flags always give the same ids; a rewrite
that adds lines or loops above a loop changes its id, so re-analyze after applying one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from clang.cindex import Cursor, CursorKind, TypeKind

from rocm_perf.source.body_flags import BarrierIndex, LoopFlags, body_flags, written_vars
from rocm_perf.source.cursors import (
    LOOP_KINDS,
    decl_key,
    indentation,
    referenced_var,
    skip_space_and_comments,
    span,
    strip_implicit,
    text,
    tokens_between,
    walk,
)
from rocm_perf.source.kernels import KernelInfo, body_of
from rocm_perf.source.loop_scope import LoopScope, loop_scope
from rocm_perf.source.parse import ParsedSource
from rocm_perf.source.pragmas import macro_definitions, pragma_factor, unroll_pragma
from rocm_perf.source.trip_count import binary_operator, evaluate_int, trip_count, unary_operator

# Values the same for every thread of a block: a trip count built only from these is uniform.
BLOCK_UNIFORM_BUILTINS = {"blockDim", "gridDim", "blockIdx"}
_SIGNED = {TypeKind.CHAR_S, TypeKind.SCHAR, TypeKind.SHORT, TypeKind.INT, TypeKind.LONG,
           TypeKind.LONGLONG, TypeKind.INT128}  # fmt: skip
_UNSIGNED = {TypeKind.CHAR_U, TypeKind.UCHAR, TypeKind.USHORT, TypeKind.UINT, TypeKind.ULONG,
             TypeKind.ULONGLONG, TypeKind.UINT128}  # fmt: skip
_COMPARISONS = {"<", "<=", ">", ">="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
_ASSIGNMENTS = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}


@dataclass
class LoopInfo:
    id: str
    kernel: str
    function: str
    kind: str  # for | while | do | range-for
    line: int
    column: int
    ordinal: int
    depth: int  # 0 = outermost loop of its function
    start: int  # bytes of the loop statement, including a single-statement body's `;`
    end: int
    region_start: int  # where a rewrite begins: the unroll pragma's first byte, else `start`
    body_start: int
    body_end: int
    body_is_compound: bool
    init: str = ""  # header texts as written ("" when absent or not a for loop)
    init_declares: bool = False  # the init declares the induction variable (`int i = 0`)
    cond: str = ""
    inc: str = ""
    induction_var: str | None = None
    var_type: str | None = None
    var_bits: int | None = None
    var_signed: bool | None = None
    compare: str | None = None  # with the induction variable on the left
    bound: str | None = None
    compare_type: str | None = None  # the type the comparison is done in
    compare_bits: int | None = None
    compare_signed: bool | None = None
    # Integer types of the start, bound and step expressions as written (before any conversion):
    # with them the manual rule shows when its "N iterations remain" test cannot overflow.
    start_bits: int | None = None
    start_signed: bool | None = None
    bound_bits: int | None = None
    bound_signed: bool | None = None
    step_bits: int | None = None
    step_signed: bool | None = None
    step_op: str | None = None  # "+=", "-=", "*=", ">>=", ...
    step: str | None = None  # its operand as written ("1" for ++/--)
    start_value: int | None = None
    bound_value: int | None = None
    step_value: int | None = None
    trip_count: int | None = None
    trip_count_note: str = ""
    uniform_trip_count: bool = False  # the same for every thread of a block
    canonical: bool = False  # `for (init; i <,<=,>,>= bound; i++/--/+=/-= step)`, see canonical_note
    canonical_note: str = ""
    flags: LoopFlags = field(default_factory=LoopFlags)
    pragma: str | None = None  # an existing unroll pragma's text, as written
    pragma_start: int | None = None
    pragma_end: int | None = None  # what lies between it and the loop (other pragmas, comments) is kept
    pragma_factor: int | None = None  # the count the pragma asks for (nounroll = 1; None = none given)
    from_macro: bool = False
    skip_reason: str | None = None  # why no rule may touch it
    indent: str = ""  # the indentation of the loop's first line
    at_line_start: bool = True  # nothing but whitespace before region_start on its line
    parent_id: str | None = None
    end_line: int = 0  # the line of the loop's last byte (its `}` or `;`): [line, end_line] is its range
    scope: LoopScope = field(default_factory=LoopScope)  # where the loop sits, for a rewrite that hoists or copies
    child_loops: int = 0  # loops directly inside this one (not inside one of those)

    def to_json(self) -> dict:
        return asdict(self)


# ---- small AST helpers -------------------------------------------------------------------------


def _integer_info(type_) -> tuple[int | None, bool | None]:
    canonical = type_.get_canonical()
    if canonical.kind in _SIGNED:
        return canonical.get_size() * 8, True
    if canonical.kind in _UNSIGNED:
        return canonical.get_size() * 8, False
    return None, None


def _tokens(parsed: ParsedSource, start: int, end: int):
    return tokens_between(parsed.tu, str(parsed.path), start, end)


# ---- body flags --------------------------------------------------------------------------------


# ---- headers -----------------------------------------------------------------------------------


@dataclass
class _Header:
    lparen: int
    semi1: int
    semi2: int
    rparen: int
    tokens: list


def _for_header(parsed: ParsedSource, start: int, body_start: int) -> _Header | None:
    """Offsets of `(`, the two top-level `;` and `)` of a for header (None for odd spellings)."""
    tokens = _tokens(parsed, start, body_start)
    depth, lparen, semis = 0, None, []
    for token in tokens:
        s = token.spelling
        off = token.extent.start.offset
        if s in ("(", "[", "{"):
            depth += 1
            if depth == 1 and s == "(" and lparen is None:
                lparen = off
        elif s in (")", "]", "}"):
            depth -= 1
            if depth == 0 and lparen is not None:
                if len(semis) != 2:
                    return None
                return _Header(lparen, semis[0], semis[1], off, tokens)
        elif s == ";" and depth == 1:
            semis.append(off)
    return None


def _comparison(parsed: ParsedSource, header: _Header) -> tuple[str, int, int] | None:
    """The single top-level comparison token of the condition: (op, start, end)."""
    found = []
    depth = 0
    for token in header.tokens:
        off = token.extent.start.offset
        if not header.semi1 < off < header.semi2:
            continue
        s = token.spelling
        if s in ("(", "["):
            depth += 1
        elif s in (")", "]"):
            depth -= 1
        elif depth == 0 and s in ("<", "<=", ">", ">=", "!=", "&&", "||", "?", ","):
            found.append((s, off, token.extent.end.offset))
    if len(found) != 1 or found[0][0] in ("&&", "||", "?", ","):
        return None
    return found[0]


class _ForAnalysis:
    """Header parts, induction variable, step and trip count of one for loop."""

    def __init__(self, parsed: ParsedSource, loop: Cursor, info: LoopInfo):
        self.parsed, self.loop, self.info = parsed, loop, info
        self.var: Cursor | None = None
        self.init_cursor = self.cond_cursor = self.inc_cursor = self.bound_cursor = None

    def run(self) -> None:
        info, data = self.info, self.parsed.data
        header = _for_header(self.parsed, info.start, info.body_start)
        if header is None:
            info.canonical_note = "header not recognized"
            return
        children = list(self.loop.get_children())[:-1]  # the last child is the body
        for child in children:
            offset = child.extent.start.offset
            if offset < header.semi1:
                self.init_cursor = child
            elif offset < header.semi2:
                self.cond_cursor = child
            else:
                self.inc_cursor = child
        info.init = text(data, header.lparen + 1, header.semi1).strip()
        info.cond = text(data, header.semi1 + 1, header.semi2).strip()
        info.inc = text(data, header.semi2 + 1, header.rparen).strip()
        self._init()
        self._cond(header)
        self._inc(header)
        self._trip_count()

    def _init(self) -> None:
        init = self.init_cursor
        if init is None:
            return
        if init.kind == CursorKind.DECL_STMT:
            decls = [c for c in init.get_children() if c.kind == CursorKind.VAR_DECL]
            if len(decls) == 1:
                self.var = decls[0]
                self.info.init_declares = True
                self.info.start_value = evaluate_int(decls[0])
                initializer = [c for c in decls[0].get_children() if c.kind.is_expression()]
                if initializer:
                    self.info.start_bits, self.info.start_signed = _integer_info(strip_implicit(initializer[-1]).type)
            else:
                self.info.canonical_note = "the init declares several variables"
        elif init.kind == CursorKind.BINARY_OPERATOR and binary_operator(init) == "=":
            lhs, rhs = list(init.get_children())
            self.var = referenced_var(lhs)
            self.info.start_value = evaluate_int(rhs)
            self.info.start_bits, self.info.start_signed = _integer_info(strip_implicit(rhs).type)

    def _cond(self, header: _Header) -> None:
        info, data, cond = self.info, self.parsed.data, self.cond_cursor
        if cond is None:
            return
        cond = strip_implicit(cond)
        op = binary_operator(cond) if cond.kind == CursorKind.BINARY_OPERATOR else None
        token = _comparison(self.parsed, header)
        if op is None or token is None or token[0] != op:
            return
        lhs, rhs = list(cond.get_children())
        lhs_text = text(data, header.semi1 + 1, token[1]).strip()
        rhs_text = text(data, token[2], header.semi2).strip()
        lhs_var, rhs_var = referenced_var(lhs), referenced_var(rhs)
        if self.var is None:
            self.var = lhs_var or rhs_var
        if self.var is None:
            return
        if decl_key(lhs_var) == decl_key(self.var) and lhs_text == self.var.spelling:
            info.compare, info.bound, var_side, bound_side = op, rhs_text, lhs, rhs
        elif decl_key(rhs_var) == decl_key(self.var) and rhs_text == self.var.spelling:
            info.compare, info.bound, var_side, bound_side = _FLIP[op], lhs_text, rhs, lhs
        else:
            return
        info.compare_type = var_side.type.spelling
        info.compare_bits, info.compare_signed = _integer_info(var_side.type)
        info.bound_bits, info.bound_signed = _integer_info(strip_implicit(bound_side).type)
        info.bound_value = evaluate_int(bound_side)
        self.bound_cursor = bound_side

    def _inc(self, header: _Header) -> None:
        info, data, inc = self.info, self.parsed.data, self.inc_cursor
        if inc is None or self.var is None:
            return
        inc = strip_implicit(inc)
        if inc.kind == CursorKind.UNARY_OPERATOR:
            op = unary_operator(inc)
            operand = list(inc.get_children())
            if op in ("pre++", "post++", "pre--", "post--") and operand and decl_key(referenced_var(operand[0])) == decl_key(self.var):
                info.step_op, info.step, info.step_value = ("+=" if "++" in op else "-="), "1", 1
                info.step_bits, info.step_signed = 32, True  # the literal 1
        elif inc.kind in (CursorKind.COMPOUND_ASSIGNMENT_OPERATOR, CursorKind.BINARY_OPERATOR):
            op = binary_operator(inc)
            lhs, rhs = list(inc.get_children())
            if decl_key(referenced_var(lhs)) != decl_key(self.var) or op is None:
                return
            op_token = next(
                (t for t in header.tokens if header.semi2 < t.extent.start.offset < header.rparen and t.spelling == op),
                None,
            )
            if op_token is None:
                return
            rhs_text = text(data, op_token.extent.end.offset, header.rparen).strip()
            if op in ("+=", "-=", "*=", "/=", "<<=", ">>="):
                info.step_op, info.step, info.step_value = op, rhs_text, evaluate_int(rhs)
                info.step_bits, info.step_signed = _integer_info(strip_implicit(rhs).type)
            elif op == "=":
                self._assign_step(rhs)

    def _assign_step(self, rhs: Cursor) -> None:
        """`i = i + s`, `i = s + i`, `i = i - s` count as `+=`/`-=` steps."""
        node = strip_implicit(rhs)
        if node.kind != CursorKind.BINARY_OPERATOR or binary_operator(node) not in ("+", "-"):
            return
        a, b = list(node.get_children())
        op = binary_operator(node)
        if decl_key(referenced_var(a)) == decl_key(self.var):
            step = b
        elif op == "+" and decl_key(referenced_var(b)) == decl_key(self.var):
            step = a
        else:
            return
        start, end = span(step)
        if not (self.info.start <= start <= end <= self.info.body_start):
            return  # from a macro: no trustworthy text
        self.info.step_op, self.info.step = op + "=", text(self.parsed.data, start, end)
        self.info.step_value = evaluate_int(step)
        self.info.step_bits, self.info.step_signed = _integer_info(strip_implicit(step).type)

    def _trip_count(self) -> None:
        info = self.info
        if self.var is not None:
            info.induction_var = self.var.spelling
            info.var_type = self.var.type.spelling
            info.var_bits, info.var_signed = _integer_info(self.var.type)
        missing = [
            name
            for name, value in (("start", info.start_value), ("bound", info.bound_value), ("step", info.step_value))
            if value is None
        ]
        if info.compare is None or info.step_op is None:
            info.trip_count_note = "header is not a simple comparison and step of one variable"
        elif missing:
            parts = {"start": self.init_cursor, "bound": self.bound_cursor, "step": self.inc_cursor}
            info.trip_count_note = "; ".join(f"{name} {_why_not_constant(parts[name], self.var)}" for name in missing)
        elif info.var_bits is None:
            info.trip_count_note = "induction variable is not an integer"
        else:
            count = trip_count(
                info.start_value, info.compare, info.bound_value, info.step_op, info.step_value,
                bits=info.var_bits, signed=bool(info.var_signed),
            )  # fmt: skip
            info.trip_count = count
            if count is None:
                info.trip_count_note = "does not terminate without overflow (or too many iterations to simulate)"


# ---- canonical and uniform ---------------------------------------------------------------------


COORDINATES = {"threadIdx", "blockIdx", "blockDim", "gridDim"}


def is_coordinate_read(call: Cursor) -> bool:
    """`blockDim.x` with the real HIP headers: a call to a conversion operator of the builtin."""
    target = call.referenced
    if target is None or target.kind != CursorKind.CONVERSION_FUNCTION:
        return False
    return any(n.kind == CursorKind.DECL_REF_EXPR and n.spelling in COORDINATES for n in walk(call))


def _why_not_constant(cursor: Cursor | None, var: Cursor | None) -> str:
    """What a header part depends on, in words: the first thing that keeps it from a constant."""
    if cursor is None:
        return "is missing"
    for node in walk(cursor):
        if node.kind != CursorKind.DECL_REF_EXPR or node.referenced is None or decl_key(node.referenced) == decl_key(var):
            continue
        decl = node.referenced
        if decl.kind == CursorKind.TEMPLATE_NON_TYPE_PARAMETER:
            return f"depends on template parameter {decl.spelling}"
        if decl.spelling in COORDINATES:
            return f"depends on {decl.spelling}"
        if decl.kind == CursorKind.PARM_DECL:
            return f"depends on argument {decl.spelling}"
        if decl.kind == CursorKind.VAR_DECL:
            return f"depends on variable {decl.spelling}"
    return "is not a constant"


def _has_side_effects(cursor: Cursor) -> bool:
    for node in walk(cursor):
        if node.kind == CursorKind.CALL_EXPR and not is_coordinate_read(node):
            return True
        if node.kind in (CursorKind.BINARY_OPERATOR, CursorKind.COMPOUND_ASSIGNMENT_OPERATOR):
            if binary_operator(node) in _ASSIGNMENTS:
                return True
        if node.kind == CursorKind.UNARY_OPERATOR and unary_operator(node) in ("pre++", "pre--", "post++", "post--"):
            return True
    return False


def _referenced_decls(cursor: Cursor) -> list[Cursor]:
    return [
        node.referenced
        for node in walk(cursor)
        if node.kind == CursorKind.DECL_REF_EXPR and node.referenced is not None
    ]


def _canonical_note(fa: _ForAnalysis, body: Cursor) -> str:
    """Why the header is not canonical for a manual unroll ("" when it is)."""
    info = fa.info
    if info.canonical_note:
        return info.canonical_note
    if fa.var is None or fa.var.kind != CursorKind.VAR_DECL:
        return "no induction variable"
    if info.var_bits is None:
        return "induction variable is not an integer"
    if info.compare not in _COMPARISONS:
        return "condition is not <, <=, > or >= against the induction variable"
    if _integer_info(fa.bound_cursor.type)[0] is None:
        return "bound is not an integer"
    if not re.fullmatch(r"[A-Za-z_][\w: ]*", info.compare_type or ""):
        return f"the comparison type {info.compare_type!r} cannot be spelled in a cast"
    if info.step_op not in ("+=", "-="):
        return "step is not ++, --, += or -="
    if (info.compare in ("<", "<=")) != (info.step_op == "+="):
        return "step goes away from the bound"
    if fa.init_cursor is not None and fa.init_cursor.kind == CursorKind.BINARY_OPERATOR:
        if _has_side_effects(list(fa.init_cursor.get_children())[1]):
            return "init has side effects"
    inc = strip_implicit(fa.inc_cursor)
    step_parts = list(inc.get_children())[1:] if inc.kind != CursorKind.UNARY_OPERATOR else []
    if _has_side_effects(fa.cond_cursor):
        return "condition has side effects or calls"
    if any(_has_side_effects(p) for p in step_parts):
        return "step has side effects or calls"
    written = written_vars(body)
    if decl_key(fa.var) in written:
        return "the body writes the induction variable"
    for decl in _referenced_decls(fa.cond_cursor) + [d for p in step_parts for d in _referenced_decls(p)]:
        if decl_key(decl) != decl_key(fa.var) and decl_key(decl) in written:
            return f"the body writes {decl.spelling}, which the header reads"
        if decl.kind == CursorKind.VAR_DECL and _shared_or_global(decl):
            return f"the header reads {decl.spelling}, which other threads or calls may change"
    return ""


def _shared_or_global(decl: Cursor) -> bool:
    if any(c.kind == CursorKind.CUDASHARED_ATTR for c in decl.get_children()):
        return True
    parent = decl.semantic_parent
    is_local = parent is not None and parent.kind in (CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE)
    return not is_local and not decl.type.is_const_qualified()


def _initializer(decl: Cursor) -> Cursor | None:
    children = [c for c in decl.get_children() if c.kind.is_expression()]
    return children[-1] if children else None


def _uniform_expression(cursor: Cursor, var_key: tuple | None, kernel_params: set[tuple], depth: int = 0) -> bool:
    """Every thread of a block computes the same value: built from kernel arguments, constants,
    template parameters, blockDim/gridDim/blockIdx and const locals initialized so."""
    for node in walk(cursor):
        if node.kind == CursorKind.CALL_EXPR and not is_coordinate_read(node):
            return False
        if node.kind != CursorKind.DECL_REF_EXPR or node.referenced is None:
            continue
        decl = node.referenced
        if decl.spelling == "threadIdx":
            return False
        if decl_key(decl) == var_key or decl.spelling in BLOCK_UNIFORM_BUILTINS:
            continue
        if decl.kind in (CursorKind.ENUM_CONSTANT_DECL, CursorKind.TEMPLATE_NON_TYPE_PARAMETER):
            continue
        if decl.kind == CursorKind.PARM_DECL and decl_key(decl) in kernel_params:
            continue
        if decl.kind == CursorKind.VAR_DECL and decl.type.is_const_qualified():
            if _integer_info(decl.type)[0] is not None and evaluate_int(decl) is not None:
                continue
            init = _initializer(decl)
            if depth < 8 and init is not None and not _shared_or_global(decl) and _uniform_expression(init, var_key, kernel_params, depth + 1):
                continue
        return False
    return True


def _uniform(fa: _ForAnalysis | None, info: LoopInfo, kernel_params: set[tuple]) -> bool:
    """True when every thread of a block runs the loop the same number of times: a constant
    count, or a header whose every part is a block-uniform expression."""
    if info.trip_count is not None:
        return True
    if fa is None or fa.var is None or info.compare is None or info.step_op is None:
        return False
    parts = [p for p in (fa.init_cursor, fa.cond_cursor, fa.inc_cursor) if p is not None]
    return all(_uniform_expression(p, decl_key(fa.var), kernel_params) for p in parts)


# ---- the walk ----------------------------------------------------------------------------------


def _loop_end(data: bytes, loop: Cursor, kind: str, body: Cursor) -> int:
    """The loop's last byte + 1, with the `;` that ends a single-statement body or a do-while."""
    end = loop.extent.end.offset
    compound = body.kind == CursorKind.COMPOUND_STMT
    if kind == "do" or (not compound and data[end - 1 : end] != b"}"):
        after = skip_space_and_comments(data, end)
        if data[after : after + 1] == b";":
            return after + 1
    return end


def _starts_with_keyword(data: bytes, start: int, kind: str) -> bool:
    keyword = {"for": b"for", "range-for": b"for", "while": b"while", "do": b"do"}[kind]
    after = data[start + len(keyword) : start + len(keyword) + 1]
    return data.startswith(keyword, start) and not (after.isalnum() or after == b"_")


def function_loops(
    parsed: ParsedSource, kernel: KernelInfo, function: Cursor, macros: dict[str, str], barriers: BarrierIndex
) -> list[LoopInfo]:
    """Every loop in one function's body, pre-order, with nesting depth and parent ids."""
    data = parsed.data
    kernel_params = {decl_key(c) for c in kernel.cursor.get_children() if c.kind == CursorKind.PARM_DECL}
    loops: list[LoopInfo] = []

    def visit(node: Cursor, ancestors: list[Cursor], enclosing: list[LoopInfo]) -> None:
        kind = LOOP_KINDS.get(node.kind)
        inner = enclosing
        if kind is not None:
            loops.append(_loop_info(node, ancestors, kind, len(loops) + 1, enclosing))
            inner = enclosing + [loops[-1]]
        for child in node.get_children():
            if child.kind != CursorKind.LAMBDA_EXPR:
                visit(child, ancestors + [node], inner)

    def _loop_info(node: Cursor, ancestors: list[Cursor], kind: str, ordinal: int, enclosing: list[LoopInfo]) -> LoopInfo:
        parent = ancestors[-1] if ancestors else None
        body = list(node.get_children())[-1] if kind != "do" else list(node.get_children())[0]
        start = node.extent.start.offset
        end = _loop_end(data, node, kind, body)
        body_start, body_end = span(body)
        if body.kind != CursorKind.COMPOUND_STMT:
            body_end = end if kind != "do" else body_end
        line = node.extent.start.line
        info = LoopInfo(
            id=f"{kernel.name}:{function.spelling}:{ordinal}:{line}",
            kernel=kernel.name,
            function=function.spelling,
            kind=kind,
            line=line,
            column=node.extent.start.column,
            ordinal=ordinal,
            depth=len(enclosing),
            start=start,
            end=end,
            region_start=start,
            body_start=body_start,
            body_end=body_end,
            body_is_compound=body.kind == CursorKind.COMPOUND_STMT,
            parent_id=enclosing[-1].id if enclosing else None,
            end_line=data.count(b"\n", 0, end - 1) + 1,
        )
        info.from_macro = not _starts_with_keyword(data, start, kind)
        if info.from_macro:
            info.skip_reason = "the loop comes from a macro expansion"
            info.canonical_note = "from a macro"
            info.trip_count_note = "from a macro"
            return info
        pragma = unroll_pragma(parsed, node, parent, macros)
        if pragma:
            info.pragma, info.pragma_start, info.pragma_end = pragma
            info.region_start = pragma[1]
            info.pragma_factor = pragma_factor(pragma[0], macros)
        info.indent = indentation(data, start)[0]
        info.at_line_start = indentation(data, info.region_start)[1]
        fa = None
        if kind == "for":
            fa = _ForAnalysis(parsed, node, info)
            fa.run()
            note = _canonical_note(fa, body)
            info.canonical, info.canonical_note = not note, note
        else:
            info.canonical_note = f"a {kind} loop"
            info.trip_count_note = f"a {kind} loop"
            if kind == "range-for":
                var = next((c for c in node.get_children() if c.kind == CursorKind.VAR_DECL), None)
                info.induction_var = var.spelling if var is not None else None
        info.flags = body_flags(body, fa.var if fa else None, barriers)
        if kind == "for" and info.canonical:
            info.scope = loop_scope(parsed, node, ancestors, body, fa.var)
        info.uniform_trip_count = _uniform(fa, info, kernel_params)
        return info

    body = body_of(function)
    if body is not None:
        visit(body, [function], [])
    for info in loops:
        info.child_loops = sum(1 for other in loops if other.parent_id == info.id)
    return loops


def find_loops(parsed: ParsedSource, kernels: list[KernelInfo]) -> list[LoopInfo]:
    """Loops of every kernel, then of each helper it calls, in source order per function."""
    macros = macro_definitions(parsed)
    barriers = BarrierIndex(str(parsed.path))
    loops: list[LoopInfo] = []
    for kernel in kernels:
        for function in [kernel.cursor] + kernel.helper_cursors:
            loops += function_loops(parsed, kernel, function, macros, barriers)
    return loops
