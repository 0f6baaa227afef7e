"""Critical path over the dispatch DAG: the fixture's known answer and hand-built HIP programs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA
from hip_program_trace import HipProgramTrace

from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import UNKNOWN, KernelSymbol, Trace


def short(name: str) -> str:
    return name.split("(")[0]


def weights(result) -> dict[str, int]:
    return {s.name: s.cp_ns for s in result.symbols}


def path_kernels(trace: Trace, result) -> list[str]:
    return [trace.symbol_name(r) for r in result.path.tolist()]


def check_schedule_invariants(trace: Trace, result) -> None:
    """What must hold for any DAG: slack >= 0, zero on the path, path sums to its length."""
    duration = trace.end - trace.start
    assert (result.slack >= 0).all()
    assert (result.slack[result.path] == 0).all()
    assert int(duration[result.path].sum()) == result.critical_path_ns
    assert (result.earliest_start + duration <= result.critical_path_ns).all()
    assert result.critical_path_ns <= result.sum_dispatch_ns


# ---- the fixture: a real-schema rocpd database with a known answer ---------------------------


def test_multistream_fixture_gives_exactly_the_known_answer():
    from rocm_perf.trace.load import load_trace

    answer = json.loads((DATA / "rocpd_v3_multistream.answer.json").read_text())
    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    result = analyze_critical_path(trace)
    assert result.cross_stream_known
    assert result.critical_path_ns == answer["critical_path_ns"] == 660_000
    assert result.sum_dispatch_ns == answer["sum_dispatch_ns"]
    assert [short(n) for n in result.path_names] == answer["critical_path"]
    assert {short(s.name): s.cp_ns for s in result.symbols} == answer["per_kernel_ns"]
    assert [short(s.name) for s in result.symbols[:3]] == ["produce_kernel", "consume_kernel", "reduce_kernel"]
    # side and decoy really have slack: they could be 2x faster and the program not at all.
    for s in result.symbols:
        if short(s.name) in ("side_kernel", "decoy_kernel"):
            assert s.calls_on_path == 0 and s.calls_off_path == answer["iterations"] and s.total_slack_ns > 0
    check_schedule_invariants(trace, result)
    doc = result.to_json()
    json.dumps(doc)
    assert doc["critical_path_ns"] == 660_000 and len(doc["path"]) == 9


def test_lengths_under_several_weightings_over_one_dag_equal_one_analysis_each():
    from rocm_perf.analysis.critical_path import critical_path_lengths
    from rocm_perf.trace.load import load_trace

    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    rng = np.random.default_rng(4)
    wall = (trace.end - trace.start).astype(np.float64)
    # the side stream made ten times heavier takes the path over: the weightings really differ
    side = np.array(["side" in trace.symbols[k].name for k in trace.kernel])
    columns = [wall, wall * rng.uniform(0.5, 1.5, len(trace)), np.where(side, wall * 10, wall)]
    lengths = critical_path_lengths(trace, columns)
    assert lengths == [float(analyze_critical_path(trace, weights=c).critical_path_ns) for c in columns]
    assert lengths[0] == 660_000 and lengths[2] > lengths[0]
    assert critical_path_lengths(trace, []) == []
    with pytest.raises(RocmPerfError, match="one finite, non-negative value per dispatch"):
        critical_path_lengths(trace, [wall[:-1]])


def test_multistream_fixture_without_api_trace_says_cross_stream_unknown():
    from rocm_perf.trace.load import load_trace

    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    trace.api = None
    result = analyze_critical_path(trace)
    assert not result.cross_stream_known
    assert any("cross-stream dependencies were not known" in n for n in result.notes)
    # Independent chains: the longest stream (3 x produce + side on stream 1).
    assert result.critical_path_ns == 3 * (100_000 + 30_000)


def test_gap_heuristic_is_opt_in_and_invents_the_decoy_edge():
    from rocm_perf.trace.load import load_trace

    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    trace.api = None
    assert analyze_critical_path(trace).dependency_edges.shape == (0, 2)
    guessed = analyze_critical_path(trace, gap_heuristic_ns=5_000)
    assert not guessed.cross_stream_known
    assert any("guess" in n for n in guessed.notes)
    produce = {r for r in range(len(trace)) if short(trace.symbol_name(r)) == "produce_kernel"}
    decoy = {r for r in range(len(trace)) if short(trace.symbol_name(r)) == "decoy_kernel"}
    # decoy starts 1 us after produce ends: the heuristic makes up exactly that dependency.
    assert any(a in produce and b in decoy for a, b in guessed.dependency_edges.tolist())


# ---- hand-built programs -----------------------------------------------------------------------


def test_serial_single_stream_is_the_sum_with_no_slack():
    p = HipProgramTrace()
    for k, d in (("a", 30), ("b", 50), ("a", 20)):
        p.launch(k, 1, d)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.critical_path_ns == r.sum_dispatch_ns == 100
    assert r.path.tolist() == [0, 1, 2]
    assert (r.slack == 0).all()
    assert r.earliest_start.tolist() == [0, 30, 80]
    assert weights(r) == {"a": 50, "b": 50}
    assert [s.name for s in r.symbols] == ["a", "b"]  # equal weight and total: by name
    check_schedule_invariants(trace, r)


def test_two_independent_streams_the_shorter_one_has_slack():
    p = HipProgramTrace()
    a1 = p.launch("long", 1, 100)
    b1 = p.launch("short", 2, 30)
    a2 = p.launch("long", 1, 100)
    b2 = p.launch("short", 2, 40)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.critical_path_ns == 200
    assert r.path.tolist() == [p.row_of(trace, a1), p.row_of(trace, a2)]
    assert r.slack[p.row_of(trace, b1)] == 130 and r.slack[p.row_of(trace, b2)] == 130
    assert r.latest_start[p.row_of(trace, b2)] == 160
    assert weights(r) == {"long": 200, "short": 0}
    assert r.cross_stream_known  # the API trace was there; it just ordered nothing across streams
    check_schedule_invariants(trace, r)


def test_event_edge_orders_the_waiting_stream_after_the_recorded_launch():
    p = HipProgramTrace()
    early = p.launch("early", 1, 5)
    p.record(1, 1)  # stands for `early` only: launches before the record
    producer = p.launch("producer", 1, 100)
    p.record(2, 1)
    after_record = p.launch("after_record", 1, 10)
    p.wait(2, 2)
    consumer = p.launch("consumer", 2, 50)
    p.wait(3, 1)
    third = p.launch("third", 3, 1)
    trace = p.trace()
    r = analyze_critical_path(trace)
    row = lambda i: p.row_of(trace, i)  # noqa: E731
    assert r.critical_path_ns == 155
    assert r.earliest_start[row(third)] == 5
    assert r.path.tolist() == [row(early), row(producer), row(consumer)]
    assert r.earliest_start[row(consumer)] == 105
    # after_record was launched after the record: the consumer does not wait for it.
    assert r.earliest_start[row(after_record)] == 105 and r.slack[row(after_record)] == 40
    assert (row(producer), row(consumer)) in {tuple(e) for e in r.dependency_edges.tolist()}
    check_schedule_invariants(trace, r)


def test_a_wait_sees_the_latest_record_of_its_event():
    p = HipProgramTrace()
    first = p.launch("first", 1, 10)
    p.record(7, 1)
    second = p.launch("second", 1, 100)
    p.record(7, 1)  # re-recorded: now it stands for `second`
    p.wait(2, 7)
    waiter = p.launch("waiter", 2, 5)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.earliest_start[p.row_of(trace, waiter)] == 110
    assert r.path.tolist() == [p.row_of(trace, i) for i in (first, second, waiter)]


def test_device_synchronize_orders_everything_before_it_before_everything_after():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.launch("b", 2, 30)
    p.device_sync()
    c = p.launch("c", 2, 20)
    d = p.launch("d", 3, 5)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.critical_path_ns == 120
    assert r.earliest_start[p.row_of(trace, c)] == 100
    assert r.earliest_start[p.row_of(trace, d)] == 100  # a stream that had nothing before the sync too
    assert path_kernels(trace, r) == ["a", "c"]
    without_sync = HipProgramTrace()
    without_sync.launch("a", 1, 100)
    without_sync.launch("b", 2, 30)
    without_sync.launch("c", 2, 20)
    assert analyze_critical_path(without_sync.trace()).critical_path_ns == 100
    check_schedule_invariants(trace, r)


def test_stream_synchronize_orders_only_that_stream():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.launch("b", 2, 30)
    p.stream_sync(2)
    c = p.launch("c", 3, 20)  # after b only
    p.stream_sync(1)
    d = p.launch("d", 2, 7)  # after a (and b)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.earliest_start[p.row_of(trace, c)] == 30
    assert r.earliest_start[p.row_of(trace, d)] == 100
    assert r.critical_path_ns == 107 and path_kernels(trace, r) == ["a", "d"]
    check_schedule_invariants(trace, r)


def test_event_synchronize_orders_the_recorded_launch_before_later_launches():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.record(3, 1)
    p.launch("late", 1, 1000)
    p.event_sync(3)
    c = p.launch("c", 2, 10)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.earliest_start[p.row_of(trace, c)] == 100  # waited for `a`, not for `late`


def test_blocking_memcpy_is_a_null_stream_synchronization():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.memcpy()
    b = p.launch("b", 2, 10)
    trace = p.trace()
    legacy = analyze_critical_path(trace)
    assert legacy.earliest_start[p.row_of(trace, b)] == 100
    per_thread = analyze_critical_path(trace, null_stream="per-thread")
    assert per_thread.earliest_start[p.row_of(trace, b)] == 0


def test_legacy_null_stream_waits_for_and_is_waited_for_by_other_streams():
    p = HipProgramTrace()
    a = p.launch("a", 1, 100)
    n = p.launch("on_null", 0, 10)
    b = p.launch("b", 2, 20)
    trace = p.trace()
    legacy = analyze_critical_path(trace, null_stream="legacy")
    assert legacy.critical_path_ns == 130
    assert legacy.path.tolist() == [p.row_of(trace, i) for i in (a, n, b)]
    assert any("legacy" in note for note in legacy.notes)
    per_thread = analyze_critical_path(trace, null_stream="per-thread")
    assert per_thread.critical_path_ns == 100
    assert per_thread.earliest_start[p.row_of(trace, n)] == 0
    check_schedule_invariants(trace, legacy)
    check_schedule_invariants(trace, per_thread)


def test_event_recorded_on_the_legacy_null_stream_covers_every_stream():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.launch("b", 2, 10)
    p.record(1, 0)
    p.wait(3, 1)
    c = p.launch("c", 3, 5)
    trace = p.trace()
    assert analyze_critical_path(trace).earliest_start[p.row_of(trace, c)] == 100
    assert analyze_critical_path(trace, null_stream="per-thread").earliest_start[p.row_of(trace, c)] == 0


def test_critical_path_need_not_be_the_longest_stream():
    p = HipProgramTrace()
    a1 = p.launch("a1", 1, 60)
    p.record(1, 1)
    p.launch("a2", 1, 10)  # stream 1 totals 70, stream 2 totals 60
    p.wait(2, 1)
    b1 = p.launch("b1", 2, 60)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.critical_path_ns == 120 > 70
    assert r.path.tolist() == [p.row_of(trace, a1), p.row_of(trace, b1)]
    assert weights(r) == {"a1": 60, "b1": 60, "a2": 0}
    assert r.symbols[-1].name == "a2" and r.symbols[-1].total_slack_ns == 50


@pytest.mark.parametrize("first_stream", [1, 2])
def test_equal_length_ties_choose_the_lowest_stream_whatever_the_launch_order(first_stream):
    p = HipProgramTrace()
    other = 3 - first_stream
    p.launch(f"s{first_stream}_x", first_stream, 50, start=0)
    p.launch(f"s{other}_x", other, 50, start=0)
    p.launch(f"s{first_stream}_y", first_stream, 50, start=50)
    p.launch(f"s{other}_y", other, 50, start=50)
    trace = p.trace()
    runs = [analyze_critical_path(trace) for _ in range(3)]
    assert all(r.critical_path_ns == 100 for r in runs)
    assert all(path_kernels(trace, r) == ["s1_x", "s1_y"] for r in runs)


def test_tie_into_a_join_picks_the_lower_stream_predecessor():
    p = HipProgramTrace()
    p.launch("on2", 2, 40)
    p.launch("on1", 1, 40)
    p.device_sync()
    p.launch("after", 3, 10)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert path_kernels(trace, r) == ["on1", "after"]


def test_trace_without_streams_uses_queues_then_agents():
    symbols = [KernelSymbol("k", "k")]
    by_queue = Trace.from_rows(start=[0, 0, 20], end=[10, 30, 25], kernel=[0, 0, 0], symbols=symbols, queue=[1, 2, 1])
    r = analyze_critical_path(by_queue)
    assert r.critical_path_ns == 30 and r.n_chains == 2
    serial = Trace.from_rows(start=[0, 0, 20], end=[10, 30, 25], kernel=[0, 0, 0], symbols=symbols)
    r = analyze_critical_path(serial)
    assert r.critical_path_ns == 45 and any("neither a stream nor a queue" in n for n in r.notes)


def test_empty_trace_and_bad_options():
    empty = Trace.from_rows(start=[], end=[], kernel=[], symbols=[])
    r = analyze_critical_path(empty)
    assert r.critical_path_ns == 0 and r.symbols == [] and len(r.path) == 0
    assert r.to_json()["path"] == []
    p = HipProgramTrace()
    p.launch("a", 1, 10)
    with pytest.raises(RocmPerfError, match="null stream mode"):
        analyze_critical_path(p.trace(), null_stream="fancy")
    with pytest.raises(RocmPerfError, match="gap heuristic"):
        analyze_critical_path(p.trace(), gap_heuristic_ns=-1)


def test_segments_collapse_long_runs_but_keep_per_dispatch_slack():
    p = HipProgramTrace()
    for i in range(50):
        p.launch("main", 1, 10)
    p.record(1, 1)
    for i in range(50):
        p.launch("side", 2, 3)
    p.wait(2, 1)
    tail = p.launch("tail", 2, 10)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.n_graph_nodes <= 4  # two runs per stream at most, not 101 nodes
    assert r.critical_path_ns == 510
    side_rows = [p.row_of(trace, 50 + i) for i in range(50)]
    assert np.all(r.slack[side_rows] == 500 - 150)
    assert r.earliest_start[side_rows].tolist() == [3 * i for i in range(50)]
    assert r.earliest_start[p.row_of(trace, tail)] == 500


def test_a_dispatch_without_launch_call_keeps_its_place_in_its_stream():
    p = HipProgramTrace()
    p.launch("a", 1, 10)
    untraced = p.launch_untraced("b", 1, 100)  # e.g. launched through an API the trace missed
    p.record(1, 1)
    p.wait(2, 1)
    c = p.launch("c", 2, 5)
    trace = p.trace()
    r = analyze_critical_path(trace)
    assert r.earliest_start[p.row_of(trace, untraced)] == 10
    assert r.earliest_start[p.row_of(trace, c)] == 110
    assert any("no launch call" in n for n in r.notes)


def test_an_event_waited_on_its_own_stream_adds_nothing():
    p = HipProgramTrace()
    p.launch("a", 1, 10)
    p.record(1, 1)
    p.wait(1, 1)
    p.launch("b", 1, 10)
    r = analyze_critical_path(p.trace())
    assert r.critical_path_ns == 20 and r.n_graph_nodes == 1 and len(r.dependency_edges) == 0


def test_an_api_trace_without_event_arguments_does_not_claim_to_know_cross_stream_order():
    p = HipProgramTrace()
    p.launch("a", 1, 100)
    p.record(1, 1)
    p.wait(2, 1)
    p.launch("b", 2, 10)
    trace = p.trace()
    ordering = np.array([trace.api.name_of(i) != "hipLaunchKernel" for i in range(len(trace.api))])
    trace.api.stream[ordering] = UNKNOWN  # as in a CSV API trace: names and times, no arguments
    trace.api.event[ordering] = UNKNOWN
    r = analyze_critical_path(trace)
    assert not r.cross_stream_known
    assert any("arguments of ordering calls are missing" in n for n in r.notes)
    assert r.critical_path_ns == 100


def test_weights_in_place_of_durations_choose_the_path_in_their_own_units():
    # Wall clock: stream 1 (2 x 100) is longest. In CPU time stream 1 was mostly descheduled
    # (10 + 10) and stream 2 really worked (30 + 40): the weighted path is stream 2's.
    p = HipProgramTrace()
    a1 = p.launch("long", 1, 100)
    b1 = p.launch("short", 2, 30)
    a2 = p.launch("long", 1, 100)
    b2 = p.launch("short", 2, 40)
    trace = p.trace()
    cpu = np.zeros(len(trace))
    for launch, ns in ((a1, 10), (a2, 10), (b1, 30), (b2, 40)):
        cpu[p.row_of(trace, launch)] = ns
    r = analyze_critical_path(trace, weights=cpu)
    assert r.critical_path_ns == 70 and r.sum_dispatch_ns == 90
    assert r.path.tolist() == [p.row_of(trace, b1), p.row_of(trace, b2)]
    assert weights(r) == {"short": 70, "long": 0} and r.slack[p.row_of(trace, a1)] == 50
    assert r.span_ns == analyze_critical_path(trace).span_ns  # the wall-clock span is the trace's
    for bad in (cpu[:-1], np.where(np.arange(len(cpu)) == 0, np.nan, cpu), -cpu):
        with pytest.raises(RocmPerfError, match="one finite, non-negative value per dispatch"):
            analyze_critical_path(trace, weights=bad)
