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
