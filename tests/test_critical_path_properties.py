"""Property tests: random single-threaded HIP programs against a naive node-per-dispatch DAG.

The reference below re-derives the ordering rules directly (a node per dispatch, an edge for
every dependency, no segments, no joins) and computes earliest/latest start by brute force over a
networkx DAG. The analysis must agree with it on every dispatch, and obey the invariants the
issue names: path >= longest stream chain, <= sum of dispatch time, slack >= 0, zero on the path.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from hip_program_trace import HipProgramTrace
from hypothesis import given, settings
from hypothesis import strategies as st

from rocm_perf.analysis.critical_path import analyze_critical_path

STREAMS = st.integers(min_value=0, max_value=3)  # 0 is the null stream
EVENTS = st.integers(min_value=0, max_value=2)
OPS = st.one_of(
    st.tuples(st.just("launch"), STREAMS, st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("record"), EVENTS, STREAMS),
    st.tuples(st.just("wait"), STREAMS, EVENTS),
    st.tuples(st.just("device_sync")),
    st.tuples(st.just("stream_sync"), STREAMS),
    st.tuples(st.just("event_sync"), EVENTS),
)
PROGRAMS = st.lists(OPS, min_size=1, max_size=40).filter(lambda ops: any(op[0] == "launch" for op in ops))


def reference_graph(ops, legacy: bool) -> tuple[nx.DiGraph, list[int], list[int]]:
    """Node per launch (in launch order), every dependency an edge; also durations and streams."""
    g = nx.DiGraph()
    durations, streams = [], []
    last: dict[int, int] = {}  # stream -> last launch on it
    pending: dict[int, set[int]] = {}  # stream -> launches its next launch must wait for
    recorded: dict[int, set[int]] = {}
    host_waited: set[int] = set()  # launches the host has seen finish

    def blocking_lasts() -> set[int]:
        return set(last.values())

    for op in ops:
        kind = op[0]
        if kind == "launch":
            _, s, d = op
            v = len(durations)
            durations.append(d)
            streams.append(s)
            g.add_node(v)
            deps = set(host_waited) | pending.pop(s, set())
            if s in last:
                deps.add(last[s])
            if legacy and s == 0:
                deps |= blocking_lasts()
            if legacy and s != 0 and 0 in last:
                deps.add(last[0])
            g.add_edges_from((u, v) for u in deps if u != v)
            last[s] = v
        elif kind == "record":
            _, e, s = op
            if legacy and s == 0:
                recorded[e] = blocking_lasts()
            else:
                recorded[e] = {last[s]} if s in last else set()
        elif kind == "wait":
            _, s, e = op
            pending.setdefault(s, set()).update(recorded.get(e, set()))
        elif kind == "device_sync":
            host_waited |= blocking_lasts()
        elif kind == "stream_sync":
            s = op[1]
            if legacy and s == 0:
                host_waited |= blocking_lasts()
            elif s in last:
                host_waited.add(last[s])
        elif kind == "event_sync":
            host_waited |= recorded.get(op[1], set())
    return g, durations, streams


def reference_schedule(g: nx.DiGraph, durations: list[int]) -> tuple[int, list[int], list[int]]:
    earliest = [0] * len(durations)
    for v in nx.topological_sort(g):
        earliest[v] = max((earliest[u] + durations[u] for u in g.pred[v]), default=0)
    length = max(e + d for e, d in zip(earliest, durations))
    latest = [0] * len(durations)
    for v in reversed(list(nx.topological_sort(g))):
        latest[v] = min((latest[w] for w in g.succ[v]), default=length) - durations[v]
    return length, earliest, latest


def build(ops) -> tuple[HipProgramTrace, list[int]]:
    p = HipProgramTrace()
    launches = []
    for op in ops:
        kind = op[0]
        if kind == "launch":
            launches.append(p.launch(f"k{op[1]}_{op[2] % 3}", op[1], op[2]))
        elif kind == "record":
            p.record(op[1], op[2])
        elif kind == "wait":
            p.wait(op[1], op[2])
        elif kind == "device_sync":
            p.device_sync()
        elif kind == "stream_sync":
            p.stream_sync(op[1])
        else:
            p.event_sync(op[1])
    return p, launches


@settings(max_examples=200, deadline=None)
@given(PROGRAMS, st.sampled_from(["legacy", "per-thread"]))
def test_analysis_matches_the_naive_dag_on_every_dispatch(ops, null_stream):
    p, launches = build(ops)
    trace = p.trace()
    result = analyze_critical_path(trace, null_stream=null_stream)
    g, durations, streams = reference_graph(ops, legacy=null_stream == "legacy")
    length, earliest, latest = reference_schedule(g, durations)
    rows = [p.row_of(trace, i) for i in launches]
    assert result.critical_path_ns == length
    assert result.earliest_start[rows].tolist() == earliest
    assert result.latest_start[rows].tolist() == latest

    duration = trace.end - trace.start
    longest_chain = max(sum(d for d, s in zip(durations, streams) if s == stream) for stream in set(streams))
    assert longest_chain <= result.critical_path_ns <= result.sum_dispatch_ns
    assert (result.slack >= 0).all()
    assert (result.slack[result.path] == 0).all()
    assert int(duration[result.path].sum()) == result.critical_path_ns
    # The path is a real path of the reference DAG, in order.
    launch_of_row = {r: i for i, r in enumerate(rows)}
    path = [launch_of_row[r] for r in result.path.tolist()]
    assert all(nx.has_path(g, a, b) for a, b in zip(path, path[1:]))
    # Per-symbol figures add up.
    assert sum(s.cp_ns for s in result.symbols) == result.critical_path_ns
    assert sum(s.calls_on_path + s.calls_off_path for s in result.symbols) == len(trace)
    assert sum(s.total_slack_ns for s in result.symbols) == int(result.slack.sum())


@settings(max_examples=100, deadline=None)
@given(PROGRAMS)
def test_without_an_api_trace_the_path_is_the_longest_stream(ops):
    p, launches = build(ops)
    trace = p.trace(with_api=False)
    result = analyze_critical_path(trace)
    per_stream: dict[int, int] = {}
    for s, d in zip(trace.stream.tolist(), (trace.end - trace.start).tolist()):
        per_stream[s] = per_stream.get(s, 0) + d
    assert result.critical_path_ns == max(per_stream.values())
    assert not result.cross_stream_known
    assert (result.slack >= 0).all() and (result.slack[result.path] == 0).all()


@settings(max_examples=50, deadline=None)
@given(PROGRAMS)
def test_the_answer_is_deterministic(ops):
    p, _ = build(ops)
    a = analyze_critical_path(p.trace())
    b = analyze_critical_path(p.trace())
    assert a.critical_path_ns == b.critical_path_ns
    assert np.array_equal(a.path, b.path) and np.array_equal(a.slack, b.slack)
