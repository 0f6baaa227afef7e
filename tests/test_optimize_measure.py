"""One round's reduction and the output comparison (pure parts of rocm_perf.optimize.measure)."""

import pytest

from rocm_perf.optimize.measure import (
    RoundResult,
    metric_value,
    output_fingerprint,
    outputs_differ,
    program_argv,
    reduce_traces,
)
from rocm_perf.trace import KernelSymbol, Trace


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
