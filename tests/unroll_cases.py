"""Random for loops for the manual unroll's property tests: one kernel per loop, each recording
the induction values it runs in order (and, when the variable outlives the loop, its value
after), with a host `main` that calls every kernel and prints what they recorded.

The same file builds as HIP (libclang analyzes it, hipcc compiles it) and as plain C++ (g++ with
UBSan runs it: `__global__` and friends are empty there). Each loop is drawn near an edge of its
types (their maximum, minimum or zero), with a start, bound and step that are literals, named
constants or run-time arguments of the variable's type or another, counting up or down, strict
or not; `simulate` is the loop as C runs it (conversions, wrap-around), and a drawn loop whose
original overflows a signed type or runs too long is drawn again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TYPES = {  # spelling -> (bits, signed, literal suffix)
    "int": (32, True, ""),
    "unsigned": (32, False, "u"),
    "long long": (64, True, "LL"),
    "unsigned long long": (64, False, "ULL"),
    "short": (16, True, ""),
    "unsigned char": (8, False, ""),
    "size_t": (64, False, "UL"),
}
MAX_TRIPS = 120


def _range(t: str) -> tuple[int, int]:
    bits, signed, _ = TYPES[t]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _convert(value: int, t: str) -> int:
    """C's conversion to an integer type (modular, as GCC and clang do for signed types too)."""
    bits, signed, _ = TYPES[t]
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value


def _promote(t: str) -> str:
    return "int" if TYPES[t][0] < 32 else t


def common(a: str, b: str) -> str:
    """The usual arithmetic conversions (LP64), on the spellings above."""
    a, b = _promote(a), _promote(b)
    if a == b:
        return a
    (ab, asg, _), (bb, bsg, _) = TYPES[a], TYPES[b]
    if asg == bsg:
        return a if ab >= bb else b
    unsigned, signed = (a, b) if not asg else (b, a)
    return unsigned if TYPES[unsigned][0] >= TYPES[signed][0] else signed


def literal(value: int, t: str) -> str:
    """A spelling of `value` whose type is `t` after promotion (INT_MIN and LLONG_MIN have none)."""
    lo, hi = _range(t)
    assert lo <= value <= hi, (value, t)
    natural = _promote(t)
    suffix = TYPES[natural][2]
    if TYPES[natural][1] and value == _range(natural)[0]:
        return f"({value + 1}{suffix} - 1)"
    return f"{value}{suffix}"


@dataclass
class LoopCase:
    index: int
    var_type: str
    up: bool
    strict: bool
    flipped: bool  # `bound > i` instead of `i < bound`
    start: int
    bound: int
    step: int
    start_how: str  # literal | named | argument
    bound_how: str
    bound_type: str
    step_how: str  # unit (++/--) | literal | argument | assign (`i = i + 3`)
    body: str  # statement | block | declares
    declared_in_header: bool
    placement: str  # alone | name_reused (the block spells the variable's name elsewhere) | if_body (no block of its own)
    factor: int
    sequence: list[int]  # the values the loop runs, as the body sees them (converted to unsigned long long)
    after: int | None  # the variable's value after the loop (when it outlives the loop)

    @property
    def compare_type(self) -> str:
        return common(self.var_type, self.bound_type)


def simulate(var_type: str, up: bool, strict: bool, start: int, bound: int, bound_type: str, step: int,
             step_type: str) -> tuple[list[int], int] | None:  # fmt: skip
    """The loop as C runs it: (values, value after), or None when it overflows a signed type or
    runs more than MAX_TRIPS times."""
    compare = common(var_type, bound_type)
    b = _convert(bound, compare)
    v = _convert(start, var_type)
    values = []
    arithmetic = common(var_type, step_type)
    while True:
        cv = _convert(v, compare)
        if up and not (cv < b if strict else cv <= b):
            break
        if not up and not (cv > b if strict else cv >= b):
            break
        values.append(v)
        if len(values) > MAX_TRIPS:
            return None
        nxt = v + step if up else v - step
        lo, hi = _range(arithmetic)
        if TYPES[arithmetic][1] and not lo <= nxt <= hi:
            return None  # signed overflow in the original: undefined, not a case
        v = _convert(_convert(nxt, arithmetic), var_type)
    return values, v


def draw(rng: random.Random, index: int) -> LoopCase:
    while True:
        case = _draw_once(rng, index)
        if case is not None:
            return case


