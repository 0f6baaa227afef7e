"""The acceptance protocol's statistics (MEASUREMENT.md): pure functions over paired round values.

A pair is (baseline, candidate) from interleaved rounds i. The statistic is the ratio
candidate / baseline; we work on log ratios so that a 5 % gain and a 5 % loss are symmetric.

- Confidence interval of the median ratio: Hodges-Lehmann (median of Walsh averages of the log
  ratios) with the exact distribution-free Wilcoxon signed-rank interval. It needs no seed and no
  normality. A seeded percentile bootstrap over pairs is offered for comparison.
- Sequential test: the data are looked at after `min_rounds` pairs, then at 2, 3, 4, 6, 8, 12 ...
  times that many, and at `max_rounds` (or every `step` pairs when a step is given). Each look uses
  one level per tail, calibrated so that the chance of a false accept at any look is at most alpha
  (calibrated_look_alpha; Bonferroni, alpha / number of looks, with boundary="bonferroni").
  The looks grow geometrically, so the last one comes late (5 .. 100 in nine looks): a clear win
  or a plain null settles at the early looks, and only a gain near `min_gain` runs long enough to
  be resolved (a 3 % gain at a 2 % bar with a paired spread of 2.3 %, as the host backend's CPU
  time under load, needs about 80 pairs). A look midway between each two doublings (15, 30, 60)
  stops a test that has settled up to a third sooner: the calibrated level per look falls only
  from 0.0068 to 0.0051 at alpha 0.025 (midpoint_looks).
- Family-wise control across one run: a candidate is accepted only after a fresh confirmatory
  measurement; the k-th confirmation of a run gets alpha / (k (k + 1)). These sum to alpha over
  any number of confirmations (alpha spending), so the whole run falsely accepts with
  probability at most alpha, however many candidates were screened.
- Noise floor: an A/A comparison (the baseline against a second build of itself). The gain that
  the run asks for is never below what that comparison cannot tell from zero. Its spread is
  taken again from the race's pairs when they are clearly steadier (the machine left a noisy mode).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import numpy as np

from rocm_perf.analysis.rank_test import holm_adjusted  # noqa: F401  (shared with compare; reports use it)

ACCEPT = "accept"
REJECT = "reject"
CONTINUE = "continue"
INCONCLUSIVE = "inconclusive"

# Named reasons a measurement rejects a candidate (the loop adds guard, compile, ... itself).
REASON_GAIN = "significant gain"
REASON_SLOWER = "slower"
REASON_NOT_SIGNIFICANT = "not significant"
REASON_INCONCLUSIVE = "inconclusive"
REASON_OUT_OF_REACH = "out of reach"  # could not pass even at the last look (the futility rule)


@dataclass(frozen=True)
class RatioInterval:
    """The median ratio candidate/baseline and its two-sided interval (each tail `tail_alpha`)."""

    estimate: float
    low: float
    high: float
    n: int
    tail_alpha: float
    method: str

    def to_json(self) -> dict:
        return asdict(self)


def interval_text(iv: dict | None) -> str:
    """A recorded interval (RatioInterval.to_json) as "0.957 [0.951, 0.967]"; "-" when it has no
    pairs. A first rung's can be unbounded above: "inf"."""
    if not iv or not iv.get("n"):
        return "-"
    high = "inf" if math.isinf(iv["high"]) else f"{iv['high']:.3f}"
    return f"{iv['estimate']:.3f} [{iv['low']:.3f}, {high}]"


def log_ratios(baseline: list[float] | np.ndarray, candidate: list[float] | np.ndarray) -> np.ndarray:
    """log(candidate_i / baseline_i) for paired rounds; both must be positive and of equal length."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    if b.shape != c.shape:
        raise ValueError(f"paired samples differ in length: {b.shape} vs {c.shape}")
    if (b <= 0).any() or (c <= 0).any():
        raise ValueError("round values must be positive durations")
    return np.log(c) - np.log(b)


@lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (each rank's sign a fair coin)."""
    total = n * (n + 1) // 2
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(dist)
        shifted[rank:] = dist[: total + 1 - rank]
        dist = 0.5 * (dist + shifted)
    return tuple(np.cumsum(dist))


def signed_rank_critical(n: int, tail_alpha: float) -> int:
    """The largest c with P(T+ <= c - 1) <= tail_alpha (0 when n pairs cannot reach that level).

    The interval [W_(c), W_(M + 1 - c)] of the sorted Walsh averages then covers the
    pseudo-median with probability at least 1 - 2 tail_alpha.
    """
    cdf = _signed_rank_cdf(n)
    c = 0
    while c < len(cdf) and cdf[c] <= tail_alpha:
        c += 1
    return c


