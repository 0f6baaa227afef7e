"""roctx phases: the host runtime's roctx through both include paths, written as rocprofv3 writes them,
read back from every format, and the per-phase kernel table (`summary --by-phase`)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3

import numpy as np
import pytest

from conftest import DATA
from host_programs import HOST, built  # noqa: F401  (session fixture)
from rocm_perf.analysis.phases import NO_RANGE, fold_number, phase_table
from rocm_perf.backends.host import HostBackend
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import MARK, PROCESS_RANGE, THREAD_RANGE, KernelSymbol, Markers, Trace
from rocm_perf.trace.rocpd_write import write_rocpd
from test_perfetto import check_trace_event_format

# The program's phases, as its source says (tests/data/host/roctx_phases.cu): kernel -> calls.
EXPECTED = {
    "prefill": {"fill(float*, float, int)": 3},
    "prefill/attention": {"scale(float*, float, int)": 3},
    "decode": {"scale(float*, float, int)": 4},
    "io": {"copy_back(float const*, float*, int)": 1},
    NO_RANGE: {"fill(float*, float, int)": 1},
}


@pytest.fixture(scope="module")
def roctx_db(tmp_path_factory, built):  # noqa: F811
    out = tmp_path_factory.mktemp("roctx")
    result = HostBackend().profile([str(built("roctx_phases"))], out)
    assert result.returncode == 0 and "PASSED" in result.stdout, result.stderr
    (db,) = result.databases
    return db


def test_rocpd_holds_ranges_and_marks_as_rocprofv3_writes_them(roctx_db):
    con = sqlite3.connect(roctx_db)
    regions = con.execute("SELECT category, name, json_extract(extdata, '$.message') FROM regions "
                          "WHERE category LIKE 'MARKER%' ORDER BY start").fetchall()
    assert regions == [("MARKER_CORE_RANGE_API", "roctxThreadRangeA", "prefill"),
                       ("MARKER_CORE_RANGE_API", "roctxThreadRangeA", "attention")] + \
        [("MARKER_CORE_RANGE_API", "roctxThreadRangeA", "decode")] * 4 + \
        [("MARKER_CORE_RANGE_API", "roctxProcessRangeA", "io")]
    samples = con.execute("SELECT category, json_extract(extdata, '$.message') FROM samples").fetchall()
    assert samples == [("MARKER_CORE_RANGE_API", "prefill done")]
    # the ranges sit on the thread that launched the kernels inside them
    launch_tids = {r[0] for r in con.execute("SELECT DISTINCT tid FROM regions WHERE name = 'hipLaunchKernel'")}
    assert {r[0] for r in con.execute("SELECT DISTINCT tid FROM regions WHERE category LIKE 'MARKER%'")} == launch_tids


def test_per_phase_table_is_known_exactly(roctx_db, capsys):
    assert main(["summary", str(roctx_db), "--by-phase", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    phases = {p["name"]: p for p in doc["phases"]}
    assert [p["name"] for p in doc["phases"]] == ["prefill", "prefill/attention", "decode", "io", NO_RANGE]
    assert {n: {k["name"]: k["calls"] for k in p["kernels"]} for n, p in phases.items()} == EXPECTED
    assert phases["decode"]["instances"] == 4 and phases["prefill"]["instances"] == 1
    # GPU time: the dispatches' own durations, summed straight from the database
    con = sqlite3.connect(roctx_db)
    durations = [r[0] for r in con.execute('SELECT "end" - start FROM rocpd_kernel_dispatch ORDER BY start')]
    order = ["prefill"] * 2 + ["prefill/attention"] * 3 + ["prefill"] + ["decode"] * 4 + ["io"] + [NO_RANGE]
    expected_gpu = {}
    for name, d in zip(order, durations):  # launches run in program order on the null stream
        expected_gpu[name] = expected_gpu.get(name, 0) + d
    assert {n: p["gpu_ns"] for n, p in phases.items()} == expected_gpu
    assert sum(p["gpu_ns"] for p in doc["phases"]) == doc["runtime_ns"]
    # wall time: the range itself (nested ranges included), from the regions
    walls = dict(con.execute("SELECT json_extract(extdata, '$.message'), SUM(\"end\" - start) FROM regions "
                             "WHERE category LIKE 'MARKER%' GROUP BY 1").fetchall())
    assert phases["prefill"]["wall_ns"] == walls["prefill"] and phases["decode"]["wall_ns"] == walls["decode"]
    assert phases["prefill/attention"]["wall_ns"] == walls["attention"]
    assert phases[NO_RANGE]["wall_ns"] is None


def test_by_phase_on_the_terminal_and_in_files(roctx_db, capsys, tmp_path):
    assert main(["summary", str(roctx_db), "--by-phase", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "prefill/attention: wall" in out and "decode: wall" in out and "entered 4x" in out
    assert "## Phases (roctx ranges)" in (tmp_path / "profile_summary.md").read_text()
    assert len(json.loads((tmp_path / "phases.json").read_text())["phases"]) == 5


def test_perfetto_shows_ranges_on_their_thread_track(roctx_db, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["export", str(roctx_db), "--perfetto", str(out)]) == 0
    assert "7 ranges and 1 marks" in capsys.readouterr().out
    by_phase = check_trace_event_format(json.loads(out.read_text()))
    prefill = next(e for e in by_phase["X"] if e["name"] == "prefill")
    launches = [e for e in by_phase["X"] if e["name"] == "hipLaunchKernel"]
    assert {(e["pid"], e["tid"]) for e in launches} == {(prefill["pid"], prefill["tid"])}
    mark = by_phase["i"][0]
    assert mark["name"] == "prefill done" and (mark["pid"], mark["tid"]) == (prefill["pid"], prefill["tid"])
    io = next(e for e in by_phase["X"] if e["name"] == "io")
    assert io["tid"] != prefill["tid"]  # a start/stop range gets a lane of its own


def test_an_unmatched_pop_is_one_line(tmp_path, capsys):
    argv = ["profile", str(HOST / "roctx_unmatched_pop.cu"), "--backend", "host", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "roctxRangePop" in err and "no range open" in err and "roctx_unmatched_pop" in err
    assert "Traceback" not in err


def test_rocm_6_4_names_read_the_same(roctx_db, tmp_path):
    """ROCm 6.4's rocprofv3 files the same ranges as MARKER_CORE_API regions named after the opening call."""
    old = tmp_path / "rocm64.db"
    shutil.copy(roctx_db, old)
    con = sqlite3.connect(old)
    (table,) = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                           "AND name LIKE 'rocpd_string_%'")]
    for new_name, old_name in (("MARKER_CORE_API", "MARKER_CORE_RANGE_API"), ("roctxRangePushA", "roctxThreadRangeA"),
                               ("roctxRangeStartA", "roctxProcessRangeA")):
        con.execute(f'UPDATE "{table}" SET string = ? WHERE string = ?', (new_name, old_name))
    con.commit()
    con.close()
    a, b = load_trace(roctx_db), load_trace(old)
    for column in ("start", "end", "tid", "kind"):
        assert np.array_equal(getattr(a.markers, column), getattr(b.markers, column))
    assert [p.name for p in phase_table(a).phases] == [p.name for p in phase_table(b).phases]