def _draw_once(rng: random.Random, index: int) -> LoopCase | None:
    var_type = rng.choice(["int", "int", "int", "unsigned", "long long", "unsigned long long", "short", "size_t"])
    up, strict, factor = rng.random() < 0.6, rng.random() < 0.6, rng.choice([2, 4, 8])
    bound_how = rng.choice(["literal", "named", "argument", "argument"])
    bound_type = var_type
    if bound_how == "argument" and rng.random() < 0.5:
        bound_type = rng.choice(["int", "short", "unsigned char", "long long", "unsigned"])
    compare = common(var_type, bound_type)
    step_how = rng.choice(["unit", "unit", "literal", "literal", "argument", "assign"])
    step = 1 if step_how == "unit" else rng.choice([1, 2, 3, 7, 9, 1000])
    lo, hi = _range(var_type)
    blo, bhi = _range(bound_type)
    edge = rng.choice(["max", "min", "zero", "max", "min"])
    trips = rng.choice([0, 1, 2, 3, factor - 1, factor, factor + 1, 2 * factor + 1, rng.randrange(1, 60)])
    span = trips * step
    slack = rng.randrange(0, 4)
    if up:
        if edge == "max":
            bound = min(hi, bhi) - rng.randrange(0, 3 * step + 2)
        elif edge == "min":
            bound = max(lo, blo) + span + slack
        else:
            bound = span + rng.randrange(-3, 3)
        start = bound - span - (0 if not strict else rng.randrange(0, step))
    else:
        if edge == "min":
            bound = max(lo, blo) + rng.randrange(0, 3 * step + 2)
        elif edge == "max":
            bound = min(hi, bhi) - span - slack
        else:
            bound = -span + rng.randrange(-3, 3)
        start = bound + span + (0 if not strict else rng.randrange(0, step))
    if not (lo <= start <= hi and blo <= bound <= bhi):
        return None
    step_type = "int" if step_how in ("unit", "argument") else var_type
    if step_how == "literal" and var_type in ("short",):
        step_type = "int"
    simulated = simulate(var_type, up, strict, start, bound, bound_type, step, step_type)
    if simulated is None:
        return None
    values, after = simulated
    declared = rng.random() < 0.7
    return LoopCase(index, var_type, up, strict, rng.random() < 0.15, start, bound, step,
                    rng.choice(["literal", "named", "argument"]), bound_how, bound_type, step_how,
                    rng.choice(["statement", "block", "declares"]), declared,
                    rng.choice(["alone", "alone", "name_reused", "if_body"]) if declared else "alone", factor,
                    [_convert(v, "unsigned long long") for v in values],
                    None if declared else _convert(after, "unsigned long long"))  # fmt: skip


def _step_text(case: LoopCase) -> str:
    if case.step_how == "literal":
        return literal(case.step, "int" if case.var_type == "short" else case.var_type)
    return "step"


def _loop_source(case: LoopCase) -> list[str]:
    v, t = "i", case.var_type
    start = {"literal": literal(case.start, t), "named": f"kStart{case.index}", "argument": "start"}[case.start_how]
    bound = {"literal": literal(case.bound, case.bound_type), "named": f"kBound{case.index}",
             "argument": "bound"}[case.bound_how]  # fmt: skip
    op = ("<" if case.strict else "<=") if case.up else (">" if case.strict else ">=")
    flipped_op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    cond = f"{bound} {flipped_op} {v}" if case.flipped else f"{v} {op} {bound}"
    sign = "+" if case.up else "-"
    if case.step_how == "unit":
        inc = f"++{v}" if case.up else f"{v}--"
    elif case.step_how == "assign":
        inc = f"{v} = {v} {sign} {literal(case.step, 'int')}"
    else:
        inc = f"{v} {sign}= {_step_text(case)}"
    record = f"rec(out, (unsigned long long)({v}));"
    body = {"statement": " " + record, "block": " {\n        " + record + "\n    }",
            "declares": " {\n        const " + t + " seen = " + v + ";\n        rec(out, (unsigned long long)(seen));\n    }"}[case.body]  # fmt: skip
    lines = []
    if case.declared_in_header:
        guard = "if (out) " if case.placement == "if_body" else ""
        lines.append(f"    {guard}for ({t} {v} = {start}; {cond}; {inc}){body}")
        if case.placement == "name_reused":
            lines.append(f"    {{ const int {v} = 0; (void){v}; }}")
    else:
        lines.append(f"    {t} {v};")
        lines.append(f"    for ({v} = {start}; {cond}; {inc}){body}")
        lines.append(f"    rec(out, (unsigned long long)({v}));")
    return lines


def source(cases: list[LoopCase]) -> str:
    """The program: the kernels, and a main that runs each with its arguments and prints the
    values recorded."""
    out = ["// Generated by tests/unroll_cases.py: one loop per kernel, values recorded in order.",
           "#ifdef __HIP__", "#include <hip/hip_runtime.h>", "#else", "#define __global__", "#define __device__",
           "#define __host__", "#endif", "#include <cstddef>", "#include <cstdio>", "",
           "__device__ __host__ inline void rec(unsigned long long* out, unsigned long long value) {",
           "    unsigned long long n = out[0]++;", "    if (n < 1000) out[1 + n] = value;", "}", ""]  # fmt: skip
    for c in cases:
        out.append(f"constexpr {c.var_type} kStart{c.index} = {literal(c.start, c.var_type)};")
        out.append(f"constexpr {c.bound_type} kBound{c.index} = {literal(c.bound, c.bound_type)};")
    out.append("")
    for c in cases:
        out.append(f"__global__ void loop_{c.index}(unsigned long long* out, {c.var_type} start, {c.bound_type} bound, "
                   f"int step) {{")  # fmt: skip
        out += _loop_source(c)
        out += ["}", ""]
    out += ["#ifndef __HIP__", "int main() {", "    static unsigned long long out[1001];"]
    for c in cases:
        out.append(f"    out[0] = 0; loop_{c.index}(out, {literal(c.start, c.var_type)}, {literal(c.bound, c.bound_type)}, "
                   f"{c.step});")  # fmt: skip
        out.append(f'    std::printf("loop {c.index}: %llu:", out[0]);')
        out.append("    for (unsigned long long k = 0; k < out[0] && k < 1000; ++k) std::printf(\" %llu\", out[1 + k]);")
        out.append('    std::printf("\\n");')
    out += ["    return 0;", "}", "#endif", ""]
    return "\n".join(out)


def expected_output(cases: list[LoopCase]) -> str:
    lines = []
    for c in cases:
        values = c.sequence + ([c.after] if c.after is not None else [])
        lines.append(f"loop {c.index}: {len(values)}:" + "".join(f" {v}" for v in values))
    return "\n".join(lines) + "\n"
