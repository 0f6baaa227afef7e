"""One round's reduction and the output comparison (pure parts of rocm_perf.optimize.measure)."""

from pathlib import Path

import numpy as np
import pytest

from conftest import DATA

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.measure import (
    RoundResult,
    adjusted_metric,
    clock_paths,
    metric_kind,
    metric_meaning,
    metric_of,
    metric_value,
    output_fingerprint,
    outputs_differ,
    program_argv,
    reduce_traces,
)
from rocm_perf.trace import KernelSymbol, Trace
from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_CYCLES, HOST_INSTRUCTIONS, HOST_PROBE_NS


def one_stream_trace():
    syms = [KernelSymbol("_Z1av", "a()"), KernelSymbol("_Z1bv", "b()")]
    # a, a, b, a on one stream: a takes 10, 10 and 40 (preempted) ns, b takes 20 ns.
    return Trace.from_rows(start=[0, 10, 20, 40], end=[10, 20, 40, 80], kernel=[0, 0, 1, 0], symbols=syms,
                           stream=[0, 0, 0, 0], queue=[0, 0, 0, 0])


def test_round_reduction_critical_path_medians_shares_and_median_path():
    cp, total, medians, shares, median_path = reduce_traces([one_stream_trace()])
    assert cp == 80 and total == 80
    assert medians == {"a()": 10.0, "b()": 20.0}
    assert shares["a()"] == pytest.approx(60 / 80) and shares["b()"] == pytest.approx(20 / 80)
    assert median_path == 10 + 10 + 20 + 10  # the stalled dispatch counts at a's median
    r = RoundResult(True, "", cp, total, medians, shares, {"median_path_ns": median_path})
    assert metric_value(r, "critical-path") == 80 and metric_value(r, "median-path") == 50


def test_outputs_compare_exit_digests_and_stdout_without_timing_lines():
    timing = r"(?i)\btime\b|\bms\b"
    ref = output_fingerprint(0, ["d1:64", "d2:64"], "result 42\ntime 3.1 ms\n", timing)
    assert outputs_differ(ref, output_fingerprint(0, ["d1:64", "d2:64"], "result 42\ntime 9.9 ms\n", timing)) == ""
    assert "digests differ" in outputs_differ(ref, output_fingerprint(0, ["d1:64", "dX:64"], "result 42\n", timing))
    assert "standard output differs" in outputs_differ(ref, output_fingerprint(0, ["d1:64", "d2:64"], "result 43\n", timing))


def test_program_argv_plain_and_harness():
    assert program_argv("/r/prog", ["-n", "4"], None) == ["/r/prog", "-n", "4"]
    assert program_argv("/r/prog", ["x"], "python3 harness.py --exe {exe}") == ["python3", "harness.py", "--exe", "/r/prog", "x"]


