"""State `confirm`: a screened winner is re-measured on fresh interleaved pairs by the sequential
test, each confirmation of the run at a stricter level (alpha spent across the run: the winner's
curse and many comparisons otherwise accept noise). Carries and combinations go first; when two or
more loops have a winner, `combine` first joins them into one candidate; else each loop's winners,
best loop first, until one is accepted. An accept makes the candidate the new baseline (the next
generation) and supersedes its loops' other screened candidates. Commits each decision with the
trial's status; a confirmation in flight when the run was killed is measured again from its first
round."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import yardstick
from rocm_perf.optimize.budget import counts, race_plan, sequential_plan
from rocm_perf.optimize.close_calls import settle_limit
from rocm_perf.optimize.interleaved import evidence, measure_pair, pair_values, ratio_text
from rocm_perf.optimize.ledger import COMBINATION, Baseline, Trial
from rocm_perf.optimize.measure import METRIC_UNDIVIDED, metric_kind
from rocm_perf.optimize.stages.combine import combination_due
from rocm_perf.optimize.stages.screen import settle_close_calls
from rocm_perf.optimize.states import COMBINE, R_BEHIND_PART, R_SUPERSEDED
from rocm_perf.optimize.verdicts import drop_copies, estimate, settle_components, write_verdict

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

# A combination's confirmation ends here: one whose gain does not show by then is a close call,
# which its loops' winners alone settle better (scan: a combination at 0.977 against a 0.98 bar took
# 100 pairs to end inconclusive; its best part alone, 0.957, passed). Fewer looks, each at a larger share of alpha.
COMBINATION_MAX_PAIRS = 20
# From this many pairs (and at any look where it would pass), a combination whose estimate is not
# below its best part's screened ratios (their 50 % interval) stops `behind its best part` (scan:
# 0.977 against 0.955 [0.953, 0.956]).
BEHIND_FROM = 10


def run(ctx: "RunContext") -> str:
    """Each loop's screened candidates, best loop first, re-measured fresh (alpha spent across
    the run) until one is accepted; combinations and carries (combine.py) before them, and
    the loops' winners first combined when two or more loops have one (`combine` plans it)."""
    for t in ctx.ledger.trials(status="confirming"):
        ctx.ledger.forget_rounds(t.id, "confirm")
        ctx.ledger.update_trial(t.id, status="screened")
    generation = ctx.ledger.current_baseline().generation
    while True:
        ctx.check_stop()
        contenders = [t for t in ctx.ledger.trials(status="screened") if t.generation == generation]
        if not contenders:
            if settle_close_calls(ctx, generation):
                continue  # a loop whose screened winners all failed their re-measure has its close call confirmed
            return COMBINE
        carries = [t for t in contenders if t.components]
        if carries:
            group = carries[:1]
        elif combination_due(ctx, generation):
            return COMBINE  # it plans the combination of the loops' winners, confirmed before each alone
        else:
            loops: dict[str, list[Trial]] = {}
            for t in sorted(contenders, key=lambda t: (estimate(t), t.id)):
                loops.setdefault(t.loop_key, []).append(t)
            group = min(loops.values(), key=lambda g: (estimate(g[0]), g[0].id))
        for t in group:
            if _confirm_one(ctx, t):
                return COMBINE


def _confirm_one(ctx: "RunContext", t: Trial) -> bool:
    ctx.check_stop()
    k = sum(1 for _ in ctx.ledger.decisions("confirm")) + 1
    alpha_k = acc.confirmation_alpha(ctx.alpha, k)
    ctx.ledger.update_trial(t.id, status="confirming")
    done, left = counts(ctx)
    plan, must_beat = sequential_plan(ctx, alpha_k), None
    # A combination on the baseline its parts were screened on (their ratios compare with its own)
    combination = t.rule == COMBINATION and all(ctx.ledger.trial(c).generation == t.generation for c in t.components)
    if combination:
        plan = plan.ending_by(COMBINATION_MAX_PAIRS)
        must_beat = _best_part(ctx, t)
    close = "close_call" in t.evidence
    if close:
        plan = plan.ending_by(settle_limit(ctx.opt.settle_close_calls))
    verdict, reason, found = measure(ctx, t, "confirm", plan, done, left, must_beat)
    found["confirmation"] = {"k": k, "alpha": alpha_k}
    if verdict != acc.ACCEPT and combination and not found.get("detail"):
        found["detail"] = (f"not confirmed within {plan.max_rounds} pairs, a combination's limit: each loop's "
                           "winner is confirmed alone")
    if verdict != acc.ACCEPT and close and not found.get("detail"):
        found["detail"] = f"not confirmed within {plan.max_rounds} pairs, a close call's limit (twice --settle-close-calls)"
    both = {"screen": t.evidence.get("screen", {}), "confirm": found,
            **({"close_call": t.evidence["close_call"]} if "close_call" in t.evidence else {})}
    if verdict == acc.ACCEPT:
        _accept(ctx, t, found, both)
        return True
    detail = found.get("detail", "on a fresh re-measure after passing screening")
    with ctx.ledger.transaction():
        ctx.ledger.add_decision(t.id, "confirm", verdict, reason, found)
        ctx.ledger.update_trial(t.id, status="rejected", reason=reason, detail=detail, evidence=both)
        settle_components(ctx, t, accepted=False, reason=reason, detail=detail)
    write_verdict(ctx, t.id)
    drop_copies(ctx, t.id)
    ctx.report.verdict(t.label, f"{reason} on re-measure ({ratio_text(found)})", False)
    return False


