"""`rocm-perf profile` on the host backend: build, rounds, the run directory, the kernel table,
and a program that fails its own check reported with its last lines."""

from __future__ import annotations

import json

import pytest

from conftest import DATA
from host_programs import built  # noqa: F401  (the shared build fixture)
from rocm_perf.report.profile_command import run_profile
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace

HOST = DATA / "host"
pytestmark = pytest.mark.slow


def only_run_dir(out):
    dirs = [p for p in out.iterdir() if p.is_dir()]
    assert len(dirs) == 1
    return dirs[0]


def test_profile_a_source_two_rounds(tmp_path, capsys):
    rc = run_profile(HOST / "barriers.cu", program_args=[], backend="host", rounds=2, out=tmp_path, cflags="", timeout=300)
    assert rc == 0
    run_dir = only_run_dir(tmp_path)
    assert run_dir.name.endswith("-barriers")
    baseline = run_dir / "baseline"
    assert (baseline / "barriers.cu").read_bytes() == (HOST / "barriers.cu").read_bytes()
    assert (baseline / "build" / "build.log").is_file()
    for i in (1, 2):
        dbs = list((baseline / f"round_{i}").glob("*_results.db"))
        assert len(dbs) == 1
        assert len(load_trace(dbs[0])) == 4
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["backend"] == "host" and summary["gpu_timings"] is False
    assert [r["dispatches"] for r in summary["rounds"]] == [4, 4]
    assert summary["digests_agree_across_rounds"] is True
    assert len(summary["rounds"][0]["digests"]) == 2
    for name in ("kernel_table.json", "profile_summary.md", "profile_metadata.json", "metadata.json", "critical_path.json"):
        assert (run_dir / name).is_file(), name
    printed = capsys.readouterr().out
    assert "tiled_matmul" in printed and "vector_add" in printed
    assert "CPU timings" in printed


def test_a_failing_program_is_reported_with_its_last_lines(built, tmp_path, capsys):
    program = built("streams_events", ("-DMISSING_WAIT",))
    rc = main(["profile", str(program), "--backend", "host", "--out", str(tmp_path)])
    assert rc == 1
    printed = capsys.readouterr().out
    assert "the program failed (exit 1)" in printed
    assert "missing hipStreamWaitEvent" in printed


def test_profile_a_built_program_with_arguments(built, tmp_path, capsys):
    rc = main(["profile", str(built("misuse")), "--backend", "host", "--out", str(tmp_path / "runs"), "--",
               "big-block"])
    assert rc == 0
    run_dir = only_run_dir(tmp_path / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["built"] is False and summary["program"][1:] == ["big-block"]


def test_missing_target_and_bad_rounds(tmp_path):
    with pytest.raises(RocmPerfError, match="no such file"):
        run_profile(tmp_path / "nope.cu", backend="host", out=tmp_path)
    with pytest.raises(RocmPerfError, match="--rounds"):
        run_profile(HOST / "barriers.cu", backend="host", rounds=0, out=tmp_path)


def test_profile_with_32_lane_warps_from_the_command_line(tmp_path, capsys):
    rc = main(["profile", str(HOST / "warp_ops.cu"), "--backend", "host", "--warp-size", "32", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "32-lane warps" in out
    db = next(only_run_dir(tmp_path).glob("baseline/round_1/*_results.db"))
    assert load_trace(db).agents[0].extra["wave_front_size"] == 32
