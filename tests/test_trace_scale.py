"""The large-profile paths stay exact: generated rocpd profiles (tests/scale_trace.py) against the
generator's own answer, the Arrow and sqlite3 readers against each other, the columns a command
leaves unread, and the longest path's two topological orders against each other."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.analysis.dag import build_dispatch_dag
from rocm_perf.cli import main
from rocm_perf.trace import sqlite_arrow
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import UNKNOWN, ApiArgs
from rocm_perf.trace.needs import SUMMARY, TIMELINE
from scale_trace import DEVICE_SYNC, generate, write_profile


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    profile = generate(20_000, streams=4, seed=11)
    db = write_profile(profile, tmp_path_factory.mktemp("scale") / "scale.db")
    return profile, db


def test_critical_path_of_a_generated_profile_is_the_generators_answer(generated):
    profile, db = generated
    trace = load_trace(db, TIMELINE)
    result = analyze_critical_path(trace)
    assert result.critical_path_ns == profile.critical_path_ns
    assert result.sum_dispatch_ns == int(profile.duration.sum())
    # every dispatch's earliest start on the ideal schedule, matched by its launch's correlation id
    expected = dict(zip(profile.corr.tolist(), profile.earliest.tolist()))
    assert result.earliest_start.tolist() == [expected[c] for c in trace.corr.tolist()]
    assert (result.slack >= 0).all() and int(result.slack[result.path].max()) == 0
    totals = {s.name: [s.calls_on_path + s.calls_off_path, s.total_ns] for s in result.symbols}
    assert totals == {k: list(v) for k, v in profile.kernel_totals().items()}


def test_commands_report_the_generators_answer(generated, capsys):
    profile, db = generated
    answer = profile.answer()
    assert main(["critical-path", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["critical_path_ns"], doc["sum_dispatch_ns"], doc["span_ns"]) == \
        (answer["critical_path_ns"], answer["sum_dispatch_ns"], answer["span_ns"])
    assert main(["summary", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {k["name"]: [k["calls"], k["total_ns"]] for k in doc["kernels"]} == answer["kernels"]
    assert doc["critical_path"]["critical_path_ns"] == answer["critical_path_ns"]


@pytest.mark.parametrize("profile", [DATA / "rocpd_v3_multistream.db", DATA / "rocpd_v3_docs_kernel_trace.db", "generated"],
                         ids=["multistream", "docs", "generated"])
def test_arrow_and_sqlite3_readers_give_the_same_trace(profile, generated, monkeypatch):
    path = generated[1] if profile == "generated" else profile
    fast = load_trace(path)
    monkeypatch.setattr(sqlite_arrow, "_modules", lambda: None)  # as where the ADBC packages are missing
    slow = load_trace(path)
    for column in ("start", "end", "agent", "queue", "stream", "kernel", "corr", "grid", "workgroup"):
        assert np.array_equal(getattr(fast, column), getattr(slow, column)), column
    assert [s.name for s in fast.symbols] == [s.name for s in slow.symbols]
    assert (fast.api is None) == (slow.api is None)
    if fast.api is not None:
        for column in ("name", "start", "end", "tid", "corr", "stream", "event"):
            assert np.array_equal(getattr(fast.api, column), getattr(slow.api, column)), column
        assert fast.api.names == slow.api.names
        assert dict(fast.api.args.items()) == dict(slow.api.args.items())


def test_api_arguments_are_columns_that_read_as_dicts():
    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    args = trace.api.args
    assert isinstance(args, ApiArgs) and len(args) > 0
    row = next(iter(args))
    assert isinstance(args[row], dict) and args.get(row) == args[row] and row in args
    assert args.get(len(trace.api) + 5, {}) == {} and (len(trace.api) + 5) not in args
    waits = [r for r in range(len(trace.api)) if trace.api.name_of(r) == "hipStreamWaitEvent"]
    assert waits and all(int(args[r]["event"], 16) == int(trace.api.event[r]) for r in waits)


def test_a_command_that_needs_less_reads_less_and_says_so(generated):
    profile, db = generated
    full = load_trace(db)
    lean = load_trace(db, TIMELINE)
    assert lean.metadata["not_read"] == TIMELINE.skipped()
    assert not lean.grid.flags.writeable and (lean.grid == UNKNOWN).all()  # unread: "the trace does not say"
    assert (full.grid != UNKNOWN).all()
    assert lean.api.args == {} and len(full.api.args) == int((profile.api_kind != DEVICE_SYNC).sum())
    for column in ("start", "end", "stream", "kernel", "corr"):
        assert np.array_equal(getattr(lean, column), getattr(full, column))
    assert np.array_equal(lean.api.stream, full.api.stream) and np.array_equal(lean.api.event, full.api.event)
    summary = load_trace(db, SUMMARY)
    assert summary.tid is None and (summary.queue == UNKNOWN).all()


def test_longest_path_is_the_same_when_kahns_order_replaces_the_sorted_one(generated, monkeypatch):
    """The gap heuristic's guessed edges can point backwards in launch time: then the order comes from
    Kahn's algorithm. Forcing that order on the API-only DAG must not change any result."""
    from rocm_perf.analysis import critical_path as cp

    trace = load_trace(generated[1], TIMELINE)
    dag = build_dispatch_dag(trace)
    sorted_order = analyze_critical_path(trace, dag=dag)
    original = cp._topological_order
    monkeypatch.setattr(cp, "_topological_order", lambda dag, seg, src, dst, n: cp._kahn(src, dst, n))
    kahn = analyze_critical_path(trace, dag=dag)
    monkeypatch.setattr(cp, "_topological_order", original)
    assert kahn.critical_path_ns == sorted_order.critical_path_ns
    assert np.array_equal(kahn.path, sorted_order.path)
    assert np.array_equal(kahn.earliest_start, sorted_order.earliest_start)
    assert np.array_equal(kahn.latest_start, sorted_order.latest_start)
    guessed = analyze_critical_path(trace, gap_heuristic_ns=5_000)  # more edges: never a shorter path
    assert guessed.critical_path_ns >= sorted_order.critical_path_ns and (guessed.slack >= 0).all()


def test_a_cycle_is_still_one_clear_error():
    from rocm_perf.analysis.critical_path import _kahn
    from rocm_perf.errors import RocmPerfError

    with pytest.raises(RocmPerfError, match="cycle"):
        _kahn(np.array([0, 1, 2]), np.array([1, 2, 0]), 3)


def test_damaged_argument_rows_name_the_file(tmp_path, capsys):
    import shutil
    import sqlite3

    db = tmp_path / "bad.db"
    shutil.copy(DATA / "rocpd_v3_multistream.db", db)
    con = sqlite3.connect(db)
    arg = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'rocpd_arg%'"))
    con.execute(f"UPDATE \"{arg}\" SET event_id = 'x' WHERE rowid = (SELECT MIN(rowid) FROM \"{arg}\" WHERE name = 'stream')")
    con.commit()
    con.close()
    code = main(["critical-path", str(db)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and str(db) in err[0] and "damaged" in err[0]