def test_clock_paths_weigh_the_critical_path_by_each_recorded_clock():
    trace = one_stream_trace()
    # The stalled dispatch (40 ns of wall clock) ran for 10 ns of CPU time, like its siblings.
    trace.counters = {HOST_CPU_TIME_NS: np.array([9.0, 10, 19, 11]), HOST_INSTRUCTIONS: np.array([100.0, 100, 200, 100]),
                      HOST_CYCLES: np.array([30.0, 31, np.nan, 29]),
                      # the third ran while the core was at about half speed: its probe took 1.9 ms
                      HOST_PROBE_NS: np.array([1e6, 1e6, 1.9e6, 1e6])}
    paths, missing = clock_paths([trace, trace])  # two processes of one round add up
    adjusted = {k: v for k, v in paths.items() if k.startswith("adjusted-path:")}
    assert {k: v for k, v in paths.items() if k not in adjusted} == {"cpu-path": 2 * 49.0, "probed-path": 2 * 40.0,
                                                                     "instructions": 2 * 500.0}
    # between them, the adjusted path at b = 0.1 ... 0.9: the slowed dispatch at 19 x (1 ms / 1.9 ms)^b
    assert list(adjusted) == [f"adjusted-path:0.{k}" for k in range(1, 10)]
    for k in range(1, 10):
        assert adjusted[f"adjusted-path:0.{k}"] == 2 * round(30 + 19 / 1.9 ** (k / 10))
    assert missing == {"cycles": "1 dispatch(es) without HOST_CYCLES"}
    r = RoundResult(True, "", 80, 80, outputs={"median_path_ns": 50, "metrics": paths, "metrics_missing": missing})
    assert metric_value(r, "cpu-path") == 98 and metric_value(r, "critical-path") == 80
    with pytest.raises(RocmPerfError, match="--metric cycles: a round has no cycles value .1 dispatch.es. without HOST_CYCLES"):
        metric_value(r, "cycles")
    # a round recorded before the clocks existed (an old ledger row) has none of them
    assert metric_of(80, {"median_path_ns": 50}, "cpu-path") is None
    assert metric_of(80, {"median_path_ns": 50}, "median-path") == 50
    assert clock_paths([one_stream_trace()])[1]["cpu-path"] == "no HOST_CPU_TIME_NS in the profile"
    trace.counters[HOST_PROBE_NS] = np.array([1e6, 0, np.nan, 1e6])  # a probe reading must be a positive time
    paths, missing = clock_paths([trace])
    assert missing["probed-path"].startswith("2 dispatch(es) without HOST_PROBE_NS (the speed probe is not kept")
    assert missing["adjusted-path"] == missing["probed-path"] and not any(k.startswith("adjusted") for k in paths)
    r = RoundResult(True, "", 80, 80, outputs={"metrics": paths, "metrics_missing": missing})
    with pytest.raises(RocmPerfError, match="--metric adjusted-path:0.4: a round has no .* value .2 dispatch.es. without HOST_PROBE_NS"):
        metric_value(r, "adjusted-path:0.4")


def test_adjusted_metric_names_lie_on_the_recorded_grid_with_cpu_path_and_probed_path_at_the_ends():
    assert adjusted_metric(0.0) == "cpu-path" and adjusted_metric(0.04) == "cpu-path" and adjusted_metric(-0.3) == "cpu-path"
    assert adjusted_metric(0.96) == "probed-path" and adjusted_metric(1.7) == "probed-path"
    assert adjusted_metric(0.44) == "adjusted-path:0.4" and adjusted_metric(0.46) == "adjusted-path:0.5"
    assert metric_kind("adjusted-path:0.4") == "adjusted-path" and metric_kind("cpu-path") == "cpu-path"
    assert "to the power 0.4" in metric_meaning("adjusted-path:0.4")
    assert metric_meaning("cpu-path").startswith("critical path in CPU time")


class CountingHostBackend:
    """A spy around the real host backend: counts the profiled runs, changes nothing."""

    def __init__(self):
        from rocm_perf.backends.host import HostBackend

        self.real = HostBackend()
        self.runs: list[str] = []

    def profile(self, argv, out_dir, **kw):
        self.runs.append(Path(argv[0]).name)
        return self.real.profile(argv, out_dir, **kw)


@pytest.mark.slow
def test_each_program_is_warmed_up_once_untimed_and_a_hang_ends_in_the_warm_up(tmp_path):
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.optimize.measure import FAIL_TIMEOUT, ProfiledRounds

    exe = HostBackend().build(DATA / "programs" / "bench_twin.cu", tmp_path / "b").executable
    spy = CountingHostBackend()
    rounds = ProfiledRounds(spy, program_args=[], run_template=None, timeout_s=60, cwd=tmp_path, timing_lines="(?!)")
    for i in range(3):
        assert rounds(exe, tmp_path / "rounds" / f"aa-{i}-B", f"0-aa-{i}-B").ok
    assert spy.runs == ["bench_twin"] * 4  # one warm-up, then three timed rounds
    assert not any(p.name.startswith(".warmup") for p in (tmp_path / "rounds").iterdir())

    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    slow = ProfiledRounds(CountingHostBackend(), program_args=[], run_template=None, timeout_s=1, cwd=tmp_path,
                          timing_lines="(?!)")
    r = slow(hang, tmp_path / "rounds" / "screen-0-C", "1-screen-0-C")
    assert not r.ok and r.failure == FAIL_TIMEOUT and "warm-up" in r.outputs["stderr_tail"]
    assert slow.backend.runs == ["hang.sh"]  # the timed round was not waited out a second time


