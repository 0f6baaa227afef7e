"""What both Perfetto exports (JSON, perfetto_export.py; protobuf, perfetto_pftrace.py) lay out alike:
tracks per (agent, queue, stream) and their labels, the host process id, lanes for ranges that do
not nest, and which of the DAG's cross-stream edges get an arrow."""

from __future__ import annotations

import numpy as np

from rocm_perf.trace.model import UNKNOWN, Trace


def cross_stream_arrows(edges: np.ndarray, chain: np.ndarray, order: np.ndarray) -> list[tuple[int, int]]:
    """The DAG's cross-chain (before, after) row pairs worth an arrow.

    One arrow per (source, target chain): the earliest target; then per (source chain, target):
    the latest source. Later work on a chain is ordered by the chain itself, so more arrows would
    only repeat what program order already says (a barrier otherwise draws S x S arrows).
    """
    pairs = arrow_pairs(edges, chain, order)
    return [(int(a), int(t)) for a, t in pairs.tolist()]


def arrow_pairs(edges: np.ndarray, chain: np.ndarray, order: np.ndarray) -> np.ndarray:
    """cross_stream_arrows as an (m, 2) array sorted by (before, after), in numpy."""
    n = len(chain)
    position = np.empty(n, dtype=np.int64)
    position[np.asarray(order, dtype=np.int64)] = np.arange(n)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    e = e[chain[e[:, 0]] != chain[e[:, 1]]] if len(e) else e
    if not len(e):
        return np.zeros((0, 2), dtype=np.int64)
    a, t = e[:, 0], e[:, 1]
    # per (source, target chain): the target earliest in its chain
    pick = np.lexsort((position[t], chain[t], a))
    a, t = a[pick], t[pick]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (chain[t][1:] != chain[t][:-1])
    a, t = a[first], t[first]
    # per (source chain, target): the source latest in its chain
    pick = np.lexsort((-position[a], t, chain[a]))
    a, t = a[pick], t[pick]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (t[1:] != t[:-1]) | (chain[a][1:] != chain[a][:-1])
    a, t = a[first], t[first]
    pick = np.lexsort((t, a))
    return np.stack([a[pick], t[pick]], axis=1)


def track_keys(trace: Trace) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Per dispatch row, the index of its (agent, queue, stream) track; and the tracks in order.

    Column by column into one integer code (a row-wise unique over an (n, 3) array would copy
    the columns several times over)."""
    if not len(trace):
        return np.zeros(0, dtype=np.int64), []
    code = np.zeros(len(trace), dtype=np.int64)
    values = []
    for column in (trace.agent, trace.queue, trace.stream):
        distinct, inverse = np.unique(column, return_inverse=True)
        code *= len(distinct)
        code += inverse.reshape(-1)
        values.append(distinct)
        del inverse
    unique_codes, track = np.unique(code, return_inverse=True)
    tracks = []
    for c in unique_codes.tolist():
        c, s = divmod(c, len(values[2]))
        a, q = divmod(c, len(values[1]))
        tracks.append((int(values[0][a]), int(values[1][q]), int(values[2][s])))
    return track.reshape(-1), tracks


def agent_label(trace: Trace, agent_id: int) -> str:
    for a in trace.agents:
        if a.id == agent_id:
            name = f"{a.type} agent {agent_id}: {a.name}"
            return f"{name} ({a.product})" if a.product and a.product != a.name else name
    return f"GPU agent {agent_id}" if agent_id != UNKNOWN else "GPU (agent unknown)"


def track_label(queue: int, stream: int) -> str:
    parts = []
    parts.append(f"stream {stream}" if stream != UNKNOWN else "stream ?")
    parts.append(f"queue {queue}" if queue != UNKNOWN else "queue ?")
    return " · ".join(parts)


def host_pid(trace: Trace, taken: set[int]) -> int:
    pid = trace.metadata.get("pid")
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        pid = 0
    return pid if pid > 0 and pid not in taken else max(taken, default=0) + 1


def lanes(starts: list[int], ends: list[int]) -> list[int]:
    """A lane per interval such that intervals of one lane are nested or disjoint (first fit by start)."""
    lanes: list[list[int]] = []  # per lane: the ends of its open intervals (a stack)
    out = []
    for s, e in zip(starts, ends):
        for i, stack in enumerate(lanes):
            while stack and stack[-1] <= s:
                stack.pop()
            if not stack or e <= stack[-1]:
                stack.append(e)
                out.append(i)
                break
        else:
            lanes.append([e])
            out.append(len(lanes) - 1)
    return out
