"""State `propose`: plan the next generation's candidates. Every proposer of the run (proposers/)
offers what it has for the current baseline, skipping the loops already tried; they are ordered by
expected value (cold loops last) and at most PLAN_FACTOR x the trials left are planned. Candidates
an earlier wave left unbuilt for the budget are planned again first when the race left room.
Commits each planned trial with its proposer and provenance, or the reason the search stops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.optimize.budget import measured, room_for_a_wave, with_reserve_lent
from rocm_perf.optimize.ledger import Trial
from rocm_perf.optimize.states import BUILD, FINAL_CHECK, NOT_BUILT, OPEN_STATUSES, R_BUDGET, R_REPLANNED

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

# The planned space of one generation: at most this many times --max-trials candidates are built.
PLAN_FACTOR = 4


def run(ctx: "RunContext") -> str:
    """Plan the next generation's candidates: every proposer's, by expected value (cold loops
    last), at most PLAN_FACTOR x the trials left."""
    if any(t.status in OPEN_STATUSES for t in ctx.ledger.trials()):
        return BUILD  # a proposal was recorded before the run stopped
    done = measured(ctx)
    if done >= ctx.opt.max_trials:
        ctx.ledger.set("stop_reason", f"--max-trials {ctx.opt.max_trials} reached")
        return FINAL_CHECK
    if ctx.elapsed() >= ctx.opt.time_budget_s:
        ctx.ledger.set("stop_reason", f"--time-budget {ctx.opt.time_budget_s:.0f} s spent")
        return FINAL_CHECK
    base = ctx.ledger.current_baseline()
    if deferred(ctx, base.generation) and with_reserve_lent(ctx, lambda: revive_not_built(ctx, base.generation),
                                                             base.generation):
        return BUILD
    trials = ctx.ledger.trials()
    latest: dict[str, int] = {}
    for t in trials:
        latest[t.loop_key] = max(latest.get(t.loop_key, -1), t.generation)
    # A loop re-planned in its latest generation is planned again (a project's carry).
    replanned = {t.loop_key for t in trials if t.reason == R_REPLANNED and t.generation == latest[t.loop_key]}
    # So is a loop some of whose candidates an earlier generation left unbuilt (the budget went
    # elsewhere then), when there is room: on the new baseline its candidates are new programs.
    unbuilt = {t.loop_key for t in trials
               if t.generation == latest[t.loop_key] < base.generation and t.evidence.get(NOT_BUILT)}
    if unbuilt and with_reserve_lent(ctx, lambda: room_for_a_wave(ctx, base.generation), base.generation):
        replanned |= unbuilt
    tried = {t.loop_key for t in trials} - replanned
    offered = [(name, p) for name, proposer in ctx.proposers.items() for p in proposer.plan(ctx, base, tried)]
    if not offered:
        ctx.ledger.set("stop_reason", "every candidate of the top kernels was tried")
        return FINAL_CHECK
    planned = sorted(offered, key=lambda np_: (np_[1].proposal.cold, -np_[1].proposal.expected_value,
                                               np_[1].proposal.loop_key, np_[1].proposal.rule, np_[1].proposal.factor))
    room = PLAN_FACTOR * (ctx.opt.max_trials - done)
    chosen = planned[:room]
    cold = sorted({p.proposal.loop_id for _, p in planned if p.proposal.cold})
    if cold and not ctx.ledger.get("cold_loops"):
        ctx.report.message(f"{len(cold)} loop(s) without samples come after every sampled one")
    with ctx.ledger.transaction():
        for name, planned_one in chosen:
            p = planned_one.proposal
            ctx.ledger.add_trial(generation=base.generation, loop_key=p.loop_key, kernel=p.kernel, loop_id=p.loop_id,
                                 rule=p.rule, factor=p.factor, expected_value=p.expected_value, file=planned_one.file,
                                 ordering={"factors": p.factors, "shape": p.shape, "heat": p.heat, "cold": p.cold},
                                 proposer=name, provenance=planned_one.provenance)
        ctx.ledger.set("cold_loops", cold)
        ctx.ledger.set("candidates_left_estimate", len(planned) - len(chosen))
    ctx.report.message(f"generation {base.generation}: {len(chosen)} candidates planned over "
                       f"{len({p.proposal.loop_key for _, p in chosen})} loops (of {len(planned)}); building all before measuring any")
    return BUILD


def deferred(ctx: "RunContext", generation: int) -> list[Trial]:
    """The generation's candidates the build stage left unbuilt for the budget."""
    return [t for t in ctx.ledger.trials(generation=generation, status="rejected")
            if t.reason == R_BUDGET and t.evidence.get(NOT_BUILT)]


def revive_not_built(ctx: "RunContext", generation: int) -> bool:
    """Plan again the generation's candidates the build stage left unbuilt for the budget, when the
    pairs left (after one more build wave) can give one of them a first rung."""
    found = deferred(ctx, generation)
    if not found or not room_for_a_wave(ctx, generation):
        return False
    with ctx.ledger.transaction():
        for t in found:
            ctx.ledger.update_trial(t.id, status="proposed", reason="", detail="", evidence={})
    ctx.report.message(f"the race left room: building {len(found)} candidates it had left unbuilt")
    return True
