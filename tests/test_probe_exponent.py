"""adjusted-path's exponent: the fit over the A/A rounds' two clock paths."""

import json
import math
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import DATA

from rocm_perf.optimize.measure import adjusted_metric, clock_paths
from rocm_perf.optimize.probe_exponent import MIN_ROUNDS, fit_exponent, fit_rounds
from rocm_perf.trace import KernelSymbol, Trace
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_PROBE_NS

sys.path.insert(0, str(DATA.parent / "bench"))  # the bench that wrote the measured data reads it back


def two_speed_round(rng, follows: float, cost: float, n: int = 12) -> dict[str, float]:
    """One round's clock paths, reduced by the real code (measure.clock_paths) from a one-stream
    trace of a() and b() (b() 5x a()'s cost) on a core with two speeds: before a third of the
    dispatches the probe read 1.8x slower and the kernel ran 1.8 ** `follows` slower, each with
    jitter of its own (probe 3 %, kernel 1 %)."""
    kernel = np.arange(n) % 2
    slow = rng.choice([0.0, math.log(1.8)], size=n, p=[2 / 3, 1 / 3])
    probe = 1e6 * np.exp(slow + rng.normal(0, 0.03, n))
    cpu = cost * np.where(kernel == 0, 1.0, 5.0) * np.exp(follows * slow + rng.normal(0, 0.01, n))
    start = np.concatenate([[0], np.cumsum(cpu)[:-1]]).astype(np.int64)
    trace = Trace.from_rows(start=start, end=start + cpu.astype(np.int64), kernel=kernel.tolist(),
                            symbols=[KernelSymbol("_Z1av", "a()"), KernelSymbol("_Z1bv", "b()")],
                            stream=[0] * n, queue=[0] * n)
    trace.counters = {HOST_CPU_TIME_NS: cpu, HOST_PROBE_NS: probe}
    return clock_paths([trace])[0]


def builds(rng, follows: float, rounds: int = 10, costs=(1e6, 1.3e6)):
    """Each build's (cpu-path values, probed-path values); the builds may differ in cost."""
    out = []
    for cost in costs:
        paths = [two_speed_round(rng, follows, cost) for _ in range(rounds)]
        out.append(([p["cpu-path"] for p in paths], [p["probed-path"] for p in paths]))
    return out


@pytest.mark.parametrize("follows", [0.0, 0.2, 0.5, 0.8, 1.0])
def test_the_fit_finds_how_much_of_the_probe_a_program_follows_whatever_each_build_costs(follows):
    rng = np.random.default_rng(11)
    fit = fit_exponent(builds(rng, follows, rounds=20))
    assert fit.rounds == 40
    # the builds differ 30 % in cost, which must not read as following the probe
    assert fit.slope == pytest.approx(follows, abs=0.06)
    assert fit.exponent == min(1.0, max(0.0, fit.slope))
    assert abs(fit.correlation) < 0.4 if follows == 0 else fit.correlation > 0.7


def test_the_adjusted_path_at_the_fitted_exponent_is_the_steadiest_of_the_recorded_ones():
    rng = np.random.default_rng(2)
    paths = [two_speed_round(rng, 0.5, 1e6) for _ in range(40)]
    fit = fit_exponent([([p["cpu-path"] for p in paths[:20]], [p["probed-path"] for p in paths[:20]])])
    spread = {m: np.std(np.log([p[m] for p in paths[20:]])) for m in paths[0]}
    assert min(spread, key=spread.get) in {adjusted_metric(fit.exponent + d) for d in (-0.1, 0.0, 0.1)}
    assert spread[adjusted_metric(fit.exponent)] < 0.5 * min(spread["cpu-path"], spread["probed-path"])