def hodges_lehmann_interval(x: np.ndarray, tail_alpha: float) -> tuple[float, float, float]:
    """(estimate, low, high) of the pseudo-median of x; the bounds are infinite when n is too small."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n == 0:
        return 0.0, -math.inf, math.inf
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    estimate = float(np.median(walsh))
    c = signed_rank_critical(n, tail_alpha)
    if c == 0:
        return estimate, -math.inf, math.inf
    m = len(walsh)
    return estimate, float(walsh[c - 1]), float(walsh[m - c])


def bootstrap_interval(x: np.ndarray, tail_alpha: float, *, resamples: int = 4000, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): the median of x and a percentile bootstrap over pairs (fixed seed)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n == 0:
        return 0.0, -math.inf, math.inf
    rng = np.random.default_rng(seed)
    medians = np.median(x[rng.integers(0, n, size=(resamples, n))], axis=1)
    low, high = np.quantile(medians, [tail_alpha, 1.0 - tail_alpha])
    return float(np.median(x)), float(low), float(high)


def median_ratio_interval(
    baseline, candidate, *, tail_alpha: float, method: str = "hodges-lehmann", seed: int = 0
) -> RatioInterval:
    """The median ratio candidate/baseline with its interval, from paired rounds."""
    x = log_ratios(baseline, candidate)
    if method == "hodges-lehmann":
        est, low, high = hodges_lehmann_interval(x, tail_alpha)
    elif method == "bootstrap":
        est, low, high = bootstrap_interval(x, tail_alpha, seed=seed)
    else:
        raise ValueError(f"unknown interval method {method!r}")
    return RatioInterval(math.exp(est), _exp(low), _exp(high), len(x), tail_alpha, method)


def _exp(v: float) -> float:
    if v == -math.inf:
        return 0.0
    if v == math.inf:
        return math.inf
    return math.exp(v)


def doubling_looks(first: int, last: int) -> list[int]:
    """first, 2 first, 4 first, ... below last, then last: the rungs of a race."""
    points, n = [], first
    while n < last:
        points.append(n)
        n *= 2
    return points + [last]


def midpoint_looks(first: int, last: int) -> list[int]:
    """first, then 2, 3, 4, 6, 8, 12 ... times first below last, then last: the doubling looks with
    one midway (x1.5) between each two from the second on. The looks of a sequential test.

    Why the midpoints: replayed on the 14 confirmations recorded by the last sessions' bench_search
    loops (8 programs), they reach the same 14 verdicts in 330 pairs instead of 410 (pipeline's
    winner at 15 pairs instead of 40); in seeded simulations (1,000 sequences a cell, gains 0-12 %
    at a 2 % bar, paired spread 6-14 %, the loop's confirmation rules) they take 1-16 % fewer pairs
    and pass 0-2.4 points fewer (a gain of 2-3 times the bar at high spread: each look's level is
    lower, 0.0051 instead of 0.0068 at alpha 0.025, which keeps the family-wise alpha)."""
    points, n = [], first
    while n < last:
        points.append(n)
        if n > first and n * 3 // 2 < last:
            points.append(n * 3 // 2)
        n *= 2
    return points + [last]


# ---- the looks' common level -------------------------------------------------------------------
# Bonferroni over the looks (alpha / looks at each) holds however the looks depend on each other, and
# so gives much of alpha away: the looks of one test share their pairs. With the doubling looks
# 5 .. 100 at alpha 0.025 a null crosses at some look with probability 0.015, not 0.025. The
# signed-rank statistics of nested looks have one joint null law for every continuous distribution
# of log ratios symmetric about the bar (each rank's sign a fair coin, the ranks a uniform
# permutation), so one seeded simulation of it calibrates a common per-look level whose chance of a
# crossing at any look is alpha (Pocock's constant boundary, with the rank test's own joint law in
# place of a normal approximation). The simulation's own error is kept out by a margin of three
# standard errors; the level is never below Bonferroni's.
CALIBRATION_DRAWS = 100_000
CALIBRATION_SEED = 17
CALIBRATION_MAX_PAIRS = 400  # longer tests keep Bonferroni: the simulation's cost grows with the pairs
_CHUNK = 10_000


@lru_cache(maxsize=8)
def _null_signed_rank_paths(looks: tuple[int, ...]) -> np.ndarray:
    """T+ (the sum of the ranks of positive values) at each look, for CALIBRATION_DRAWS null sequences."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    paths = np.empty((len(looks), CALIBRATION_DRAWS), dtype=np.int32)
    for start in range(0, CALIBRATION_DRAWS, _CHUNK):
        x = rng.standard_normal((_CHUNK, looks[-1]))
        for row, n in enumerate(looks):
            head = x[:, :n]
            ranks = np.abs(head).argsort(axis=1).argsort(axis=1) + 1
            paths[row, start:start + _CHUNK] = (ranks * (head > 0)).sum(axis=1)
    return paths


def _crossing_probability(paths: np.ndarray, looks: tuple[int, ...], level: float) -> float:
    """The share of null sequences that pass at some look, each look at `level` per tail."""
    crossed = np.zeros(paths.shape[1], dtype=bool)
    for row, n in zip(paths, looks):
        c = signed_rank_critical(n, level)
        if c:  # the interval's upper end lies below the bar exactly when T+ <= c - 1
            crossed |= row <= c - 1
    return float(crossed.mean())


@lru_cache(maxsize=256)
def calibrated_look_alpha(alpha: float, looks: tuple[int, ...]) -> float:
    """The largest common per-look level (one tail) at which a sequential signed-rank test over
    `looks` passes a null at some look with probability at most alpha (simulated, less a margin of
    three standard errors); Bonferroni's alpha / len(looks) where that is larger, or the looks run
    past CALIBRATION_MAX_PAIRS."""
    bonferroni = alpha / len(looks)
    if len(looks) == 1 or looks[-1] > CALIBRATION_MAX_PAIRS:
        return bonferroni
    paths = _null_signed_rank_paths(looks)
    target = alpha - 3.0 * math.sqrt(alpha * (1.0 - alpha) / paths.shape[1])
    low, high = bonferroni, alpha  # crossing grows with the level: bisect, never below Bonferroni
    for _ in range(40):
        mid = 0.5 * (low + high)
        if _crossing_probability(paths, looks, mid) <= target:
            low = mid
        else:
            high = mid
    return low


BOUNDARIES = ("calibrated", "bonferroni")
SPACINGS = {"midpoint": midpoint_looks, "doubling": doubling_looks}


@dataclass(frozen=True)
class SequentialPlan:
    """When to look at the data and at which error level; all recorded in the ledger."""

    min_gain: float = 0.02  # the smallest gain worth accepting (0.02 = 2 % faster)
    alpha: float = 0.05  # one-sided false-accept probability of this test
    min_rounds: int = 5
    max_rounds: int = 100
    step: int = 0  # 0: looks spaced by `spacing` from min_rounds; else every `step` pairs
    spacing: str = "midpoint"  # midpoint_looks (5, 10, 15, 20, 30, 40, 60, 80, 100) or doubling_looks (the race's rungs)
    method: str = "hodges-lehmann"
    futility: bool = False  # stop a test that could not pass even at the last look (see out_of_reach)
    futility_from: int = 20  # pairs before the futility rule applies (fewer give no steady spread to go by)
    drop_alpha: float = 0.25  # tail level of the futility rule's lenient interval (a 50 % interval)
    boundary: str = "calibrated"  # the looks' common level: calibrated_look_alpha, or "bonferroni" (alpha / looks)

    def __post_init__(self) -> None:
        if self.spacing not in SPACINGS:
            raise ValueError(f"spacing must be one of {', '.join(SPACINGS)}, got {self.spacing!r}")
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"boundary must be one of {', '.join(BOUNDARIES)}, got {self.boundary!r}")
        if not 0 < self.min_gain < 1:
            raise ValueError(f"min_gain must be in (0, 1), got {self.min_gain}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {self.alpha}")
        if self.min_rounds < 2 or self.max_rounds < self.min_rounds or self.step < 0:
            raise ValueError(f"rounds: need 2 <= min_rounds ({self.min_rounds}) <= max_rounds ({self.max_rounds}), step >= 0")

    def looks(self) -> list[int]:
        """The pair counts at which the test decides."""
        if not self.step:
            return SPACINGS[self.spacing](self.min_rounds, self.max_rounds)
        points = list(range(self.min_rounds, self.max_rounds + 1, self.step))
        if points[-1] != self.max_rounds:
            points.append(self.max_rounds)
        return points

    @property
    def look_alpha(self) -> float:
        """Each look's level per tail. Calibrated for the signed-rank interval only: the bootstrap's
        joint law over the looks is not distribution-free, so it keeps Bonferroni."""
        if self.boundary == "calibrated" and self.method == "hodges-lehmann":
            return calibrated_look_alpha(self.alpha, tuple(self.looks()))
        return self.alpha / len(self.looks())

    def with_alpha(self, alpha: float) -> "SequentialPlan":
        return replace(self, alpha=alpha)

    def ending_by(self, pairs: int) -> "SequentialPlan":
        """This test with its last look at `pairs` at most (never before its first look)."""
        return replace(self, max_rounds=max(self.min_rounds, min(self.max_rounds, pairs)))

    def with_min_gain(self, min_gain: float) -> "SequentialPlan":
        return replace(self, min_gain=min_gain)

    def to_json(self) -> dict:
        return {**asdict(self), "looks": self.looks(), "look_alpha": self.look_alpha}