# ---- the other formats ----------------------------------------------------------------------------


def test_legacy_rpd_user_markers_place_kernels_in_their_innermost_range(tmp_path):
    trace = load_trace(DATA / "mytrace.rpd.gz")
    assert len(trace.markers) == 11884 and set(trace.markers.kind.tolist()) == {THREAD_RANGE}
    table = phase_table(trace, fold_numbers=False)
    # independently: each kernel op -> its launch call -> the latest-starting UserMarker open on that thread
    raw = tmp_path / "mytrace.rpd"
    raw.write_bytes(gzip.decompress((DATA / "mytrace.rpd.gz").read_bytes()))
    with sqlite3.connect(raw) as con:
        rows = con.execute("""
            SELECT o.id, (SELECT s.string FROM rocpd_api m JOIN rocpd_string s ON s.id = m.args_id
                          WHERE m.apiName_id = (SELECT id FROM rocpd_string WHERE string = 'UserMarker')
                            AND m.tid = a.tid AND m.start <= a.start AND m."end" > a.start
                          ORDER BY m.start DESC, m."end" ASC LIMIT 1)
            FROM rocpd_op o JOIN rocpd_api_ops ao ON ao.op_id = o.id JOIN rocpd_api a ON a.id = ao.api_id
            WHERE o.opType_id = (SELECT id FROM rocpd_string WHERE string = 'KernelExecution')
            ORDER BY o.start, o.id""").fetchall()
    assert len(rows) == len(trace)
    innermost = [table.paths[p].split("/")[-1] if p >= 0 else None for p in table.phase_of.tolist()]
    assert innermost == [r[1] for r in rows]
    by_name = {p.name: p for p in table.phases}
    scaled_mm = by_name["generate/_run_engine/execute_model/aten::_scaled_mm"]
    assert scaled_mm.dispatches == 256 and scaled_mm.instances == 256
    assert sum(p.gpu_ns for p in table.phases) == trace.runtime_ns


