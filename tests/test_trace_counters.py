"""Hardware counters in the Trace: rocprofv3 counter_collection.csv, rocpd pmc tables, the pmc_N folders
of a multi-pass collection, and rocprof-compute workload folders."""

import csv
import math
import shutil
import sqlite3

import numpy as np
import pytest

from conftest import DATA
from counter_profiles import (COUNTER_HEADER, docs_dispatches, measured_counters, rocpd_with_counters,
                              write_counter_collection)
from rocm_perf import cli
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.rocpd_write import write_rocpd

RPC = DATA / "rocprof-compute"
NAMES = ["SQ_WAVES", "TCC_EA0_RDREQ_sum", "TCC_BUBBLE_sum", "TCP_TCC_READ_REQ_sum"]


def _one_error_line(capsys, argv) -> str:
    assert cli.main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# ---- rocprofv3 counter_collection.csv -----------------------------------------------------------


def test_real_counter_collection_csv_keeps_its_counter_per_dispatch():
    t = load_trace(DATA / "rocprofv3-csv" / "counter_collection.csv")
    assert len(t) == 4 and list(t.counters) == ["SQ_WAVES"]
    assert t.counters["SQ_WAVES"].tolist() == [16384.0] * 4  # the file's "16384.000000" per dispatch
    assert t.runtime_ns == (3200098838483232 - 3200098838431081) + (3200098838638794 - 3200098838589014) + \
        (3200098838793025 - 3200098838746207) + (3200098838927550 - 3200098838879399)


def test_a_dispatch_without_a_counter_row_gets_nan(tmp_path):
    values = measured_counters(NAMES, [d for d in range(1, 14)])
    del values[3]["TCC_BUBBLE_sum"]
    t = load_trace(write_counter_collection(tmp_path / "counter_collection.csv", values))
    row = [int(c) for c in t.corr].index(3)
    assert math.isnan(t.counters["TCC_BUBBLE_sum"][row])
    assert np.isfinite(np.delete(t.counters["TCC_BUBBLE_sum"], row)).all()


def test_a_counter_value_that_is_not_a_number_names_the_line(tmp_path, capsys):
    path = write_counter_collection(tmp_path / "counter_collection.csv", measured_counters(["SQ_WAVES"], [1, 2]))
    rows = list(csv.reader(open(path, newline="")))
    rows[2][COUNTER_HEADER.index("Counter_Value")] = "lots"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    err = _one_error_line(capsys, ["analyze", str(path), "--arch", "gfx942"])
    assert f"{path}: line 3: Counter_Value of SQ_WAVES is 'lots', not a number" in err


# ---- rocpd pmc tables ---------------------------------------------------------------------------


def test_rocpd_pmc_rows_become_columns_joined_through_the_event(tmp_path):
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(NAMES, dispatches)
    t = load_trace(rocpd_with_counters(tmp_path / "pmc.db", values, split="TCC_EA0_RDREQ_sum"))
    assert sorted(t.counters) == sorted(NAMES)
    # Dispatch order in the trace is by start; map each row back to its dispatch through the CSV's start times.
    start_to_id = {int(d["Start_Timestamp"]): int(d["Dispatch_Id"]) for d in docs_dispatches()}
    for row, start in enumerate(t.start.tolist()):
        did = start_to_id[start]
        for name in NAMES:
            assert t.counters[name][row] == values[did][name]  # the split counter's two instance rows are summed


def test_the_empty_fixture_pmc_tables_give_no_counters():
    assert load_trace(DATA / "rocpd_v3_docs_kernel_trace.db").counters == {}


def test_counters_round_trip_through_our_rocpd_writer(tmp_path):
    source = load_trace(RPC / "MI300X_vcopy")
    source.counters["TCC_BUBBLE_sum"][1] = np.nan  # not collected for the second dispatch
    back = load_trace(write_rocpd(source, tmp_path / "copy.db"))
    assert sorted(back.counters) == sorted(source.counters)
    for name, column in source.counters.items():
        np.testing.assert_array_equal(back.counters[name], column)


