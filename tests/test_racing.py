"""The race's statistics (optimize/racing.py) on seeded synthetic candidates with known gains.

Synthetic on purpose: only a known true ratio can tell a found winner from a lucky one, and only
many seeded runs can count false accepts. Round values are log-normal around a shared drift, as
interleaved rounds on a busy machine are; one noise model adds the stalls of a shared host.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import racing as rc
from rocm_perf.optimize import search_simulation as sim

ALPHA = 0.05
PLAN = rc.RacePlan.doubling(0.02, ALPHA, 5, 30)
CONFIRM = acc.SequentialPlan(0.02, ALPHA, 5, 30, 5)


def candidates(ratios: dict[str, list[float]], scores: dict[str, float] | None = None) -> list[sim.Synthetic]:
    out, i = [], 0
    for group, rs in ratios.items():
        for r in rs:
            i += 1
            out.append(sim.Synthetic(i, group, (scores or {}).get(group, 1.0), r))
    return out


def stalled_pairs(sd: float, seed: int):
    """Log-normal rounds plus, one round in ten, a stall of 20-60 % on either side (a preempted run)."""
    rng = np.random.default_rng(seed)

    def draw(ratio: float, n: int):
        drift = np.exp(rng.normal(0.0, 0.2, n))
        b = drift * np.exp(rng.normal(0.0, sd, n)) * (1 + (rng.random(n) < 0.1) * rng.uniform(0.2, 0.6, n))
        c = ratio * drift * np.exp(rng.normal(0.0, sd, n)) * (1 + (rng.random(n) < 0.1) * rng.uniform(0.2, 0.6, n))
        return 1e6 * b, 1e6 * c

    return draw


def test_rungs_double_from_the_first_look_to_the_last():
    assert PLAN.rungs == (5, 10, 20, 30)
    assert PLAN.look_alpha == pytest.approx(ALPHA / 4)
    assert rc.RacePlan.doubling(0.02, ALPHA, 4, 40).rungs == (4, 8, 16, 32, 40)
    assert rc.next_rung(PLAN, -1) == 5 and rc.next_rung(PLAN, 2) == 30 and rc.next_rung(PLAN, 3) is None
    with pytest.raises(ValueError):
        rc.RacePlan(rungs=(10, 5))


def test_judge_passes_a_clear_gain_and_names_every_other_outcome():
    rng = np.random.default_rng(1)
    b = 1e6 * np.exp(rng.normal(0, 0.01, 30))
    faster = rc.judge(rc.Racer(1, "L", 1.0, b, b * 0.8 * np.exp(rng.normal(0, 0.01, 30))), 10, PLAN)
    assert faster.verdict == acc.ACCEPT and faster.interval.high < 0.98
    slower = rc.judge(rc.Racer(2, "L", 1.0, b, b * 1.2 * np.exp(rng.normal(0, 0.01, 30))), 10, PLAN)
    assert (slower.verdict, slower.reason) == (acc.REJECT, acc.REASON_SLOWER)
    same = rc.judge(rc.Racer(3, "L", 1.0, b, b * np.exp(rng.normal(0, 0.002, 30))), 10, PLAN)
    assert (same.verdict, same.reason) == (acc.REJECT, acc.REASON_NOT_SIGNIFICANT)
    # Five pairs cannot reach the screening level (1/32 > alpha/4), only the lenient drop.
    early = rc.judge(rc.Racer(4, "L", 1.0, b, b * 1.01 * np.exp(rng.normal(0, 0.002, 30))), 5, PLAN)
    assert (early.verdict, early.reason) == (acc.REJECT, rc.OUTRACED) and "not plausibly" in early.detail
    noisy = rc.Racer(5, "L", 1.0, b, b * 0.97 * np.exp(rng.normal(0, 0.05, 30)))
    assert rc.judge(noisy, 5, PLAN).verdict == acc.CONTINUE
    assert rc.judge(noisy, 30, PLAN).verdict in (acc.INCONCLUSIVE, acc.REJECT, acc.ACCEPT)


def test_futility_stops_a_close_call_that_100_pairs_could_not_pass_and_keeps_one_they_could():
    """At 9 % paired spread a true 3 % gain cannot clear the 2 % bar even in 100 pairs (its interval
    would still span about +-4 %): the race stops it by the 40-pair rung mostly, where without the
    rule it ran to 100 pairs and ended inconclusive. At 1 % spread the same gain is resolvable, and
    the rule must not stop it: it passes screening as before."""
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    no_futility = rc.RacePlan.doubling(0.02, ALPHA, 5, 100, futility=False)

    def race(ratio: float, sd: float, seed: int, p: rc.RacePlan) -> rc.Call:
        b, c = sim.lognormal_pairs(sd / np.sqrt(2), seed)(ratio, 100)
        racer = rc.Racer(1, "L", 1.0, b, c)
        for n in p.rungs:
            call = rc.judge(racer, n, p)
            if call.verdict != acc.CONTINUE:
                return call
        raise AssertionError("the last rung always decides")

    noisy = [race(0.97, 0.09, seed, plan) for seed in range(200)]
    noisy_before = [race(0.97, 0.09, seed, no_futility) for seed in range(200)]
    futile = [c for c in noisy if "could not pass by the last look" in c.detail]
    assert len(futile) >= 100 and all(c.reason == rc.OUTRACED for c in futile)
    assert np.mean([c.n for c in noisy]) < 0.6 * np.mean([c.n for c in noisy_before])
    # It stops only what could not pass: a pass the old race found at this spread is rare, and kept
    # nearly as often (the rule is the lenient drop with the last rung's doubt added).
    passed_before = sum(c.verdict == acc.ACCEPT for c in noisy_before)
    assert sum(c.verdict == acc.ACCEPT for c in noisy) >= passed_before - max(2, passed_before // 2)
    quiet = [race(0.97, 0.01, seed, plan) for seed in range(200)]
    assert sum(c.verdict == acc.ACCEPT for c in quiet) >= 196
    assert not any("could not pass" in c.detail for c in quiet)
    # The doubt left at the last rung grows with the spread and shrinks with the rungs.
    b, c = sim.lognormal_pairs(0.05, 0)(0.97, 20)
    short = rc.RacePlan.doubling(0.02, ALPHA, 5, 30)
    assert 1.0 < acc.last_look_reach(b, c, plan.rungs[-1], plan.look_alpha) < acc.last_look_reach(b, c, short.rungs[-1], short.look_alpha)
    assert acc.last_look_reach(b[:4], c[:4], plan.rungs[-1], plan.look_alpha) == 1.0  # no spread to go by


def test_judge_rung_halves_each_loops_rivals_and_drops_those_behind_a_leader():
    rng = np.random.default_rng(2)
    n = 10
    b = 1e6 * np.exp(rng.normal(0, 0.05, n))

    def racer(i, group, ratio, sd=0.05):
        return rc.Racer(i, group, 1.0, b, b * ratio * np.exp(rng.normal(0, sd, n)))

    racers = [racer(1, "A", 0.97), racer(2, "A", 0.99), racer(3, "A", 1.00), racer(4, "A", 0.985),
              racer(5, "B", 1.0)]
    calls = rc.judge_rung(racers, n, PLAN)
    racing_a = [i for i in (1, 2, 3, 4) if calls[i].verdict == acc.CONTINUE]
    assert len(racing_a) <= 2  # the best half of loop A's four rivals run on
    assert all(calls[i].reason == rc.OUTRACED for i in (1, 2, 3, 4) if i not in racing_a and calls[i].verdict == acc.REJECT)
    assert calls[5].verdict != acc.CONTINUE or calls[5].reason == ""  # loop B's lone candidate is not halved away
    assert calls[5].verdict in (acc.CONTINUE, acc.REJECT)
    # A rival clearly behind a leader that passed screening earlier stops.
    leader = rc.Call(9, acc.ACCEPT, acc.REASON_GAIN, "", acc.RatioInterval(0.80, 0.78, 0.82, 10, 0.0125, "hodges-lehmann"), 10)
    behind = rc.judge_rung([rc.Racer(6, "A", 1.0, b, b * 0.975 * np.exp(rng.normal(0, 0.01, n)))], n, PLAN, {"A": [leader]})
    assert behind[6].reason == rc.OUTRACED and "behind trial 9" in behind[6].detail


def test_once_a_rival_passed_screening_only_racers_ahead_of_it_race_on():
    """stencil1d's rung of 10 pairs (12-program pass, 2bf77f0): manual x2 passed at 0.931; pragma x2
    at 0.966 was in the faster half of the three and raced 10 pairs more alone (20 runs) before it
    stopped behind it. Slower by estimate than a rival that passed, it stops now; one ahead races on."""
    rng = np.random.default_rng(5)
    n = 10
    b = 1e6 * np.exp(rng.normal(0, 0.03, n))

    def racer(i, ratio):
        return rc.Racer(i, "L", 1.0, b, b * ratio * np.exp(rng.normal(0, 0.03, n)))

    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    iv = acc.RatioInterval(0.931, 0.889, 0.975, 10, plan.look_alpha, "hodges-lehmann")
    passed = {"L": [rc.Call(3, acc.ACCEPT, acc.REASON_GAIN, "", iv, 10)]}
    calls = rc.judge_rung([racer(4, 0.966), racer(2, 0.981)], n, plan, passed)
    assert all(c.verdict == acc.REJECT and c.reason == rc.OUTRACED for c in calls.values())
    assert calls[4].detail.startswith("slower than trial 3, which passed screening, after 10 pairs")
    ahead = rc.judge_rung([racer(5, 0.90), racer(2, 0.981)], n, plan, passed)
    assert ahead[5].verdict in (acc.CONTINUE, acc.ACCEPT) and ahead[2].verdict == acc.REJECT


def test_two_close_rivals_both_race_on_until_an_interval_separates_them():
    """Halving two racers would keep whichever reads faster after 5 pairs: between a 2.6 % and a
    1.9 % gain at 2 % spread that is a coin toss. Both run on (min_keep); once one of them has
    passed screening, a slower racer stops as before (it could only be confirmed after it)."""
    rng = np.random.default_rng(11)
    n = 5
    b = 1e6 * np.exp(rng.normal(0, 0.02, n))
    near = rc.Racer(1, "L", 1.0, b, b * 0.981 * np.exp(rng.normal(0, 0.02, n)))
    best = rc.Racer(2, "L", 1.0, b, b * 0.974 * np.exp(rng.normal(0, 0.02, n)))
    halving = rc.judge_rung([near, best], n, rc.RacePlan.doubling(0.02, ALPHA, 5, 100, min_keep=1))
    assert {c.verdict for c in halving.values()} == {acc.CONTINUE, acc.REJECT}  # one of the two is cut by rank
    assert any("slower part of 2 rivals" in c.detail for c in halving.values())
    both = rc.judge_rung([near, best], n, rc.RacePlan.doubling(0.02, ALPHA, 5, 100))
    assert all(c.verdict == acc.CONTINUE for c in both.values())
    iv = acc.RatioInterval(0.95, 0.90, 0.99, 10, 0.0125, "hodges-lehmann")  # not clearly ahead of either
    after_a_pass = rc.judge_rung([near, best], n, rc.RacePlan.doubling(0.02, ALPHA, 5, 100),
                                 {"L": [rc.Call(9, acc.ACCEPT, acc.REASON_GAIN, "", iv, 10)]})
    assert sum(c.verdict == acc.CONTINUE for c in after_a_pass.values()) <= 1


def test_a_gain_just_over_the_bar_is_found_more_often_with_close_rivals_racing_on_and_longer_confirmations():
    """A matmul_tiled-like space (the 12-program pass's miss): one loop with a 2.6 % gain, a 1.9 %
    rival and nulls, another loop of nulls, 2.4 % spread, the loop's rungs and confirmation test.
    Over 300 seeded searches, two close rivals racing on (min_keep) and confirmations that may look
    on to 200 pairs (confirmation.confirmation_test) find the gain more often than halving to one and
    confirming within 100 (observed 87 and 127 of 300); never a null."""
    from rocm_perf.optimize.confirmation import confirmation_test, with_confirmation_rules

    cands = candidates({"L1": [0.994, 1.005, 1.025, 1.0, 1.006, 1.002, 0.996],
                        "L2": [0.981, 0.992, 0.974, 1.015, 1.0, 1.001, 0.997]})
    winner = next(c.id for c in cands if c.ratio == 0.974)

    def found(plan: rc.RacePlan, confirm: acc.SequentialPlan) -> tuple[int, int]:
        hits = nulls = 0
        for seed in range(300):
            result = sim.simulate_search(cands, plan, confirm, draw=sim.lognormal_pairs(0.024 / np.sqrt(2), seed))
            hits += winner in result.accepted
            nulls += any(c.ratio > 0.99 for c in cands if c.id in result.accepted)
        return hits, nulls

    before, before_nulls = found(rc.RacePlan.doubling(0.02, ALPHA, 5, 100, min_keep=1),
                                 with_confirmation_rules(acc.SequentialPlan(0.02, ALPHA, 5, 100)))
    after, after_nulls = found(rc.RacePlan.doubling(0.02, ALPHA, 5, 100), confirmation_test(0.02, ALPHA, 5, 100))
    assert after >= before + 25, (before, after)
    assert before_nulls == after_nulls == 0


def test_grant_goes_by_expected_value_not_first_come():
    racers = [rc.Racer(1, "cold", 0.01), rc.Racer(2, "hot", 0.9), rc.Racer(3, "warm", 0.3)]
    granted, refused = rc.grant(racers, 5, 20, first=True, plan=PLAN)  # 10 pairs for first rungs: two candidates
    assert granted == [2, 3] and refused == [1]
    granted, refused = rc.grant(racers, 5, 1000, first=True, plan=PLAN)
    assert sorted(granted) == [1, 2, 3] and not refused


@pytest.mark.parametrize("sd, gain_b", [(0.03, 0.94), (0.06, 0.90)])
def test_the_real_winners_are_found(sd, gain_b):
    """Loop A: 15 % and 12 % rivals among nulls; loop B: one gain (as large as the noise lets a
    second confirmation see in 30 pairs); loop C: nothing. Over seeded runs the race must accept
    loop A's winner (one of its real gains) and loop B's nearly always, and never a null one."""
    cands = candidates({"A": [0.85, 0.88, 1.0, 1.0, 1.05], "B": [gain_b, 1.0, 1.0], "C": [1.0, 1.0, 1.02]})
    truth = {c.id: c for c in cands}
    found_a = found_b = wrong = 0
    pairs = []
    runs = 60
    for seed in range(runs):
        result = sim.simulate_search(cands, PLAN, CONFIRM, draw=sim.lognormal_pairs(sd, seed))
        accepted = [truth[i] for i in result.accepted]
        found_a += any(c.group == "A" and c.ratio <= 0.88 for c in accepted)
        found_b += any(c.group == "B" and c.ratio == gain_b for c in accepted)
        wrong += any(c.ratio >= 1.0 for c in accepted)
        pairs.append(result.pairs)
    assert found_a >= 0.95 * runs
    assert found_b >= 0.9 * runs
    assert wrong == 0
    # The race costs well under measuring every candidate fully (11 x 30 pairs).
    assert np.mean(pairs) < 0.6 * len(cands) * PLAN.rungs[-1]


def test_no_false_accept_beyond_the_documented_rate_across_1000_null_runs():
    """Every candidate is its baseline's twin; the documented rate is alpha (0.05) per run, and
    with the fresh confirmation it should be far below. Stalls on either side included."""
    cands = candidates({"A": [1.0, 1.0, 1.0], "B": [1.0, 1.0], "C": [1.0]})
    false_runs = 0
    for seed in range(1000):
        draw = sim.lognormal_pairs(0.05, seed) if seed % 2 else stalled_pairs(0.05, seed)
        result = sim.simulate_search(cands, PLAN, CONFIRM, draw=draw)
        false_runs += bool(result.accepted)
    assert false_runs <= ALPHA * 1000
    assert false_runs <= 5  # observed 0: the confirmation's fresh data carries the guarantee


def test_a_long_tail_of_cold_loops_does_not_eat_the_budget():
    """One hot loop with a 10 % gain and twenty cold single-candidate loops; the pairs the budget
    pays for go to the hot loop first, and its winner is found."""
    ratios = {"hot": [0.90, 1.0, 1.0]} | {f"cold{i}": [1.0] for i in range(20)}
    scores = {"hot": 1.0} | {f"cold{i}": 0.01 for i in range(20)}
    cands = candidates(ratios, scores)
    found = 0
    for seed in range(30):
        result = sim.simulate_search(cands, PLAN, CONFIRM, draw=sim.lognormal_pairs(0.05, seed), pairs_budget=120)
        hot = [c.id for c in cands if c.group == "hot"]
        unmeasured = [i for i, call in result.calls.items() if call.reason == rc.BUDGET and call.n == 0]
        assert unmeasured and all(i not in hot for i in unmeasured)  # cold loops are the ones left unmeasured
        found += any(i == hot[0] for i in result.accepted)
    assert found >= 27


def test_a_loops_last_racer_or_leader_passes_at_the_lenient_level_unless_a_passed_rival_leads():
    """A loop down to one racer has no rival to outrun: from 10 pairs it passes screening once its
    90 % interval lies below the bar, where the strict per-rung level asks nearly twice the pairs of
    a 3 % gain; its fresh confirmation still decides. A null racer (the baseline's own speed, 8 %
    spread) almost never passes. With a rival racing, the leader by estimate passes the same way
    and the rival stops behind it; a faster rival that passed earlier stops both."""
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    strict = rc.RacePlan.doubling(0.02, ALPHA, 5, 100, last_from=10**6)

    def screened(ratio: float, sd: float, seed: int, p: rc.RacePlan) -> rc.Call:
        b, c = sim.lognormal_pairs(sd / np.sqrt(2), seed)(ratio, 100)
        for n in p.rungs:
            call = rc.judge_rung([rc.Racer(1, "L", 1.0, b, c)], n, p)[1]
            if call.verdict != acc.CONTINUE:
                return call
        raise AssertionError("the last rung always decides")

    lenient = [screened(0.97, 0.02, seed, plan) for seed in range(200)]
    before = [screened(0.97, 0.02, seed, strict) for seed in range(200)]
    passes = [c for c in lenient if c.verdict == acc.ACCEPT]
    assert len(passes) >= sum(c.verdict == acc.ACCEPT for c in before) >= 180
    assert np.mean([c.n for c in passes]) < 0.7 * np.mean([c.n for c in before if c.verdict == acc.ACCEPT])
    assert any("its loop's last racer" in c.detail for c in passes) and min(c.n for c in passes) >= 10
    nulls = [screened(1.0, 0.08, seed, plan) for seed in range(1000)]
    assert sum(c.verdict == acc.ACCEPT for c in nulls) <= 20  # observed 8: each one a confirmation, never an accept

    rng = np.random.default_rng(3)
    b = 1e6 * np.exp(rng.normal(0, 0.01, 10))
    gain = rc.Racer(1, "L", 1.0, b, b * 0.975 * np.exp(rng.normal(0, 0.015, 10)))
    assert rc.judge_rung([gain], 10, plan)[1].verdict == acc.ACCEPT
    assert rc.judge(gain, 10, plan).verdict == acc.CONTINUE  # the strict level alone does not pass it yet
    rival = rc.Racer(2, "L", 1.0, b, b * 0.975 * np.exp(rng.normal(0, 0.01, 10)))  # 0.979 by estimate: behind
    both = rc.judge_rung([gain, rival], 10, rc.RacePlan.doubling(0.02, ALPHA, 5, 100, keep=1.0))
    assert both[1].verdict == acc.ACCEPT and both[1].detail.startswith(f"{rc.LEADER} ahead of 1 racing")
    assert both[2].reason == rc.OUTRACED and both[2].detail.startswith("slower than trial 1, which passed screening")
    assert rc.judge_rung([gain, rival], 5, plan)[1].verdict == acc.CONTINUE  # not before last_from pairs
    # A rival that passed screening counts in the halving: a racer slower than it stops (it could
    # only be confirmed after it), a faster one is the loop's last racer.
    def passed(estimate: float) -> rc.Call:
        iv = acc.RatioInterval(estimate, estimate - 0.05, estimate + 0.03, 10, 0.0125, "hodges-lehmann")  # not clearly ahead
        return rc.Call(9, acc.ACCEPT, acc.REASON_GAIN, "", iv, 10)
    ahead = rc.judge_rung([gain], 10, plan, {"L": [passed(0.95)]})[1]
    assert ahead.reason == rc.OUTRACED and ahead.detail.startswith("slower than trial 9, which passed screening")
    behind = rc.judge_rung([gain], 10, plan, {"L": [passed(0.99)]})[1]
    assert behind.verdict == acc.ACCEPT and "last racer" in behind.detail


def test_a_loops_last_racer_at_the_last_rung_passes_at_the_lenient_level_too():
    """pipeline's `#pragma unroll 8` (12-program pass at 1b9e3dd) raced alone from 40 pairs to the
    last rung at 15.6 % spread: its 90 % interval at 100 pairs, [0.923, 0.979], lies below the bar,
    and the strict level's does not. The lenient rule applied at every rung but the last, where the
    strict call is inconclusive rather than continue: the run dropped it inconclusive instead of
    sending it to its fresh re-measure. A rival still racing that no pair separates from it keeps both strict."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "pipeline_last_racer_pairs.json").read_text())
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    racer = rc.Racer(6, "expand_chunk:1:44", 1.0, data["baseline"], data["candidate"])
    assert rc.judge(racer, 100, plan).verdict == acc.INCONCLUSIVE  # the strict level alone
    for n in (40, 80):  # not yet below the bar at the lenient level: it races on
        assert rc.judge_rung([racer], n, plan)[6].verdict == acc.CONTINUE
    call = rc.judge_rung([racer], 100, plan)[6]
    assert call.verdict == acc.ACCEPT and call.detail.startswith(rc.LAST_RACER) and "[0.923, 0.979]" in call.detail
    # A rival as undecided as it at the last rung (the same pairs): neither is ahead pair by pair, so
    # neither passes as its loop's leader, and both end inconclusive.
    rival = rc.Racer(7, "expand_chunk:1:44", 1.0, data["baseline"], data["candidate"])
    calls = rc.judge_rung([racer, rival], 100, rc.RacePlan.doubling(0.02, ALPHA, 5, 100, keep=1.0))
    assert calls[6].verdict == calls[7].verdict == acc.INCONCLUSIVE


def test_matmul_tileds_first_rung_on_the_metric_its_aa_pairs_chose_and_on_the_one_the_rung_chose():
    """matmul_tiled (12-program pass at 99dab89): a moment of load in its 10 A/A pairs spread
    cpu-path 3.9 % and probed-path 1.6 %, so the run decided on probed-path; over those pairs and
    the first rung's 50, cpu-path spreads about half as much. On probed-path the first rung dropped
    `unroll_manual x2` on loop 2:46 (exhaustive search's best, +3.1 % in that pass's head to head);
    on cpu-path it reads 0.980 and races on."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "matmul_tiled_metric_pairs.json").read_text())
    choices = ["cpu-path", "probed-path"]
    aa = {m: acc.paired_spread(data["aa"][m]["baseline"], data["aa"][m]["candidate"]) for m in choices}
    assert acc.steadier_metric(aa, choices) == "probed-path"
    groups = {m: [(data["aa"][m]["baseline"], data["aa"][m]["candidate"])]
              + [(v[m]["baseline"], v[m]["candidate"]) for v in data["first_rung"].values()] for m in choices}
    chosen, spreads, pairs = acc.steadier_metric_pooled(groups, choices)
    assert chosen == "cpu-path" and pairs == 60 and spreads["cpu-path"] < 0.6 * spreads["probed-path"]
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    best = "5"
    assert data["first_rung"][best]["candidate_name"] == "unroll_manual x2 on matmul_tiled:matmul_tiled:2:46"
    calls = {}
    for m in choices:
        racers = [rc.Racer(int(k), v["loop"], 1.0, v[m]["baseline"], v[m]["candidate"]) for k, v in data["first_rung"].items()]
        calls[m] = rc.judge_rung(racers, 5, plan)[int(best)]
    assert calls["probed-path"].reason == rc.OUTRACED
    assert calls["cpu-path"].verdict == acc.CONTINUE and calls["cpu-path"].interval.estimate == pytest.approx(0.980, abs=0.001)


def test_the_pooled_metric_choice_keeps_the_default_unless_clearly_beaten():
    rng = np.random.default_rng(7)
    def groups(sd):
        return [(list(np.exp(rng.normal(0, sd, 10))), list(np.exp(rng.normal(0, sd, 10)) * r)) for r in (1.0, 0.9, 1.1)]
    same = {"cpu-path": groups(0.02), "probed-path": groups(0.02)}
    assert acc.steadier_metric_pooled(same, ["cpu-path", "probed-path"])[0] == "cpu-path"
    noisy_default = {"cpu-path": groups(0.08), "probed-path": groups(0.02)}
    chosen, spreads, pairs = acc.steadier_metric_pooled(noisy_default, ["cpu-path", "probed-path"])
    assert chosen == "probed-path" and pairs == 30 and spreads["cpu-path"] > 2 * spreads["probed-path"]
    # a metric without values (a round without that clock) is never chosen
    assert acc.steadier_metric_pooled({"cpu-path": groups(0.08), "probed-path": []}, ["cpu-path", "probed-path"])[0] == "cpu-path"


def test_a_rival_slower_than_its_loops_leader_pair_by_pair_stops_at_the_first_rung():
    """stencil1d's first rung (12-program pass at 91098d3, its run's ledger): 5 pairs per candidate,
    where the strict interval is still unbounded and no two rivals' intervals can separate. Paired
    round by round against the leader (`unroll_manual x2`, exhaustive search's best, 0.902), three
    rivals were slower in every pair (exhaustive: 0.988, 1.007, 0.952): they stop there instead of
    one of them running the next rung in the faster half. The two left are exhaustive's best two."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "stencil1d_first_rung_pairs.json").read_text())
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    racers = {c["trial"]: rc.Racer(c["trial"], c["loop"], 1.0, c["baseline"], c["candidate"]) for c in data["candidates"]}
    calls = rc.judge_rung(list(racers.values()), 5, plan)
    paired = {t for t, c in calls.items() if "paired" in c.detail}
    assert paired == {1, 2, 4}
    for t in paired:
        assert calls[t].reason == rc.OUTRACED and f"behind trial 3 of the same loop after 5 pairs" in calls[t].detail
        assert calls[t].interval.low <= calls[3].interval.high  # the intervals alone could not tell them apart
        assert rc.ratio_to_rival(racers[t], racers[3], 5, plan).low > 1.0
    assert {t for t, c in calls.items() if c.verdict == acc.CONTINUE} == {3, 6}
    # The paired ratio is each pair's ratio over the rival's; partners sharing a baseline run
    # (trials 3 and 4 here) compare their candidate runs directly.
    shared = [b3 == b4 for b3, b4 in zip(racers[3].baseline, racers[4].baseline)]
    assert all(shared)
    direct = acc.median_ratio_interval(racers[3].candidate, racers[4].candidate, tail_alpha=plan.last_alpha)
    via_ratios = rc.ratio_to_rival(racers[4], racers[3], 5, plan)
    assert (via_ratios.estimate, via_ratios.low, via_ratios.high) == pytest.approx((direct.estimate, direct.low, direct.high))


def test_a_loops_leader_passes_at_the_lenient_level_and_its_rivals_stop_behind_it():
    """stencil1d's race (12-program pass at 7bc8f1a): `unroll_manual x2` (exhaustive search's best,
    0.902) and `#pragma unroll 2` raced on to 40 pairs, because between rivals the strict per-rung
    level held the leader back until then. Ahead of its rival, the leader passes at the last racer's
    lenient level at 20 pairs (its 90 % interval below the bar), and the rival stops behind it: 20
    pairs fewer for each of the two; its fresh confirmation still decides."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "stencil1d_race_pairs.json").read_text())
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    racers = {c["trial"]: rc.Racer(c["trial"], c["loop"], 1.0, c["baseline"], c["candidate"]) for c in data["candidates"]}
    alive, calls = list(racers.values()), {}
    for n in (5, 10, 20):
        calls = rc.judge_rung(alive, n, plan)
        alive = [r for r in alive if calls[r.id].verdict == acc.CONTINUE]
    manual2, pragma2 = (next(c["trial"] for c in data["candidates"] if (c["rule"], c["factor"]) == k)
                        for k in (("unroll_manual", 2), ("unroll_pragma", 2)))
    assert calls[manual2].verdict == acc.ACCEPT and calls[manual2].detail.startswith(f"{rc.LEADER} ahead of 1 racing")
    assert calls[pragma2].reason == rc.OUTRACED and calls[pragma2].detail.startswith(f"slower than trial {manual2}")
    assert not alive  # the race is over at 20 pairs
    assert rc.judge(racers[manual2], 20, plan).verdict == acc.CONTINUE  # the strict level alone: on to 40
    assert rc.judge(racers[manual2], 40, plan).verdict == acc.ACCEPT  # where the race at 7bc8f1a passed it


def test_before_20_pairs_the_futility_rule_goes_by_the_aa_spread():
    """pipeline's race (12-program pass at 7bc8f1a; 13 % A/A spread, bar 2.6 %, nothing to find): at
    that spread even the last rung's 100 pairs leave about 3.5 % of doubt, so a racer whose 50 %
    interval does not reach down to about 0.94 cannot pass. Its own 5 or 10 pairs give no steady
    spread, and the rule waited for 20; the A/A spread is known before the race. Two racers stop
    at 10 pairs by it instead of racing on; the one exhaustive search reads best (`#pragma unroll 8`,
    0.980) races on, and without the A/A spread the rule is as before."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "pipeline_race_pairs.json").read_text())
    known = acc.paired_spread(data["aa"]["baseline"], data["aa"]["candidate"])
    assert 0.12 < known < 0.14
    plan = rc.RacePlan.doubling(data["min_gain"], ALPHA, 5, 100)
    with_known = rc.RacePlan.doubling(data["min_gain"], ALPHA, 5, 100, known_spread=known)
    racers = {(c["rule"], c["factor"]): rc.Racer(c["trial"], c["loop"], 1.0, c["baseline"], c["candidate"])
              for c in data["candidates"]}
    for key in (("unroll_pragma", 4), ("unroll_pragma", 1)):
        call = rc.judge(racers[key], 10, with_known)
        assert call.reason == rc.OUTRACED and call.detail.startswith("could not pass by the last look: after 10 pairs")
        assert rc.judge(racers[key], 10, plan).verdict == acc.CONTINUE
    best = racers[("unroll_pragma", 8)]
    assert all(rc.judge(best, n, with_known).verdict == acc.CONTINUE for n in (5, 10, 20))
    # A racer whose own pairs are steadier than the A/A's goes by its own: the smaller spread never drops more.
    steady = rc.Racer(9, "L", 1.0, [1.0] * 10, [0.962 * (1.03 if i % 2 else 0.97) for i in range(10)])
    assert rc.judge(steady, 10, with_known).verdict == acc.CONTINUE
    assert acc.out_of_reach(steady.baseline, steady.candidate, 1 - data["min_gain"], last_n=100, look_alpha=with_known.look_alpha,
                            drop_alpha=with_known.drop_alpha, spread=known)  # at the A/A spread alone it would stop


def test_a_leader_no_pair_separates_from_its_rival_does_not_pass_as_its_loops_leader():
    """stencil1d's race in the pass at 35b7f8d: after 10 pairs `unroll_manual x4` (exhaustive 0.988)
    led `unroll_manual x2` (exhaustive's best, 0.902) by estimate, 0.946 to 0.950, and passed as
    its loop's leader; its confirmation took 30 pairs to fail before x2 was re-measured as a close
    call. Pair by pair the two are not apart, so the leader's rule now waits: both race on."""
    data = json.loads((Path(__file__).parent / "data" / "measured" / "stencil1d_close_leaders_pairs.json").read_text())
    plan = rc.RacePlan.doubling(0.02, ALPHA, 5, 100)
    racers = {(c["rule"], c["factor"]): rc.Racer(c["trial"], c["loop"], 1.0, c["baseline"], c["candidate"])
              for c in data["candidates"]}
    alive = list(racers.values())
    calls = rc.judge_rung(alive, 5, plan)
    alive = [r for r in alive if calls[r.id].verdict == acc.CONTINUE]
    x4, x2 = racers[("unroll_manual", 4)], racers[("unroll_manual", 2)]
    assert {x4.id, x2.id} <= {r.id for r in alive}
    calls = rc.judge_rung(alive, 10, plan)
    assert calls[x4.id].interval.estimate < calls[x2.id].interval.estimate  # x4 leads by estimate
    assert rc.judge_last(x4, 10, plan, calls[x4.id]).verdict == acc.ACCEPT  # and alone would pass at 90 %
    assert rc.ratio_to_rival(x2, x4, 10, plan, tail_alpha=plan.drop_alpha).low <= 1.0  # but not ahead pair by pair
    assert calls[x4.id].verdict == calls[x2.id].verdict == acc.CONTINUE