def test_a_slope_outside_zero_to_one_is_clipped_and_the_record_keeps_it():
    rng = np.random.default_rng(3)
    steep = fit_exponent(builds(rng, 1.5))
    assert steep.slope > 1.2 and steep.exponent == 1.0 and adjusted_metric(steep.exponent) == "probed-path"
    inverse = fit_exponent(builds(rng, -0.4))
    assert inverse.slope < 0 and inverse.exponent == 0.0 and adjusted_metric(inverse.exponent) == "cpu-path"
    assert json.loads(json.dumps(steep.to_json())) == steep.to_json()


def test_no_fit_without_enough_rounds_a_reading_or_a_probe_that_moved():
    rng = np.random.default_rng(5)
    few = builds(rng, 0.5, rounds=(MIN_ROUNDS - 1) // 2)
    assert fit_exponent(few) is None
    cpu, probed = builds(rng, 0.5)[0]
    assert fit_exponent([(cpu, probed[:-1] + [0.0])]) is None  # a round without the probe's path
    assert fit_exponent([(cpu, probed[:-1] + [math.nan])]) is None
    assert fit_exponent([(cpu, [c / 2 for c in cpu])]) is None  # the probe read the same in every round
    assert fit_exponent([]) is None


def test_on_measured_aa_pairs_the_fitted_path_is_steadier_where_the_core_swings():
    """20 A/A pairs of each kernels/ program on the 2-core EPYC VM, reduced by the real code
    (tests/data/measured/probe_exponent_aa.json, written by tests/bench/bench_probe_exponent.py):
    the exponent differs by program, and chosen on half the pairs it meets a lower spread on the
    other half than the cpu-path/probed-path choice did, on most programs and in the median."""
    from bench_probe_exponent import fitted_choice, halving_rows

    data = json.loads((DATA / "measured" / "probe_exponent_aa.json").read_text())
    chosen = {name: fitted_choice(rounds, sorted({r["pair"] for r in rounds})) for name, rounds in data["programs"].items()}
    # pipeline's overlapping streams leave rounds without the probe: no fit, cpu-path as before
    assert chosen["pipeline"] == ("cpu-path", None)
    # a compute-bound kernel follows little of the load-heavy probe; softmax and scan most of it
    assert chosen["matmul_regblock"][1] < 0.3 and chosen["histogram"][1] < 0.1
    assert chosen["softmax"][1] > 0.6 and chosen["scan"][1] > 0.6
    rows = {r["program"]: r for r in halving_rows(data, halvings=100)}
    changes = sorted(r["now"] / r["before"] - 1 for r in rows.values())
    assert np.median(changes) < -0.05 and sum(c < -0.05 for c in changes) >= 6
    for name in ("matmul_tiled", "softmax", "layernorm"):
        assert rows[name]["now"] < 0.85 * rows[name]["before"]
    assert rows["pipeline"]["now"] == rows["pipeline"]["before"]


def test_a_fit_over_recorded_rounds_reads_both_paths_from_each_round():
    """fit_rounds reads recorded rounds as the ledger keeps them (cp_ns and outputs["metrics"]):
    softmax's measured A/A rounds fit as their two paths do, and one round without the probe's
    path (as pipeline's overlapping streams leave them) means no fit."""
    data = json.loads((DATA / "measured" / "probe_exponent_aa.json").read_text())
    rounds = data["programs"]["softmax"]
    by_role = {role: [SimpleNamespace(cp_ns=r["metrics"]["cpu-path"], outputs={"metrics": r["metrics"]})
                      for r in sorted(rounds, key=lambda r: r["pair"]) if r["role"] == role] for role in "BC"}
    fit = fit_rounds([by_role["B"], by_role["C"]])
    paths = [tuple([r.outputs["metrics"][m] for r in by_role[role]] for m in ("cpu-path", "probed-path")) for role in "BC"]
    assert fit == fit_exponent(paths) and fit.slope > 0.6 and fit.rounds == len(rounds)
    lacking = SimpleNamespace(cp_ns=1.0, outputs={"metrics": {"cpu-path": 1.0}})
    assert fit_rounds([by_role["B"][:-1] + [lacking], by_role["C"]]) is None
