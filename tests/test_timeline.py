"""The report's timeline of a profile: per stream, at most a few hundred bars, the critical path."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.analysis.timeline import build_timeline
from rocm_perf.trace.load import load_trace


def test_a_small_profile_keeps_every_dispatch_and_the_path_adds_up_to_the_critical_path():
    """rocpd_v3_multistream.db: 15 dispatches on 4 streams, critical path 660 us (its answer file)."""
    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    cp = analyze_critical_path(trace)
    tl = build_timeline(trace, cp)
    assert not tl.aggregated and len(tl.bars) == len(trace) == tl.dispatches
    assert tl.lanes == ["stream 0", "stream 1", "stream 2", "stream 3"]
    # Bars are the dispatches at their observed times, from the first start.
    assert sorted((tl.bars.end - tl.bars.start).tolist()) == sorted(trace.duration.tolist())
    assert tl.span_ns == int(trace.end.max() - trace.start.min())
    # The path's dispatches, in path order, take exactly the critical path's time.
    assert int((tl.path.end - tl.path.start).sum()) == cp.critical_path_ns == 660_000
    assert [tl.kernels[k] for k in tl.path.kernel.tolist()] == cp.path_names
    # Kernels are ranked by their total time: the largest gets the first colour.
    totals = {name: 0 for name in tl.kernels}
    for k, d in zip(tl.bars.kernel.tolist(), (tl.bars.end - tl.bars.start).tolist()):
        totals[tl.kernels[k]] += d
    assert list(totals.values()) == sorted(totals.values(), reverse=True)


def test_a_large_profile_becomes_bins_that_keep_its_busy_time():
    """mytrace.rpd.gz: 1228 kernel dispatches of a real PyTorch run, more than a drawing should hold."""
    trace = load_trace(DATA / "mytrace.rpd.gz")
    cp = analyze_critical_path(trace)
    tl = build_timeline(trace, cp, max_bars=400)
    assert tl.aggregated and tl.dispatches == 1228
    assert 0 < len(tl.bars) <= 400
    assert "1,228 dispatches drawn as" in tl.notes[0]
    assert np.all((tl.bars.busy > 0) & (tl.bars.busy <= 1))
    # Busy fraction x bin width gives back the stream's dispatch time (the one stream of this run).
    assert tl.lanes == ["stream 0"]
    binned = float((tl.bars.busy * (tl.bars.end - tl.bars.start)).sum())
    assert binned == pytest.approx(float(trace.duration.sum()), rel=0.02)
    # The path is merged into steps, still covering at least the critical path's time.
    assert 0 < len(tl.path) <= len(cp.path)
    assert int((tl.path.end - tl.path.start).sum()) >= cp.critical_path_ns


def test_an_empty_profile_says_so():
    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    empty = trace.__class__(**{**trace.__dict__, **{k: getattr(trace, k)[:0] for k in
                                                    ("start", "end", "agent", "queue", "stream", "kernel", "corr", "grid", "workgroup")}})
    tl = build_timeline(empty, analyze_critical_path(empty))
    assert len(tl.bars) == 0 and tl.notes == ["the profile holds no dispatches"]
