"""Did the candidate move the speed probe? A guard on accepts decided on a probe-divided metric.

probed-path divides each dispatch's CPU time by the speed probe timed before it (measure.py). That
cancels the machine's own changes of speed only while the probe reads the machine and not the
program. A candidate whose kernels leave the core slower for the probe that follows them reads
faster on probed-path than on the CPU time it spent. Measured on the 2-core EPYC VM of
tests/data/measured/probe_shift_pairs.json: matmul_tiled's `#pragma unroll 8` made the probe read
x1.066 [1.013, 1.119] over 40 interleaved pairs (the probe before each run's first kernel did not
move: x0.993 [0.927, 1.058]), and probed-path read it 9.1 % faster where cpu-path read 2.5 %.

A round's effective probe is its plain path over its divided path (the CPU-time-weighted mean of
the probe readings along the path). Where the candidate's are significantly slower than the
baseline's over the pairs of a look (the direction that flatters it), the accept must also hold
on the plain metric (cpu-path) over the same pairs at the same look; otherwise the test goes on to
its next look, and the candidate is rejected at the last look or where the plain metric's test
rejects. The rule only ever withholds an accept, so the test's false-accept level stands; it sees a
shift only as far as the plain metric's noise over those pairs lets it (docs/measurement.md).
"""

from __future__ import annotations

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.measure import METRIC_UNDIVIDED, metric_kind, metric_of

REASON_MOVED_PROBE = "moved the speed probe"
# The tail of the shift's interval: a 95 % interval, lenient beside a confirmation's per-look level
# (0.0051), because a shift found only withholds an accept. Replayed on the pairs of the data file
# (200 resampled confirmations each): matmul_tiled's flattered candidate accepted 81 % of the
# time instead of 100 % (96 % at the per-look level); transpose's, whose probe did not move, 93.5 %
# instead of 98.5 %, in 0.8 more pairs on average.
SHIFT_TAIL = 0.025


def probe_shift(plain_baseline, plain_candidate, divided_baseline, divided_candidate, tail_alpha: float) -> acc.RatioInterval:
    """The candidate's effective probe over the baseline's (median ratio and its interval): above 1
    when the probe read slower in the candidate's rounds."""
    probe_b = [p / d for p, d in zip(plain_baseline, divided_baseline)]
    probe_c = [p / d for p, d in zip(plain_candidate, divided_candidate)]
    return acc.median_ratio_interval(probe_b, probe_c, tail_alpha=tail_alpha)


def flatters(shift: acc.RatioInterval) -> bool:
    """The whole interval says the probe read slower in the candidate's rounds."""
    return shift.low > 1.0


def guard_accept(decision: acc.Decision, plan: acc.SequentialPlan, plain_baseline, plain_candidate,
                 divided_baseline, divided_candidate, plain_metric: str) -> acc.Decision:
    """`decision` (the divided metric's test at a look over these pairs), or what is left of its
    accept when the probe's shift (probe_shift at SHIFT_TAIL) flatters the candidate: the accept if
    the plain metric's test accepts too, else continue to the next look, or reject
    (REASON_MOVED_PROBE) at the last look or where the plain test rejects."""
    if decision.verdict != acc.ACCEPT:
        return decision
    shift = probe_shift(plain_baseline, plain_candidate, divided_baseline, divided_candidate, SHIFT_TAIL)
    if not flatters(shift):
        return decision
    plain = acc.sequential_decision(plain_baseline, plain_candidate, plan)
    moved = (f"the speed probe read x{shift.estimate:.3f} [{shift.low:.3f}, {shift.high:.3f}] slower in its rounds "
             f"after {decision.rounds} pairs")
    if plain.verdict == acc.ACCEPT:
        return acc.Decision(acc.ACCEPT, decision.reason, decision.interval, decision.rounds,
                            f"{moved}; {plain_metric} over the same pairs passes too "
                            f"({_interval_text(plain.interval)})")
    if plain.verdict != acc.CONTINUE or decision.rounds >= plan.max_rounds:
        return acc.Decision(acc.REJECT, REASON_MOVED_PROBE, decision.interval, decision.rounds,
                            f"{moved}, so the gain may be the probe's; {plain_metric} over the same pairs does not "
                            f"pass ({_interval_text(plain.interval)})")
    return acc.Decision(acc.CONTINUE, "", decision.interval, decision.rounds,
                        f"{moved}; waiting for {plain_metric} over the same pairs to pass as well")


def plain_pairs_interval(rounds, metric: str, tail_alpha: float) -> tuple[str, acc.RatioInterval] | None:
    """Recorded rounds (ledger RoundRows of one phase, roles B and C) on the plain metric of the
    probe-divided `metric`: (plain metric, its ratio interval over the complete pairs); None on
    any other metric or with fewer than 2 pairs. The final check's counterpart of the guard: a
    headline on probed-path shows what the CPU time says over the same pairs."""
    plain = METRIC_UNDIVIDED.get(metric_kind(metric))
    if plain is None:
        return None
    by_pair: dict[int, dict[str, float | None]] = {}
    for r in rounds:
        if r.ok:
            by_pair.setdefault(r.idx, {})[r.role] = metric_of(r.cp_ns, r.outputs, plain)
    pairs = [(p["B"], p["C"]) for _, p in sorted(by_pair.items()) if p.get("B") and p.get("C")]
    if len(pairs) < 2:
        return None
    return plain, acc.median_ratio_interval([b for b, _ in pairs], [c for _, c in pairs], tail_alpha=tail_alpha)


def shift_words(shift: dict) -> str:
    """A recorded shift (RatioInterval.to_json) in words, for reports."""
    if shift["low"] > 1.0:
        return "slower in its rounds"
    return "faster in its rounds" if shift["high"] < 1.0 else "not moved"


def _interval_text(iv: acc.RatioInterval | None) -> str:
    return "no interval yet" if iv is None else f"ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"
