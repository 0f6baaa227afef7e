"""How much of the speed probe's swings a program's CPU time follows: the exponent of adjusted-path.

On the host backend each dispatch carries its CPU time and the reading of the speed probe timed
before it (dispatch_clocks.h). When the core slows down both slow, but not by the same factor: on
the 2-core EPYC VM of these benches the probe read 1.6-2.4x slower in its slow stretches, where
matmul_regblock's kernel ran 1.12x slower and stencil1d's 1.37x. Dividing by the whole probe
(probed-path) then over-corrects and adds the probe's own swings; not dividing (cpu-path) keeps
the core's. A round's effective probe is its cpu-path over its probed-path (the CPU-time-weighted
harmonic mean of its readings, as yardstick.py reads it); the least-squares slope b of a round's
log cpu-path on its log effective probe, within each build, says how much of the probe the
program's time follows, and the adjusted path at b removes that much (regression adjustment on a
covariate the candidate does not choose, as controlled experiments do with CUPED: Deng et al.,
WSDM 2013). The yardstick guard (yardstick.py) still catches a candidate that moves the probe.

The slope is fitted once per run, on the A/A rounds (the baseline's and its twin's), and then fixed:
the candidates never choose their own exponent. Fitted on half of 20 A/A pairs and judged on the
other half (300 random halvings, tests/bench/bench_probe_exponent.py), the paired spread over the
12 kernels/ programs of two samples was a median 10 % and 14 % below that of the cpu-path/probed-path
choice it replaces (lower on 7 and 8 programs, higher on 2 and none). The slope of single
dispatches on their own readings did as well on one sample and not on another (a median 18 % and
1 % lower): what the decisions meet is the rounds'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rocm_perf.optimize.measure import METRIC_CPU_PATH, METRIC_PROBED_PATH, metric_of

# A fit needs this many rounds with both paths.
MIN_ROUNDS = 6


@dataclass(frozen=True)
class ExponentFit:
    """The fitted exponent (the slope clipped to [0, 1]), the slope, the correlation of log cpu-path
    and log effective probe within builds, and the rounds it used."""

    exponent: float
    slope: float
    correlation: float
    rounds: int

    def to_json(self) -> dict:
        return {"exponent": self.exponent, "slope": self.slope, "correlation": self.correlation, "rounds": self.rounds}


def fit_exponent(builds: list[tuple[list[float], list[float]]]) -> ExponentFit | None:
    """The exponent over rounds of one or more builds: each build's (cpu-path values, probed-path
    values), round by round. The slope of log cpu-path on log(cpu-path / probed-path) with each
    build's own means removed, pooled; None with fewer than MIN_ROUNDS rounds, a value that is not
    positive, or no spread in the effective probe."""
    xs, ys = [], []
    for cpu, probed in builds:
        cpu, probed = np.asarray(cpu, dtype=np.float64), np.asarray(probed, dtype=np.float64)
        if len(cpu) != len(probed) or not (np.isfinite(cpu).all() and np.isfinite(probed).all()
                                           and (cpu > 0).all() and (probed > 0).all()):
            return None
        if len(cpu) < 2:
            continue
        y, x = np.log(cpu), np.log(cpu / probed)
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    if sum(len(x) for x in xs) < MIN_ROUNDS:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    sxx, sxy, syy = float(x @ x), float(x @ y), float(y @ y)
    if not sxx > 1e-12:
        return None
    slope = sxy / sxx
    correlation = sxy / math.sqrt(sxx * syy) if syy > 0 else math.nan
    return ExponentFit(min(1.0, max(0.0, slope)), slope, correlation, len(x))


def fit_rounds(builds) -> ExponentFit | None:
    """fit_exponent over builds of recorded rounds (anything with `cp_ns` and `outputs`, as the
    ledger and ProfiledRounds give them): a build's rounds, e.g. the A/A pairs' baseline rounds and
    its twin's. A round without one of the paths counts as 0, and then there is no fit."""
    return fit_exponent([tuple([metric_of(r.cp_ns, r.outputs, m) or 0.0 for r in rounds]
                               for m in (METRIC_CPU_PATH, METRIC_PROBED_PATH)) for rounds in builds])
