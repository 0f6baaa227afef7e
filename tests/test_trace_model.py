import numpy as np

from rocm_perf.trace import KernelSymbol, Trace, UNKNOWN


def test_from_rows_sorts_by_start_and_sums_runtime():
    syms = [KernelSymbol("_Z1av", "a()"), KernelSymbol("_Z1bv", "b()")]
    t = Trace.from_rows(start=[30, 10], end=[35, 20], kernel=[1, 0], symbols=syms)
    assert list(t.start) == [10, 30]
    assert [t.symbol_name(i) for i in range(len(t))] == ["a()", "b()"]
    assert t.runtime_ns == 15
    assert not t.has_streams
    assert (t.stream == UNKNOWN).all()
    assert t.grid.shape == (2, 3) and np.all(t.grid == 1)


def test_markers_from_rows_sort_by_start_and_keep_links():
    from rocm_perf.trace.model import MARK, Markers

    m = Markers.from_rows([
        {"name": "inner", "start": 20, "end": 30, "tid": 7},
        {"name": "gpu inner", "start": 21, "end": 29, "agent": 2, "stream": 0, "link": 0},
        {"name": "outer", "start": 10, "end": 40, "tid": 7},
        {"name": "tick", "start": 15, "end": 15, "tid": 7, "kind": MARK},
    ])
    assert [m.name_of(i) for i in range(len(m))] == ["outer", "tick", "inner", "gpu inner"]
    assert m.link.tolist() == [UNKNOWN, UNKNOWN, UNKNOWN, 2]  # renumbered to the sorted row of "inner"
    assert m.on_gpu.tolist() == [False, False, False, True]
