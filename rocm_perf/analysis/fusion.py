"""Fuse opportunities: sequences of short kernels launched back to back on one stream, again and again.

The idea is HolisticTraceAnalysis' "frequent CUDA kernel sequences" (kernels that a repeated
operator launches in the same order are candidates for one fused kernel); here, without an
operator tree, on the dispatch timeline itself:
- a dispatch is *short* when it runs for less than `short_ns` (default 10 us) or less than its own
  launch call took (HTA's definition of a short kernel: the launch costs more than the work);
- a *run* is a maximal sequence of short dispatches on one stream (else queue, else GPU), each
  starting within `max_gap_ns` of the previous one's end;
- every kernel-name sequence of length 2..`max_len` inside runs is counted (occurrences may not
  overlap each other); sequences seen at least `min_count` times are reported, longest-and-most-
  valuable first, dropping a sequence that a longer reported one covers equally often.
Per pattern: occurrences, kernel time, GPU-side launch overhead (the idle gaps inside occurrences,
which one fused kernel would not have), host-side launch time (the launch calls of all but the first
kernel of each occurrence, when the API trace has them) and the time a fused kernel would save
(gaps plus, per occurrence, the dispatches it would no longer make).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocm_perf.analysis.dag import launch_rows
from rocm_perf.trace.model import UNKNOWN, Trace

DEFAULT_SHORT_NS = 10_000
DEFAULT_MAX_GAP_NS = 50_000


@dataclass
class FusePattern:
    kernels: list[str]  # display names, in launch order
    occurrences: int
    kernel_ns: int  # summed duration of the kernels in all occurrences
    gap_ns: int  # GPU idle between consecutive kernels inside occurrences
    launch_call_ns: int | None  # host time in the launch calls of kernels 2..n of each occurrence
    streams: int  # on how many streams it was seen

    @property
    def length(self) -> int:
        return len(self.kernels)

    @property
    def span_ns(self) -> int:
        return self.kernel_ns + self.gap_ns

    def to_json(self) -> dict:
        return {"kernels": self.kernels, "length": self.length, "occurrences": self.occurrences,
                "kernel_ns": self.kernel_ns, "gap_ns": self.gap_ns, "launch_call_ns": self.launch_call_ns,
                "span_ns": self.span_ns, "streams": self.streams,
                "dispatches_saved": (self.length - 1) * self.occurrences}


def _chains(trace: Trace) -> np.ndarray:
    """A chain key per dispatch: its stream, else its queue, else its agent (as the dispatch DAG does)."""
    has_stream = trace.stream != UNKNOWN
    has_queue = trace.queue != UNKNOWN
    key = np.where(has_stream, trace.stream, np.where(has_queue, trace.queue + (1 << 40), trace.agent + (1 << 50)))
    return key


def fuse_opportunities(
    trace: Trace,
    *,
    short_ns: int = DEFAULT_SHORT_NS,
    max_gap_ns: int = DEFAULT_MAX_GAP_NS,
    max_len: int = 8,
    min_count: int = 2,
    top: int = 10,
) -> list[FusePattern]:
    """The most valuable frequent sequences of short back-to-back kernels (see the module docstring)."""
    n = len(trace)
    if n < 2:
        return []
    duration = trace.end - trace.start
    launch = launch_rows(trace)
    api = trace.api
    call_ns = np.where(launch >= 0, (api.end - api.start)[np.maximum(launch, 0)], -1) if api is not None and len(api) \
        else np.full(n, -1, np.int64)
    short = (duration < short_ns) | ((call_ns >= 0) & (duration < call_ns))
    chain = _chains(trace)
    order = np.lexsort((trace.start, chain))
    c, s, e, k, sh = chain[order], trace.start[order], trace.end[order], trace.kernel[order], short[order]
    calls = call_ns[order]
    # a run continues where the previous dispatch is on the same chain, both are short, and the gap is small
    joins = np.zeros(n, dtype=bool)
    joins[1:] = (c[1:] == c[:-1]) & sh[1:] & sh[:-1] & ((s[1:] - e[:-1]) <= max_gap_ns)
    patterns: dict[tuple[int, ...], dict] = {}
    run_start = np.flatnonzero(~joins)
    run_end = np.append(run_start[1:], n)
    for a, b in zip(run_start.tolist(), run_end.tolist()):
        if b - a < 2 or not sh[a]:
            continue
        kernels = k[a:b].tolist()
        for length in range(2, min(max_len, b - a) + 1):
            for i in range(0, b - a - length + 1):
                key = tuple(kernels[i: i + length])
                entry = patterns.get(key)
                if entry is None:
                    entry = patterns[key] = {"last_end": -1, "count": 0, "idx": []}
                if a + i < entry["last_end"]:
                    continue  # occurrences of one pattern do not overlap each other
                entry["count"] += 1
                entry["idx"].append(a + i)
                entry["last_end"] = a + i + length
    names = [sym.display_name or sym.name for sym in trace.symbols]
    found = []
    for key, entry in patterns.items():
        if entry["count"] < min_count:
            continue
        length = len(key)
        idx = np.asarray(entry["idx"], dtype=np.int64)
        positions = idx[:, None] + np.arange(length)[None, :]
        kernel_ns = int((e[positions] - s[positions]).sum())
        gap_ns = int(np.maximum(s[positions[:, 1:]] - e[positions[:, :-1]], 0).sum())
        host = calls[positions[:, 1:]]
        launch_ns = int(host.sum()) if bool((host >= 0).all()) else None
        found.append(FusePattern([names[x] for x in key], entry["count"], kernel_ns, gap_ns, launch_ns,
                                 int(len(np.unique(c[idx])))))
    # prefer patterns that save the most: gaps inside them plus one launch per extra kernel
    found.sort(key=lambda p: (-(p.gap_ns + (p.launch_call_ns or 0)), -p.occurrences * p.length, p.kernels))
    kept: list[FusePattern] = []
    for p in found:
        if any(p.occurrences <= q.occurrences and _inside(p.kernels, q.kernels) for q in kept):
            continue  # a longer pattern already reported covers this one as often
        kept.append(p)
        if len(kept) >= top:
            break
    return kept


def _inside(small: list[str], big: list[str]) -> bool:
    if len(small) >= len(big):
        return small == big
    return any(big[i: i + len(small)] == small for i in range(len(big) - len(small) + 1))
