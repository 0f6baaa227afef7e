"""The acceptance protocol on synthetic paired samples with known answers (no timing)."""

import math

import numpy as np
import pytest

from rocm_perf.optimize.acceptance import (
    ACCEPT,
    CONTINUE,
    INCONCLUSIVE,
    REASON_GAIN,
    REASON_INCONCLUSIVE,
    REASON_NOT_SIGNIFICANT,
    REASON_OUT_OF_REACH,
    REASON_SLOWER,
    REJECT,
    RETAKE_FACTOR,
    SequentialPlan,
    calibrated_look_alpha,
    clearly_steadier,
    confirmation_alpha,
    effective_min_gain,
    floor_at_spread,
    hodges_lehmann_interval,
    holm_adjusted,
    median_ratio_interval,
    noise_floor,
    paired_spread,
    pooled_spread,
    steadier_metric,
    run_sequential,
    sequential_decision,
    signed_rank_critical,
)


def pairs(rng, n, ratio, cv):
    """n interleaved rounds: baseline ~ 100 ms with drift, candidate = ratio x baseline, lognormal noise."""
    drift = 1.0 + 0.05 * np.sin(np.arange(n) / 3.0)  # machine drift hits both members of a pair
    b = 100.0 * drift * np.exp(rng.normal(0, cv, n))
    c = 100.0 * ratio * drift * np.exp(rng.normal(0, cv, n))
    return list(zip(b, c))


def test_signed_rank_critical_values_match_published_tables():
    # Wilcoxon signed-rank tables, two-sided 0.05: n=10 -> T <= 8, n=20 -> T <= 52.
    assert signed_rank_critical(10, 0.025) == 9
    assert signed_rank_critical(20, 0.025) == 53
    # n=5: the smallest one-tail probability is 1/32, so a 1 % tail is unreachable.
    assert signed_rank_critical(5, 0.05) == 1
    assert signed_rank_critical(5, 0.01) == 0


def test_hodges_lehmann_estimate_and_interval_on_a_worked_example():
    est, low, high = hodges_lehmann_interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 0.05)
    assert est == 3.0
    assert (low, high) == (1.0, 5.0)  # c = 1: the extreme Walsh averages
    est, low, high = hodges_lehmann_interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 0.01)
    assert est == 3.0 and math.isinf(low) and math.isinf(high)


def test_median_ratio_interval_recovers_a_constant_ratio_exactly():
    b = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    c = [9.0, 18.0, 27.0, 36.0, 45.0, 54.0]
    iv = median_ratio_interval(b, c, tail_alpha=0.025)
    assert iv.estimate == pytest.approx(0.9)
    assert iv.low == pytest.approx(0.9) and iv.high == pytest.approx(0.9)
    boot = median_ratio_interval(b, c, tail_alpha=0.025, method="bootstrap", seed=1)
    assert boot.estimate == pytest.approx(0.9)


def test_interval_coverage_is_at_least_nominal():
    rng = np.random.default_rng(7)
    covered = 0
    trials = 400
    for _ in range(trials):
        p = pairs(rng, 12, 0.95, 0.04)
        iv = median_ratio_interval([x for x, _ in p], [y for _, y in p], tail_alpha=0.05)
        covered += iv.low <= 0.95 <= iv.high
    assert covered / trials >= 0.88  # nominal 90 %, exact level >= nominal, minus simulation error


def test_clear_gain_is_accepted_at_a_look():
    d = run_sequential(pairs(np.random.default_rng(1), 30, 0.85, 0.02), SequentialPlan())
    assert (d.verdict, d.reason) == (ACCEPT, REASON_GAIN)
    assert d.rounds in SequentialPlan().looks()
    assert d.interval.high < 0.98


def test_clearly_slower_candidate_is_rejected_as_slower():
    d = run_sequential(pairs(np.random.default_rng(2), 30, 1.10, 0.02), SequentialPlan())
    assert (d.verdict, d.reason) == (REJECT, REASON_SLOWER)
    assert d.interval.low > 1.0


def test_tiny_real_gain_below_min_gain_is_not_significant():
    d = run_sequential(pairs(np.random.default_rng(3), 30, 0.995, 0.002), SequentialPlan(min_gain=0.02))
    assert (d.verdict, d.reason) == (REJECT, REASON_NOT_SIGNIFICANT)
    assert 0.98 < d.interval.low < 1.0