@dataclass(frozen=True)
class Decision:
    """One look's verdict: accept, reject (with reason), continue, or inconclusive."""

    verdict: str
    reason: str
    interval: RatioInterval | None
    rounds: int
    detail: str = ""  # why, where the reason alone does not say (the futility rule's numbers)

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "rounds": self.rounds,
            "interval": self.interval.to_json() if self.interval else None,
            **({"detail": self.detail} if self.detail else {}),
        }


def sequential_decision(baseline, candidate, plan: SequentialPlan) -> Decision:
    """Decide after len(baseline) pairs: accept when the whole interval is below 1 - min_gain,
    reject when it lies above 1 (slower) or above 1 - min_gain (cannot be that gain), continue
    between looks, and call it inconclusive when max_rounds pairs have not settled it. With
    plan.futility, from futility_from pairs, a test that could not pass even at the last look
    stops (out_of_reach): a rule that only ever rejects, so the false-accept level is unchanged."""
    n = len(baseline)
    if n < plan.min_rounds or (n not in plan.looks() and n < plan.max_rounds):
        return Decision(CONTINUE, "", None, n)
    interval = median_ratio_interval(baseline, candidate, tail_alpha=plan.look_alpha, method=plan.method)
    threshold = 1.0 - plan.min_gain
    if interval.high < threshold:
        return Decision(ACCEPT, REASON_GAIN, interval, n)
    if interval.low > 1.0:
        return Decision(REJECT, REASON_SLOWER, interval, n)
    if interval.low > threshold:
        return Decision(REJECT, REASON_NOT_SIGNIFICANT, interval, n)
    if n >= plan.max_rounds:
        return Decision(INCONCLUSIVE, REASON_INCONCLUSIVE, interval, n)
    if plan.futility and n >= plan.futility_from:
        why = out_of_reach(baseline, candidate, threshold, last_n=plan.max_rounds, look_alpha=plan.look_alpha,
                           drop_alpha=plan.drop_alpha, method=plan.method)
        if why:
            return Decision(REJECT, REASON_OUT_OF_REACH, interval, n, why)
    return Decision(CONTINUE, "", interval, n)


