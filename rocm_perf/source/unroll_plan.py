"""The shape of a manual unroll of one loop by one factor, as simple as the analysis can prove it.

The main loop runs `factor` copies of the body while at least `factor` iterations remain. That
test has five spellings, and the first one proven exact for every value the loop can reach is used
(up loops shown; a loop counting down is the mirror image):

- plain `i + K < n` (K = (factor - 1) x step): `i + K` cannot overflow at any test;
- folded `i < 7` for a literal bound 8 and K = 1 (nothing is computed at run time);
- distance `n - i >= 4`: the distance cannot overflow at any test (e.g. `i` starts at 0);
- guarded `i < n && i + 1 < n`: `i + K` cannot overflow once `i < n` holds;
- safe: the distance in `unsigned long long` after conversion to the comparison's type, which is
  exact for every bound, start and step (the form every other one must agree with).

"Every value the loop can reach" comes from constants where the analysis evaluated them and from
types otherwise: the start and bound range over their own types as written (a `short` bound
cannot exceed 32767), the induction variable only moves towards the bound, and a test is only
reached after the one before it passed. A test is only simplified when the comparison is done in
the induction variable's own (promoted) type, so the spelling changes no conversion.

A known trip count divides the work exactly: no remainder when the factor divides it, one or two
remaining iterations written out as straight code, more as a remainder loop. `#pragma unroll 1`
is kept only on a generated loop the compiler would otherwise unroll back (docs/reviewing-diffs.md
has the measurements on the AMD ISA): one with a known trip count of two or more. A loop that
runs once, and one whose trip count is known only at run time, compile to the same code with it
or without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocm_perf.source.loops import LoopInfo
from rocm_perf.source.trip_count import type_range

INT = (32, True)
_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_GROUPS = {2: ("pair", "pairs"), 4: ("group of four", "groups of four"), 8: ("group of eight", "groups of eight")}
_SIMPLE = re.compile(r"[A-Za-z_][\w.]*|\d+[uUlL]*|[A-Za-z_]\w*(?:->\w+|\.\w+)+")
_LITERAL = re.compile(r"(-?)(\d+)([uUlL]*)")


@dataclass(frozen=True)
class UnrollPlan:
    """What the manual rule's template writes for one loop and factor (and why, in `test_why`)."""

    factor: int
    test: str  # the main loop's condition
    test_form: str  # plain | folded | distance | guarded | safe
    test_why: str
    hoist: str  # the statement before the main loop: the header's init (`int i = 0;`), or ""
    wrap: bool  # everything inside one block of its own (the hoisted name could clash, or the loop is no block's statement)
    braced_copies: bool  # each copy of the body in its own block (the body declares names)
    main_trips: int | None  # how often the main loop runs, when the trip count is known
    remainder: str  # none | straight | loop
    remainder_trips: int | None  # straight: the copies written out; loop: its trip count when known
    trailing_inc: bool  # the straight remainder ends with the increment (the variable outlives the loop)
    pragma_main: bool  # `#pragma unroll 1` on the main loop
    pragma_remainder: bool  # ... and on the remainder loop
    summary: str  # one line for a reviewer: "dx loop, line 38: unrolled x2, 3 iterations: one pair and one remainder"

    child_loops: int = 0  # loops directly inside the body: a straight remainder copies them out of any loop

    @property
    def result_loops(self) -> int:
        """The outermost loops the rewrite leaves: the main loop, the remainder loop or the loops of
        the remainder's straight copies."""
        if self.remainder == "straight":
            return 1 + self.remainder_trips * self.child_loops
        return 1 + (self.remainder == "loop")


# ---- integer types ------------------------------------------------------------------------------


def _promote(t: tuple[int, bool]) -> tuple[int, bool]:
    return INT if t[0] < 32 else t


def common_type(a: tuple[int, bool], b: tuple[int, bool]) -> tuple[int, bool]:
    """C's usual arithmetic conversions on (bits, signed) (LP64: long and long long alike)."""
    a, b = _promote(a), _promote(b)
    if a == b:
        return a
    if a[1] == b[1]:
        return max(a, b)
    unsigned, signed = (a, b) if not a[1] else (b, a)
    return unsigned if unsigned[0] >= signed[0] else signed


def _within(inner: tuple[int, int], outer: tuple[int, int]) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _values(value: int | None, bits: int | None, signed: bool | None, into: tuple[int, int]) -> tuple[int, int]:
    """What an expression can be after conversion to a type of range `into`: its constant value,
    else its own type's range when the conversion keeps every value, else `into` whole."""
    if value is not None and into[0] <= value <= into[1]:
        return value, value
    if bits is not None and signed is not None and _within(type_range(bits, signed), into):
        return type_range(bits, signed)
    return into


