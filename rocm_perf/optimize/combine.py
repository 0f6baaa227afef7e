"""After the per-loop winners: one combination of them, and carrying them onto a newer baseline.

When two or more loops have a screened winner, their rewrites are first applied together to the
baseline they were screened on, as one candidate (plan_combination), and confirmed on fresh pairs
like any candidate: one confirmation instead of one per loop, and the first of the run, at its
least strict level (each later one is three or more times stricter: acceptance.confirmation_alpha).
Nested loops are combined too: the inner loop's rewrite is applied first, and the outer one's
then copies it (render_carry).

If the combination is not confirmed, each loop's winner is confirmed alone, best first; once one
is accepted the baseline changes, and the other loops' screened winners were measured against the
old one. Rather than racing their loops again, their rewrites are applied to the new baseline
(plan_carry): together when they were not tried together yet, else each alone, best first. There
a loop nested in another conflicts (the outer one's accepted rewrite may have copied it): it waits
for the outer one's outcome. A loop an accepted change rewrote cannot be carried.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.plan import original_line_of, original_line_of_loop


@dataclass
class CarryPlan:
    """What COMBINE does next: carry `components` (trial ids, best first; several = a combination)
    and settle the rest (`superseded`: trial -> its loop's best; `conflicts`: trial -> why)."""

    components: list[int] = field(default_factory=list)
    superseded: dict[int, int] = field(default_factory=dict)
    conflicts: dict[int, str] = field(default_factory=dict)


def split_key(loop_key: str) -> tuple[str, int]:
    kernel, _, line = loop_key.rpartition("@")
    return kernel, int(line)


def find_loop(analysis, to_original: dict[int, int], loop_key: str):
    """The loop of `loop_key` (kernel@line of the original source) in a later source's analysis,
    its lines mapped back by `to_original` (plan.original_line_of), or None when it is not there as it was."""
    kernel, line = split_key(loop_key)
    return next((lp for lp in analysis.loops if getattr(lp, "kernel", "") == kernel
                 and to_original.get(int(lp.line)) == line
                 and original_line_of_loop(analysis, to_original, lp) == line), None)


def loop_range(loop) -> tuple[int, int]:
    """A loop's first and last line."""
    return int(loop.line), int(getattr(loop, "end_line", 0) or loop.line)


def plan_carry(stale: list, estimate: Callable[[object], float], ranges: dict[str, tuple[int, int] | None],
               tried_together: set[int]) -> CarryPlan:
    """The next carry from the screened trials of older generations (`stale`, ledger Trials).

    `ranges`: each stale loop's line range in the current baseline (None: no longer there as it
    was); `tried_together`: trials already in a combination that was decided (they go alone now)."""
    out = CarryPlan()
    best: dict[str, object] = {}
    for t in sorted(stale, key=lambda t: (estimate(t), t.id)):
        if t.loop_key in best:
            out.superseded[t.id] = best[t.loop_key].id
        else:
            best[t.loop_key] = t
    winners = []
    for key, t in best.items():
        if ranges.get(key) is None:
            out.conflicts[t.id] = "its loop was rewritten by an accepted change, so its rewrite no longer applies"
        else:
            winners.append(t)
    winners.sort(key=lambda t: (estimate(t), t.id))
    fresh = [t for t in winners if t.id not in tried_together]
    if len(fresh) >= 2:
        chosen = []
        for t in fresh:
            lo, hi = ranges[t.loop_key]
            if all(hi < ranges[c.loop_key][0] or lo > ranges[c.loop_key][1] for c in chosen):
                chosen.append(t)  # a loop nested in a chosen one waits for that one's outcome
        if len(chosen) >= 2:
            out.components = [t.id for t in chosen]
            return out
    if winners:
        out.components = [winners[0].id]
    return out


def plan_combination(screened: list, estimate: Callable[[object], float], ranges: dict[str, tuple[int, int] | None],
                     tried_together: set[int]) -> list[int]:
    """The combination a generation confirms before any winner alone: the best screened candidate
    of each loop (trial ids, best first), when two or more loops have one, each loop is still in the
    baseline as it was (`ranges`), and none of them was in a combination yet (else [])."""
    best: dict[str, object] = {}
    for t in sorted(screened, key=lambda t: (estimate(t), t.id)):
        best.setdefault(t.loop_key, t)
    winners = list(best.values())
    if len(winners) < 2 or any(ranges.get(t.loop_key) is None or t.id in tried_together for t in winners):
        return []
    return [t.id for t in winners]


def _inner_first(components: list, spans: dict[int, int]) -> list:
    """Components in the order their rewrites are applied: a loop nested in another's before it (the
    outer rewrite may copy the inner loop, which must carry its rewrite by then); shorter loops
    first, which puts every inner loop before its outer one and leaves rewrites of separate loops,
    which commute, in any order."""
    return sorted(components, key=lambda t: spans.get(t.id, 0))


@dataclass
class Rendered:
    """A carry's source: the rewrites applied one after another, and what each step said."""

    source: bytes
    diff: str
    applied: list[int]
    failed: dict[int, str]


def render_carry(base_path: Path, original_text: str, components: list, *, tools, rules: list, flags: list[str],
                 analysis_of: Callable[[Path], object], workdir: Path) -> Rendered:
    """Apply each component's rewrite (ledger Trials: loop_key, rule, factor) to the baseline at
    `base_path`, in order, each guarded like a candidate of its own against the step before it.
    A component that no longer applies is left out (`failed`, with why)."""
    workdir.mkdir(parents=True, exist_ok=True)
    current = base_path.read_bytes()
    applied, failed = [], {}
    base_analysis = analysis_of(base_path)
    to_base_original = original_line_of(original_text, current.decode(errors="replace"))
    spans = {}
    for t in components:
        loop = find_loop(base_analysis, to_base_original, t.loop_key)
        if loop is not None:
            first, last = loop_range(loop)
            spans[t.id] = last - first
    for step, t in enumerate(_inner_first(components, spans)):
        path = workdir / f"step-{step}.cu"
        path.write_bytes(current)
        analysis = analysis_of(path)
        loop = find_loop(analysis, original_line_of(original_text, current.decode(errors="replace")), t.loop_key)
        if loop is None:
            failed[t.id] = "its loop is not in the source any more as it was"
            continue
        try:
            cand = tools.make_candidate(path, analysis, str(loop.id), t.rule, t.factor, rules=rules)
        except RocmPerfError as e:
            failed[t.id] = f"the rewrite could not be made: {e}"
            continue
        bad = [v for v in tools.guard_candidate(cand, flags) if not v.ok]
        if bad:
            failed[t.id] = "; ".join(f"{v.name}: {v.reason}" for v in bad)
            continue
        current = cand.rewritten
        applied.append(t.id)
    before = base_path.read_text(errors="replace")
    name = "source.cu"
    diff = "".join(difflib.unified_diff(before.splitlines(keepends=True), current.decode(errors="replace").splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))
    return Rendered(current, diff, applied, failed)