def test_a_merged_file_reads_the_counters_of_every_uuid_set(tmp_path):
    """Two uuid sets in one file (rocpd files can be merged): each set's pmc rows join its own dispatches."""
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(NAMES, dispatches)
    merged = rocpd_with_counters(tmp_path / "merged.db", values)
    second_trace = load_trace(RPC / "MI200_vcopy")
    second_trace.start += 10**18  # after every dispatch of the first set
    second_trace.end += 10**18
    second = write_rocpd(second_trace, tmp_path / "second.db")
    con = sqlite3.connect(merged)
    con.execute("ATTACH ? AS other", (str(second),))
    for name, sql in con.execute("SELECT name, sql FROM other.sqlite_master WHERE type='table' AND name LIKE 'rocpd_%'").fetchall():
        con.execute(sql)
        con.execute(f'INSERT INTO main."{name}" SELECT * FROM other."{name}"')
    con.commit()
    con.close()
    t = load_trace(merged)
    assert t.metadata["uuid_sets"] == 2 and len(t) == 10
    assert t.counters["TCC_EA_RDREQ_sum"][-1] == 131080.0  # the MI200 set's dispatch
    assert np.isnan(t.counters["TCC_EA_RDREQ_sum"][:-1]).all()  # the docs set never had it
    assert np.isnan(t.counters["TCC_BUBBLE_sum"][-1]) and np.isfinite(t.counters["TCC_BUBBLE_sum"][:-1]).all()


# ---- multi-pass folders ---------------------------------------------------------------------------


def _passes(tmp_path, split=(NAMES[:2], NAMES[2:]), kind="pmc"):
    dispatches = [int(d["Dispatch_Id"]) for d in docs_dispatches()]
    values = measured_counters(NAMES, dispatches)
    for n, names in enumerate(split, start=1):
        part = {d: {k: v for k, v in per.items() if k in names} for d, per in values.items()}
        write_counter_collection(tmp_path / "out" / f"{kind}_{n}" / "host" / f"{100 + n}_counter_collection.csv", part)
    return tmp_path / "out", values


def test_pass_folders_join_per_dispatch(tmp_path):
    folder, values = _passes(tmp_path)
    t = load_trace(folder)
    assert t.metadata["counter_passes"] == ["pmc_1", "pmc_2"]
    assert sorted(t.counters) == sorted(NAMES) and len(t) == 9
    by_id = {int(c): i for i, c in enumerate(t.corr)}  # the CSV's Correlation_Id = Dispatch_Id here
    for did, per in values.items():
        for name, value in per.items():
            assert t.counters[name][by_id[did]] == value


def test_a_collection_further_down_is_found(tmp_path):
    folder, values = _passes(tmp_path)
    run = tmp_path / "run" / "counters"
    shutil.move(str(folder), str(run / "rocprofv3" / "attempt-1"))
    assert load_trace(run).metadata["counter_passes"] == ["pmc_1", "pmc_2"]
    shutil.copytree(run / "rocprofv3" / "attempt-1", run / "rocprofv3" / "attempt-2")
    with pytest.raises(RocmPerfError, match="folder holds several counter collections"):
        load_trace(run)


def test_pass_n_folders_are_accepted_too(tmp_path):
    folder, _ = _passes(tmp_path, kind="pass")
    assert sorted(load_trace(folder).counters) == sorted(NAMES)


def test_one_pass_folder_given_alone_points_at_its_parent(tmp_path, capsys):
    folder, _ = _passes(tmp_path)
    err = _one_error_line(capsys, ["analyze", str(folder / "pmc_2"), "--arch", "gfx942"])
    assert f"{folder / 'pmc_2'}: one pass of a 2-pass counter collection; give its parent folder {folder}" in err


def test_a_later_pass_without_the_first_is_refused(tmp_path, capsys):
    folder, _ = _passes(tmp_path)
    lone = tmp_path / "copied" / "pmc_2"
    shutil.copytree(folder / "pmc_2", lone)
    err = _one_error_line(capsys, ["analyze", str(lone), "--arch", "gfx942"])
    assert "pass 2 of a multi-pass counter collection without the others (pmc_1 is not beside it)" in err


