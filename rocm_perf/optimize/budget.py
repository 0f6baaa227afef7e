"""What the time budget still pays for: pairs left, whether another build wave is worth its time,
the race's and the confirmations' plans at the bar in force.

Every figure is read from the ledger (seconds a pair takes, waves built, the noise floor and its
re-takes, the confirmations held back), so that a resumed run budgets as the uninterrupted one did.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import racing
from rocm_perf.optimize.confirmation import CONFIRMATION_PAIRS_RESERVED
from rocm_perf.optimize.states import OPEN_STATUSES

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def measured(ctx: "RunContext") -> int:
    """Candidates that entered a race (carries of screened ones do not count again): --max-trials."""
    return sum(1 for t in ctx.ledger.trials() if not t.components
               and (t.status == "screening" or ctx.ledger.decision(t.id, "screen") is not None))


def counts(ctx: "RunContext") -> tuple[int, int]:
    """(candidates decided, candidates left including those not planned yet), for progress lines."""
    trials = ctx.ledger.trials()
    done = sum(t.status not in OPEN_STATUSES for t in trials)
    left = sum(t.status in OPEN_STATUSES for t in trials) + int(ctx.ledger.get("candidates_left_estimate", 0) or 0)
    return done, left


def sequential_plan(ctx: "RunContext", alpha: float) -> acc.SequentialPlan:
    """The sequential test of a confirmation at `alpha`, at the bar in force."""
    return ctx.base_plan.with_min_gain(float(ctx.ledger.get("effective_min_gain", ctx.opt.min_gain))).with_alpha(alpha)


def race_plan(ctx: "RunContext") -> racing.RacePlan:
    """The race's rungs and levels at the bar in force and the spread it was set at."""
    return racing.RacePlan.doubling(float(ctx.ledger.get("effective_min_gain", ctx.opt.min_gain)), ctx.alpha,
                                    ctx.opt.rounds, ctx.opt.max_rounds, known_spread=spread_in_force(ctx))


def spread_in_force(ctx: "RunContext") -> float | None:
    """The paired spread the bar was set at: the A/A pairs', or the race's last retake's."""
    floor = ctx.ledger.get("noise_floor")
    if not floor:
        return None
    retakes = ctx.ledger.get("noise_floor_retakes") or []
    spread = float(retakes[-1]["spread"] if retakes else floor["spread"])
    return spread if math.isfinite(spread) and spread > 0 else None


def pairs_left(ctx: "RunContext", extra_s: float = 0.0) -> float:
    """The pairs the time budget still pays for (after `extra_s` more seconds of other work), after
    room for two confirmations (fewer once lent) and the final check (at most half the budget: with a short budget on
    a slow program that room would leave the race no pair at all, and a confirmation that runs over
    the budget beats a run that measured nothing)."""
    pair_s = ctx.ledger.get("pair_seconds")
    if not pair_s:
        return math.inf
    confirmations = int(ctx.ledger.get("reserved_confirmations", 2))  # fewer once lent (lend_confirmation_reserve)
    pairs = confirmations * min(ctx.opt.max_rounds, CONFIRMATION_PAIRS_RESERVED) + ctx.opt.aa_rounds
    reserve_s = min(pairs * pair_s, 0.5 * ctx.opt.time_budget_s)
    return max(0.0, (ctx.opt.time_budget_s - ctx.elapsed() - extra_s - reserve_s) / pair_s)


def wave_seconds(ctx: "RunContext") -> float:
    """What building one more wave is expected to take: the median of this run's waves, else the
    baseline's two builds."""
    seen = sorted(ctx.ledger.get("build_wave_seconds") or [])
    if seen:
        return seen[len(seen) // 2]
    return float(ctx.ledger.get("baseline_build_seconds") or 0.0)


def no_room_to_build(ctx: "RunContext", generation: int) -> str:
    """Why building another wave would be wasted ('' when it would not): after it, the pairs the
    budget leaves (pairs_left) could give no more candidates a first rung than are built."""
    pair_s = ctx.ledger.get("pair_seconds")
    if not pair_s:
        return ""
    plan = race_plan(ctx)
    built = sum(1 for t in ctx.ledger.trials(generation=generation) if t.status == "built" and not t.components)
    pairs = pairs_left(ctx, extra_s=wave_seconds(ctx))
    racable = math.floor(pairs * plan.first_share / plan.rungs[0])
    if built < racable:
        return ""
    return (f"the time budget left ({max(0.0, ctx.opt.time_budget_s - ctx.elapsed()):.0f} s of "
            f"{ctx.opt.time_budget_s:.0f} s) races at most {racable} candidate{'s' if racable != 1 else ''} at "
            f"{pair_s:.1f} s a pair, and {built} of higher expected value {'is' if built == 1 else 'are'} built")


def room_for_a_wave(ctx: "RunContext", generation: int) -> bool:
    """Whether one more build wave is worth its time: the same test the build stage makes before
    each wave (no_room_to_build), so that planning again and building never disagree. The wave is
    granted (`build` builds it without asking again): each grant builds at least one candidate,
    so planning again always makes progress."""
    if no_room_to_build(ctx, generation):
        return False
    ctx.ledger.set("wave_granted", generation)
    return True


def with_reserve_lent(ctx: "RunContext", attempt: Callable[[], bool], generation: int) -> bool:
    """`attempt()`, tried again after each confirmation lent (lend_confirmation_reserve) until it succeeds."""
    done = attempt()
    while not done and lend_confirmation_reserve(ctx, generation):
        done = attempt()
    return done


def lend_confirmation_reserve(ctx: "RunContext", generation: int) -> bool:
    """Hold back one confirmation fewer (of the two `pairs_left` keeps), when the generation's race is
    over with nothing awaiting confirmation (the caller has candidates left unbuilt for the budget):
    else the run would stop with the reserve unspent. A confirmation that then runs over the budget beats candidates
    never measured. At most twice a run, so planning again cannot go on without end."""
    reserved = int(ctx.ledger.get("reserved_confirmations", 2))
    if reserved <= 0 or ctx.elapsed() >= ctx.opt.time_budget_s:
        return False
    if any(t.status in ("built", "screening", "screened", "confirming") for t in ctx.ledger.trials(generation=generation)):
        return False
    ctx.ledger.set("reserved_confirmations", reserved - 1)
    return True