def test_the_rounds_of_a_pair_run_together_on_one_cpu_each_timed_in_its_own_cpu_time(tmp_path):
    """What holds whatever the machine's load: which clock each figure comes from, that the two
    builds ran at the same time on one core, and that the CPU-time figures exclude the other build's
    turns by construction (one core cannot give two programs more CPU time than the wall clock
    between their first start and last end). How long anything took is not asserted."""
    import os

    from rocm_perf.backends.host import HostBackend
    from rocm_perf.backends.host_clocks import pinning_status
    from rocm_perf.optimize.measure import ProfiledRounds
    from rocm_perf.trace.load import load_trace

    if pinning_status():
        pytest.skip(f"pinning refused here: {pinning_status()}")
    backend = HostBackend()
    source = DATA / "programs" / "bench_twin_stencil.cu"
    plain = backend.build(source, tmp_path / "plain").executable
    more = backend.build(source, tmp_path / "more", ["-DEXTRA_PERMILLE=100"]).executable  # 10 % more sweeps
    rounds = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=120, cwd=tmp_path,
                            timing_lines="(?!)", keep_profiles=lambda key: True)
    b, c = rounds.together([(plain, tmp_path / "r" / "B", "1-screen-0-B"), (more, tmp_path / "r" / "C", "1-screen-0-C")])
    assert b.ok and c.ok
    highest = max(os.sched_getaffinity(0))
    assert b.outputs["pinning"] == c.outputs["pinning"] == f"cpu {highest}"  # one core for both
    traces = {role: load_trace(next((tmp_path / "r" / role).glob("*.db"))) for role in ("B", "C")}
    # the work: one launch a sweep, 600 sweeps and 10 % more (counted, not timed)
    assert (len(traces["B"]), len(traces["C"])) == (600, 660)
    for r, trace in ((b, traces["B"]), (c, traces["C"])):
        assert trace.agents[0].extra["clocks"]["cpu_time"].startswith("CLOCK_THREAD_CPUTIME_ID")
        cpu, wall = trace.counters[HOST_CPU_TIME_NS], (trace.end - trace.start).astype(float)
        # one stream, one chain: cpu-path is the sum of the block workers' CPU time per dispatch,
        # critical-path the sum of the dispatches' wall-clock spans
        assert metric_value(r, "cpu-path") == pytest.approx(float(cpu.sum()), rel=1e-5)
        assert metric_value(r, "critical-path") == pytest.approx(float(wall.sum()), rel=1e-5)
        assert (cpu <= wall + 1_000).all()  # a thread's CPU time inside a span is at most the span (1 us for the clocks' reads)
    spans = [(int(t.start.min()), int(t.end.max())) for t in traces.values()]
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # their kernels ran at the same time
    # Both builds' block workers share one CPU, so all their dispatches' CPU time together fits in
    # the wall clock from the first start to the last end: neither counts the other's turns on it.
    together_ns = max(e for _, e in spans) - min(s for s, _ in spans)
    cpu_both = sum(float(t.counters[HOST_CPU_TIME_NS].sum()) for t in traces.values())
    assert cpu_both <= together_ns * 1.001 + 1_000_000
    assert "pinning" not in rounds(plain, tmp_path / "r" / "alone", "1-screen-1-B").outputs  # apart: not pinned
