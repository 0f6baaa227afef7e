"""`rocm-perf critical-path` and the summary's critical-path section, on the fixture databases."""

from __future__ import annotations

import json

import pytest
from conftest import DATA

from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.critical_path_report import run_critical_path

MULTISTREAM = DATA / "rocpd_v3_multistream.db"
NO_API = DATA / "rocpd_v3_docs_kernel_trace.db"


def test_json_output_carries_the_known_answer(capsys):
    answer = json.loads((DATA / "rocpd_v3_multistream.answer.json").read_text())
    assert run_critical_path(MULTISTREAM, as_json=True) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "rocpd-v3"
    assert doc["critical_path_ns"] == 660_000 and doc["sum_dispatch_ns"] == 810_000
    assert doc["span_ns"] == 833_000
    assert doc["cross_stream_known"] is True
    assert [p["kernel"].split("(")[0] for p in doc["path"]] == answer["critical_path"]
    assert {s["name"].split("(")[0]: s["cp_ns"] for s in doc["symbols"]} == answer["per_kernel_ns"]


def test_table_ranks_by_path_time_and_shows_path_against_span(capsys):
    assert main(["critical-path", str(MULTISTREAM)]) == 0
    out = capsys.readouterr().out
    assert "critical path: 660.0 us = 79.2% of the span (833.0 us" in out
    ranked = [line.split()[1] for line in out.splitlines() if line.strip()[:1].isdigit() and "_kernel" in line]
    assert ranked == ["produce_kernel", "consume_kernel", "reduce_kernel", "side_kernel", "decoy_kernel"]


def test_top_limits_the_ranking(capsys):
    assert main(["critical-path", str(MULTISTREAM), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "produce_kernel" in out and "consume_kernel" in out and "reduce_kernel" not in out
    assert "3 more kernels" in out


def test_profile_without_api_trace_says_so_and_gap_heuristic_is_opt_in(capsys):
    assert main(["critical-path", str(NO_API), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["cross_stream_known"] is False
    assert any("cross-stream dependencies were not known" in n for n in plain["notes"])
    assert plain["gap_heuristic_ns"] is None
    assert main(["critical-path", str(NO_API), "--json", "--gap-heuristic-us", "1000"]) == 0
    guessed = json.loads(capsys.readouterr().out)
    assert guessed["gap_heuristic_ns"] == 1_000_000
    assert any("guessed" in n for n in guessed["notes"])
    assert guessed["critical_path_ns"] >= plain["critical_path_ns"]


def test_null_stream_option_reaches_the_analysis(capsys):
    assert main(["critical-path", str(MULTISTREAM), "--json", "--null-stream", "per-thread"]) == 0
    assert json.loads(capsys.readouterr().out)["null_stream"] == "per-thread"


def test_user_errors_are_one_line(tmp_path, capsys):
    assert main(["critical-path", str(tmp_path / "missing.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and len(err.strip().splitlines()) == 1
    with pytest.raises(RocmPerfError, match="--top"):
        run_critical_path(MULTISTREAM, top=0)


def test_summary_has_the_critical_path_section_and_writes_critical_path_json(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["summary", str(MULTISTREAM), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Critical path" in printed and "660.0 us = 79.2% of the span" in printed
    # top kernels by path share next to their share of total time
    produce = next(line for line in printed.splitlines() if "produce_kernel" in line and "45.5%" in line)
    assert "37.0%" in produce
    doc = json.loads((out / "critical_path.json").read_text())
    assert doc["critical_path_ns"] == 660_000 and len(doc["path"]) == 9
    assert "## Critical path" in (out / "profile_summary.md").read_text()
    assert main(["summary", str(MULTISTREAM), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["critical_path"]["critical_path_ns"] == 660_000
    assert summary["critical_path"]["path_dispatches"] == 9 and "path" not in summary["critical_path"]


def test_summary_of_a_profile_without_api_trace_says_the_path_is_a_lower_bound(capsys):
    assert main(["summary", str(NO_API)]) == 0
    printed = capsys.readouterr().out
    assert "cross-stream dependencies NOT known" in printed
