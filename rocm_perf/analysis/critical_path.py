"""Critical path, slack and per-kernel weight over the dispatch DAG.

The DAG (dag.py) has a node per dispatch; here runs of same-chain dispatches that no cross-chain
edge enters or leaves in the middle collapse into one *segment* node, weighted by the run's total
duration. A path that enters a segment must run through all of it, so the longest path over
segments is the longest path over dispatches, and per-dispatch earliest/latest start follow from
the segment's by prefix sums. The segment graph is a networkx DiGraph.

Times in the result are those of the ideal schedule the DAG allows (every dispatch starts as soon
as its predecessors end, no launch overhead, unlimited concurrency), in ns from its start:
`earliest_start`, `latest_start` (latest start that does not lengthen the critical path) and
`slack = latest_start - earliest_start`. A kernel with slack can get faster and the program not.

Ties between equally long paths are broken deterministically: at every step (and for the path's
end) prefer the lowest chain (streams by id), then the earliest dispatch row.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from rocm_perf.analysis.dag import DispatchDag, build_dispatch_dag
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace


@dataclass
class SymbolWeight:
    """One kernel symbol's weight on the critical path."""

    name: str  # display name
    cp_ns: int  # duration of its dispatches on the critical path
    cp_share: float  # cp_ns / critical_path_ns
    calls_on_path: int
    calls_off_path: int
    total_ns: int  # duration of all its dispatches
    total_slack_ns: int  # sum of its dispatches' slack

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cp_ns": self.cp_ns,
            "cp_share": self.cp_share,
            "calls_on_path": self.calls_on_path,
            "calls_off_path": self.calls_off_path,
            "total_ns": self.total_ns,
            "total_slack_ns": self.total_slack_ns,
        }


@dataclass
class CriticalPathResult:
    """The critical path of a trace's dispatch DAG, per-dispatch slack and per-symbol weights.

    Per-dispatch arrays are indexed by the trace's dispatch rows. `path` lists rows in path order.
    `dependency_edges` are (before, after) row pairs of the cross-chain orderings (program order
    within a stream is not listed; a barrier's edges are listed from each row it waits for to
    each row it releases). `cross_stream_known` is False when there was no usable API trace.
    """

    critical_path_ns: int
    path: np.ndarray
    sum_dispatch_ns: int
    span_ns: int
    earliest_start: np.ndarray
    latest_start: np.ndarray
    slack: np.ndarray
    cross_stream_known: bool
    notes: list[str]
    symbols: list[SymbolWeight]
    null_stream: str = "legacy"
    gap_heuristic_ns: int | None = None
    dependency_edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    path_names: list[str] = field(default_factory=list)
    n_chains: int = 0
    n_graph_nodes: int = 0

    @property
    def path_over_span(self) -> float:
        """How much of the trace's wall time the critical path explains (1.0 = all of it)."""
        return self.critical_path_ns / self.span_ns if self.span_ns else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "critical_path_ns": self.critical_path_ns,
            "sum_dispatch_ns": self.sum_dispatch_ns,
            "span_ns": self.span_ns,
            "path_over_span": self.path_over_span,
            "cross_stream_known": self.cross_stream_known,
            "null_stream": self.null_stream,
            "gap_heuristic_ns": self.gap_heuristic_ns,
            "notes": list(self.notes),
            "symbols": [s.to_json() for s in self.symbols],
            "path": [{"row": int(r), "kernel": name} for r, name in zip(self.path.tolist(), self.path_names)],
            "streams": self.n_chains,
            "dispatches": int(len(self.slack)),
        }


