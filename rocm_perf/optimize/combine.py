"""After the per-loop winners: carrying screened rewrites of other loops onto the newer baseline.

When one loop's winner is accepted the baseline changes, and the other loops' screened winners
were measured against the old one. Rather than racing their loops again, their rewrites are
applied to the new baseline, all of them at once as one candidate (a combination of the best
non-conflicting winners of different loops), which is then confirmed on fresh pairs like any
candidate. If a combination is not confirmed, each of its winners is carried alone, best first.
Loops nested in one another conflict (one rewrite copies or replaces the other's loop): the
inner one waits for the outer one's outcome. A loop an accepted change rewrote cannot be carried.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.plan import original_line_of


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
    for step, t in enumerate(components):
        path = workdir / f"step-{step}.cu"
        path.write_bytes(current)
        analysis = analysis_of(path)
        to_original = original_line_of(original_text, current.decode(errors="replace"))
        kernel, line = split_key(t.loop_key)
        loop = next((lp for lp in analysis.loops if getattr(lp, "kernel", "") == kernel
                     and to_original.get(int(lp.line)) == line), None)
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
