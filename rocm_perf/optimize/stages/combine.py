"""State `combine`: after a confirmation round, what comes next for the loops' screened winners
(optimize/combine.py plans it). When two or more loops of the generation have one, their rewrites
are first joined into one candidate, confirmed before any of them alone; after an accept, the other
loops' winners, measured against the old baseline, are carried onto the new one (together when
they were not tried together, else each alone) instead of racing their loops again. A project's
loops are planned again instead (carrying rewrites between its trees is not done). Commits the carry
or combination as a new trial (then `build`), or settles the rest (then `propose`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.optimize.combine import find_loop, loop_range, plan_carry, plan_combination
from rocm_perf.optimize.ledger import COMBINATION, Baseline, Trial
from rocm_perf.optimize.plan import original_line_of
from rocm_perf.optimize.states import BUILD, OPEN_STATUSES, PROPOSE, R_CONFLICT, R_REPLANNED, R_SUPERSEDED
from rocm_perf.optimize.verdicts import drop_copies, estimate, write_verdict

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    if ctx.ledger.trials(status="proposed"):
        return BUILD  # a carry was planned before the run stopped
    base = ctx.ledger.current_baseline()
    components = combination_due(ctx, base.generation)
    if components:
        with ctx.ledger.transaction():
            _propose_carry(ctx, [ctx.ledger.trial(c) for c in components], base.generation)
        return BUILD
    stale = [t for t in ctx.ledger.trials(status="screened") if t.generation < base.generation]
    if not stale:
        return PROPOSE
    # Carrying rewrites between a project's trees is not done, and a proposer whose candidates do not
    # combine has none carried: their groups are planned again on the new baseline.
    replan = stale if ctx.project else [t for t in stale if not ctx.proposer_of(t).combines]
    stale = [t for t in stale if t not in replan]
    if replan:
        with ctx.ledger.transaction():
            for t in replan:
                ctx.ledger.update_trial(t.id, status="rejected", reason=R_REPLANNED,
                                        detail=f"another group's candidate was accepted first; its group is planned "
                                        f"again on generation {base.generation}")
        for t in replan:
            write_verdict(ctx, t.id)
            drop_copies(ctx, t.id)
    if not stale:
        return PROPOSE
    tried_together = {c for x in ctx.ledger.trials() if x.rule == COMBINATION and x.status not in OPEN_STATUSES
                      for c in x.components}
    carry = plan_carry(stale, estimate, _loop_ranges(ctx, stale, base), tried_together)
    with ctx.ledger.transaction():
        for tid, best in carry.superseded.items():
            ctx.ledger.update_trial(tid, status="rejected", reason=R_SUPERSEDED,
                                    detail=f"trial {best} is its loop's best screened candidate")
        for tid, why in carry.conflicts.items():
            ctx.ledger.update_trial(tid, status="rejected", reason=R_CONFLICT, detail=why)
        if carry.components:
            comps = [ctx.ledger.trial(c) for c in carry.components]
            _propose_carry(ctx, comps, base.generation)
    for tid in [*carry.superseded, *carry.conflicts]:
        write_verdict(ctx, tid)
    return BUILD if carry.components else PROPOSE


def _loop_ranges(ctx: "RunContext", trials: list[Trial], base: Baseline) -> dict[str, tuple[int, int] | None]:
    """Each trial's loop as it is in `base`'s source: its line range, or None when it is not
    there any more as it was (an accepted change rewrote it)."""
    base_path = ctx.abs(base.source_path)
    analysis = ctx.analysis(base_path)
    original = ctx.abs(ctx.ledger.baselines()[0].source_path).read_text(errors="replace")
    to_original = original_line_of(original, base_path.read_text(errors="replace"))
    ranges: dict[str, tuple[int, int] | None] = {}
    for t in trials:
        loop = find_loop(analysis, to_original, t.loop_key)
        ranges[t.loop_key] = None if loop is None else loop_range(loop)
    return ranges


def combination_due(ctx: "RunContext", generation: int) -> list[int]:
    """The generation's loops' screened winners to confirm together before any of them alone
    (combine.plan_combination), or [] (a project's loops are each confirmed alone: carrying
    rewrites between its trees is not done)."""
    if ctx.project:
        return []
    screened = [t for t in ctx.ledger.trials(status="screened") if t.generation == generation and not t.components
                and ctx.proposer_of(t).combines]
    if len({t.loop_key for t in screened}) < 2:
        return []
    tried = {c for x in ctx.ledger.trials() if x.rule == COMBINATION for c in x.components}
    if any(t.id in tried for t in screened):
        return []  # once per generation (before the loops' source is analysed again)
    return plan_combination(screened, estimate, _loop_ranges(ctx, screened, ctx.ledger.current_baseline()), tried)


def _propose_carry(ctx: "RunContext", comps: list[Trial], generation: int) -> int:
    """A new trial that applies `comps` (screened trials) to the current baseline: a carry of one,
    or a combination of several (inside the caller's transaction)."""
    ordering = {"factors": {"carried: screened gain": 1 / max(1e-9, min(estimate(c) for c in comps))},
                "carried_from": [c.id for c in comps]}
    proposer = comps[0].proposer
    if len(comps) == 1:
        c = comps[0]
        tid = ctx.ledger.add_trial(generation=generation, loop_key=c.loop_key, kernel=c.kernel, loop_id=c.loop_id,
                                   rule=c.rule, factor=c.factor, expected_value=c.expected_value, ordering=ordering,
                                   components=[c.id], proposer=proposer)
        ctx.report.message(f"carrying trial {c.id} ({c.rule} x{c.factor} on {c.loop_id}) onto the new baseline")
        return tid
    kernels = ",".join(dict.fromkeys(c.kernel for c in comps))
    tid = ctx.ledger.add_trial(generation=generation, loop_key="+".join(c.loop_key for c in comps), kernel=kernels,
                               loop_id="; ".join(c.loop_id for c in comps), rule=COMBINATION, factor=0,
                               expected_value=sum(c.expected_value for c in comps), ordering=ordering,
                               components=[c.id for c in comps], proposer=proposer)
    where = ("confirmed before any of them alone" if comps[0].generation == generation
             else "on the new baseline")
    ctx.report.message(f"combining the screened winners of {len(comps)} loops (trials "
                       f"{', '.join(str(c.id) for c in comps)}) into one candidate, {where}")
    return tid
