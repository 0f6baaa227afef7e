"""What a loop body contains: break/continue that leave the loop, goto, labels, return,
barriers (also through helpers it calls), atomics, `__shared__`/static declarations, and which
variables it writes."""

from __future__ import annotations

from dataclasses import dataclass

from clang.cindex import Cursor, CursorKind, TypeKind

from rocm_perf.source.cursors import LOOP_KINDS, base_var, decl_key, walk
from rocm_perf.source.trip_count import binary_operator, unary_operator

BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
            "__builtin_amdgcn_s_barrier", "__barrier"}  # fmt: skip
ATOMIC_PREFIXES = ("atomic", "__hip_atomic", "__atomic", "safeAtomic", "unsafeAtomic")
_ASSIGNMENTS = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}


@dataclass
class LoopFlags:
    """What the body contains (break/continue only where they leave this loop)."""

    has_break: bool = False
    has_continue: bool = False
    has_goto: bool = False
    has_return: bool = False
    has_label: bool = False
    has_barrier: bool = False  # __syncthreads & co., also inside helpers it calls
    has_atomic: bool = False
    writes_induction_var: bool = False
    declares_shared: bool = False  # a __shared__ declaration: copying the body would duplicate it
    declares_static: bool = False


def written_vars(root: Cursor) -> set[tuple]:
    """Variables assigned, incremented, address-taken or passed by non-const reference in root."""
    written: set[tuple] = set()
    for node in walk(root):
        target = None
        if node.kind in (CursorKind.BINARY_OPERATOR, CursorKind.COMPOUND_ASSIGNMENT_OPERATOR):
            if binary_operator(node) in _ASSIGNMENTS:
                target = base_var(next(node.get_children()))
        elif node.kind == CursorKind.UNARY_OPERATOR:
            if unary_operator(node) in ("pre++", "pre--", "post++", "post--", "&"):
                children = list(node.get_children())
                target = base_var(children[0]) if children else None
        elif node.kind == CursorKind.CALL_EXPR and node.referenced is not None:
            params = list(node.referenced.get_arguments() or [])
            for arg, param in zip(node.get_arguments(), params):
                ptype = param.type
                if ptype.kind == TypeKind.LVALUEREFERENCE and not ptype.get_pointee().is_const_qualified():
                    key = decl_key(base_var(arg))
                    if key:
                        written.add(key)
        if target is not None and decl_key(target):
            written.add(decl_key(target))
    return written


class BarrierIndex:
    """Which functions defined in the file reach a barrier, transitively (memoized)."""

    def __init__(self, main: str):
        self.main = main
        self.memo: dict[tuple, bool] = {}

    def reaches_barrier(self, call: Cursor) -> bool:
        if call.spelling in BARRIERS:
            return True
        target = call.referenced.get_definition() if call.referenced is not None else None
        if target is None or target.location.file is None or target.location.file.name != self.main:
            return False
        key = decl_key(target)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False  # recursion guard
        found = any(n.kind == CursorKind.CALL_EXPR and self.reaches_barrier(n) for n in walk(target))
        self.memo[key] = found
        return found


def body_flags(body: Cursor, var: Cursor | None, barriers: BarrierIndex) -> LoopFlags:
    flags = LoopFlags()

    def visit(node: Cursor, in_loop: bool, in_switch: bool) -> None:
        kind = node.kind
        if kind == CursorKind.BREAK_STMT and not in_loop and not in_switch:
            flags.has_break = True
        elif kind == CursorKind.CONTINUE_STMT and not in_loop:
            flags.has_continue = True
        elif kind in (CursorKind.GOTO_STMT, CursorKind.INDIRECT_GOTO_STMT):
            flags.has_goto = True
        elif kind == CursorKind.LABEL_STMT:
            flags.has_label = True
        elif kind == CursorKind.RETURN_STMT:
            flags.has_return = True
        elif kind == CursorKind.CALL_EXPR:
            if node.spelling.startswith(ATOMIC_PREFIXES):
                flags.has_atomic = True
            if barriers.reaches_barrier(node):
                flags.has_barrier = True
        elif kind == CursorKind.VAR_DECL:
            if any(c.kind == CursorKind.CUDASHARED_ATTR for c in node.get_children()):
                flags.declares_shared = True
            if node.storage_class is not None and node.storage_class.name == "STATIC":
                flags.declares_static = True
        if kind == CursorKind.LAMBDA_EXPR:
            return  # a lambda's break/return belong to it
        nested_loop = in_loop or kind in LOOP_KINDS
        nested_switch = in_switch or kind == CursorKind.SWITCH_STMT
        for child in node.get_children():
            visit(child, nested_loop, nested_switch)

    for child in body.get_children() if body.kind == CursorKind.COMPOUND_STMT else [body]:
        visit(child, False, False)
    if var is not None:
        flags.writes_induction_var = decl_key(var) in written_vars(body)
    return flags