def last_look_reach(baseline, candidate, last_n: int, look_alpha: float, spread: float | None = None) -> float:
    """The factor (>= 1) by which the upper end of an interval over last_n pairs would still lie
    above its estimate at the robust spread of these pairs, or at `spread` when given
    (log_half_width at look_alpha). With fewer than 5 pairs and no spread given: 1."""
    if spread is None:
        if min(len(baseline), len(candidate)) < 5:
            return 1.0
        spread = paired_spread(baseline, candidate)
    return math.exp(log_half_width(spread, last_n, look_alpha))


def out_of_reach(baseline, candidate, threshold: float, *, last_n: int, look_alpha: float, drop_alpha: float,
                 method: str = "hodges-lehmann", spread: float | None = None) -> str:
    """Why these pairs could not pass below `threshold` even at the last look, or "" if they still could.

    The futility rule (the race's and the confirmations'): the optimistic end of a lenient
    interval (tail drop_alpha, a 50 % interval at 0.25), widened by the half-width a last-look
    interval would still have at this spread, lies above the threshold. A close call on a noisy
    program then stops instead of running to the last look inconclusive or not significant."""
    lenient = median_ratio_interval(baseline, candidate, tail_alpha=drop_alpha, method=method)
    doubt = last_look_reach(baseline, candidate, last_n, look_alpha, spread)
    if lenient.low * doubt <= threshold:
        return ""
    return (f"could not pass by the last look: after {len(baseline)} pairs its {1 - 2 * drop_alpha:.0%} interval "
            f"reaches down to {lenient.low:.3f}, and at this spread {last_n} pairs still leave x{doubt:.3f} of doubt "
            f"(needs below {threshold:.3f})")