def test_marker_api_trace_csv(tmp_path):
    docs = DATA / "rocprofv3-csv"
    # in the documentation's folder the marker file is another run's (pid 717): left out
    assert load_trace(docs).markers is None
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(docs / "marker_api_trace.csv", run / "717_marker_api_trace.csv")
    shutil.copy(docs / "kernel_trace.csv", run / "717_kernel_trace.csv")
    trace = load_trace(run)
    m = trace.markers
    kinds = {m.name_of(i): int(m.kind[i]) for i in range(len(m))}
    assert kinds == {"before hipLaunchKernel": MARK, "after hipLaunchKernel": MARK, "hipMemcpy": THREAD_RANGE,
                     "hipLaunchKernel": THREAD_RANGE, "hipLaunchKernel range": PROCESS_RANGE}
    table = phase_table(trace)
    assert {p.name for p in table.phases if p.wall_ns} == {
        "hipLaunchKernel range", "hipLaunchKernel range/hipLaunchKernel", "hipLaunchKernel range/hipLaunchKernel/hipMemcpy"}


def test_kineto_kernels_follow_the_gpu_side_annotation_else_the_launch_thread():
    trace = load_trace(DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    table = phase_table(trace)
    raw = json.loads(gzip.decompress((DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes()))
    events = raw["traceEvents"]
    gpu = [e for e in events if e.get("cat") == "gpu_user_annotation"]
    host = [e for e in events if e.get("cat") == "user_annotation"]
    launch_tid = {e["args"]["correlation"]: e["tid"] for e in events if e.get("cat") == "cuda_runtime"}
    names = {}
    for e in (e for e in events if e.get("cat") == "kernel"):
        inside = [g for g in gpu if g["ts"] <= e["ts"] < g["ts"] + g["dur"]]
        if inside:
            names[e["args"]["correlation"]] = min(inside, key=lambda g: g["dur"])["name"]
        elif any(h["tid"] == launch_tid[e["args"]["correlation"]] for h in host):
            names[e["args"]["correlation"]] = "host range"
        else:
            names[e["args"]["correlation"]] = None
    for row, p in enumerate(table.phase_of.tolist()):
        expected = names[int(trace.corr[row])]
        got = table.paths[p] if p >= 0 else None
        if expected is None:
            assert got is None
        elif expected != "host range":
            assert got.split("/")[-1] == fold_number(expected)
    by_name = {p.name: p for p in table.phases}
    assert by_name["ProfilerStep#*/Optimizer.step#SGD.step"].dispatches == 1  # nested via the host twin
    assert by_name[NO_RANGE].dispatches == 7  # launched by the autograd thread, which opened no range
    assert by_name["ProfilerStep#*"].instances == 2


def test_ranges_that_end_before_they_start_are_one_line(tmp_path, capsys):
    t = Trace.from_rows(start=[10], end=[20], kernel=[0], symbols=[KernelSymbol("k", "k()")])
    t.markers = Markers.from_rows([{"name": "broken", "start": 100, "end": 50, "tid": 1}])
    db = write_rocpd(t, tmp_path / "broken.db")
    assert main(["summary", str(db), "--by-phase"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(db) in err and "ends before it starts" in err


def test_folding_numbered_ranges():
    assert fold_number("ProfilerStep#1009") == "ProfilerStep#*"
    assert fold_number("Optimizer.step#SGD.step") == "Optimizer.step#SGD.step"
    trace = load_trace(DATA / "torch-trace" / "a100_control.json.gz")
    folded = {p.name for p in phase_table(trace).phases}
    kept = {p.name for p in phase_table(trace, fold_numbers=False).phases}
    assert "ProfilerStep#*" in folded and not any("#1009" in n for n in folded)
    assert sum(n.startswith("ProfilerStep#10") for n in kept) > len([n for n in folded if n.startswith("ProfilerStep")])


def test_no_ranges_gives_one_phase_and_says_why(capsys):
    assert main(["summary", str(DATA / "rocpd_v3_multistream.db"), "--by-phase", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in doc["phases"]] == [NO_RANGE]
    assert doc["phases"][0]["gpu_ns"] == doc["runtime_ns"]


def test_phase_placement_errors_name_the_source():
    t = Trace.from_rows(start=[10], end=[20], kernel=[0], symbols=[KernelSymbol("k", "k()")])
    t.markers = Markers.from_rows([{"name": "x", "start": 5, "end": 1, "tid": 1}])
    t.metadata["source_path"] = "/some/profile.db"
    with pytest.raises(RocmPerfError, match="/some/profile.db"):
        phase_table(t)


def test_a_roctx_program_parses_and_compiles_where_rocm_has_no_roctx_headers(capsys, hipcc):
    """Debian's ROCm has no roctx headers: libclang and hipcc find our declarations (-idirafter) instead."""
    source = HOST / "roctx_phases.cu"
    assert main(["loops", str(source)]) == 0
    assert "kernel scale" in capsys.readouterr().out
    assert main(["check", str(source), "--json"]) == 0
    kernels = {k["demangled"] for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert kernels == {"fill(float*, float, int)", "scale(float*, float, int)", "copy_back(float const*, float*, int)"}
