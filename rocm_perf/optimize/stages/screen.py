"""State `screen`: the race (racing.py). The built candidates of the generation, best score first
and at most --max-trials, get a first rung of interleaved pairs each (two sharing one baseline run);
at each rung every racer is judged (passed, stopped as slower or out of reach, outraced by a rival
of its loop, or on to the next rung), the pairs left going to the highest expected value. A race's
pairs may re-choose the decision metric once (--metric auto) and re-take the noise floor when they
are clearly steadier than the A/A pairs. After the race, close calls a few fresh pairs could settle
go to the confirmations. Commits each rung's calls with the race's new rung, so that a resumed race
never judges a rung twice and goes on from each racer's last complete pair."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import racing
from rocm_perf.optimize.budget import counts, measured, pairs_left, race_plan, sequential_plan, spread_in_force
from rocm_perf.optimize.close_calls import close_call, measured_phase, to_settle, unproven
from rocm_perf.optimize.interleaved import SHARED_BASELINE, evidence, pair_values, ratio_text, recorded_pairs, shared_pairs
from rocm_perf.optimize.ledger import BASELINE_TRIAL, Baseline, Trial
from rocm_perf.optimize.measure import metric_meaning
from rocm_perf.optimize.states import CARRIED, CONFIRM, R_BUDGET
from rocm_perf.optimize.verdicts import drop_copies, score, write_verdict

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    base = ctx.ledger.current_baseline()
    generation = base.generation
    plan = race_plan(ctx)
    race = ctx.ledger.get("race") or {}
    # A new race: a new generation's, or one of candidates built after the generation's race (not built then)
    if race.get("generation") != generation or _racers(ctx, generation, ("built",)):
        if not _racers(ctx, generation, ("built", "screening")):
            return CONFIRM
        _start_race(ctx, generation, plan)
    while True:
        ctx.check_stop()
        plan = race_plan(ctx)  # its bar falls when the race re-takes the noise floor (_retake_floor)
        rung = int(ctx.ledger.get("race")["rung"])
        target = racing.next_rung(plan, rung)
        racers = _racers(ctx, generation, ("screening",))
        if not racers or target is None:
            break
        _race_to(ctx, racers, target, base)
        _judge(ctx, generation, rung + 1, target, plan)
    settle_close_calls(ctx, generation)
    return CONFIRM


def _racers(ctx: "RunContext", generation: int, statuses: tuple[str, ...]) -> list[Trial]:
    return sorted((t for t in ctx.ledger.trials(generation=generation) if t.status in statuses and not t.components),
                  key=lambda t: (-score(t), t.id))


def settle_close_calls(ctx: "RunContext", generation: int) -> bool:
    """After the race, and again once the confirmations have no candidate left: each loop without a
    screened or accepted candidate sends the close call that a few fresh pairs could settle
    (close_calls.to_settle, --settle-close-calls) to the confirmations as a screened winner goes,
    once per loop. True when it sent one. (matmul_tiled: `unroll_manual x4` stopped at 0.976 after
    20 pairs as slower than `unroll_manual x2`, which had passed screening at 0.970 and then failed
    its re-measure; about 23 pairs at the race's 0.7 % spread would show a 2.4 % gain.) Not in a
    project run: a stopped candidate's tree is not kept (verdicts.drop_copies)."""
    max_pairs = ctx.opt.settle_close_calls
    if not max_pairs > 0 or ctx.project:
        return False
    trials = ctx.ledger.trials()
    before = [int(i) for i in ctx.ledger.get("settled_close_calls") or []]
    decided = {t.loop_key for t in trials if t.status in ("screened", "confirming", "accepted", CARRIED)}
    decided |= {t.loop_key for t in trials if t.id in before}  # once per loop
    stopped = [t for t in trials if t.generation == generation and not t.components and t.loop_key not in decided
               and unproven(t.status, t.reason) and measured_phase(t.evidence) == "screen"]
    if not stopped:
        return False
    threshold = 1.0 - float(ctx.ledger.get("effective_min_gain", ctx.opt.min_gain))
    tail = sequential_plan(ctx, acc.confirmation_alpha(ctx.alpha, 1)).look_alpha  # the report's level for close calls
    calls = {}
    for t in stopped:
        call = close_call(t.id, t.label, t.status, t.reason, t.detail, t.evidence, threshold, pair_values(ctx, t, "screen"), tail)
        if call is not None:
            calls[t.id] = call
    chosen = to_settle(list(calls.values()), {t.id: t.loop_key for t in stopped}, decided, max_pairs, pairs_left(ctx))
    if not chosen:
        return False
    by_id = {t.id: t for t in stopped}
    with ctx.ledger.transaction():
        for tid in chosen:
            ctx.ledger.update_trial(tid, status="screened", reason="", detail="",
                                    evidence={**by_id[tid].evidence, "close_call": calls[tid].to_json()})
        ctx.ledger.set("settled_close_calls", before + chosen)
    for tid in chosen:
        call = calls[tid]
        ctx.report.message(f"{by_id[tid].label}: a close call ({call.estimate:.3f} after {call.pairs} pairs, "
                           f"stopped {call.reason}; about {math.ceil(call.pairs_to_settle)} pairs would settle it): "
                           "to be re-measured")
    return True


def _start_race(ctx: "RunContext", generation: int, plan: racing.RacePlan) -> None:
    """The race's entrants (--max-trials, by score) and their first rung (the budget, by score)."""
    entrants = _racers(ctx, generation, ("built",))
    room = max(0, ctx.opt.max_trials - measured(ctx))
    over, entrants = entrants[room:], entrants[:room]
    racers = [racing.Racer(t.id, t.loop_key, score(t)) for t in entrants]
    granted, refused = racing.grant(racers, plan.rungs[0], pairs_left(ctx), first=True, plan=plan)
    if racers and not granted and measured(ctx) == 0 and ctx.elapsed() < ctx.opt.time_budget_s:
        # Nothing measured yet: the best candidate races into the reserve rather than the run ending empty.
        granted, refused = [racers[0].id], [r.id for r in racers[1:]]
    with ctx.ledger.transaction():
        for t in over:
            ctx.ledger.reject(t.id, R_BUDGET, f"not measured: --max-trials {ctx.opt.max_trials} went to candidates "
                              "of higher expected value")
        for tid in refused:
            ctx.ledger.reject(tid, R_BUDGET, "not measured: the time budget's pairs went to candidates of higher "
                              "expected value" if granted else "not measured: the time budget left pays for no "
                              "pairs beyond two confirmations and the final check")
        for tid in granted:
            ctx.ledger.update_trial(tid, status="screening")
        ctx.ledger.set("race", {"generation": generation, "rung": -1, "plan": plan.to_json()})
    for t in over + [ctx.ledger.trial(i) for i in refused]:
        write_verdict(ctx, t.id)
        drop_copies(ctx, t.id)
    ctx.report.message(f"race of {len(granted)} candidates: rungs {', '.join(map(str, plan.rungs))} pairs"
                       + (f"; {len(over) + len(refused)} not measured (budget)" if over or refused else ""))


def _race_to(ctx: "RunContext", racers: list[Trial], target: int, base: Baseline) -> None:
    """Measure every racer to `target` complete pairs, round-robin, highest score first, two
    candidates to one baseline run (SHARED_BASELINE): partners are fixed for the rung, so that
    a resumed race files each baseline run as the uninterrupted one would have."""
    done_pairs = {t.id: len(pair_values(ctx, t, "screen")[0]) for t in racers}
    alive = {t.id for t in racers}
    groups = [sorted(racers[k: k + SHARED_BASELINE], key=lambda t: t.id) for k in range(0, len(racers), SHARED_BASELINE)]
    while True:
        if not any(done_pairs[t] < target for t in alive):
            return
        for group in groups:
            members = [t for t in group if t.id in alive and done_pairs[t.id] < target]
            if not members:
                continue
            ctx.check_stop()
            if ctx.elapsed() >= ctx.opt.time_budget_s:
                for other in [t for t in racers if t.id in alive]:
                    _decide_racer(ctx, other, acc.REJECT, R_BUDGET, f"--time-budget {ctx.opt.time_budget_s:.0f} s spent "
                                  f"after {done_pairs[other.id]} pairs", done_pairs[other.id], None)
                return
            done, left = counts(ctx)
            ctx.report.trial(" + ".join(t.label for t in members), f"race to {target}", done, left, target)
            if len({done_pairs[t.id] for t in members}) == 1:
                batches = [members]
            else:  # a partner is a pair behind (a resumed race): each goes alone, filed as before
                batches = [[t] for t in members]
            for batch in batches:
                outcome = shared_pairs(ctx, batch, {t.id: done_pairs[t.id] for t in batch}, "screen", base,
                                       name=(group[0].id, done_pairs[batch[0].id]))
                for t in batch:
                    reason, detail, secs = outcome[t.id]
                    done_pairs[t.id] += 1
                    ctx.report.round(done_pairs[t.id], "", secs)
                    if reason:
                        _decide_racer(ctx, t, acc.REJECT, reason, detail, done_pairs[t.id], None)
                        alive.discard(t.id)


def _decide_racer(ctx: "RunContext", t: Trial, verdict: str, reason: str, detail: str, n: int, call: racing.Call | None,
                  plan: racing.RacePlan | None = None) -> None:
    """Record a racer's screening decision (committed with its status), then say it."""
    with ctx.ledger.transaction():
        found = _record_racer(ctx, t, verdict, reason, detail, n, call, plan or race_plan(ctx))
    _announce_racer(ctx, t, verdict, reason, detail, found)


def _record_racer(ctx: "RunContext", t: Trial, verdict: str, reason: str, detail: str, n: int, call: racing.Call | None,
                  plan: racing.RacePlan) -> dict:
    """A racer's screening decision and status, inside the caller's transaction; its evidence."""
    t = ctx.ledger.trial(t.id)
    complete = len(pair_values(ctx, t, "screen")[0])
    found: dict[str, Any] = evidence(ctx, t, "screen", min(n, complete), plan.look_alpha) if complete else {"rounds": n}
    found.update({"decision": call.to_json() if call else {"verdict": verdict, "reason": reason, "rounds": n},
                  "plan": plan.to_json(), "race": {"score": score(t)}})
    if detail:
        found["detail"] = detail
    ctx.ledger.add_decision(t.id, "screen", verdict, reason, found)
    if verdict == acc.ACCEPT:
        ctx.ledger.update_trial(t.id, status="screened", evidence={"screen": found})
    else:
        ctx.ledger.update_trial(t.id, status="rejected", reason=reason,
                                detail=detail or ratio_text(found), evidence={"screen": found})
    return found


def _announce_racer(ctx: "RunContext", t: Trial, verdict: str, reason: str, detail: str, found: dict) -> None:
    if verdict == acc.ACCEPT:
        last = f" as {detail.split(':')[0]}" if detail.startswith((racing.LAST_RACER, racing.LEADER)) else ""
        ctx.report.message(f"{t.label}: passed screening{last} ({ratio_text(found)}); to be re-measured")
    else:
        write_verdict(ctx, t.id)
        drop_copies(ctx, t.id)
        ctx.report.verdict(t.label, f"{reason} ({detail or ratio_text(found)})"[:200], False)


def _judge(ctx: "RunContext", generation: int, rung: int, n: int, plan: racing.RacePlan) -> None:
    """Every racer's call at rung `rung` (n pairs), and who runs the next rung: committed in one
    transaction with the race's new rung, so that a resumed race never judges a rung twice."""
    trials = _racers(ctx, generation, ("screening",))
    _recheck_metric(ctx, trials, n)
    racers = []
    for t in trials:
        b, c = pair_values(ctx, t, "screen", n)
        racers.append(racing.Racer(t.id, t.loop_key, score(t), b, c))
    if _retake_floor(ctx, racers, n):
        plan = race_plan(ctx)
    passed: dict[str, list[racing.Call]] = {}
    for t in ctx.ledger.trials(generation=generation):
        d = ctx.ledger.decision(t.id, "screen")
        # (a close call sent to its confirmation did not pass screening: it is no rival's bar)
        if t.status == "screened" and d and not t.components and d.get("decision", {}).get("interval") \
                and "close_call" not in t.evidence:
            iv = acc.RatioInterval(**d["decision"]["interval"])
            passed.setdefault(t.loop_key, []).append(racing.Call(t.id, acc.ACCEPT, acc.REASON_GAIN, "", iv, iv.n))
    calls = racing.judge_rung(racers, n, plan, passed)
    continuing = [r for r in racers if calls[r.id].verdict == acc.CONTINUE]
    nxt = racing.next_rung(plan, rung)
    granted, refused = (racing.grant(continuing, nxt, pairs_left(ctx), first=False, plan=plan)
                        if nxt is not None and continuing else ([r.id for r in continuing], []))
    by_id = {t.id: t for t in trials}
    said = []
    with ctx.ledger.transaction():
        for r in racers:
            call = calls[r.id]
            if call.verdict != acc.CONTINUE:
                said.append((r.id, call.verdict, call.reason, call.detail,
                             _record_racer(ctx, by_id[r.id], call.verdict, call.reason, call.detail, n, call, plan)))
            elif r.id in refused:
                detail = (f"stopped after {n} pairs: the time budget's pairs went to candidates of higher expected "
                          "value" if granted else f"stopped after {n} pairs: the time budget left pays for no pairs "
                          "beyond two confirmations and the final check")
                said.append((r.id, acc.REJECT, R_BUDGET, detail,
                             _record_racer(ctx, by_id[r.id], acc.REJECT, R_BUDGET, detail, n, None, plan)))
        ctx.ledger.set("race", {"generation": generation, "rung": rung, "plan": plan.to_json()})
    for tid, verdict, reason, detail, found in said:
        _announce_racer(ctx, by_id[tid], verdict, reason, detail, found)


def _recheck_metric(ctx: "RunContext", trials: list[Trial], n: int) -> bool:
    """Under --metric auto, once, before the run's first race judges its first rung: choose the
    metric again over the A/A pairs and that rung's pairs together (acc.steadier_metric_pooled,
    the same margin). Ten A/A pairs can fall in a moment of load that one clock path cancels
    and the other does not, and the metric they choose then decides the whole run: in 84 loop
    runs of seven 12-program passes the A/A pairs chose probed-path six times, and in four of
    them the race's pairs spread two to three times as much on it as on cpu-path (matmul_tiled:
    3.9 % vs 1.6 % over the A/A, 1.3 % vs 3.1 % over the race's 55 pairs; its 2-3 % gain was
    dropped at the first rung). A switch takes the noise floor again on the new metric: the A/A's
    offset, the resolution at the pooled spread. Screening only, as everything the race decides:
    every accept is still a fresh confirmation on pairs the choice never saw. True on a switch."""
    record = ctx.ledger.get("metric") or {}
    choices = record.get("steadier_of")
    if not choices or "race_check" in record or not trials:
        return False
    if len(ctx.ledger.baselines()) > 1 or ctx.ledger.trials(status="screened"):
        return False  # a run from before this check, resumed past its first race: the metric has decided already
    groups = {}
    for m in choices:  # a metric some round lacks (pipeline: no probe beside overlapping streams) is no choice
        pairs_m = [recorded_pairs(ctx, BASELINE_TRIAL, "aa", m)] + [recorded_pairs(ctx, t.id, "screen", m, n) for t in trials]
        if all(p is not None for p in pairs_m):
            groups[m] = pairs_m
    chosen, spreads, pairs = acc.steadier_metric_pooled(groups, choices)
    before = ctx.opt.metric
    check = {"rung": n, "racers": len(trials), "pairs": pairs, "spreads": spreads, "from": before}
    if chosen == before or chosen not in spreads:
        with ctx.ledger.transaction():
            ctx.ledger.set("metric", {**record, "race_check": check})
        return False
    b, c = groups[chosen][0]  # the A/A pairs
    aa = acc.noise_floor(b, c, confidence=ctx.opt.confidence, max_rounds=ctx.opt.max_rounds)
    floor = acc.floor_at_spread(aa.interval, spreads[chosen], confidence=ctx.opt.confidence, max_rounds=ctx.opt.max_rounds)
    effective = acc.effective_min_gain(ctx.opt.min_gain, floor)
    with ctx.ledger.transaction():
        ctx.ledger.set("metric", {**record, "name": chosen, "meaning": metric_meaning(chosen), "race_check": check})
        ctx.ledger.set("noise_floor", floor.to_json())
        ctx.ledger.set("effective_min_gain", effective)
    ctx.opt = replace(ctx.opt, metric=chosen)
    said = ", ".join(f"{m} {s:.1%}" for m, s in spreads.items())
    ctx.report.message(f"decision metric: {chosen} instead of {before}: over the A/A pairs and the first rung's, "
                       f"{pairs} pairs, its paired spread is lower ({said}); min gain {effective:.1%}")
    return True


def _retake_floor(ctx: "RunContext", racers: list[racing.Racer], n: int) -> bool:
    """Take the noise floor again from the rung's pairs when they are clearly steadier than the
    spread in force (acc.RETAKE_FACTOR: the machine left the noisy mode the A/A pairs fell in),
    have more pairs than the A/A had, and set a lower bar: that bar then judges this rung and
    everything after it. True when it did."""
    floor = ctx.ledger.get("noise_floor")
    if not floor:
        return False
    retakes = list(ctx.ledger.get("noise_floor_retakes") or [])
    in_force = spread_in_force(ctx)
    if in_force is None:
        return False
    spread, pairs = acc.pooled_spread([(r.baseline, r.candidate) for r in racers])
    if pairs < 2 * ctx.opt.aa_rounds or not acc.clearly_steadier(in_force, spread):
        return False
    retaken = acc.floor_at_spread(acc.RatioInterval(**floor["interval"]), spread,
                                  confidence=ctx.opt.confidence, max_rounds=ctx.opt.max_rounds)
    bar = float(ctx.ledger.get("effective_min_gain", ctx.opt.min_gain))
    lower = acc.effective_min_gain(ctx.opt.min_gain, retaken)
    if lower >= bar:
        return False
    record = {"rung": n, "racers": len(racers), "pairs": pairs, "spread": spread, "from_spread": in_force,
              "floor": retaken.floor, "from_min_gain": bar, "min_gain": lower}
    with ctx.ledger.transaction():
        ctx.ledger.set("noise_floor_retakes", retakes + [record])
        ctx.ledger.set("effective_min_gain", lower)
    than = "the last rung's" if retakes else "the A/A's"
    ctx.report.message(f"the race's {pairs} pairs are steadier than {than} (spread {spread:.1%} vs {in_force:.1%}): "
                       f"asking for at least {lower:.1%} instead of {bar:.1%}")
    return True