def analyze_critical_path(
    trace: Trace, *, null_stream: str = "legacy", gap_heuristic_ns: int | None = None,
    weights: np.ndarray | None = None,
) -> CriticalPathResult:
    """The critical path of a trace's dispatch DAG (see the module docstring and dag.py).

    `weights` (one non-negative value per dispatch row) stand in for `end - start` as each
    dispatch's cost: the path is then the longest in those units, and so are the path length,
    schedule, slack and symbol weights of the result (`span_ns` stays the wall-clock span). The
    host backend's per-dispatch CPU time is such a cost: a loaded machine does not stretch it.
    The DAG's edges still come from the trace's times and API calls."""
    dag = build_dispatch_dag(trace, null_stream=null_stream, gap_heuristic_ns=gap_heuristic_ns)
    if weights is None:
        duration = (trace.end - trace.start).astype(np.int64)
        if (duration < 0).any():
            bad = int(np.flatnonzero(duration < 0)[0])
            raise RocmPerfError(f"dispatch row {bad} ends before it starts: the trace's timestamps are inconsistent")
    else:
        values = np.asarray(weights, dtype=np.float64)
        if values.shape != (len(trace),) or not np.isfinite(values).all() or (values < 0).any():
            raise RocmPerfError("critical-path weights must be one finite, non-negative value per dispatch")
        duration = np.rint(values).astype(np.int64)
    schedule = _schedule(dag, duration)
    symbols = _symbol_weights(trace, duration, schedule.on_path, schedule.slack, schedule.length)
    n = len(trace)
    names = [s.display_name or s.name for s in trace.symbols]
    return CriticalPathResult(
        critical_path_ns=int(schedule.length),
        path=schedule.path,
        sum_dispatch_ns=int(duration.sum()),
        span_ns=int(trace.end.max() - trace.start.min()) if n else 0,
        earliest_start=schedule.earliest,
        latest_start=schedule.latest,
        slack=schedule.slack,
        cross_stream_known=dag.cross_stream_known,
        notes=list(dag.notes),
        symbols=symbols,
        null_stream=null_stream,
        gap_heuristic_ns=gap_heuristic_ns,
        dependency_edges=_dispatch_edges(dag),
        path_names=[names[k] for k in trace.kernel[schedule.path].tolist()],
        n_chains=len(dag.chain_labels),
        n_graph_nodes=schedule.graph_nodes,
    )


def critical_path_lengths(trace: Trace, weight_columns: list[np.ndarray], *, null_stream: str = "legacy") -> list[float]:
    """The critical path's length under each of several per-dispatch weight columns (as
    analyze_critical_path's `weights`), over one dispatch DAG built once: the loop weighs each
    round's trace by a dozen clock paths, and building the DAG is most of the cost."""
    if not weight_columns:
        return []
    dag = build_dispatch_dag(trace, null_stream=null_stream)
    lengths = []
    for weights in weight_columns:
        values = np.asarray(weights, dtype=np.float64)
        if values.shape != (len(trace),) or not np.isfinite(values).all() or (values < 0).any():
            raise RocmPerfError("critical-path weights must be one finite, non-negative value per dispatch")
        lengths.append(float(_schedule(dag, np.rint(values).astype(np.int64)).length))
    return lengths


@dataclass
class _Schedule:
    length: int
    path: np.ndarray
    on_path: np.ndarray
    earliest: np.ndarray
    latest: np.ndarray
    slack: np.ndarray
    graph_nodes: int


@dataclass
class _Segments:
    """Runs of consecutive same-chain dispatches (positions in dag.order)."""

    first: np.ndarray  # position in dag.order of each segment's first dispatch
    last: np.ndarray  # ... and of its last
    of_position: np.ndarray  # segment of each position in dag.order
    of_row: np.ndarray  # segment of each dispatch row
    weight: np.ndarray  # summed duration
    chain: np.ndarray


