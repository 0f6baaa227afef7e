"""The dispatch DAG's edges: which kernel dispatches the program really orders before which.

Pure numpy over a Trace; no graph library (critical_path.py walks the collapsed graph itself).

Nodes are dispatch rows 0..n-1 plus zero-duration *join* nodes n..n+j-1 that stand for "all of
these finished" (a device synchronize, an event recorded on the legacy null stream), so that a
barrier over S streams costs S+S edges instead of S*S.

Edges come from:
- program order within a chain: a stream (the trace's stream id), else a queue, else the agent;
  implied by `DispatchDag.order`, never listed in `src`/`dst`;
- the HIP API trace, when there is one:
  - `hipEventRecord(e, s)` captures the last dispatch launched on `s` before the call;
    `hipStreamWaitEvent(s2, e)` makes the first dispatch launched on `s2` after it depend on it;
  - `hipEventSynchronize(e)`, `hipStreamSynchronize(s)`, `hipDeviceSynchronize()` (and the
    host-synchronous `hipMemcpy*` calls, which run on the null stream) order what was launched
    before the call (on that event's stream / that stream / every stream) before everything
    launched after the call returns;
  - `null_stream="legacy"` (HIP's default): the null stream waits for, and is waited for by,
    every other stream (all are taken as blocking streams: the trace does not say which were
    created non-blocking). `"per-thread"`: the null stream is an ordinary stream.
- opt-in only: a timestamp-gap guess (`gap_heuristic_ns`) for traces without an API trace.

"Launched before/after" compares the launch call's start time (the call joined to its dispatch
through the correlation id) with the API call's start (before) or end (after).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import UNKNOWN, ApiCalls, Trace

NULL_STREAM_MODES = ("legacy", "per-thread")

# HIP names, and the CUDA names a PyTorch profile of a CUDA build carries for the same calls.
EVENT_RECORD_CALLS = frozenset({"hipEventRecord", "hipEventRecordWithFlags", "cudaEventRecord",
                                "cudaEventRecordWithFlags"})
STREAM_WAIT_CALLS = frozenset({"hipStreamWaitEvent", "cudaStreamWaitEvent"})
EVENT_SYNC_CALLS = frozenset({"hipEventSynchronize", "cudaEventSynchronize"})
STREAM_SYNC_CALLS = frozenset({"hipStreamSynchronize", "cudaStreamSynchronize"})
DEVICE_SYNC_CALLS = frozenset({"hipDeviceSynchronize", "hipCtxSynchronize", "cudaDeviceSynchronize",
                               "cudaCtxSynchronize"})

NO_NODE = -1


def is_host_synchronous_copy(name: str) -> bool:
    """hipMemcpy, hipMemcpyDtoH, hipMemcpy2D, ... (cudaMemcpy, ...): blocking copies on the null stream."""
    return name.startswith(("hipMemcpy", "cudaMemcpy")) and "Async" not in name and "Peer" not in name


@dataclass
class DispatchDag:
    """Every ordering the program imposes on its dispatches, as arrays.

    `chain[row]` is the chain (stream, else queue, else agent) of each dispatch; chains are
    numbered in the order of `chain_labels` (streams by id first). `order` lists the dispatch
    rows chain by chain, each chain in program order: consecutive rows of one chain are edges.
    `src`/`dst` are the other edges, between node ids (rows, or joins numbered from n).
    `launch` is each dispatch's launch time as the rules used it and `join_time` a time per join
    (its call's end for a barrier, its record's start for a null-stream record): every edge goes
    from an earlier launch or join time to a later one (a join before a dispatch at the same time;
    the timestamp guesses of `gap_heuristic_ns` may break this), which gives the longest-path
    search a topological order by sorting.
    """

    n_dispatches: int
    chain: np.ndarray
    chain_labels: list[str]
    order: np.ndarray
    n_joins: int
    src: np.ndarray
    dst: np.ndarray
    cross_stream_known: bool
    guessed_edges: int = 0
    notes: list[str] = field(default_factory=list)
    launch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    join_time: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class _Chains:
    """Per chain: its dispatch rows in program order and their launch times (sorted)."""

    rows: list[np.ndarray]
    launch: list[np.ndarray]

    def last_before(self, c: int, times: np.ndarray) -> np.ndarray:
        """Row of the last dispatch on chain c launched strictly before each time, or NO_NODE."""
        idx = np.searchsorted(self.launch[c], times, side="left") - 1
        return np.where(idx >= 0, self.rows[c][np.maximum(idx, 0)], NO_NODE)

    def first_at_or_after(self, c: int, times: np.ndarray) -> np.ndarray:
        """Row of the first dispatch on chain c launched at or after each time, or NO_NODE."""
        rows = self.rows[c]
        idx = np.searchsorted(self.launch[c], times, side="left")
        return np.where(idx < len(rows), rows[np.minimum(idx, max(len(rows) - 1, 0))], NO_NODE)


class _Edges:
    """Edge and join-node accumulator."""

    def __init__(self, n: int):
        self.n = n
        self.n_joins = 0
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._join_times: list[np.ndarray] = []

    def new_joins(self, times: np.ndarray) -> np.ndarray:
        """Join nodes, one per time (see DispatchDag.join_time)."""
        count = len(times)
        ids = np.arange(self.n + self.n_joins, self.n + self.n_joins + count, dtype=np.int64)
        self.n_joins += count
        self._join_times.append(np.asarray(times, dtype=np.int64))
        return ids

    def join_times(self) -> np.ndarray:
        return np.concatenate(self._join_times) if self._join_times else np.zeros(0, dtype=np.int64)

    def add(self, src, dst) -> None:
        src = np.asarray(src, dtype=np.int64).reshape(-1)
        dst = np.asarray(dst, dtype=np.int64).reshape(-1)
        src, dst = np.broadcast_arrays(src, dst)
        keep = (src != NO_NODE) & (dst != NO_NODE) & (src != dst)
        if keep.any():
            self._src.append(src[keep].copy())
            self._dst.append(dst[keep].copy())

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self._src:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        nodes = self.n + self.n_joins
        packed = np.concatenate(self._src) * nodes + np.concatenate(self._dst)
        packed.sort()  # sort and drop repeats: np.unique's hashing is slower on millions of edges
        if len(packed) > 1:
            packed = packed[np.concatenate([[True], packed[1:] != packed[:-1]])]
        return packed // nodes, packed % nodes


def build_dispatch_dag(trace: Trace, *, null_stream: str = "legacy", gap_heuristic_ns: int | None = None) -> DispatchDag:
    """The dispatch DAG of a trace (see the module docstring for the rules)."""
    if null_stream not in NULL_STREAM_MODES:
        raise RocmPerfError(f"null stream mode {null_stream!r}: expected one of {', '.join(NULL_STREAM_MODES)}")
    if gap_heuristic_ns is not None and gap_heuristic_ns < 0:
        raise RocmPerfError(f"gap heuristic {gap_heuristic_ns} ns: expected a non-negative gap")
    n = len(trace)
    notes: list[str] = []
    chain, labels = _chain_of_rows(trace, notes)
    launch_row = launch_rows(trace)
    api = trace.api
    api_usable = api is not None and len(api) > 0 and bool((launch_row >= 0).any())
    arguments_complete = False
    launch_time = trace.start.copy()
    if api_usable:
        matched = launch_row >= 0
        launch_time[matched] = api.start[launch_row[matched]]
        unmatched = int((~matched).sum())
        if unmatched:
            launch_time = _estimate_missing_launches(chain, matched, launch_time)
            notes.append(
                f"{unmatched} of {n} dispatches have no launch call in the API trace: each takes the launch "
                "time of the dispatch before it on its stream"
            )
    order = _chain_order(chain, launch_time, len(labels))
    bounds = np.searchsorted(chain[order], np.arange(len(labels) + 1))
    chains = _Chains(
        rows=[order[bounds[c] : bounds[c + 1]] for c in range(len(labels))],
        launch=[launch_time[order[bounds[c] : bounds[c + 1]]] for c in range(len(labels))],
    )
    edges = _Edges(n)

    if api_usable:
        stream_chain, null_chain = _stream_pointer_chains(trace, api, launch_row, chain, notes)
        legacy = null_stream == "legacy"
        if legacy and null_chain is not None:
            _legacy_null_stream_edges(chains, null_chain, edges)
        arguments_complete = _api_edges(api, chains, stream_chain, legacy, edges, notes)
        if len(labels) > 1:
            notes.append(
                f"null stream: {null_stream}"
                + (" (waits for, and is waited for by, every other stream)" if legacy else " (an ordinary stream)")
            )
    elif api is None or len(api) == 0:
        if len(labels) > 1:
            notes.append(
                "no HIP API trace: streams are independent chains, cross-stream dependencies were not known "
                "(profile with --hip-runtime-trace); the critical path is then a lower bound"
            )
    else:
        notes.append(
            "the API trace has no launch call matching a dispatch (correlation ids differ): streams are "
            "independent chains, cross-stream dependencies were not known"
        )

    guessed = 0
    if gap_heuristic_ns is not None:
        guessed = _gap_edges(trace, chains, int(gap_heuristic_ns), edges)
        notes.append(
            f"gap heuristic ({gap_heuristic_ns / 1000:g} us) added {guessed} guessed cross-stream edges: "
            "guesses from timing, not known dependencies"
        )

    src, dst = edges.arrays()
    # An edge inside one chain (an event recorded and waited on the same stream) is program order already.
    both_dispatches = (src < n) & (dst < n)
    same_chain = both_dispatches & (chain[np.minimum(src, max(n - 1, 0))] == chain[np.minimum(dst, max(n - 1, 0))])
    src, dst = src[~same_chain], dst[~same_chain]
    return DispatchDag(
        n_dispatches=n,
        chain=chain,
        chain_labels=labels,
        order=order.astype(np.int64),
        n_joins=edges.n_joins,
        src=src,
        dst=dst,
        cross_stream_known=api_usable and arguments_complete,
        guessed_edges=guessed,
        notes=notes,
        launch=launch_time,
        join_time=edges.join_times(),
    )


def _chain_of_rows(trace: Trace, notes: list[str]) -> tuple[np.ndarray, list[str]]:
    """A chain per dispatch: its stream id, else (agent, queue), else its agent alone."""
    n = len(trace)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    has_stream = trace.stream != UNKNOWN
    has_queue = ~has_stream & (trace.queue != UNKNOWN)
    kind = np.where(has_stream, 0, np.where(has_queue, 1, 2))
    major = np.where(has_stream, trace.stream, trace.agent)
    minor = np.where(has_queue, trace.queue, 0)
    keys, chain = _unique_rows(kind, major, minor)
    labels = []
    for k, a, b in keys:
        if k == 0:
            labels.append(f"stream {a}")
        elif k == 1:
            labels.append(f"agent {a} queue {b}")
        else:
            labels.append(f"agent {a}")
    if (kind == 2).any():
        notes.append(
            f"{int((kind == 2).sum())} dispatches have neither a stream nor a queue id: "
            "each agent's such dispatches are taken as one serial chain"
        )
    return chain.reshape(-1).astype(np.int64), labels


def _chain_order(chain: np.ndarray, key: np.ndarray, n_chains: int) -> np.ndarray:
    """Rows chain by chain, each chain by `key`, ties by row: lexsort((rows, key, chain)) as two stable
    sorts, the second on small chain codes (numpy's radix sort) and the first on launch times that are
    mostly in order already (timsort's best case): several times faster at 10M rows."""
    if not len(chain):
        return np.zeros(0, dtype=np.int64)
    by_key = np.argsort(key, kind="stable")
    codes = chain[by_key]
    if n_chains < (1 << 15):
        codes = codes.astype(np.int16)
    return by_key[np.argsort(codes, kind="stable")]


def _estimate_missing_launches(chain: np.ndarray, matched: np.ndarray, launch_time: np.ndarray) -> np.ndarray:
    """Launch times for dispatches whose launch call is not in the trace.

    Each takes the launch time of the nearest earlier-started matched dispatch of its chain (else
    the next one), so it keeps its place in its stream (rows are in start order).
    """
    n = len(chain)
    by_chain = np.argsort(chain, kind="stable")
    c, m = chain[by_chain], matched[by_chain]
    position = np.arange(n)
    prev = np.maximum.accumulate(np.where(m, position, -1))
    has_prev = (prev >= 0) & (c[np.maximum(prev, 0)] == c)
    nxt = np.minimum.accumulate(np.where(m, position, n)[::-1])[::-1]
    has_next = (nxt < n) & (c[np.minimum(nxt, n - 1)] == c)
    estimate = launch_time[by_chain]
    from_prev = ~m & has_prev
    from_next = ~m & ~has_prev & has_next
    estimate[from_prev] = estimate[prev[from_prev]]
    estimate[from_next] = estimate[nxt[from_next]]
    result = launch_time.copy()
    result[by_chain] = estimate
    return result


def _unique_rows(*columns: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Distinct rows of equal-length integer columns, in lexicographic order, and each row's index.

    Each column is first coded densely (1-D unique is fast; unique over axis=0 is not), then the
    codes are packed into one int64.
    """
    codes, values = [], []
    for col in columns:
        v, c = _dense_codes(col)
        values.append(v)
        codes.append(c)
    packed = np.zeros(len(columns[0]), dtype=np.int64)
    for v, c in zip(values, codes):
        if len(v) > 1:  # a constant column adds nothing to the key
            packed = packed * len(v) + c
    distinct, inverse = _dense_codes(packed)
    rows = []
    for p in distinct.tolist():
        row = []
        for v in reversed(values):
            if len(v) > 1:
                p, c = divmod(p, len(v))
            else:
                c = 0
            row.append(int(v[c]))
        rows.append(tuple(reversed(row)))
    return rows, inverse.reshape(-1)


def _dense_codes(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(column, return_inverse=True), in one pass without sorting when the values span a
    range no wider than the column is long (stream ids, agents, queues, packed keys of them)."""
    if not len(column):
        return np.zeros(0, dtype=column.dtype), np.zeros(0, dtype=np.int64)
    low, high = int(column.min()), int(column.max())
    if high - low > max(len(column), 1 << 16):
        values = np.unique(column)  # few distinct pointers among millions of rows: then look each up
        return values, np.searchsorted(values, column).astype(np.int64)
    shifted = column - low if low else column
    present = np.zeros(high - low + 1, dtype=bool)
    present[shifted] = True
    code_of = np.cumsum(present, dtype=np.int64) - 1
    return (np.flatnonzero(present) + low).astype(column.dtype), code_of[shifted]


def launch_rows(trace: Trace) -> np.ndarray:
    """Per dispatch, the API row of its launch call (same correlation id), or -1."""
    n = len(trace)
    api = trace.api
    if api is None or len(api) == 0 or n == 0:
        return np.full(n, -1, dtype=np.int64)
    known = np.flatnonzero(api.corr != UNKNOWN)
    corr = api.corr[known]
    # API rows are in time order, and correlation ids mostly are too: sort only when they are not
    by_corr = known if len(corr) < 2 or bool(np.all(corr[1:] >= corr[:-1])) else known[np.argsort(corr, kind="stable")]
    sorted_corr = api.corr[by_corr]
    pos = np.searchsorted(sorted_corr, trace.corr, side="left")
    pos_clipped = np.minimum(pos, max(len(sorted_corr) - 1, 0))
    found = (pos < len(sorted_corr)) & (trace.corr != UNKNOWN)
    if len(sorted_corr):
        found &= sorted_corr[pos_clipped] == trace.corr
    return np.where(found, by_corr[pos_clipped] if len(sorted_corr) else -1, -1).astype(np.int64)


def _stream_pointer_chains(
    trace: Trace, api: ApiCalls, launch_row: np.ndarray, chain: np.ndarray, notes: list[str]
) -> tuple[dict[int, int], int | None]:
    """hipStream_t pointer -> chain, learnt from the launch calls joined to their dispatches.

    Also the null stream's chain: the one pointer 0 launches onto, else the trace's stream id 0.
    """
    matched = np.flatnonzero(launch_row >= 0)
    pointers = api.stream[launch_row[matched]]
    known = pointers != UNKNOWN
    pairs, _ = _unique_rows(pointers[known], chain[matched][known]) if known.any() else ([], None)
    mapping: dict[int, int] = {}
    conflicting = 0
    for pointer, c in pairs:
        if pointer in mapping:
            conflicting += 1
            continue
        mapping[pointer] = c
    if conflicting:
        notes.append(f"{conflicting} stream pointers launched onto more than one trace stream: the first is used")
    null_chain = mapping.get(0)
    if null_chain is None and trace.has_streams:
        zero = np.flatnonzero(trace.stream == 0)
        if len(zero):
            null_chain = int(chain[zero[0]])
            mapping[0] = null_chain
    return mapping, null_chain


def _legacy_null_stream_edges(chains: _Chains, null_chain: int, edges: _Edges) -> None:
    """Each null-stream dispatch waits for every other chain's earlier launches and precedes its later ones.

    Only the edges that are not implied by program order are added: per other chain, the first
    null dispatch after each distinct predecessor, and the last null dispatch before each
    distinct successor.
    """
    null_rows = chains.rows[null_chain]
    null_launch = chains.launch[null_chain]
    if not len(null_rows):
        return
    for c in range(len(chains.rows)):
        if c == null_chain or not len(chains.rows[c]):
            continue
        before = np.searchsorted(chains.launch[c], null_launch, side="left") - 1
        new = before >= 0
        new[1:] &= before[1:] > before[:-1]
        edges.add(chains.rows[c][before[new]], null_rows[new])
        after = np.searchsorted(chains.launch[c], null_launch, side="right")
        last = after < len(chains.rows[c])
        last[:-1] &= after[:-1] != after[1:]
        edges.add(null_rows[last], chains.rows[c][after[last]])


def _api_edges(
    api: ApiCalls,
    chains: _Chains,
    stream_chain: dict[int, int],
    legacy: bool,
    edges: _Edges,
    notes: list[str],
) -> bool:
    """Event record/wait edges and host synchronization barriers from the API calls.

    With `legacy`, a record or synchronize on the null stream (pointer 0) covers every chain,
    whether or not anything was launched on the null stream itself. Returns False when some
    ordering calls lack the stream/event arguments that say what they order (a CSV API trace).
    """
    names = api.names
    kind_of_name = np.zeros(len(names), dtype=np.int8)
    copy_name = np.zeros(len(names), dtype=bool)
    record, wait, event_sync, stream_sync, device_sync = 1, 2, 3, 4, 5
    for i, name in enumerate(names):
        copy_name[i] = is_host_synchronous_copy(name)
        if name in EVENT_RECORD_CALLS:
            kind_of_name[i] = record
        elif name in STREAM_WAIT_CALLS:
            kind_of_name[i] = wait
        elif name in EVENT_SYNC_CALLS:
            kind_of_name[i] = event_sync
        elif name in STREAM_SYNC_CALLS or copy_name[i]:
            kind_of_name[i] = stream_sync
        elif name in DEVICE_SYNC_CALLS:
            kind_of_name[i] = device_sync
    kind = kind_of_name[api.name] if len(names) else np.zeros(len(api), dtype=np.int8)
    is_copy = copy_name[api.name] if len(names) else np.zeros(len(api), dtype=bool)
    stream_ptr = np.where(is_copy & (api.stream == UNKNOWN), 0, api.stream)  # blocking copies run on the null stream
    all_chains = range(len(chains.rows))
    needs_stream = (kind == record) | (kind == wait) | ((kind == stream_sync) & ~is_copy)
    needs_event = (kind == record) | (kind == wait) | (kind == event_sync)
    blind = int((needs_stream & (stream_ptr == UNKNOWN)).sum() + (needs_event & (api.event == UNKNOWN)).sum())
    if blind:
        notes.append(
            f"{blind} event/stream arguments of ordering calls are missing from the API trace: the dependencies "
            "they create were not known"
        )

    def chain_of(pointer: int) -> int | None:
        return stream_chain.get(int(pointer))

    known_pointers = np.array(sorted(stream_chain), dtype=np.int64)
    chain_of_known = np.array([stream_chain[p] for p in known_pointers.tolist()], dtype=np.int64)

    def chains_of(pointers: np.ndarray) -> np.ndarray:
        """chain_of over an array; NO_NODE where the pointer never launched a traced dispatch."""
        if not len(known_pointers):
            return np.full(len(pointers), NO_NODE, dtype=np.int64)
        pos = np.minimum(np.searchsorted(known_pointers, pointers), len(known_pointers) - 1)
        return np.where(known_pointers[pos] == pointers, chain_of_known[pos], NO_NODE)

    # What each record captures: the last dispatch launched on its stream before it (or, on the
    # legacy null stream, a join of the last dispatch of every chain).
    record_rows = np.flatnonzero(kind == record)
    captured = np.full(len(record_rows), NO_NODE, dtype=np.int64)
    record_chain = chains_of(stream_ptr[record_rows])
    record_on_null = legacy & (stream_ptr[record_rows] == 0)
    for c in all_chains:
        on_c = (record_chain == c) & ~record_on_null
        if on_c.any():
            captured[on_c] = chains.last_before(c, api.start[record_rows[on_c]])
    if record_on_null.any():
        on_null = np.flatnonzero(record_on_null)
        times = api.start[record_rows[on_null]]
        joins = edges.new_joins(times)
        for c in all_chains:
            edges.add(chains.last_before(c, times), joins)
        captured[on_null] = joins

    # Which capture each wait / event-synchronize sees: the latest record of that event before it.
    uses = np.flatnonzero((kind == wait) | (kind == event_sync))
    seen = _latest_capture(api, record_rows, captured, uses)

    wait_mask = kind[uses] == wait
    waits, wait_seen = uses[wait_mask], seen[wait_mask]
    wait_chain = chains_of(stream_ptr[waits])
    for c in all_chains:
        on_c = wait_chain == c
        if on_c.any():
            edges.add(wait_seen[on_c], chains.first_at_or_after(c, api.end[waits[on_c]]))

    unmapped = sum(1 for p in set(stream_ptr[waits].tolist()) if p != UNKNOWN and chain_of(p) is None)
    if unmapped:
        notes.append(f"{unmapped} streams waited on never launched a traced dispatch: their waits order nothing")

    # Host barriers, in the order they return; each one is after the one before (the host waited).
    syncs = np.flatnonzero((kind == event_sync) | (kind == stream_sync) | (kind == device_sync))
    if not len(syncs):
        return blind == 0
    syncs = syncs[np.argsort(api.end[syncs], kind="stable")]
    barrier = edges.new_joins(api.end[syncs])
    edges.add(barrier[:-1], barrier[1:])
    # An event synchronize waits for what the event captured.
    sync_kind = kind[syncs]
    on_event = np.flatnonzero(sync_kind == event_sync)
    seen_by_row = np.full(len(api), NO_NODE, dtype=np.int64)
    seen_by_row[uses] = seen
    edges.add(seen_by_row[syncs[on_event]], barrier[on_event])
    # A stream synchronize waits for its stream's last launch; a device synchronize (or, legacy, a
    # null-stream synchronize) for every stream's.
    covers_all = (sync_kind == device_sync) | ((sync_kind == stream_sync) & legacy & (stream_ptr[syncs] == 0))
    sync_chain = np.where(sync_kind == stream_sync, chains_of(stream_ptr[syncs]), NO_NODE)
    for c in all_chains:
        which = np.flatnonzero(covers_all | (sync_chain == c))
        if not len(which) or not len(chains.rows[c]):
            continue
        idx = np.searchsorted(chains.launch[c], api.start[syncs[which]], side="left") - 1
        # A dispatch already waited for by an earlier barrier needs no second edge.
        earlier = np.concatenate([[-1], np.maximum.accumulate(idx)[:-1]])
        new = (idx >= 0) & (idx > earlier)
        edges.add(chains.rows[c][idx[new]], barrier[which[new]])
    # Everything launched after a barrier returns waits for it: per stream, its next launch.
    ends = api.end[syncs]
    for c in all_chains:
        rows = chains.rows[c]
        if not len(rows):
            continue
        nxt = np.searchsorted(chains.launch[c], ends, side="left")
        # Only the latest barrier before each successor needs an edge (barriers are chained).
        last = nxt < len(rows)
        last[:-1] &= nxt[:-1] != nxt[1:]
        edges.add(barrier[last], rows[nxt[last]])
    return blind == 0


def _latest_capture(api: ApiCalls, record_rows: np.ndarray, captured: np.ndarray, uses: np.ndarray) -> np.ndarray:
    """For each use (wait or event synchronize), what the latest earlier record of its event captured."""
    seen = np.full(len(uses), NO_NODE, dtype=np.int64)
    if not len(uses) or not len(record_rows):
        return seen
    # Records and uses together, by event and then API order (API rows are sorted by start); each
    # use looks back to the nearest record, which counts only if it is of the same event.
    n_records = len(record_rows)
    rows = np.concatenate([record_rows, uses])
    events = api.event[rows]
    walk = np.lexsort((rows, events))
    is_record = walk < n_records
    position = np.arange(len(walk))
    last_record = np.maximum.accumulate(np.where(is_record, position, -1))
    use_positions = np.flatnonzero(~is_record)
    prior = last_record[use_positions]
    found = prior >= 0
    prior_item = walk[np.maximum(prior, 0)]
    found &= events[prior_item] == events[walk[use_positions]]
    seen[walk[use_positions[found]] - n_records] = captured[prior_item[found]]
    return seen


def _gap_edges(trace: Trace, chains: _Chains, gap_ns: int, edges: _Edges) -> int:
    """Guess u -> v across chains where v starts within gap_ns after u ends (the latest such u per chain)."""
    added = 0
    for d in range(len(chains.rows)):
        targets = chains.rows[d]
        if not len(targets):
            continue
        starts = trace.start[targets]
        for c in range(len(chains.rows)):
            if c == d or not len(chains.rows[c]):
                continue
            sources = chains.rows[c]
            ends = np.maximum.accumulate(trace.end[sources])  # in-order streams: non-decreasing ends
            idx = np.searchsorted(ends, starts, side="right") - 1
            ok = idx >= 0
            gap = starts - ends[np.maximum(idx, 0)]
            ok &= gap <= gap_ns
            # A predecessor already guessed for an earlier dispatch of this chain is implied.
            earlier = np.concatenate([[-1], np.maximum.accumulate(np.where(ok, idx, -1))[:-1]])
            ok &= idx > earlier
            edges.add(sources[idx[ok]], targets[ok])
            added += int(ok.sum())
    return added