def measure(ctx: "RunContext", t: Trial, phase: str, plan: acc.SequentialPlan, done: int, left: int,
            must_beat: tuple[float, str] | None = None) -> tuple[str, str, dict]:
    """Fresh interleaved rounds against the current baseline until the sequential test stops.
    `must_beat` (ratio, why): at its looks from BEHIND_FROM pairs on, and when it would accept,
    a candidate whose estimate is not below that ratio stops `behind its best part` (a rule
    that only ever rejects).

    Returns (verdict, reason, evidence); verdict is accept / reject / inconclusive."""
    base = ctx.ledger.current_baseline()
    ctx.report.trial(t.label, phase, done, left, plan.max_rounds)
    decision = acc.Decision(acc.CONTINUE, "", None, 0)
    for i in range(plan.max_rounds):
        ctx.check_stop()
        if i >= ctx.opt.max_rounds and ctx.elapsed() >= ctx.opt.time_budget_s:
            # Past --max-rounds only while the budget lasts; ending a test early never accepts anything.
            decision = acc.Decision(acc.INCONCLUSIVE, acc.REASON_INCONCLUSIVE, decision.interval, i,
                                    f"--time-budget {ctx.opt.time_budget_s:.0f} s spent after {i} pairs, "
                                    f"past --max-rounds {ctx.opt.max_rounds}")
            break
        reason, detail, secs = measure_pair(ctx, t, phase, i, base)
        if reason:
            return acc.REJECT, reason, {"rounds": i + 1, "detail": detail}
        b, c = pair_values(ctx, t, phase)
        decision = acc.sequential_decision(b, c, plan)
        plain = METRIC_UNDIVIDED.get(metric_kind(ctx.opt.metric))
        if plain and decision.verdict == acc.ACCEPT:  # yardstick.py: not on a probe the candidate moved
            decision = yardstick.guard_accept(decision, plan, *pair_values(ctx, t, phase, metric=plain), b, c, plain)
        est = ""
        if decision.interval is not None:
            iv = decision.interval
            est = f"ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
        elif len(b) >= 2:
            est = f"ratio ~{acc.median_ratio_interval(b, c, tail_alpha=0.5).estimate:.3f}"
        ctx.report.round(i + 1, est, secs)
        n = i + 1
        iv = decision.interval  # at a look: the test's interval
        if must_beat and iv is not None and (decision.verdict == acc.ACCEPT or (
                n >= BEHIND_FROM and decision.verdict == acc.CONTINUE)):  # the test's own rejections stand
            if iv.estimate >= must_beat[0]:
                decision = acc.Decision(acc.REJECT, R_BEHIND_PART, iv, n,
                                        f"ratio {iv.estimate:.3f} after {n} fresh pairs; {must_beat[1]}")
        if decision.verdict != acc.CONTINUE:
            break
    found = {"decision": decision.to_json(), "plan": plan.to_json(),
             **evidence(ctx, t, phase, decision.rounds or plan.max_rounds, plan.look_alpha)}
    if decision.detail:
        found["detail"] = decision.detail
    return decision.verdict, decision.reason, found


def _best_part(ctx: "RunContext", t: Trial) -> tuple[float, str]:
    """What a combination must beat: the upper end of its best part's lenient screened interval
    (the race's 50 %), and the words that say so. Not the part's estimate: that is the best of a
    race (biased low), and on matmul_regblock a combination at 0.866, better than its best part
    alone (0.907 on fresh pairs), was behind that part's screened 0.864."""
    best = min((ctx.ledger.trial(c) for c in t.components), key=lambda c: (estimate(c), c.id))
    b, c = pair_values(ctx, best, "screen", int(best.evidence["screen"]["rounds"]))  # the pairs it passed screening on
    drop_alpha = race_plan(ctx).drop_alpha
    lenient = acc.median_ratio_interval(b, c, tail_alpha=drop_alpha, method=ctx.base_plan.method)
    return lenient.high, (f"its best part alone (trial {best.id}, {best.rule} x{best.factor} on {best.loop_id}) screened "
                          f"at {lenient.estimate:.3f}, {1 - 2 * drop_alpha:.0%} interval up to {lenient.high:.3f}: "
                          "each loop's winner is confirmed alone")


def _accept(ctx: "RunContext", t: Trial, found: dict, both: dict) -> None:
    """`t` becomes the next generation's baseline; its loops' other screened candidates are superseded."""
    base = ctx.ledger.current_baseline()
    # The other screened candidates of the accepted loops (a combination's: each of its components')
    loops = {t.loop_key, *(ctx.ledger.trial(c).loop_key for c in t.components)}
    superseded = [other.id for other in ctx.ledger.trials(status="screened") if other.loop_key in loops
                  and other.generation <= t.generation and not other.components and other.id not in t.components]
    with ctx.ledger.transaction():
        ctx.ledger.add_decision(t.id, "confirm", acc.ACCEPT, acc.REASON_GAIN, found)
        ctx.ledger.update_trial(t.id, status="accepted", reason=acc.REASON_GAIN, evidence=both)
        for other in superseded:
            ctx.ledger.update_trial(other, status="rejected", reason=R_SUPERSEDED,
                                    detail=f"trial {t.id} was accepted for the same loop")
        settle_components(ctx, t, accepted=True)
        if ctx.project:  # the candidate's tree is the new baseline's; its resources replace its file's
            ctx.ledger.add_baseline(Baseline(base.generation + 1, t.id, t.source_sha256, f"trials/{t.id}/tree",
                                             t.executable, {**base.resources, **(t.resources or {})}))
        else:
            ctx.ledger.add_baseline(Baseline(base.generation + 1, t.id, t.source_sha256, f"trials/{t.id}/source.cu",
                                             t.executable, t.resources or base.resources))
    write_verdict(ctx, t.id)
    for other in superseded:
        drop_copies(ctx, other)
    ctx.report.verdict(t.label, f"ACCEPTED ({ratio_text(found)})", True)