def _paren(text: str) -> str:
    return text if _SIMPLE.fullmatch(text) else f"({text})"


def _number(n: int) -> str:
    return _NUMBERS[n] if 0 <= n < len(_NUMBERS) else str(n)


# ---- the main loop's test -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    up: bool
    strict: bool
    c: tuple[int, int]  # the comparison type's range
    start: tuple[int, int]
    bound: tuple[int, int]
    step: int
    k: int  # (factor - 1) x step


def _mirror(f: _Facts) -> _Facts:
    """A loop counting down as the loop counting up over the negated values."""
    neg = lambda r: (-r[1], -r[0])  # noqa: E731
    return _Facts(True, f.strict, neg(f.c), neg(f.start), neg(f.bound), f.step, f.k)


def _proofs(f: _Facts) -> dict[str, bool]:
    """For an up loop (`<`, `<=`, step > 0): which spellings are exact at every test.

    A test runs at the start (any start value) and after a passing test at v, at v + factor x step,
    where the passing test put v at most bound - K - strict: so at most bound + step - strict."""
    g = _mirror(f) if not f.up else f
    lo, hi = g.c
    d = 1 if g.strict else 0
    latest = g.bound[1] + g.step - d  # the largest value a later test sees
    return {
        "plain": g.start[1] + g.k <= hi and latest + g.k <= hi,
        "folded": g.bound[0] == g.bound[1] and lo <= g.bound[0] - g.k,
        "distance": g.bound[0] - g.start[1] >= lo and g.bound[1] - g.start[0] <= hi and d - g.step >= lo,
        "guarded": g.bound[1] - d + g.k <= hi,
    }


def _k_text(loop: LoopInfo, factor: int) -> str:
    if loop.step == "1":
        return str(factor - 1)
    return loop.step if factor == 2 else f"{factor - 1} * {_paren(loop.step)}"


def _folded_literal(loop: LoopInfo, k: int, up: bool) -> str | None:
    """The bound literal moved by K, with its own suffix, or None (not a literal, or out of its type)."""
    m = _LITERAL.fullmatch(loop.bound or "")
    if not m or loop.bound_bits is None:
        return None
    value = int(m.group(1) + m.group(2)) + (-k if up else k)
    low, high = type_range(loop.bound_bits, bool(loop.bound_signed))
    if not low <= value <= high or (value < 0 and "u" in m.group(3).lower()):
        return None
    return f"{value}{m.group(3)}"


def safe_test(loop: LoopInfo, factor: int) -> str:
    """"At least `factor` iterations remain", in unsigned long long after conversion to the
    comparison type: exact for every bound, start and step (divided, not multiplied, so that
    nothing overflows)."""
    u, t = "unsigned long long", loop.compare_type
    var, bound = loop.induction_var, loop.bound
    if loop.compare in ("<", "<="):
        distance = f"({u})({t})({bound}) - ({u})({t})({var})"
    else:
        distance = f"({u})({t})({var}) - ({u})({t})({bound})"
    remaining = f"({distance}{' - 1ULL' if loop.compare in ('<', '>') else ''})"
    if factor > 2:
        remaining += f" / {factor - 1}ULL"
    step = "1ULL" if loop.step == "1" else f"({u})({t})({loop.step})"
    return f"{loop.cond} && {remaining} >= {step}"