def test_noisy_modest_gain_ends_inconclusive_at_max_rounds():
    d = run_sequential(pairs(np.random.default_rng(4), 30, 0.97, 0.10), SequentialPlan(max_rounds=15))
    assert (d.verdict, d.reason) == (INCONCLUSIVE, REASON_INCONCLUSIVE)
    assert d.rounds == 15


def test_no_decision_between_looks_or_before_min_rounds():
    plan = SequentialPlan()
    b = [100.0] * 7
    c = [50.0] * 7
    assert sequential_decision(b[:4], c[:4], plan).verdict == CONTINUE
    assert sequential_decision(b, c, plan).verdict == CONTINUE  # 7 is not a look
    # At 5 pairs each look's level (0.05 shared by 6 looks) is below 1/32: still undecidable.
    assert sequential_decision(b[:5], c[:5], plan).verdict == CONTINUE
    assert sequential_decision(b + [100.0] * 3, c + [50.0] * 3, plan).verdict == ACCEPT


def test_aa_pairs_are_never_accepted_over_many_sequences():
    rng = np.random.default_rng(11)
    plan = SequentialPlan()
    accepts = sum(run_sequential(pairs(rng, plan.max_rounds, 1.0, 0.04), plan).verdict == ACCEPT for _ in range(300))
    assert accepts <= 3  # the bound is 5 % at a 2 % gain; at no gain it is far below


def test_confirmation_alphas_sum_below_alpha_and_decrease():
    levels = [confirmation_alpha(0.05, k) for k in range(1, 200)]
    assert levels[0] == pytest.approx(0.025)
    assert sum(levels) < 0.05
    assert all(a > b for a, b in zip(levels, levels[1:]))
    with pytest.raises(ValueError):
        confirmation_alpha(0.05, 0)


def test_holm_adjustment_on_a_worked_example():
    assert holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_noise_floor_raises_min_gain_for_a_systematic_offset():
    rng = np.random.default_rng(5)
    p = pairs(rng, 20, 1.04, 0.005)  # two builds of the same source differ by 4 % (code layout)
    floor = noise_floor([x for x, _ in p], [y for _, y in p])
    # the offset as far as its interval shows it (the interval's near end), not the tiny noise
    assert floor.floor == pytest.approx(floor.interval.low - 1.0) and 0.034 < floor.floor <= 0.04
    assert floor.resolution < 0.005
    assert effective_min_gain(0.02, floor) == floor.floor
    quiet = pairs(rng, 20, 1.0, 0.001)
    calm = noise_floor([x for x, _ in quiet], [y for _, y in quiet])
    assert calm.floor < 0.01
    assert effective_min_gain(0.02, calm) == 0.02


def test_a_lucky_a_a_estimate_on_a_loaded_machine_does_not_raise_the_floor_past_what_its_interval_shows():
    # Real A/A rounds (CPU-time path, ns) of two identical host builds of unroll_wins.cu, measured
    # by `optimize --aa-rounds 10` on the project's 2-core machine at load average 5 with a memory
    # bandwidth benchmark beside it. Their point estimate is 1.08; its 95 % interval only shows 1.2 %.
    b = [122310974, 91473711, 61428290, 65377358, 68655496, 61040715, 58533437, 58704790, 63443220, 66578590]
    c = [122069531, 121940446, 62446300, 82302290, 70502149, 68256349, 60525738, 73486197, 58757120, 69843147]
    floor = noise_floor(b, c, max_rounds=60)
    assert floor.interval.estimate == pytest.approx(1.08, abs=0.005)
    assert floor.interval.low == pytest.approx(1.012, abs=0.002)
    assert floor.floor == pytest.approx(max(floor.interval.low - 1.0, floor.resolution))
    assert floor.floor < 0.03  # was 0.08: then a real 9 % win (0.915 [0.870, 0.957] over 60 pairs) was declined
    assert 0.957 < 1.0 - effective_min_gain(0.02, floor)
    # An A/A interval that covers 1 shows no offset at all: the floor is the resolution.
    covered = noise_floor(b[2:], c[2:][::-1], max_rounds=60)
    assert covered.interval.low <= 1.0 <= covered.interval.high
    assert covered.floor == covered.resolution


