"""The acceptance bench's twin programs do the extra work their builds claim (tests/bench/bench_acceptance.py)."""

from __future__ import annotations

import pytest

from conftest import DATA

from rocm_perf.backends.host import HostBackend
from rocm_perf.trace.load import load_trace


@pytest.mark.slow
def test_the_stencil_twin_sweeps_as_many_more_times_as_its_permille_says(tmp_path):
    """bench_twin_stencil.cu launches one sweep per dispatch: the plain build 600, the 5 % twin
    (EXTRA_PERMILLE=53, as the bench builds it for a 5 % gain) 631, each a `smooth` dispatch in
    the host backend's real trace."""
    backend = HostBackend()
    counts = {}
    for permille in (0, 53):
        program = backend.build(DATA / "programs" / "bench_twin_stencil.cu", tmp_path / f"p{permille}",
                                [f"-DEXTRA_PERMILLE={permille}"])
        result = backend.profile([str(program.executable)], tmp_path / f"profile{permille}", timeout=120)
        assert result.returncode == 0 and result.stdout.startswith("checksum ")
        trace = load_trace(result.databases[0])
        names = {trace.symbol_name(i) for i in range(len(trace.kernel))}
        assert len(names) == 1 and next(iter(names)).startswith("smooth")
        counts[permille] = len(trace.kernel)
    assert counts == {0: 600, 53: 631}
    assert 1 - counts[0] / counts[53] == pytest.approx(0.05, abs=0.001)
