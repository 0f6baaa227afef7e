"""The loop's search in one generation on seeded synthetic candidates (tests, tests/bench).

The race (racing.py) on every candidate, then the close calls to settle (close_calls.to_settle),
then per loop the screened candidates by estimate, each confirmed on fresh pairs at
alpha / (k (k + 1)) until one per loop is accepted: the order and rules of the loop's stages (optimize/stages/), on pairs drawn
from known true ratios, so that find rates, costs and false accepts can be counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.close_calls import SETTLE_MAX_PAIRS, close_call, settle_limit, to_settle
from rocm_perf.optimize.racing import BUDGET, Call, RacePlan, Racer, grant, judge_rung, next_rung


@dataclass(frozen=True)
class Synthetic:
    """A synthetic candidate: its loop, its expected value, and its true ratio (0.9 = 10 % faster)."""

    id: int
    group: str
    score: float
    ratio: float


@dataclass
class SearchResult:
    calls: dict[int, Call]  # every racer's final screening call
    accepted: list[int]  # in order of acceptance
    confirmations: list[tuple[int, str, float]]  # (id, verdict, alpha)
    pairs: int  # measured pairs, screening and confirmations
    settled: list[int]  # close calls sent to a confirmation (to_settle)


def simulate_search(candidates: list[Synthetic], plan: RacePlan, confirm_plan: acc.SequentialPlan, *,
                    draw: Callable[[float, int], tuple[np.ndarray, np.ndarray]], pairs_budget: float = math.inf,
                    max_confirmations: int | None = None, settle_max_pairs: float = SETTLE_MAX_PAIRS) -> SearchResult:
    """The loop's search in one generation (`draw(ratio, n)` gives n fresh (baseline, candidate)
    pairs). Combination after a first accept is not simulated: each loop's winner is confirmed alone."""
    racers = {c.id: Racer(c.id, c.group, c.score, [], []) for c in candidates}
    truth = {c.id: c.ratio for c in candidates}
    calls: dict[int, Call] = {}
    passed: dict[str, list[Call]] = {}
    pairs = 0
    rung = -1
    alive = list(racers.values())
    while alive:
        target = next_rung(plan, rung)
        granted, refused = grant(alive, target, pairs_budget - pairs, first=rung < 0, plan=plan)
        for rid in refused:
            calls[rid] = Call(rid, acc.REJECT, BUDGET, "the pairs left went to candidates of higher expected value", None, racers[rid].n)
        alive = [racers[i] for i in granted]
        for r in alive:
            need = target - r.n
            b, c = draw(truth[r.id], need)
            r.baseline = list(r.baseline) + list(b)
            r.candidate = list(r.candidate) + list(c)
            pairs += need
        rung += 1
        rung_calls = judge_rung(alive, target, plan, passed)
        for rid, call in rung_calls.items():
            if call.verdict != acc.CONTINUE:
                calls[rid] = call
                if call.verdict == acc.ACCEPT:
                    passed.setdefault(racers[rid].group, []).append(call)
        alive = [r for r in alive if rung_calls[r.id].verdict == acc.CONTINUE]
    screened = [calls[i] for i in calls if calls[i].verdict == acc.ACCEPT]
    settled = _close_calls_to_settle(racers, calls, set(passed), plan, confirm_plan, settle_max_pairs, pairs_budget - pairs)
    accepted: list[int] = []
    confirmations: list[tuple[int, str, float]] = []

    def confirm_by_loop(contenders: list[Call]) -> None:
        """Per loop, best loop first, its contenders by estimate until one is accepted."""
        nonlocal pairs
        by_group: dict[str, list[Call]] = {}
        for call in sorted(contenders, key=lambda c: (c.interval.estimate, c.id)):
            by_group.setdefault(racers[call.id].group, []).append(call)
        for group_calls in sorted(by_group.values(), key=lambda cs: (cs[0].interval.estimate, cs[0].id)):
            for call in group_calls:
                if max_confirmations is not None and len(confirmations) >= max_confirmations:
                    break
                k = len(confirmations) + 1
                level = acc.confirmation_alpha(plan.alpha, k)
                fresh = confirm_plan.with_alpha(level)
                if call.id in settled:  # a close call's confirmation ends sooner (stages/confirm.py)
                    fresh = fresh.ending_by(settle_limit(settle_max_pairs))
                b, c = draw(truth[call.id], fresh.max_rounds)
                decision = acc.run_sequential(zip(b, c), fresh)
                pairs += decision.rounds
                confirmations.append((call.id, decision.verdict, level))
                if decision.verdict == acc.ACCEPT:
                    accepted.append(call.id)
                    break

    confirm_by_loop(screened + [calls[i] for i in settled])
    # Loops whose screened winners all failed their re-measure: their close calls, once per loop (loop.confirm).
    decided = {racers[i].group for i in accepted} | {racers[i].group for i in settled}
    later = _close_calls_to_settle(racers, calls, decided, plan, confirm_plan, settle_max_pairs, pairs_budget - pairs)
    settled += later
    confirm_by_loop([calls[i] for i in later])
    return SearchResult(calls, accepted, confirmations, pairs, settled)


def _close_calls_to_settle(racers: dict[int, Racer], calls: dict[int, Call], decided: set[str], plan: RacePlan,
                           confirm_plan: acc.SequentialPlan, max_pairs: float, pairs_left: float) -> list[int]:
    """The stopped racers to_settle picks, as the loop picks them (its report's level: the first confirmation's)."""
    if not max_pairs > 0:
        return []
    tail = confirm_plan.with_alpha(acc.confirmation_alpha(plan.alpha, 1)).look_alpha
    found = []
    for rid, call in calls.items():
        if call.verdict == acc.ACCEPT or call.interval is None:
            continue
        status = "rejected"  # the loop files every racer it stopped so (stages/screen.py _record_racer)
        evidence = {"screen": {"critical_path": call.interval.to_json()}}
        r = racers[rid]
        cc = close_call(rid, str(rid), status, call.reason, call.detail, evidence, 1.0 - plan.min_gain,
                        (list(r.baseline)[:call.n], list(r.candidate)[:call.n]), tail)
        if cc is not None:
            found.append(cc)
    return to_settle(found, {r.id: r.group for r in racers.values()}, decided, max_pairs, pairs_left)


def lognormal_pairs(sd: float, seed: int) -> Callable[[float, int], tuple[np.ndarray, np.ndarray]]:
    """A seeded source of paired rounds: baseline 1 ms x a shared drift, the candidate `ratio`
    times it, each with independent log-normal noise of `sd` (so the paired log ratio has sd
    sqrt(2) sd)."""
    rng = np.random.default_rng(seed)

    def draw(ratio: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        drift = np.exp(rng.normal(0.0, 0.2, n))
        b = 1e6 * drift * np.exp(rng.normal(0.0, sd, n))
        c = 1e6 * ratio * drift * np.exp(rng.normal(0.0, sd, n))
        return b, c

    return draw
