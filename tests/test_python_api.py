"""The Python API (`import rocm_perf as rp`) on the real fixtures: its docstrings' examples run as
doctests, every result's `.to_dict()` is the data of the command's JSON, and its tables are
DataFrames of the trace's own columns."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import numpy as np
import pytest

import rocm_perf as rp
from conftest import DATA, ROOT
from rocm_perf.cli import main

MULTISTREAM = DATA / "rocpd_v3_multistream.db"
KINETO = DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _json(value):
    """As the commands print it (json.dumps(..., default=str)) and read back."""
    return json.loads(json.dumps(value, default=str))


@pytest.mark.parametrize("module", ["rocm_perf.api.trace", "rocm_perf.api.results"])
def test_the_docstring_examples_run_on_the_fixtures(module, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name fixtures by their path in the checkout
    __import__(module)
    result = doctest.testmod(sys.modules[module], optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_the_stable_names_are_there_and_load_nothing_until_used():
    assert set(rp.__all__) >= {"load", "Trace", "critical_path", "compare", "analyze", "triage", "hotspots", "RocmPerfError"}
    assert set(rp.API) <= set(dir(rp))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rp.nope  # noqa: B018
    # importing the package (the CLI does, for every command) pulls in neither the API nor pandas
    probe = "import sys, rocm_perf.errors, rocm_perf.cli; print('rocm_perf.api' in sys.modules, 'pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_python_m_rocm_perf_is_the_cli():
    done = subprocess.run([sys.executable, "-m", "rocm_perf", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith(rp.__version__)


def test_tables_are_the_traces_own_columns():
    trace = rp.load(MULTISTREAM)
    assert isinstance(trace, rp.Trace) and len(trace) == 15
    d = trace.dispatches()
    assert d.start_ns.tolist() == trace.start.tolist() and d.end_ns.tolist() == trace.end.tolist()
    assert d.duration_ns.tolist() == (trace.end - trace.start).tolist()
    assert d.kernel.tolist() == [trace.symbol_name(i) for i in range(len(trace))]
    k = trace.kernels()
    assert int(k.total_ns.sum()) == trace.runtime_ns and k.share.sum() == pytest.approx(1.0)
    calls = trace.api_calls()
    assert len(calls) == len(trace.api) and calls.correlation_id.tolist() == trace.api.corr.tolist()
    assert calls.event.isna().any() and str(calls.event.dtype) == "Int64"  # handles stay exact integers


def test_counters_are_dispatch_columns_and_a_trace_without_api_calls_has_an_empty_table():
    trace = rp.load(DATA / "rocprof-compute" / "MI300X_vcopy")
    d = trace.dispatches()
    assert "SQ_WAVES" in d.columns and np.array_equal(d.SQ_WAVES.to_numpy(), trace.counters["SQ_WAVES"], equal_nan=True)
    plain = rp.load(DATA / "rocprofv3-csv" / "kernel_trace.csv")
    assert len(plain.api_calls()) == 0 and list(plain.api_calls().columns)[:2] == ["name", "start_ns"]


def test_to_dict_is_the_commands_json(capsys, tmp_path):
    capsys.readouterr()
    assert main(["summary", str(MULTISTREAM), "--json"]) == 0
    assert _json(rp.summary(MULTISTREAM).to_dict()) == json.loads(capsys.readouterr().out)
    assert main(["summary", str(KINETO), "--json", "--by-phase"]) == 0
    assert _json(rp.summary(KINETO, by_phase=True).to_dict()) == json.loads(capsys.readouterr().out)
    assert main(["critical-path", str(MULTISTREAM), "--json"]) == 0
    assert _json(rp.critical_path(MULTISTREAM).to_dict()) == json.loads(capsys.readouterr().out)
    assert main(["triage", str(KINETO), "--json"]) == 0
    assert _json(rp.triage(KINETO).to_dict()) == json.loads(capsys.readouterr().out)
    a, b = DATA / "rocprofv3-csv" / "kernel_trace.csv", DATA / "rocpd_v3_docs_kernel_trace.db"  # one run, two formats
    assert main(["compare", str(a), str(b), "--json"]) == 0
    assert _json(rp.compare(a, b).to_dict()) == json.loads(capsys.readouterr().out)
    workload = DATA / "rocprof-compute" / "MI300X_vcopy"
    assert main(["analyze", str(workload), "--json"]) == 0
    assert _json(rp.analyze(workload).to_dict()) == json.loads(capsys.readouterr().out)
    assert main(["hotspots", str(DATA / "pc-sampling"), "--out", str(tmp_path)]) == 0
    assert _json(rp.hotspots(DATA / "pc-sampling").to_dict()) == json.loads((tmp_path / "hotspots.json").read_text())
    capsys.readouterr()
    assert main(["hotspots", str(DATA / "pc-sampling"), "--json", "--top", "2"]) == 0
    assert _json(rp.hotspots(DATA / "pc-sampling", top=2).to_dict()) == json.loads(capsys.readouterr().out)


def test_a_loaded_trace_and_a_path_give_the_same_answers():
    trace = rp.load(MULTISTREAM)
    assert rp.critical_path(trace).to_dict() == rp.critical_path(MULTISTREAM).to_dict()
    assert rp.summary(trace).to_dict() == rp.summary(MULTISTREAM).to_dict()
    assert rp.summary(trace).kernels().short_name.tolist() == trace.kernels().short_name.tolist()
    cp = rp.critical_path(trace).kernels()
    assert cp.cp_ns.tolist()[:3] == [300000, 240000, 120000] and cp.cp_ns.sum() == 660000


def test_bad_input_is_the_one_error_type(tmp_path):
    with pytest.raises(rp.RocmPerfError, match="no such file or directory"):
        rp.load(tmp_path / "missing.db")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(rp.RocmPerfError, match="empty file"):
        rp.critical_path(tmp_path / "empty.csv")


def test_without_pandas_the_tables_say_how_to_get_it(monkeypatch):
    trace = rp.load(MULTISTREAM)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'rocm-perf\[pandas\]'"):
        trace.kernels()
    assert rp.critical_path(trace).length_ns == 660000  # what is not a table needs no pandas