def main_test(loop: LoopInfo, factor: int) -> tuple[str, str, str]:
    """The main loop's condition, its form and why that form is exact."""
    safe = (safe_test(loop, factor), "safe")
    up = loop.compare in ("<", "<=")
    strict = loop.compare in ("<", ">")
    var_t = (loop.var_bits, bool(loop.var_signed)) if loop.var_bits else None
    c_t = (loop.compare_bits, bool(loop.compare_signed)) if loop.compare_bits else None
    step_t = (loop.step_bits, bool(loop.step_signed)) if loop.step_bits else None
    if var_t is None or c_t is None or step_t is None or loop.step_value is None or loop.step_value <= 0:
        return *safe, "the step is not a positive constant of an integer type"
    if _promote(var_t) != c_t:
        return *safe, f"the comparison is done in {loop.compare_type}, not in the variable's own type"
    k = (factor - 1) * loop.step_value
    k_t = INT if loop.step == "1" else common_type(INT, step_t)
    if not type_range(*k_t)[0] <= k <= type_range(*k_t)[1] or common_type(c_t, k_t) != c_t:
        return *safe, f"{_k_text(loop, factor)} does not stay in {loop.compare_type}"
    c = type_range(*c_t)
    start = _values(loop.start_value, loop.start_bits, loop.start_signed, type_range(*var_t)) if loop.init \
        else type_range(*var_t)  # fmt: skip
    bound = _values(loop.bound_value, loop.bound_bits, loop.bound_signed, c)
    proven = _proofs(_Facts(up, strict, c, start, bound, loop.step_value, k))
    var, bound_text, k_text = loop.induction_var, loop.bound, _k_text(loop, factor)
    sign = "+" if up else "-"
    if proven["plain"]:
        return f"{var} {sign} {k_text} {loop.compare} {bound_text}", "plain", f"{var} {sign} {k_text} cannot overflow {loop.compare_type}"
    folded = _folded_literal(loop, k, up) if proven["folded"] else None
    if folded is not None:
        return f"{var} {loop.compare} {folded}", "folded", "the bound is a literal"
    if proven["distance"]:
        if strict:
            test = f"{_paren(bound_text)} - {var} >= {factor}" if loop.step == "1" else f"{_paren(bound_text)} - {var} > {k_text}"
            if not up:
                test = f"{var} - {_paren(bound_text)} >= {factor}" if loop.step == "1" else f"{var} - {_paren(bound_text)} > {k_text}"
        else:
            test = f"{_paren(bound_text)} - {var} >= {k_text}" if up else f"{var} - {_paren(bound_text)} >= {k_text}"
        return test, "distance", f"the distance to the bound cannot overflow {loop.compare_type}"
    if proven["guarded"]:
        return (f"{loop.cond} && {var} {sign} {k_text} {loop.compare} {bound_text}", "guarded",
                f"{var} {sign} {k_text} cannot overflow {loop.compare_type} once {loop.cond} holds")  # fmt: skip
    return *safe, f"{var} {sign} {k_text} could overflow {loop.compare_type} for some bound and start"


# ---- the whole plan -----------------------------------------------------------------------------


def _summary(loop: LoopInfo, factor: int, main_trips: int | None, remainder: str, remainder_trips: int | None) -> str:
    name = f"{loop.induction_var} loop, line {loop.line}: unrolled x{factor}"
    one, many = _GROUPS.get(factor, (f"group of {factor}", f"groups of {factor}"))
    if loop.trip_count is None:
        return f"{name}, trip count known only at run time: {many} while {factor} remain, then a remainder loop"
    groups = f"{_number(main_trips)} {one if main_trips == 1 else many}"
    if remainder == "none":
        rest = ""
    elif remainder == "straight":
        rest = f" and {_number(remainder_trips)} remainder{'s' if remainder_trips > 1 else ''}"
    else:
        rest = f" and a remainder loop of {_number(remainder_trips)}"
    return f"{name}, {loop.trip_count} iterations: {groups}{rest}"


def unroll_plan(loop: LoopInfo, factor: int) -> UnrollPlan:
    """The manual unroll of a canonical for loop (the rule's conditions hold) by `factor`."""
    test, form, why = main_test(loop, factor)
    trips = loop.trip_count
    main_trips = trips // factor if trips is not None else None
    left = trips % factor if trips is not None else None
    if left == 0:
        remainder = "none"
    elif left is not None and left <= 2:
        remainder = "straight"
    else:
        remainder = "loop"
    scope = loop.scope
    wrap = not scope.in_block or not loop.at_line_start or (loop.init_declares and not scope.name_free)
    return UnrollPlan(
        factor=factor,
        test=test,
        test_form=form,
        test_why=why,
        hoist=f"{loop.init};" if loop.init else "",
        wrap=wrap,
        braced_copies=bool(scope.body_declares),
        main_trips=main_trips,
        remainder=remainder,
        remainder_trips=left,
        trailing_inc=remainder == "straight" and not loop.init_declares,
        # Measured on gfx90a (tests/bench/bench_unroll_pragmas.py, docs/reviewing-diffs.md): the compiler
        # unrolls a loop of a known trip count of two or more back, and nothing else it generated.
        pragma_main=main_trips is not None and main_trips >= 2,
        pragma_remainder=remainder == "loop" and left is not None and left >= 2,
        summary=_summary(loop, factor, main_trips, remainder, left),
        child_loops=loop.child_loops,
    )
