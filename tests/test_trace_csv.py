"""rocprofv3 CSV: kernel_trace.csv in its ROCm 7, ROCm 6 and `rocpd convert` layouts, and folders."""

import csv

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace

CSV = DATA / "rocprofv3-csv"


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _write(path, rows):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def test_kernel_trace_csv_matches_the_rocpd_fixture_made_from_it():
    t = load_trace(CSV / "kernel_trace.csv")
    db = load_trace(DATA / "rocpd_v3_docs_kernel_trace.db")
    assert t.metadata["format"] == "rocprofv3-csv"
    assert len(t) == 9 and t.runtime_ns == db.runtime_ns == 96_160
    assert list(t.stream) == list(db.stream) and list(t.queue) == list(db.queue)
    assert [t.symbol_name(i) for i in range(9)] == [db.symbol_name(i) for i in range(9)]
    divide = next(s for s in t.symbols if s.display_name.startswith("divide_kernel"))
    assert (divide.vgpr, divide.agpr, divide.sgpr) == (12, 4, 16)
    assert list(t.agent) == [4] * 9 and list(t.grid[0]) == [1024, 1024, 1]


def test_rocm6_layout_without_stream_id(tmp_path):
    rows = _rows(CSV / "kernel_trace.csv")
    header = rows[0]
    drop = header.index("Stream_Id")
    rename = {"LDS_Block_Size": "Group_Segment_Size", "Scratch_Size": "Private_Segment_Size"}
    rows = [[rename.get(c, c) if n == 0 else c for c in r[:drop] + r[drop + 1 :]] for n, r in enumerate(rows)]
    t = load_trace(_write(tmp_path / "kernel_trace.csv", rows))
    assert len(t) == 9 and t.runtime_ns == 96_160
    assert not t.has_streams and set(t.queue.tolist()) == {1, 2, 3, 4}
    assert t.symbols[0].lds_bytes == 0


def test_rocpd_convert_layout_with_guid_column(tmp_path):
    rows = _rows(CSV / "kernel_trace.csv")
    guid = "0000ddb5-8903-7903-b269-cd8d3745bb8a"  # as in the real rocpd-to-csv.csv
    rows = [["Guid"] + rows[0]] + [[guid] + r for r in rows[1:]]
    t = load_trace(_write(tmp_path / "out_kernel_trace.csv", rows))
    assert len(t) == 9 and t.runtime_ns == 96_160 and set(t.stream.tolist()) == {1, 2, 3, 4}


def test_truncated_names_and_counter_collection():
    t = load_trace(CSV / "kernel_trace_truncated.csv")
    assert {s.display_name for s in t.symbols} == {"addition_kernel", "divide_kernel", "multiply_kernel", "subtract_kernel"}
    c = load_trace(CSV / "counter_collection.csv")  # one row per dispatch and counter, folded per dispatch
    assert len(c) == len({r[1] for r in _rows(CSV / "counter_collection.csv")[1:]})
    assert c.metadata["pid"] == 15606


def test_folder_takes_the_kernel_trace_and_ignores_other_runs():
    t = load_trace(CSV)
    assert len(t) == 9 and t.metadata["csv_files"] == ["kernel_trace.csv"]
    assert t.metadata["source_path"] == str(CSV) and t.api is None


def test_folder_with_pid_named_files_and_hip_api_trace(tmp_path):
    run = tmp_path / "node7"
    run.mkdir()
    (run / "834304_kernel_trace.csv").write_bytes((CSV / "kernel_trace.csv").read_bytes())
    api = _rows(CSV / "hip_runtime_trace.csv")
    _write(run / "834304_hip_api_trace.csv", api)
    t = load_trace(run)
    assert len(t) == 9 and t.metadata["pid"] == 834304 and t.metadata["api_trace"] is True
    assert len(t.api) == len(api) - 1 and np.all(np.diff(t.api.start) >= 0)
    assert (t.api.stream == -1).all() and t.metadata["api_args"] is False
    assert "hipMalloc" in t.api.names


def test_csv_with_missing_columns_names_them(tmp_path):
    rows = [r[:9] + r[10:] for r in _rows(CSV / "kernel_trace.csv")]  # drop Start_Timestamp
    with pytest.raises(RocmPerfError, match=r"lacks column\(s\) Start_Timestamp"):
        load_trace(_write(tmp_path / "k.csv", rows))


def test_csv_with_a_cut_off_row(tmp_path):
    text = (CSV / "kernel_trace.csv").read_text()
    bad = tmp_path / "kernel_trace.csv"
    bad.write_text(text[: len(text) - 40])
    with pytest.raises(RocmPerfError, match=r"kernel_trace.csv: line 10: .* fields"):
        load_trace(bad)


def test_folder_without_kernel_trace(tmp_path):
    _write(tmp_path / "1_hip_api_trace.csv", _rows(CSV / "hip_runtime_trace.csv"))
    with pytest.raises(RocmPerfError, match="no kernel trace CSV"):
        load_trace(tmp_path)
