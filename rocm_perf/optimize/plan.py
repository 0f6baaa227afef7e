"""Proposing candidates: which loops of which kernels, with which rules and factors, in which order.

Pure functions over the source analysis (rocm_perf.source), the kernel ranking (critical-path
shares), the baseline's compile-check resources and, when the baseline was sampled, the loops'
measured heat (optimize/heat.py). A candidate's expected value is a product of named factors
(`value_factors`, then `evidence_factors` once it is built: the ISA deltas and the prior of
earlier runs), each recorded with it so that a report can say why it came where it did.
A loop is named across generations of the
baseline by its line in the ORIGINAL source (`loop_key`), found by mapping unchanged lines back
through the accepted edits; a loop that exists only inside an accepted edit (a remainder loop, a
copy) is not proposed again, and a loop is tried in one generation only.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from rocm_perf.optimize.search_prior import loop_shape

# Prior weight of an unroll factor: 4 most often pays on both CPUs and GPUs; 8 risks registers.
_FACTOR_PRIOR = {2: 0.8, 4: 1.0, 8: 0.7, 16: 0.4}
# A loop with less than this share of its kernel's samples is cold (heat.py uses the same).
COLD_SHARE = 0.01


@dataclass(frozen=True)
class RankedKernel:
    """A profiled kernel symbol with its critical-path share, mapped to a source kernel; with counters
    for the baseline, the roofline's headroom (fraction of its time it allows to save) and bound."""

    symbol: str
    kernel: str  # the source kernel's name ('' when it could not be mapped)
    cp_share: float
    median_ns: float
    headroom: float | None = None  # None: no counters, the ranking is by critical-path share alone
    bound: str = ""
    file: str = ""  # project runs: the source that defines the kernel, relative to the project root

    @property
    def value(self) -> float:
        """What the kernel is worth optimizing: its critical-path share, times its headroom when known."""
        return self.cp_share if self.headroom is None else self.cp_share * self.headroom


@dataclass(frozen=True)
class Proposal:
    """One candidate to try: a loop, a rule, a factor, and why it comes at this place."""

    loop_key: str
    kernel: str
    loop_id: str
    rule: str
    factor: int
    expected_value: float
    heat: float | None = None  # the loop's measured share of its kernel (None: not measured)
    factors: dict = field(default_factory=dict, compare=False)  # name -> weight; expected_value is their product
    shape: str = ""  # search_prior.loop_shape of the loop

    @property
    def cold(self) -> bool:
        """Measured, and (almost) never sampled: tried after every loop that was."""
        return self.heat is not None and self.heat < COLD_SHARE


def resources_by_kernel(resources: dict, top: list[RankedKernel]) -> dict[str, dict]:
    """The compile check's resources (by demangled name, `kernel(args)`) of each ranked kernel, by its name."""
    out = {}
    for r in top:
        for name, res in resources.items():
            if name == r.kernel or name.startswith(r.kernel + "("):
                out[r.kernel] = res
    return out


def original_line_of(original: str, current: str) -> dict[int, int]:
    """current line number (1-based) -> original line number, for lines no edit touched."""
    a = original.splitlines()
    b = current.splitlines()
    mapping: dict[int, int] = {}
    for block in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            mapping[block.b + k + 1] = block.a + k + 1
    return mapping


def _loop_text(data: bytes, loop) -> str:
    return " ".join(data[int(loop.start) : int(loop.end)].decode(errors="replace").split())


def original_line_of_loop(analysis, to_original: dict[int, int], loop) -> int | None:
    """The original line of a loop that is still there as it was, else None.

    Its header line must map back unchanged (`to_original`), and it must not be one of several
    copies: a rewrite that copies a body copies the loops inside it, and the copy whose lines
    happen to match the original's (a remainder written at the loop's own indentation) is no more
    that loop than the others. A loop with a textual twin in its function that maps nowhere is such
    a copy; twins that both map are two loops the original itself has."""
    line = to_original.get(int(loop.line))
    data = getattr(analysis, "data", None)
    if line is None or data is None or not hasattr(loop, "start"):
        return line
    own = _loop_text(data, loop)
    for other in analysis.loops:
        if other is loop or other.kernel != loop.kernel or getattr(other, "function", "") != getattr(loop, "function", ""):
            continue
        if to_original.get(int(other.line)) is None and _loop_text(data, other) == own:
            return None
    return line


def loop_key(kernel: str, original_line: int) -> str:
    return f"{kernel}@{original_line}"


def depth_weight(loop) -> float:
    """Without measurements, where the time probably is: inner loops run more often, and long
    trips take longer than short ones."""
    trip = getattr(loop, "trip_count", None)
    trip_weight = 1.0 if trip is None else min(1.0, 0.25 + trip / 64.0)
    return (1.0 + 0.5 * (getattr(loop, "depth", 0) or 0)) * trip_weight


def heat_weight(heat: float) -> float:
    """With measurements, where the time is: the loop's share of its kernel's samples, so that
    critical-path share x heat is the loop's share of the program's critical path."""
    return max(0.0, min(1.0, float(heat)))


