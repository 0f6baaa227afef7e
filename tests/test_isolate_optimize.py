"""`optimize` on a reproducer, end to end on the host backend (slow): kernels/stencil2d.cu's kernel
isolated, its manual unroll accepted on the replay, confirmed on the whole program, and `apply`
writing it to the original source (a copy in the test's folder), which then still passes its check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import KERNELS
from rocm_perf.cli import main
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.process import run

pytestmark = pytest.mark.slow


@pytest.mark.long
def test_optimize_on_the_stencil2d_reproducer_accepts_a_winner_confirmed_on_the_whole_program(tmp_path, capsys):
    source = tmp_path / "stencil2d.cu"
    shutil.copy(KERNELS / "stencil2d.cu", source)
    before = source.read_bytes()
    repro = tmp_path / "repro"
    assert main(["isolate", str(source), "--kernel", "stencil_2d", "--out", str(repro), "--backend", "host"]) == 0
    runs = tmp_path / "runs"
    assert main(["optimize", str(repro), "--backend", "host", "--out", str(runs), "--new", "--rules", "unroll_manual",
                 "--factors", "2", "--max-trials", "4", "--compile-check", "off", "--quiet"]) == 0
    (run_dir,) = [p for p in runs.iterdir() if (p / "ledger.db").exists()]  # beside it: the search prior
    ledger = open_ledger(run_dir)
    try:
        replay = ledger.get("replay")
        whole = ledger.get("whole_program")
        accepted = [t for t in ledger.trials() if t.status == "accepted"]
        assert ledger.state == "done"
    finally:
        ledger.close()
    assert replay["passes"] == 10 and Path(replay["reproducer"]) == repro.resolve()
    assert accepted, "no unroll of stencil_2d's loops was accepted on the replay"
    assert whole["verdict"] == "confirmed", whole
    assert whole["critical_path"]["high"] < 1.0 and whole["program"] == str(source.resolve())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["whole_program"]["verdict"] == "confirmed" and summary["final_check"]["high"] < 1.0
    report = (run_dir / "report.md").read_text()
    assert "measured on the replay" in report and "on the whole program" in report

    capsys.readouterr()
    assert main(["apply", str(run_dir)]) == 0
    assert "confirmed on the whole program" in capsys.readouterr().out
    assert main(["apply", str(run_dir)]) == 0 and "already holds" in capsys.readouterr().out
    after = source.read_bytes()
    assert after != before and (tmp_path / f"stencil2d.cu.{run_dir.name}.orig").read_bytes() == before
    assert after.count(b"\n") > before.count(b"\n")  # the unrolled loop, written into the original's own lines
    assert after.replace(b"\n", b"").find(b"int main()") > 0  # the host code is still there
    from rocm_perf.backends.host import HostBackend

    program = HostBackend().build(source, tmp_path / "applied").executable
    done = run([program], timeout=600)
    assert done.returncode == 0 and "PASS" in done.stdout