def test_a_gap_in_the_pass_numbers_is_refused(tmp_path, capsys):
    folder, _ = _passes(tmp_path, split=(NAMES[:1], NAMES[1:2], NAMES[2:]))
    shutil.rmtree(folder / "pmc_2")
    err = _one_error_line(capsys, ["analyze", str(folder), "--arch", "gfx942"])
    assert f"{folder}: counter passes pmc_2 missing (found pmc_1, pmc_3)" in err


def test_passes_of_different_work_are_not_joined(tmp_path, capsys):
    folder, values = _passes(tmp_path)
    fewer = [d for d in docs_dispatches() if d["Dispatch_Id"] != "13"]
    part = {d: {k: v for k, v in per.items() if k in NAMES[2:]} for d, per in values.items()}
    write_counter_collection(folder / "pmc_2" / "host" / "102_counter_collection.csv", part, fewer)
    err = _one_error_line(capsys, ["analyze", str(folder), "--arch", "gfx942"])
    assert "pass pmc_2 has 8 dispatches, pmc_1 has 9: the passes ran different work" in err


def test_passes_with_several_processes_are_refused(tmp_path, capsys):
    folder, values = _passes(tmp_path)
    write_counter_collection(folder / "pmc_1" / "host" / "999_counter_collection.csv", values)
    err = _one_error_line(capsys, ["analyze", str(folder), "--arch", "gfx942"])
    assert "holds the counters of 2 processes" in err


# ---- rocprof-compute workload folders -----------------------------------------------------------------


def test_rocprof_compute_mi200_workload():
    t = load_trace(RPC / "MI200_vcopy")
    assert t.metadata["format"] == "rocprof-compute" and len(t) == 1
    assert t.symbols[0].display_name == "vecCopy(double*, double*, double*, int, int)"  # " [clone .kd]" dropped
    assert t.duration.tolist() == [1411987252082105 - 1411987252061945]
    (agent,) = t.agents
    assert (agent.id, agent.name, agent.cu_count) == (2, "gfx90a", 104)
    assert agent.extra["max_engine_clk_fcompute"] == 1700 and agent.extra["max_mem_clk_mhz"] == 1600
    assert agent.extra["hbm_channels"] == 32 and agent.extra["l2_channels"] == 32
    # roofline.csv's row for device 2 (the GPU_ID the dispatch ran on), GB/s and GFLOP/s -> per second
    assert agent.measured_peaks["hbm"] == pytest.approx(1388.7931e9)
    assert agent.measured_peaks["mfma_f64"] == pytest.approx(41638.535e9)
    assert t.counters["TCC_EA_RDREQ_sum"].tolist() == [131080.0]
    assert "TCC_EA_RDREQ" not in t.counters  # per-instance columns are not counters of their own


def test_rocprof_compute_mi300x_workload():
    t = load_trace(RPC / "MI300X_vcopy")
    assert len(t) == 3 and t.symbols[0].display_name == "vecCopy(double*, double*, double*, int, int)"  # " (.kd)"
    assert t.duration.tolist() == [16160, 13680, 14160]
    (agent,) = t.agents
    assert (agent.name, agent.product, agent.cu_count, agent.measured_peaks) == ("gfx942", "MI300X_A1", 304, {})
    assert t.counters["TCC_BUBBLE_sum"].tolist() == [65536.0] * 3


def test_instance_columns_are_summed_when_the_sum_column_is_absent(tmp_path):
    folder = tmp_path / "w"
    shutil.copytree(RPC / "MI200_vcopy", folder)
    path = folder / "pmc_perf.csv"
    rows = list(csv.reader(open(path, newline="")))
    header = rows[0]
    drop = header.index("TCC_EA_RDREQ_sum")
    instances = [i for i, h in enumerate(header) if h.startswith("TCC_EA_RDREQ[")]
    expected = sum(float(rows[1][i]) for i in instances)
    rows = [r[:drop] + r[drop + 1 :] for r in rows]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    t = load_trace(folder)
    # The instance columns were collected in another pass than the _sum column: 131081 there, 131080 here.
    assert len(instances) == 32 and t.counters["TCC_EA_RDREQ_sum"].tolist() == [expected] == [131081.0]
