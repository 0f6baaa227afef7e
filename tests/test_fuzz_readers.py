"""Fuzz profile (fast): mutated copies of every real fixture format through the commands that read
them. Each case must give a normal answer or one clean `rocm-perf: error:` line naming the file:
never a traceback, a Python warning, a crash or a hang (tests/fuzz_cases.py says how a case is
run and judged; tests/bench/bench_fuzz.py is the deep profile, thousands of cases per format).

The cases are derandomized (the same ones every run, so a failure reproduces); hypothesis shrinks
a failing case to a small damage before it reports it.
"""

from __future__ import annotations

import csv
import gzip
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DATA, ROOT
from fuzz_cases import CLEAN, FAILURE, NORMAL, Case, draw_case, formats, run_case

EXAMPLES = 18  # per format: 14 formats, about 250 cases


@pytest.mark.parametrize("fmt", formats(), ids=lambda f: f.name.replace(" ", "-"))
def test_every_mutant_gets_an_answer_or_one_clean_line(fmt, tmp_path):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one_case(data):
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        case = draw_case(data.draw, fmt, folder)
        verdict = run_case(case)
        assert verdict.kind != FAILURE, (f"{verdict.detail}\n  rocm-perf {' '.join(case.argv)}\n"
                                         f"  stderr: {verdict.stderr[-600:]}")
        shutil.rmtree(folder, ignore_errors=True)

    one_case()


# ---- the judge itself: it must see each kind of failure ------------------------------------------

def _case(tmp_path: Path, argv: list[str]) -> Case:
    folder = tmp_path / "case"
    folder.mkdir(exist_ok=True)
    return Case("test", folder, argv, folder)


def test_a_traceback_a_warning_and_a_hang_are_failures(tmp_path, monkeypatch):
    """The harness forks this very process, so a patched reader misbehaves in the child."""
    import warnings

    import rocm_perf.report.summary as summary

    profile = str(DATA / "rocpd_v3_docs_kernel_trace.db")
    real_load = summary.load_trace
    monkeypatch.setattr(summary, "load_trace", lambda p, *needs: int("x"))
    verdict = run_case(_case(tmp_path, ["summary", profile]))
    assert verdict.kind == FAILURE and "ValueError" in verdict.detail and "report/summary.py" in verdict.detail

    monkeypatch.setattr(summary, "load_trace", lambda p, *needs: warnings.warn("odd", RuntimeWarning) or real_load(p, *needs))
    verdict = run_case(_case(tmp_path, ["summary", profile]))
    assert verdict.kind == FAILURE and "RuntimeWarning: odd" in verdict.detail

    monkeypatch.setattr(summary, "load_trace", lambda p, *needs: time.sleep(60))
    t0 = time.monotonic()
    verdict = run_case(_case(tmp_path, ["summary", profile]), bound_s=1.0)
    assert verdict.kind == FAILURE and verdict.detail.startswith("hang")
    assert time.monotonic() - t0 < 30  # the child was killed, not waited for


def test_a_good_fixture_is_a_normal_answer_and_a_missing_one_a_clean_error(tmp_path):
    assert run_case(_case(tmp_path, ["summary", str(DATA / "rocpd_v3_docs_kernel_trace.db"), "--json"])).kind == NORMAL
    missing = tmp_path / "case" / "nothing.db"
    verdict = run_case(_case(tmp_path, ["summary", str(missing)]))
    assert verdict.kind == CLEAN and "no such file" in verdict.detail


# ---- the real command line: exit codes and no traceback on the examples ------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocm_perf.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def _one_line_error(done: subprocess.CompletedProcess, *expected: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocm-perf: error: "), done.stderr
    for text in expected:
        assert text in lines[0]
    return lines[0]


def test_a_timestamp_past_64_bits_in_a_kernel_trace_csv(tmp_path):
    path = tmp_path / "kernel_trace.csv"
    text = (DATA / "rocprofv3-csv" / "kernel_trace.csv").read_text()
    path.write_text(text.replace("1550151853029637", "155015185302963712345678", 1))
    _one_line_error(_cli("summary", str(path)), str(path), "line 2: column Start_Timestamp", "beyond the 64-bit range")


def test_text_that_is_not_utf8_in_a_rocpd_database(tmp_path):
    path = tmp_path / "results.db"
    shutil.copyfile(DATA / "rocpd_v3_multistream.db", path)
    con = sqlite3.connect(path)
    table = con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_string_%' AND type = 'table'").fetchone()[0]
    con.execute(f'UPDATE "{table}" SET string = CAST(? AS TEXT) WHERE id = (SELECT MIN(id) FROM "{table}")',
                (b"hip\xd2Launch",))
    con.commit()
    con.close()
    _one_line_error(_cli("critical-path", str(path)), str(path), "not UTF-8")


def test_a_page_of_a_legacy_rpd_overwritten(tmp_path):
    data = bytearray((DATA / "matmul_result.rpd").read_bytes())
    data[4096 * 3:4096 * 4] = b"\xd2" * 4096
    path = tmp_path / "matmul_result.rpd.gz"
    path.write_bytes(gzip.compress(bytes(data)))
    _one_line_error(_cli("triage", str(path)), str(path))


def test_a_pytorch_trace_cut_short(tmp_path):
    whole = gzip.decompress((DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes())
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(whole[: len(whole) // 2])[:-20])  # a half trace, its gzip stream cut too
    _one_line_error(_cli("export", str(path), "--perfetto", str(tmp_path / "out.json")), str(path))


def test_a_rocprof_compute_timestamp_that_is_infinite(tmp_path):
    folder = tmp_path / "workload"
    shutil.copytree(DATA / "rocprof-compute" / "MI200_vcopy", folder)
    pmc = folder / "pmc_perf.csv"
    rows = list(csv.reader(open(pmc, newline="")))
    rows[1][rows[0].index("End_Timestamp")] = "inf"
    with open(pmc, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    _one_line_error(_cli("analyze", str(folder)), str(pmc), "End_Timestamp", "not a finite number")


def test_a_launchs_stream_pointer_past_64_bits_in_a_pytorch_trace(tmp_path):
    """bench_fuzz's find (seed 58): a runtime event's `stream` retyped to a 26-digit number. No pointer
    is that wide: the launch's stream is unknown, and the trace reads as before."""
    import json

    whole = json.loads(gzip.decompress((DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz").read_bytes()))
    launches = [e for e in whole["traceEvents"] if e.get("cat") == "cuda_runtime" and "stream" in (e.get("args") or {})]
    assert launches
    for e in launches[:3]:
        e["args"]["stream"] = "-9999999999999999999999999"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(whole))
    done = _cli("summary", str(path))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_a_column_name_with_a_line_break_in_it_stays_one_line(tmp_path):
    """bench_fuzz's find (seed 58, ATT stats CSV, 6 of 1,000): a damaged header's column name holding
    \\x1e or \\r, quoted by the error, broke its one line; the message now writes them as escapes."""
    path = tmp_path / "stats_ui_output_agent_1_dispatch_1.csv"
    text = (DATA / "att-stats" / "stats_ui_output_agent_1_dispatch_1.csv").read_text()
    header, rest = text.split("\n", 1)
    path.write_text(header.replace("Latency", "Latency\x1eAgen", 1).replace("Source", "So\rurce\u2028", 1) + "\n" + rest)
    line = _one_line_error(_cli("hotspots", str(path)), str(path), "the header has no `Latency` column")
    assert "Latency\\x1eAgen" in line