def test_noise_floor_rises_with_a_noisy_machine_and_falls_with_more_rounds():
    rng = np.random.default_rng(6)
    p = pairs(rng, 12, 1.0, 0.20)  # a loaded machine: 20 % per-round noise, no real difference
    b, c = [x for x, _ in p], [y for _, y in p]
    noisy = noise_floor(b, c, max_rounds=30)
    assert 0.12 < noisy.spread < 0.35
    assert noisy.resolution == pytest.approx(math.expm1(1.959964 * 1.02 * noisy.spread / math.sqrt(30)), rel=1e-6)
    assert noisy.floor >= noisy.resolution > 0.04
    assert noise_floor(b, c, max_rounds=120).resolution < noisy.resolution


def test_plan_validation_and_looks():
    assert SequentialPlan().looks() == [5, 10, 15, 20, 30, 40, 60, 80, 100]  # geometric: the last one late
    assert SequentialPlan(min_rounds=4, max_rounds=30).looks() == [4, 8, 12, 16, 24, 30]
    assert SequentialPlan(min_rounds=5, max_rounds=12).looks() == [5, 10, 12]
    assert SequentialPlan(spacing="doubling").looks() == [5, 10, 20, 40, 80, 100]  # the race's rungs
    assert SequentialPlan(min_rounds=4, max_rounds=30, spacing="doubling").looks() == [4, 8, 16, 30]
    assert SequentialPlan(min_rounds=5, max_rounds=12, step=5).looks() == [5, 10, 12]
    with pytest.raises(ValueError):
        SequentialPlan(min_gain=0.0)
    with pytest.raises(ValueError):
        SequentialPlan(min_rounds=10, max_rounds=5)
    with pytest.raises(ValueError, match="spacing"):
        SequentialPlan(spacing="linear")


def accepted_with_confirmation(rng, ratio, cv, plan):
    """(screening then a fresh confirmation at the run's first confirmation level passed, pairs used)."""
    used = 0
    for p in (plan, plan.with_alpha(confirmation_alpha(plan.alpha, 1))):
        d = run_sequential(pairs(rng, p.max_rounds, ratio, cv), p)
        used += d.rounds
        if d.verdict != ACCEPT:
            return False, used
    return True, used


def test_doubling_looks_resolve_a_3_percent_gain_that_looks_every_5_up_to_30_could_not():
    # Issue 17's goal: a true 3 % gain at the host backend's paired spread under load (2.3 % CPU
    # time with two busy processes, docs/measurement.md) accepted at least 5 times in 10. The earlier plan (looks
    # every 5 pairs up to 30) measured 1 in 10 there; the clear wins and the nulls must not cost more.
    rng = np.random.default_rng(17)
    runs = 40
    cv = 0.023 / math.sqrt(2)  # per round, so that the paired log ratio spreads by 2.3 %
    new, old = SequentialPlan(), SequentialPlan(max_rounds=30, step=5)
    new_3 = sum(accepted_with_confirmation(rng, 0.97, cv, new)[0] for _ in range(runs))
    old_3 = sum(accepted_with_confirmation(rng, 0.97, cv, old)[0] for _ in range(runs))
    assert new_3 >= 0.8 * runs and old_3 <= 0.5 * runs, (new_3, old_3)
    for ratio in (0.95, 0.90):  # 5 % and 10 %: accepted every time, after no more pairs than before
        new_n = [accepted_with_confirmation(rng, ratio, cv, new) for _ in range(runs)]
        old_n = [accepted_with_confirmation(rng, ratio, cv, old) for _ in range(runs)]
        assert all(ok for ok, _ in new_n)
        assert np.mean([n for _, n in new_n]) <= 1.15 * np.mean([n for _, n in old_n])
    nulls = [run_sequential(pairs(rng, new.max_rounds, 1.0, cv), new) for _ in range(runs)]
    assert not any(d.verdict == ACCEPT for d in nulls)
    assert np.mean([d.rounds for d in nulls]) <= 25  # a null is sent away at the early looks