def run_sequential(pairs, plan: SequentialPlan) -> Decision:
    """Feed (baseline, candidate) pairs one at a time until the test stops (for benches and tests)."""
    b: list[float] = []
    c: list[float] = []
    for base, cand in pairs:
        b.append(base)
        c.append(cand)
        d = sequential_decision(b, c, plan)
        if d.verdict != CONTINUE:
            return d
        if len(b) >= plan.max_rounds:
            break
    return sequential_decision(b, c, plan) if len(b) >= plan.max_rounds else Decision(CONTINUE, "", None, len(b))


def confirmation_alpha(alpha: float, k: int) -> float:
    """The one-sided level of a run's k-th confirmation (k >= 1): alpha / (k (k + 1)), summing to alpha."""
    if k < 1:
        raise ValueError("confirmations count from 1")
    return alpha / (k * (k + 1))


@dataclass(frozen=True)
class NoiseFloor:
    """What an A/A comparison says: the apparent ratio of two builds of the same source, the
    spread of one paired ratio, and the smallest gain the sequential test can resolve with it."""

    interval: RatioInterval
    spread: float  # robust standard deviation of one paired log ratio
    resolution: float  # the interval half-width a full test (max_rounds pairs) reaches at this spread
    floor: float  # max(A/A offset beyond its interval, resolution): min_gain is never below it

    def to_json(self) -> dict:
        return {"interval": self.interval.to_json(), "spread": self.spread, "resolution": self.resolution,
                "floor": self.floor}


def noise_floor(baseline, twin, *, confidence: float = 0.95, max_rounds: int = 100,
                method: str = "hodges-lehmann") -> NoiseFloor:
    """The A/A noise floor.

    Two effects can make identical programs look different: a systematic offset between two
    builds or two positions in a pair, and plain noise, which limits how small a gain
    `max_rounds` pairs can resolve (the half-width of a Hodges-Lehmann interval, standard error
    about 1.02 s / sqrt(n) for spread s). The offset counted is the part the A/A rounds can tell
    from their own noise: the distance from 1 to their interval, 0 when it covers 1. (The point
    estimate alone is noise too: on a loaded 2-core machine 10 A/A pairs of identical builds
    estimated 1.08, and that floor then declined a real 9 % win.)
    """
    tail = (1.0 - confidence) / 2.0
    interval = median_ratio_interval(baseline, twin, tail_alpha=tail, method=method)
    return floor_at_spread(interval, paired_spread(baseline, twin), confidence=confidence, max_rounds=max_rounds)


def floor_at_spread(interval: RatioInterval, spread: float, *, confidence: float, max_rounds: int) -> NoiseFloor:
    """The floor of an A/A `interval` (its offset) with the resolution `max_rounds` pairs reach at `spread`."""
    resolution = math.expm1(log_half_width(spread, max_rounds, (1.0 - confidence) / 2.0))
    offset = max(0.0, interval.low - 1.0, 1.0 - interval.high)
    return NoiseFloor(interval, spread, resolution, max(offset, resolution))


# The floor is taken again from the race's own pairs (pooled_spread) once they are steadier than
# the spread in force by this factor. A 10-pair robust spread reads above 1.5 x the true spread in
# about 5 % of steady runs (its median is 0.88 of it, sd 0.33: bench_metric_choice.py), and a first
# rung of 20-50 pairs re-takes it in 6-10 % of them (which moves the bar only above 10 %); a machine
# that left a noisy mode after the A/A reads below it (runtime_trip: A/A pairs 16 %, the race's
# first rung 9.4 %, and the 3.2 % bar the A/A set dropped a real 5.6 % gain after 5 pairs).
# Only ever lowered: a bar set too high loses real gains unseen, one set too low costs pairs
# (bounded by the race's futility rule) and never a false accept, as an accept's own interval must
# still clear it. The race's pairs are often noisier than the A/A's (a shared baseline run sits
# further from its second candidate; drift over the round robin), and their intervals carry that.
RETAKE_FACTOR = 1.5


def clearly_steadier(in_force: float, observed: float, factor: float = RETAKE_FACTOR) -> bool:
    """Whether the spread `observed` is below `in_force` / factor (both finite and positive)."""
    if not (math.isfinite(in_force) and math.isfinite(observed) and in_force > 0 and observed > 0):
        return False
    return observed < in_force / factor


