"""Critical path, slack and per-kernel weight over the dispatch DAG.

The DAG (dag.py) has a node per dispatch; here runs of same-chain dispatches that no cross-chain
edge enters or leaves in the middle collapse into one *segment* node, weighted by the run's total
duration. A path that enters a segment must run through all of it, so the longest path over
segments is the longest path over dispatches, and per-dispatch earliest/latest start follow from
the segment's by prefix sums. The segment graph is a few numpy arrays (CSR), walked once forward and once
backward in a topological order found by sorting (the DAG's edges all point forward in time).

Times in the result are those of the ideal schedule the DAG allows (every dispatch starts as soon
as its predecessors end, no launch overhead, unlimited concurrency), in ns from its start:
`earliest_start`, `latest_start` (latest start that does not lengthen the critical path) and
`slack = latest_start - earliest_start`. A kernel with slack can get faster and the program not.

Ties between equally long paths are broken deterministically: at every step (and for the path's
end) prefer the lowest chain (streams by id), then the earliest dispatch row.
"""

from __future__ import annotations

import gc
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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
    weights: np.ndarray | None = None, with_edges: bool = True, dag: DispatchDag | None = None,
) -> CriticalPathResult:
    """The critical path of a trace's dispatch DAG (see the module docstring and dag.py).

    `weights` (one non-negative value per dispatch row) stand in for `end - start` as each
    dispatch's cost: the path is then the longest in those units, and so are the path length,
    schedule, slack and symbol weights of the result (`span_ns` stays the wall-clock span). The
    host backend's per-dispatch CPU time is such a cost: a loaded machine does not stretch it.
    The DAG's edges still come from the trace's times and API calls.
    `with_edges=False` leaves `dependency_edges` empty (expanding every barrier into its row pairs
    costs seconds at 10M dispatches, and only the Perfetto export draws them); `dag` is the
    trace's DispatchDag when the caller has built it already (same null_stream and gap heuristic)."""
    if dag is None:
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
        dependency_edges=_dispatch_edges(dag) if with_edges else np.zeros((0, 2), dtype=np.int64),
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
    graph = _segment_graph(dag) if len(trace) else None
    lengths = []
    for weights in weight_columns:
        values = np.asarray(weights, dtype=np.float64)
        if values.shape != (len(trace),) or not np.isfinite(values).all() or (values < 0).any():
            raise RocmPerfError("critical-path weights must be one finite, non-negative value per dispatch")
        lengths.append(float(_schedule(dag, np.rint(values).astype(np.int64), graph).length))
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
    """The loops below make millions of ints; none is in a cycle, so the cyclic collector, which
    would walk every object made so far again and again, is paused while they run."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _SegmentGraph:
    """The collapsed graph, as arrays: segments 0..n_seg-1, then the DAG's joins; a topological
    order; and the predecessors and successors of each node in CSR form (`pred[pred_at[v]:pred_at[v+1]]`).
    Predecessors keep the order in which their edges are listed (chain edges, then the DAG's edges),
    which the tie-break among equally long predecessors depends on."""

    seg: _Segments
    n_seg: int
    n_nodes: int
    topo: np.ndarray
    pred_at: np.ndarray
    pred: np.ndarray
    succ_at: np.ndarray
    succ: np.ndarray


def _segment_graph(dag: DispatchDag) -> _SegmentGraph:
    n = dag.n_dispatches
    seg = _segments(dag, np.zeros(n, dtype=np.int64))
    n_seg = len(seg.first)
    n_nodes = n_seg + dag.n_joins

    def node(ids: np.ndarray) -> np.ndarray:
        return np.where(ids < n, seg.of_row[np.minimum(ids, n - 1)], n_seg + (ids - n))

    same_chain_next = np.flatnonzero(seg.chain[1:] == seg.chain[:-1])
    src = np.concatenate([same_chain_next, node(dag.src)])
    dst = np.concatenate([same_chain_next + 1, node(dag.dst)])
    by_dst = np.argsort(dst, kind="stable")
    pred_at = np.searchsorted(dst[by_dst], np.arange(n_nodes + 1))
    by_src = np.argsort(src, kind="stable")
    succ_at = np.searchsorted(src[by_src], np.arange(n_nodes + 1))
    return _SegmentGraph(seg, n_seg, n_nodes, _topological_order(dag, seg, src, dst, n_nodes), pred_at,
                         src[by_dst], succ_at, dst[by_src])


def _topological_order(dag: DispatchDag, seg: _Segments, src: np.ndarray, dst: np.ndarray, n_nodes: int) -> np.ndarray:
    """Nodes sorted by (time, joins first, position): a segment's time is its first dispatch's launch,
    a join's its DispatchDag.join_time. Every edge the API rules make goes forward in that order; when
    one does not (gap-heuristic guesses), Kahn's algorithm orders the graph instead, or finds its cycle."""
    n_seg = len(seg.first)
    first_rows = dag.order[seg.first]
    if len(dag.launch) == dag.n_dispatches and len(dag.join_time) == dag.n_joins:
        time = np.concatenate([dag.launch[first_rows], dag.join_time])
        # (time, joins before segments, node): nodes are numbered segments first, each group in the
        # tie order (segments by position, joins by id), so one stable sort of 2 * time + kind does it
        low, high = (int(time.min()), int(time.max())) if len(time) else (0, 0)
        if high - low < (1 << 61):
            key = (time - low) * 2
            key[:n_seg] += 1
            topo = np.argsort(key, kind="stable")
        else:
            kind = np.concatenate([np.ones(n_seg, dtype=np.int8), np.zeros(dag.n_joins, dtype=np.int8)])
            topo = np.lexsort((np.arange(n_nodes), kind, time))
        rank = np.empty(n_nodes, dtype=np.int64)
        rank[topo] = np.arange(n_nodes)
        if bool((rank[src] < rank[dst]).all()):
            return topo
    return _kahn(src, dst, n_nodes)


def _kahn(src: np.ndarray, dst: np.ndarray, n_nodes: int) -> np.ndarray:
    """A topological order by Kahn's algorithm (lowest node first among the ready ones), or a RocmPerfError."""
    indegree = np.bincount(dst, minlength=n_nodes).tolist()
    by_src = np.argsort(src, kind="stable")
    at = np.searchsorted(src[by_src], np.arange(n_nodes + 1)).tolist()
    succ = dst[by_src].tolist()
    ready = [v for v in range(n_nodes) if indegree[v] == 0]
    ready.reverse()
    order = []
    while ready:
        v = ready.pop()
        order.append(v)
        for k in range(at[v], at[v + 1]):
            w = succ[k]
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    if len(order) < n_nodes:
        raise RocmPerfError(
            "the trace's dependencies form a cycle (API call times contradict dispatch times); "
            "try --null-stream per-thread or check the trace"
        )
    return np.asarray(order, dtype=np.int64)


def _schedule(dag: DispatchDag, duration: np.ndarray, graph: _SegmentGraph | None = None) -> _Schedule:
    """Earliest/latest start of every dispatch and the critical path, over the segment graph.

    Most segments of an event-dense trace have their chain predecessor as their only predecessor
    (or their chain successor as their only successor): their finish (latest finish) follows from
    the nearest segment up (down) the chain that has others, by a prefix sum. The Python loops
    visit only those other segments and the joins; numpy does the rest."""
    n = dag.n_dispatches
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return _Schedule(0, z, np.zeros(0, dtype=bool), z, z.copy(), z.copy(), 0)
    g = graph if graph is not None else _segment_graph(dag)
    seg, n_seg, n_nodes = g.seg, g.n_seg, g.n_nodes
    seg_weight = np.add.reduceat(duration[dag.order], seg.first).astype(np.int64)
    weight_all = np.concatenate([seg_weight, np.zeros(dag.n_joins, dtype=np.int64)])
    # Tie rank: lower chain first, then earlier row; a join ranks as the predecessor it waits on longest.
    rank_all = np.concatenate([seg.chain * (n + 1) + dag.order[seg.last],
                               np.full(dag.n_joins, n_nodes * (n + 1), dtype=np.int64)])
    ids = np.arange(n_nodes)
    same_chain_prev = np.zeros(n_nodes, dtype=bool)
    same_chain_prev[1:n_seg] = seg.chain[1:] == seg.chain[:-1]
    same_chain_next = np.zeros(n_nodes, dtype=bool)
    same_chain_next[:n_seg - 1] = same_chain_prev[1:n_seg]
    n_pred = np.diff(g.pred_at)
    n_succ = np.diff(g.succ_at)
    first_pred = g.pred[np.minimum(g.pred_at[:-1], max(len(g.pred) - 1, 0))] if len(g.pred) else ids
    first_succ = g.succ[np.minimum(g.succ_at[:-1], max(len(g.succ) - 1, 0))] if len(g.succ) else ids
    follows = same_chain_prev & (n_pred == 1) & (first_pred == ids - 1)  # finish = previous's + own weight
    leads = same_chain_next & (n_succ == 1) & (first_succ == ids + 1)  # latest finish = next's - next's weight
    done = np.cumsum(weight_all)
    up = np.maximum.accumulate(np.where(follows, -1, ids))  # nearest node up the chain that does not follow
    up_offset = done - done[up]  # weights after it, through this node
    down = np.minimum.accumulate(np.where(leads, n_nodes, ids)[::-1])[::-1]  # nearest down that does not lead
    down_offset = done[down] - done  # weights after this node, through it

    del same_chain_prev, same_chain_next, n_pred, n_succ, first_pred, first_succ
    pred_up, pred_offset = up[g.pred], up_offset[g.pred]
    succ_down, succ_offset = down[g.succ], down_offset[g.succ] + weight_all[g.succ]
    forward = g.topo[~follows[g.topo]]
    backward = g.topo[~leads[g.topo]][::-1]
    del follows, leads, done
    with _no_cyclic_gc():
        # array.array, not lists: eight bytes a value instead of a Python int each (a 10M-dispatch
        # trace's graph would take gigabytes as lists), at a fifth more time per access
        weight = _ints(weight_all)
        rank = _ints(rank_all)
        finish = _ints(np.zeros(n_nodes, dtype=np.int64))
        best = _ints(ids - 1)  # right for the nodes that follow; the loop sets the others
        pred_at, pred = _ints(g.pred_at), _ints(g.pred)
        p_up, p_off = _ints(pred_up), _ints(pred_offset)
        del pred_up, pred_offset
        for v in _ints(forward):
            lo, hi = pred_at[v], pred_at[v + 1]
            if lo == hi:
                finish[v] = weight[v]
                best[v] = -1
                continue
            b = pred[lo]
            bf = finish[p_up[lo]] + p_off[lo]
            for k in range(lo + 1, hi):
                f = finish[p_up[k]] + p_off[k]
                if f > bf or (f == bf and rank[pred[k]] < rank[b]):
                    b, bf = pred[k], f
            best[v] = b
            finish[v] = bf + weight[v]
            if v >= n_seg:
                rank[v] = rank[b]
        del pred_at, pred, p_up, p_off
        finish_all = np.frombuffer(finish, dtype=np.int64)[up] + up_offset
        del finish
        length = int(finish_all[:n_seg].max())
        latest_finish = _ints(np.full(n_nodes, length, dtype=np.int64))
        succ_at, s_down, s_off = _ints(g.succ_at), _ints(succ_down), _ints(succ_offset)
        del succ_down, succ_offset
        for v in _ints(backward):
            lo, hi = succ_at[v], succ_at[v + 1]
            if lo == hi:
                continue
            lf = length
            for k in range(lo, hi):
                ls = latest_finish[s_down[k]] - s_off[k]
                if ls < lf:
                    lf = ls
            latest_finish[v] = lf
        del succ_at, s_down, s_off
        latest_all = np.frombuffer(latest_finish, dtype=np.int64)[down] - down_offset
        del latest_finish
        rank_all = np.frombuffer(rank, dtype=np.int64)
        ends = np.flatnonzero(finish_all[:n_seg] == length)
        v = int(ends[np.argmin(rank_all[ends])])
        path_segments = []
        while v >= 0:
            if v < n_seg:
                path_segments.append(v)
            v = best[v]
        path_segments.reverse()
        del best, rank, weight, rank_all

    seg_finish = finish_all[:n_seg]
    seg_latest_finish = latest_all[:n_seg]
    starts = np.asarray(path_segments, dtype=np.int64)
    path = _expand_runs(dag.order, seg.first[starts], seg.last[starts] + 1)

    # Per dispatch, from its segment: earliest start = segment start + what runs before it there.
    in_order = duration[dag.order]
    done = np.cumsum(in_order)
    before_in_segment = done - in_order - (done[seg.first] - in_order[seg.first])[seg.of_position]
    after_in_segment = done[seg.last][seg.of_position] - done
    earliest = np.empty(n, dtype=np.int64)
    latest = np.empty(n, dtype=np.int64)
    earliest[dag.order] = (seg_finish - seg_weight)[seg.of_position] + before_in_segment
    del before_in_segment
    latest[dag.order] = seg_latest_finish[seg.of_position] - after_in_segment - in_order
    del after_in_segment, done, in_order
    on_path = np.zeros(n, dtype=bool)
    on_path[path] = True
    return _Schedule(int(length), path.astype(np.int64), on_path, earliest, latest, latest - earliest, n_nodes)


def _ints(values: np.ndarray) -> array:
    """An int64 numpy array as an array.array('q') (a copy), for loops that index it one value at a time."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def _expand_runs(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """values[lo[0]:hi[0]] + values[lo[1]:hi[1]] + ..., without a Python list of slices."""
    counts = hi - lo
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=values.dtype)
    offsets = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return values[np.arange(total) + offsets]


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