def test_the_confirmations_futility_rule_stops_a_gain_below_the_bar_early_and_only_ever_rejects():
    # The loop's confirmations (loop.py: 80 % lenient interval from 20 pairs). Seen on
    # matmul_regblock: with the noise floor raising the bar to 5.35 %, screened winners of about 5 %
    # were re-measured for 80-100 pairs before "not significant". Same seeded pairs with and without
    # the rule: it may turn a pass into a stop, never a stop into a pass.
    from dataclasses import replace

    from rocm_perf.optimize.confirmation import CONFIRMATION_FUTILITY_FROM, with_confirmation_rules

    def confirm(bar, futility):
        return replace(with_confirmation_rules(SequentialPlan(bar, confirmation_alpha(0.05, 1))), futility=futility)

    def decide(bar, ratio, spread, seeds):
        cv = spread / math.sqrt(2)
        runs = [pairs(np.random.default_rng(1000 + s), 100, ratio, cv) for s in range(seeds)]
        return ([run_sequential(p, confirm(bar, False)) for p in runs], [run_sequential(p, confirm(bar, True)) for p in runs])

    # A 5 % gain at a 5.35 % bar, 3.5 % paired spread: passes about as rarely as the level allows (it
    # lies just below the bar); the rule stops the rest at a third of the pairs.
    off, on = decide(0.0535, 1 / 1.05, 0.035, 100)
    assert sum(d.verdict == ACCEPT for d in off) <= 2
    assert all(a.verdict == ACCEPT for a, b in zip(off, on) if b.verdict == ACCEPT)
    assert np.mean([d.rounds for d in on]) < 0.45 * np.mean([d.rounds for d in off])
    stopped = [d for d in on if d.reason == REASON_OUT_OF_REACH]
    assert len(stopped) >= 75 and all(d.verdict == REJECT and "could not pass by the last look" in d.detail for d in stopped)
    assert min(d.rounds for d in stopped) >= CONFIRMATION_FUTILITY_FROM
    # Close calls (3 % at a 2 % bar, 3.5 % spread; 8 % at 5.35 %, 9 %): passes only lost, at most 1 in 10 of them.
    for bar, ratio, spread in ((0.02, 1 / 1.03, 0.035), (0.0535, 1 / 1.08, 0.09)):
        off, on = decide(bar, ratio, spread, 150)
        assert all(a.verdict == ACCEPT for a, b in zip(off, on) if b.verdict == ACCEPT)
        passed_off, passed_on = sum(d.verdict == ACCEPT for d in off), sum(d.verdict == ACCEPT for d in on)
        assert passed_off >= 40 and passed_on >= 0.9 * passed_off, (bar, passed_off, passed_on)
    # Clear wins are untouched; 1,000 seeded nulls at the confirmation level: none accepted.
    off, on = decide(0.02, 0.90, 0.035, 100)
    assert all(d.verdict == ACCEPT for d in on) and [d.rounds for d in on] == [d.rounds for d in off]
    _, nulls = decide(0.02, 1.0, 0.035, 1000)
    assert not any(d.verdict == ACCEPT for d in nulls)
    assert np.mean([d.rounds for d in nulls]) <= 25


def null_crossings(rng, looks, level, draws, noise):
    """The share of `draws` sequences of log ratios at the bar (symmetric `noise`) whose signed-rank
    test passes at some look at `level` per tail: sequential_decision's rule, vectorised."""
    crossed = np.zeros(draws, dtype=bool)
    x = noise(rng, (draws, looks[-1]))
    for n in looks:
        head = x[:, :n]
        ranks = np.abs(head).argsort(axis=1).argsort(axis=1) + 1
        c = signed_rank_critical(n, level)
        crossed |= (ranks * (head > 0)).sum(axis=1) <= c - 1
    return crossed.mean()


def test_the_interval_passes_the_bar_exactly_when_the_signed_rank_statistic_is_below_its_critical_value():
    # What the calibration simulates (T+ of the log ratios less the bar's log <= c - 1) is the
    # interval rule sequential_decision applies (its upper end below the bar).
    rng = np.random.default_rng(5)
    bar, tail = 0.98, 0.007
    agree = 0
    for n in (10, 20, 40):
        for _ in range(60):
            b = 100 * np.exp(rng.normal(0, 0.02, n))
            c = b * 0.975 * np.exp(rng.normal(0, 0.02, n))
            passed = median_ratio_interval(b, c, tail_alpha=tail).high < bar
            x = np.log(c / b) - math.log(bar)
            ranks = np.abs(x).argsort().argsort() + 1
            agree += passed == ((ranks * (x > 0)).sum() <= signed_rank_critical(n, tail) - 1)
    assert agree == 180