def _segments(dag: DispatchDag, duration: np.ndarray) -> _Segments:
    """Cut each chain before every dispatch a cross edge enters and after every one it leaves."""
    n = dag.n_dispatches
    order = dag.order
    entered = np.zeros(n, dtype=bool)
    left = np.zeros(n, dtype=bool)
    entered[dag.dst[dag.dst < n]] = True
    left[dag.src[dag.src < n]] = True
    starts = np.ones(n, dtype=bool)
    if n > 1:
        chain_in_order = dag.chain[order]
        starts[1:] = (chain_in_order[1:] != chain_in_order[:-1]) | entered[order[1:]] | left[order[:-1]]
    of_position = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.append(first[1:] - 1, n - 1) if n else first
    of_row = np.empty(n, dtype=np.int64)
    of_row[order] = of_position
    weight = np.add.reduceat(duration[order], first) if n else np.zeros(0, dtype=np.int64)
    return _Segments(first, last, of_position, of_row, weight.astype(np.int64), dag.chain[order[first]] if n else first)


@contextmanager
def _no_cyclic_gc():
    """Building a graph of a million dicts triggers the cyclic collector again and again, each pass
    walking every object so far; the graph holds no cycles worth collecting, so pause it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _schedule(dag: DispatchDag, duration: np.ndarray) -> _Schedule:
    """Earliest/latest start of every dispatch and the critical path, over the segment graph."""
    n = dag.n_dispatches
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return _Schedule(0, z, np.zeros(0, dtype=bool), z, z.copy(), z.copy(), 0)
    seg = _segments(dag, duration)
    n_seg = len(seg.first)
    n_nodes = n_seg + dag.n_joins

    def node(ids: np.ndarray) -> np.ndarray:
        return np.where(ids < n, seg.of_row[np.minimum(ids, n - 1)], n_seg + (ids - n))

    same_chain_next = np.flatnonzero(seg.chain[1:] == seg.chain[:-1])
    src = np.concatenate([same_chain_next, node(dag.src)])
    dst = np.concatenate([same_chain_next + 1, node(dag.dst)])
    with _no_cyclic_gc():
        graph = nx.DiGraph()
        graph.add_edges_from(zip(src.tolist(), dst.tolist()))
        linked = np.zeros(n_nodes, dtype=bool)
        linked[src] = True
        linked[dst] = True
        graph.add_nodes_from(np.flatnonzero(~linked).tolist())  # nodes no edge touches (whole independent chains)
        try:
            topo = list(nx.topological_sort(graph))
        except nx.NetworkXUnfeasible as e:
            raise RocmPerfError(
                "the trace's dependencies form a cycle (API call times contradict dispatch times); "
                "try --null-stream per-thread or check the trace"
            ) from e

    weight = seg.weight.tolist() + [0] * dag.n_joins
    # Tie rank: lower chain first, then earlier row; a join ranks as the predecessor it waits on longest.
    last_rows = dag.order[seg.last]
    rank: list[int] = (seg.chain * (n + 1) + last_rows).tolist() + [n_nodes * (n + 1)] * dag.n_joins
    finish = [0] * n_nodes
    best = [-1] * n_nodes
    pred = dict(graph.reverse(copy=False).adjacency())  # plain dicts: much cheaper than graph.pred[v]
    for v in topo:
        b = -1
        bf = 0
        for u in pred[v]:
            f = finish[u]
            if b < 0 or f > bf or (f == bf and rank[u] < rank[b]):
                b, bf = u, f
        best[v] = b
        finish[v] = bf + weight[v]
        if v >= n_seg and b >= 0:
            rank[v] = rank[b]
    length = max(finish[:n_seg])
    latest_finish = [length] * n_nodes
    succ = dict(graph.adjacency())
    for v in reversed(topo):
        lf = length
        for w in succ[v]:
            ls = latest_finish[w] - weight[w]
            if ls < lf:
                lf = ls
        latest_finish[v] = lf
    del graph, pred, succ, topo  # the per-dispatch arrays below are the big ones: free the graph first

    end = min((s for s in range(n_seg) if finish[s] == length), key=lambda s: rank[s])
    path_segments = []
    v = end
    while v >= 0:
        if v < n_seg:
            path_segments.append(v)
        v = best[v]
    path_segments.reverse()
    path = np.concatenate([dag.order[seg.first[s] : seg.last[s] + 1] for s in path_segments])

    # Per dispatch, from its segment: earliest start = segment start + what runs before it there.
    seg_finish = np.asarray(finish[:n_seg], dtype=np.int64)
    seg_latest_finish = np.asarray(latest_finish[:n_seg], dtype=np.int64)
    in_order = duration[dag.order]
    done = np.cumsum(in_order)
    before_in_segment = done - in_order - (done[seg.first] - in_order[seg.first])[seg.of_position]
    after_in_segment = done[seg.last][seg.of_position] - done
    earliest = np.empty(n, dtype=np.int64)
    latest = np.empty(n, dtype=np.int64)
    earliest[dag.order] = (seg_finish - seg.weight)[seg.of_position] + before_in_segment
    latest[dag.order] = seg_latest_finish[seg.of_position] - after_in_segment - in_order
    on_path = np.zeros(n, dtype=bool)
    on_path[path] = True
    return _Schedule(int(length), path.astype(np.int64), on_path, earliest, latest, latest - earliest, n_nodes)


def _symbol_weights(
    trace: Trace, duration: np.ndarray, on_path: np.ndarray, slack: np.ndarray, length: int
) -> list[SymbolWeight]:
    """Per display name: critical-path time and share, calls on/off the path, total time and slack."""
    if not len(trace):
        return []
    names = [s.display_name or s.name for s in trace.symbols]
    distinct, group_of_symbol = np.unique(np.asarray(names, dtype=object).astype(str), return_inverse=True)
    group = group_of_symbol.reshape(-1)[trace.kernel]
    k = len(distinct)
    cp_ns = np.bincount(group, weights=np.where(on_path, duration, 0), minlength=k)
    total_ns = np.bincount(group, weights=duration, minlength=k)
    on = np.bincount(group, weights=on_path, minlength=k)
    calls = np.bincount(group, minlength=k)
    total_slack = np.bincount(group, weights=slack, minlength=k)
    present = np.flatnonzero(calls > 0)
    weights = [
        SymbolWeight(
            name=str(distinct[g]),
            cp_ns=int(round(cp_ns[g])),
            cp_share=float(cp_ns[g] / length) if length else 0.0,
            calls_on_path=int(on[g]),
            calls_off_path=int(calls[g] - on[g]),
            total_ns=int(round(total_ns[g])),
            total_slack_ns=int(round(total_slack[g])),
        )
        for g in present.tolist()
    ]
    weights.sort(key=lambda s: (-s.cp_ns, -s.total_ns, s.name))
    return weights


def _dispatch_edges(dag: DispatchDag) -> np.ndarray:
    """Cross-chain edges between dispatch rows, with each join expanded to (waited-for, released) pairs."""
    n = dag.n_dispatches
    direct = (dag.src < n) & (dag.dst < n)
    pairs = [np.stack([dag.src[direct], dag.dst[direct]], axis=1)]
    into_join = (dag.src < n) & (dag.dst >= n)
    out_of_join = (dag.src >= n) & (dag.dst < n)
    if into_join.any() and out_of_join.any():
        waited = dag.src[into_join][np.argsort(dag.dst[into_join], kind="stable")]
        waited_join = np.sort(dag.dst[into_join], kind="stable")
        released_join = dag.src[out_of_join]
        released = dag.dst[out_of_join]
        lo = np.searchsorted(waited_join, released_join, side="left")
        hi = np.searchsorted(waited_join, released_join, side="right")
        counts = hi - lo
        if counts.sum():
            before = np.concatenate([waited[a:b] for a, b in zip(lo.tolist(), hi.tolist()) if b > a])
            after = np.repeat(released, counts)
            pairs.append(np.stack([before, after], axis=1))
    both = np.concatenate(pairs)
    if not len(both):
        return np.zeros((0, 2), dtype=np.int64)
    packed = np.unique(both[:, 0] * n + both[:, 1])
    return np.stack([packed // n, packed % n], axis=1)