def pooled_spread(groups) -> tuple[float, int]:
    """The spread of one paired log ratio from several candidates' pairs, whatever each one's
    true ratio: within each candidate, the median absolute difference of two of its log ratios
    (which no common shift moves), over sqrt(2) x 0.6745, its value under normal noise of sd 1.
    `groups`: (baseline, candidate) value lists; returns (spread, pairs used); nan, 0 without two
    pairs in any group."""
    diffs, pairs = [], 0
    for baseline, candidate in groups:
        x = log_ratios(baseline, candidate)
        if len(x) < 2:
            continue
        i, j = np.triu_indices(len(x), 1)
        diffs.append(np.abs(x[i] - x[j]))
        pairs += len(x)
    if not diffs:
        return math.nan, 0
    return float(np.median(np.concatenate(diffs)) / (math.sqrt(2.0) * _normal_quantile(0.75))), pairs


# How much steadier an alternative metric's A/A pairs must be to replace the default: a robust
# spread from 10 pairs is itself uncertain by about a third (sd 0.33-0.34 of the true spread in
# tests/bench/bench_metric_choice.py), and the default stays unless clearly beaten. There, two
# equally steady metrics still swap in 28-31 % of runs, one 40 % noisier is taken in 12-13 %, and
# one half as noisy in 77-78 % (`--margin 0.6` there: 15-18 %, 6-7 % and 63 %).
STEADIER_MARGIN = 0.75


def steadier_metric(spreads: dict[str, float], choices: list[str], margin: float = STEADIER_MARGIN) -> str:
    """The metric to decide on: choices[0] unless another's A/A spread is below `margin` times its
    (the lowest such), so that a metric is swapped only on clear evidence. Metrics without a finite
    spread (a round without that clock) are never chosen."""
    default = choices[0]
    best, best_spread = default, spreads.get(default, math.inf) * margin
    for m in choices[1:]:
        s = spreads.get(m, math.inf)
        if math.isfinite(s) and s < best_spread:
            best, best_spread = m, s
    return best


def steadier_metric_pooled(groups: dict[str, list], choices: list[str], margin: float = STEADIER_MARGIN) -> tuple[str, dict[str, float], int]:
    """steadier_metric over more pairs than the A/A's: each metric's pooled spread (pooled_spread)
    over the same (baseline, candidate) groups, e.g. the A/A pairs and a race rung's racers, whose
    true ratios may differ. Returns (the metric, its spreads, the pairs they pool)."""
    spreads, pairs = {}, 0
    for m in choices:
        spread, used = pooled_spread(groups.get(m) or [])
        if math.isfinite(spread) and spread > 0:
            spreads[m] = spread
            pairs = max(pairs, used)
    return steadier_metric(spreads, choices, margin), spreads, pairs


def _normal_quantile(p: float) -> float:
    """Inverse standard normal CDF (Acklam's rational approximation; |error| < 1.2e-9)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -_normal_quantile(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


def effective_min_gain(min_gain: float, floor: NoiseFloor | None, *, cap: float = 0.5) -> float:
    """min_gain raised to the A/A noise floor (never below what the A/A can resolve)."""
    if floor is None:
        return min_gain
    return min(cap, max(min_gain, floor.floor))


def log_half_width(spread: float, n: int, tail_alpha: float) -> float:
    """The half-width, in log ratio, of a Hodges-Lehmann interval over n pairs at this paired spread
    (standard error about 1.02 spread / sqrt(n): its efficiency under normal noise is 3 / pi)."""
    return _normal_quantile(1.0 - tail_alpha) * 1.02 * spread / math.sqrt(n)


def pairs_to_clear(spread: float, estimate: float, threshold: float, tail_alpha: float) -> float:
    """The pairs at which an interval at `tail_alpha` around `estimate` (log_half_width at this
    spread) would lie below `threshold`: what a ratio that held at `estimate` needs to pass; inf
    when the estimate is not below the threshold."""
    gap = math.log(threshold) - math.log(estimate)
    if not gap > 0 or not math.isfinite(spread):
        return math.inf
    return (_normal_quantile(1.0 - tail_alpha) * 1.02 * spread / gap) ** 2


def paired_spread(baseline, candidate) -> float:
    """Robust spread (1.4826 x MAD) of the log ratios: about the CV of one paired ratio."""
    x = log_ratios(baseline, candidate)
    if len(x) == 0:
        return math.nan
    return float(1.4826 * np.median(np.abs(x - np.median(x))))