def test_the_calibrated_look_level_keeps_alpha_on_an_independent_simulation_and_beats_bonferroni():
    looks = (5, 10, 15, 20, 30, 40, 60, 80, 100)  # a confirmation's (SequentialPlan's default)
    rng = np.random.default_rng(2026)  # not the calibration's seed, nor its distribution
    laplace = lambda r, shape: r.laplace(0, 1, shape)  # noqa: E731
    draws = 40_000
    for alpha in (0.025, confirmation_alpha(0.05, 2)):
        level = calibrated_look_alpha(alpha, looks)
        bonferroni = alpha / len(looks)
        assert bonferroni < level < alpha
        assert SequentialPlan(alpha=alpha).look_alpha == level
        assert SequentialPlan(alpha=alpha, boundary="bonferroni").look_alpha == bonferroni
        calibrated_rate = null_crossings(rng, looks, level, draws, laplace)
        bonferroni_rate = null_crossings(rng, looks, bonferroni, draws, laplace)
        margin = 3 * math.sqrt(alpha * (1 - alpha) / draws)
        assert calibrated_rate <= alpha + margin, (alpha, calibrated_rate)
        assert bonferroni_rate < 0.75 * alpha < calibrated_rate, (alpha, bonferroni_rate, calibrated_rate)
    # The bootstrap's joint law is not distribution-free: it keeps Bonferroni; so do very long tests.
    assert SequentialPlan(alpha=0.025, method="bootstrap").look_alpha == 0.025 / 9
    assert calibrated_look_alpha(0.025, (5, 10, 1000)) == 0.025 / 3
    with pytest.raises(ValueError, match="boundary"):
        SequentialPlan(boundary="pocock")


def test_a_confirmation_at_the_calibrated_level_passes_sooner():
    # A screened winner's fresh re-measure (the run's first confirmation, 2 % bar): a 3.5 % gain at
    # 3 % paired spread (scan-like) and a 12 % gain at 15 % (pipeline-like). The same seeded pairs,
    # calibrated against Bonferroni: passes only ever gained, 7-13 % fewer pairs on average (200 runs).
    for gain, spread in ((0.035, 0.03), (0.12, 0.15)):
        cv = spread / math.sqrt(2)
        runs = [pairs(np.random.default_rng(300 + s), 100, 1 / (1 + gain), cv) for s in range(200)]
        calibrated = SequentialPlan(alpha=confirmation_alpha(0.05, 1))
        bonferroni = SequentialPlan(alpha=confirmation_alpha(0.05, 1), boundary="bonferroni")
        new = [run_sequential(p, calibrated) for p in runs]
        old = [run_sequential(p, bonferroni) for p in runs]
        assert all(a.verdict == ACCEPT for a, b in zip(new, old) if b.verdict == ACCEPT)  # a lower bar only passes more
        assert sum(d.verdict == ACCEPT for d in new) >= 0.97 * len(runs)
        assert np.mean([d.rounds for d in new]) < 0.95 * np.mean([d.rounds for d in old]), gain


def test_a_look_midway_between_the_doublings_settles_a_confirmation_sooner_at_the_same_level():
    # A confirmation looks at 5, 10, 15, 20, 30 ... (midpoint_looks), not only at the race's doubling
    # rungs: pipeline's winner, confirmed in 40 pairs, had settled at 15. The same seeded pairs under
    # both spacings, with the loop's confirmation rules at the run's first confirmation level: fewer
    # pairs for a clear win, a gain near the bar and a null; passes within a few points (1,000
    # sequences a cell: 1-16 % fewer pairs, 0-2.4 points fewer passes; these 150 seeds pass the 4 %
    # gain 118 times against 125); no null passes.
    from dataclasses import replace

    from rocm_perf.optimize.confirmation import with_confirmation_rules

    midpoint = with_confirmation_rules(SequentialPlan(alpha=confirmation_alpha(0.05, 1)))
    doubling = replace(midpoint, spacing="doubling")
    assert midpoint.look_alpha < doubling.look_alpha  # more looks, each at a stricter level
    for ratio, spread in ((1.0, 0.09), (0.96, 0.06), (0.94, 0.09), (0.88, 0.14)):
        cv = spread / math.sqrt(2)
        runs = [pairs(np.random.default_rng(700 + s), 100, ratio, cv) for s in range(150)]
        new = [run_sequential(p, midpoint) for p in runs]
        old = [run_sequential(p, doubling) for p in runs]
        passed_new, passed_old = (sum(d.verdict == ACCEPT for d in ds) for ds in (new, old))
        assert np.mean([d.rounds for d in new]) < 0.95 * np.mean([d.rounds for d in old]), (ratio, spread)
        assert passed_new >= passed_old - 0.07 * len(runs), (ratio, passed_new, passed_old)
        if ratio == 1.0:
            assert passed_new == passed_old == 0