def value_factors(share: float, loop, factor: int, resources: dict | None, heat: float | None = None,
                  headroom: float | None = None) -> dict[str, float]:
    """The named factors of a candidate's expected value before it is built: the kernel's
    critical-path share (and its roofline headroom when counters were read), where in the kernel
    the loop's time is (its measured `heat` when the baseline was sampled, else a guess from its
    nesting depth and trip count), the kernel's register pressure, and the unroll factor's prior;
    `beyond trip count` (0) when the factor exceeds a known trip count."""
    factors = {"critical-path share": share}
    if headroom is not None:
        factors["roofline headroom"] = headroom
    trip = getattr(loop, "trip_count", None)
    if trip is not None and trip < factor:
        factors["beyond trip count"] = 0.0  # unrolling past the trip count changes nothing
    if heat is None or heat < COLD_SHARE:
        factors["loop guess (depth, trip)"] = depth_weight(loop)
    else:
        factors["loop heat"] = heat_weight(heat)
    vgpr = (resources or {}).get("vgpr")
    if vgpr:
        factors["register pressure"] = 1.0 / (1.0 + factor * vgpr / 1024.0)
    factors["unroll factor prior"] = _FACTOR_PRIOR.get(factor, 0.3)
    return factors


def expected_value(share: float, loop, factor: int, resources: dict | None, heat: float | None = None) -> float:
    """A score to order candidates: the product of `value_factors`."""
    return math.prod(value_factors(share, loop, factor, resources, heat).values())


# The ISA's say: a rewrite that cuts the machine loop's instructions per unit of work by 10 %
# weighs 1.4; one that adds 10 % weighs 0.6 (never beyond [0.25, 2]).
_ISA_SLOPE = 4.0
_ISA_RANGE = (0.25, 2.0)


def evidence_factors(isa: dict | None, prior: dict | None, *, apply_isa: bool) -> tuple[dict[str, float], dict[str, str]]:
    """(factors, notes) a built candidate adds to its expected value: the ISA deltas of its loop
    (`isa_loops.IsaDelta.to_json()`: instructions per unit of work, VGPRs) when the measured
    program runs that ISA (`apply_isa`), and the prior of earlier runs (`search_prior`).
    `notes` says why evidence that exists was left out."""
    factors: dict[str, float] = {}
    notes: dict[str, str] = {}
    if isa:
        isa_factors = {}
        if isa.get("per_work"):
            isa_factors["ISA instructions per work"] = min(_ISA_RANGE[1], max(_ISA_RANGE[0], 1 + _ISA_SLOPE * (1 - isa["per_work"])))
        base_vgpr, cand_vgpr = (isa.get("vgpr") or (None, None))[:2]
        if base_vgpr and cand_vgpr:
            isa_factors["VGPRs"] = min(1.5, max(0.5, 1 + (base_vgpr - cand_vgpr) / 128))
        if apply_isa:
            factors.update(isa_factors)
        elif isa_factors:
            notes["ISA"] = ("recorded, not applied: the host backend measures the CPU build, not the AMD ISA ("
                            + ", ".join(f"{k} {v:.2f}" for k, v in isa_factors.items()) + ")")
    if prior and prior.get("tried"):
        factors["prior of earlier runs"] = float(prior["factor"])
    return factors, notes


def propose(
    *,
    ranking: list[RankedKernel],
    analysis,
    rules: list,
    applicable_rules,
    original_text: str,
    current_text: str,
    tried_loop_keys: set[str],
    only_rules: list[str],
    only_factors: list[int],
    resources: dict[str, dict],
    heat: dict | None = None,
) -> list[list[Proposal]]:
    """Candidate groups, best first: one group per loop (its rules x factors are alternatives, at
    most one of them can be accepted), each group ordered by expected value.

    `heat` (optimize/heat.py): for kernels it measured, a loop's expected value uses its measured
    share, and loops it found cold come after every other loop (by their unmeasured guess)."""
    measured = (heat or {}).get("kernels", {})
    loop_heat = (heat or {}).get("loops", {})
    share_of = {r.kernel: r for r in ranking if r.kernel}
    to_original = original_line_of(original_text, current_text)
    groups: list[list[Proposal]] = []
    for loop in analysis.loops:
        kernel = getattr(loop, "kernel", "")
        ranked = share_of.get(kernel)
        if ranked is None:
            continue
        original_line = original_line_of_loop(analysis, to_original, loop)
        if original_line is None:
            continue  # the loop exists only inside an accepted edit (a remainder loop, a copy)
        key = loop_key(kernel, original_line)
        if key in tried_loop_keys:
            continue
        measured_heat = float(loop_heat.get(key, 0.0)) if measured.get(kernel) else None
        group = []
        for rule, factors in applicable_rules(loop, rules):
            name = getattr(rule, "name", str(rule))
            if only_rules and name not in only_rules:
                continue
            for factor in factors:
                if only_factors and factor not in only_factors:
                    continue
                named = value_factors(ranked.cp_share, loop, int(factor), resources.get(kernel), measured_heat,
                                      ranked.headroom)
                ev = math.prod(named.values())
                if ev > 0:
                    group.append(Proposal(key, kernel, str(loop.id), name, int(factor), ev, measured_heat, named,
                                          loop_shape(loop)))
        if group:
            group.sort(key=lambda p: (-p.expected_value, p.rule, p.factor))
            groups.append(group)
    groups.sort(key=lambda g: (g[0].cold, -g[0].expected_value, g[0].loop_key))
    return groups
