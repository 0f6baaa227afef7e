"""Constant evaluation and trip counts.

The Python bindings do not wrap `clang_Cursor_Evaluate`, `clang_EvalResult_*` or the operator
kind functions, but the bundled libclang exports them: they are bound here with ctypes.
Trip counts of constant headers come from a closed form (additive steps) or a bounded
simulation (shifts, multiplications); `simulate_trip_count` is the plain reference.
"""

from __future__ import annotations

import ctypes
import functools

from clang.cindex import Cursor, conf

_EVAL_INT = 1
MAX_SIMULATED_STEPS = 1 << 16


@functools.cache
def _lib() -> ctypes.CDLL:
    lib = conf.lib
    lib.clang_Cursor_Evaluate.argtypes = [Cursor]
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getKind.restype = ctypes.c_int
    lib.clang_EvalResult_isUnsignedInt.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_isUnsignedInt.restype = ctypes.c_uint
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_getAsUnsigned.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsUnsigned.restype = ctypes.c_ulonglong
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.restype = None
    lib.clang_getCursorBinaryOperatorKind.argtypes = [Cursor]
    lib.clang_getCursorBinaryOperatorKind.restype = ctypes.c_int
    lib.clang_getCursorUnaryOperatorKind.argtypes = [Cursor]
    lib.clang_getCursorUnaryOperatorKind.restype = ctypes.c_int
    return lib


# CXBinaryOperatorKind / CXUnaryOperatorKind (clang-c/Index.h, LLVM 17+).
_BINARY = {
    3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>", 11: "<", 12: ">", 13: "<=", 14: ">=",
    15: "==", 16: "!=", 17: "&", 18: "^", 19: "|", 20: "&&", 21: "||", 22: "=", 23: "*=", 24: "/=",
    25: "%=", 26: "+=", 27: "-=", 28: "<<=", 29: ">>=", 30: "&=", 31: "^=", 32: "|=", 33: ",",
}  # fmt: skip
_UNARY = {1: "post++", 2: "post--", 3: "pre++", 4: "pre--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!"}


def binary_operator(cursor: Cursor) -> str | None:
    """The operator of a BINARY_OPERATOR / COMPOUND_ASSIGNMENT_OPERATOR cursor ("<", "+=", ...)."""
    return _BINARY.get(_lib().clang_getCursorBinaryOperatorKind(cursor))


def unary_operator(cursor: Cursor) -> str | None:
    """The operator of a UNARY_OPERATOR cursor ("pre++", "post--", "&", "-", ...)."""
    return _UNARY.get(_lib().clang_getCursorUnaryOperatorKind(cursor))


def evaluate_int(cursor: Cursor | None) -> int | None:
    """The integer value of a constant expression (or a variable's initializer), else None."""
    if cursor is None:
        return None
    lib = _lib()
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        if lib.clang_EvalResult_getKind(result) != _EVAL_INT:
            return None
        if lib.clang_EvalResult_isUnsignedInt(result):
            return int(lib.clang_EvalResult_getAsUnsigned(result))
        return int(lib.clang_EvalResult_getAsLongLong(result))
    finally:
        lib.clang_EvalResult_dispose(result)


# ---- trip counts -------------------------------------------------------------------------------

_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "!=": lambda a, b: a != b,
}
_STEP = {
    "+=": lambda v, s: v + s,
    "-=": lambda v, s: v - s,
    "*=": lambda v, s: v * s,
    "/=": lambda v, s: int(v / s) if s else None,  # C division truncates toward zero
    "<<=": lambda v, s: v << s if s >= 0 else None,
    ">>=": lambda v, s: v >> s if s >= 0 else None,
}


def type_range(bits: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def simulate_trip_count(
    start: int, compare: str, bound: int, step_op: str, step: int, *, bits: int = 32, signed: bool = True,
    limit: int = MAX_SIMULATED_STEPS,
) -> int | None:  # fmt: skip
    """Run `for (v = start; v <compare> bound; v <step_op> step)` literally and count iterations.

    None when the loop does not finish within `limit` iterations or the induction variable leaves
    its type's range (signed overflow is undefined, unsigned wrap-around is not a count we trust).
    """
    low, high = type_range(bits, signed)
    if not (low <= start <= high and compare in _COMPARE and step_op in _STEP):
        return None
    test, advance = _COMPARE[compare], _STEP[step_op]
    value, count = start, 0
    while test(value, bound):
        count += 1
        if count > limit:
            return None
        value = advance(value, step)
        if value is None or not (low <= value <= high):
            return None
    return count


def trip_count(
    start: int, compare: str, bound: int, step_op: str, step: int, *, bits: int = 32, signed: bool = True,
) -> int | None:  # fmt: skip
    """The iteration count of a constant header, by closed form for additive steps (so large
    counts cost nothing) and by bounded simulation otherwise. Same answers as the simulation."""
    if step_op not in ("+=", "-="):
        return simulate_trip_count(start, compare, bound, step_op, step, bits=bits, signed=signed)
    low, high = type_range(bits, signed)
    if not low <= start <= high or compare not in _COMPARE:
        return None
    delta = step if step_op == "+=" else -step
    if not _COMPARE[compare](start, bound):
        return 0
    if delta == 0:
        return None  # never advances: infinite
    if compare == "!=":
        distance = bound - start
        if distance % delta or distance // delta <= 0:
            return None  # steps over the bound (or away from it): runs until overflow
        count = distance // delta
    elif compare in ("<", "<="):
        if delta < 0:
            return None
        last = bound if compare == "<=" else bound - 1  # the largest value that still runs
        count = (last - start) // delta + 1
    else:
        if delta > 0:
            return None
        last = bound if compare == ">=" else bound + 1
        count = (start - last) // (-delta) + 1
    final = start + count * delta  # the value that fails the test must be representable too
    if not low <= final <= high:
        return None
    return count