def test_the_steadier_metric_replaces_the_default_only_when_clearly_steadier():
    choices = ["cpu-path", "probed-path"]
    # stencil1d on a two-speed VM core: 20 % against 9 %
    assert steadier_metric({"cpu-path": 0.20, "probed-path": 0.09}, choices) == "probed-path"
    # a steady integer kernel: the probe only adds its noise
    assert steadier_metric({"cpu-path": 0.012, "probed-path": 0.15}, choices) == "cpu-path"
    # a little steadier is not enough: 10 pairs cannot tell it from chance
    assert steadier_metric({"cpu-path": 0.020, "probed-path": 0.016}, choices) == "cpu-path"
    assert steadier_metric({"cpu-path": 0.020, "probed-path": 0.014}, choices) == "probed-path"
    # an alternative the rounds did not record is never chosen; a missing default loses to any
    assert steadier_metric({"cpu-path": 0.2}, choices) == "cpu-path"
    assert steadier_metric({"probed-path": 0.2}, choices) == "probed-path"
    assert steadier_metric({"cpu-path": 0.2, "probed-path": float("nan")}, choices) == "cpu-path"


def test_the_race_s_pooled_spread_ignores_what_each_candidate_gains():
    """20 candidates of 5 pairs each, true ratios 0.80 to 1.18, 10 % paired spread: pooling their log
    ratios around one centre would read the gains as noise; the within-candidate differences do not."""
    rng = np.random.default_rng(11)
    estimates, naive = [], []
    for _ in range(200):
        groups = []
        for k in range(20):
            drift = 100.0 * np.exp(rng.normal(0, 0.3, 5))  # the machine's speed, shared by a pair
            groups.append((drift * np.exp(rng.normal(0, 0.1 / math.sqrt(2), 5)),
                           drift * (0.80 + 0.02 * k) * np.exp(rng.normal(0, 0.1 / math.sqrt(2), 5))))
        spread, used = pooled_spread(groups)
        assert used == 100
        estimates.append(spread)
        naive.append(paired_spread(np.concatenate([g[0] for g in groups]), np.concatenate([g[1] for g in groups])))
    assert np.mean(estimates) == pytest.approx(0.1, rel=0.05) and np.std(estimates) < 0.015
    assert np.mean(naive) > 0.14
    # a candidate's own constant gain does not move it at all
    b, c = groups[0]
    assert pooled_spread([(b, c * 0.7)] + groups[1:]) == (spread, 100)
    # one pair is no spread; nothing at all is nan
    assert math.isnan(pooled_spread([([1.0], [1.0])])[0]) and pooled_spread([])[1] == 0


def test_a_floor_re_taken_at_another_spread_keeps_the_a_a_offset():
    rng = np.random.default_rng(5)
    p = pairs(rng, 20, 1.04, 0.005)  # a 4 % offset between the two builds
    floor = noise_floor([x for x, _ in p], [y for _, y in p], max_rounds=100)
    same = floor_at_spread(floor.interval, floor.spread, confidence=0.95, max_rounds=100)
    assert same == floor
    noisy = floor_at_spread(floor.interval, 0.30, confidence=0.95, max_rounds=100)
    assert noisy.resolution == pytest.approx(math.expm1(1.959964 * 1.02 * 0.30 / 10), rel=1e-6) and noisy.floor == noisy.resolution
    quiet = floor_at_spread(floor.interval, 0.001, confidence=0.95, max_rounds=100)
    assert quiet.floor == pytest.approx(floor.interval.low - 1.0)  # the offset stands however steady the race


def test_the_race_re_takes_the_floor_only_when_clearly_steadier():
    assert RETAKE_FACTOR == 1.5
    assert clearly_steadier(0.16, 0.094)  # runtime_trip: its A/A pairs and its race's first rung
    assert not clearly_steadier(0.139, 0.119)  # stencil1d: within what 10 pairs can tell
    assert not clearly_steadier(0.047, 0.157)  # a noisier race never counts (layernorm)
    assert not clearly_steadier(0.16, float("nan")) and not clearly_steadier(0.0, 0.01) and not clearly_steadier(0.1, 0.0)
