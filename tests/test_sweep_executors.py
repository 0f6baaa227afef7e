"""Executors of a sweep (rocm_perf/sweep/executor*.py) without Slurm: their settings (command line
and the manifest's [executor] table), the tasks table of the ledger and its migration, and the
local executor's real worker processes: one device each, side by side, stopped with the sweep.

The Slurm executor runs against a real Slurm in tests/test_sweep_slurm.py.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import KERNELS, ROOT
from rocm_perf.cli import main
from rocm_perf.sweep.executor_local import LocalExecutor, gpu_slots
from rocm_perf.sweep.executor_settings import ExecutorSettings, add_executor_arguments, executor_settings
from rocm_perf.sweep.ledger import FAILED, OPTIMIZE, SUBMITTING, TASK_FAILED, TASK_STOPPED, TRIAGE, SweepLedger
from rocm_perf.sweep.loop import Sweep
from rocm_perf.sweep.schedule import SweepSettings, share_s
from rocm_perf.sweep.task_files import read_progress, read_result
from test_sqlite_db import old_run_ledger, old_sweep_ledger

BROKEN = "__global__ void k(float* x) {{ x[0] = {value} }}\nint main() {{ return 0; }}\n"  # no `;`: does not build


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_executor_arguments(p)
    return p.parse_args(argv)


# ---- settings ----------------------------------------------------------------------------------------

def test_executor_settings_come_from_the_manifest_and_the_command_line_wins(tmp_path):
    (tmp_path / "a.cu").write_text(BROKEN.format(value=1))
    manifest = tmp_path / "sweep.toml"
    manifest.write_text('[executor]\nkind = "slurm"\npartition = "mi300x"\naccount = "proj1"\ngpus_per_task = 1\n'
                        'sbatch = ["--qos=high", "--constraint=mi300x"]\nsetup = ["module load rocm/7.0"]\npoll = "20s"\n\n'
                        '[[target]]\nsource = "a.cu"\n')
    s = executor_settings(parse([]), [str(manifest)], None)
    assert (s.kind, s.partition, s.account, s.gpus_per_task, s.poll_s) == ("slurm", "mi300x", "proj1", 1, 20.0)
    assert s.sbatch == ["--qos=high", "--constraint=mi300x"] and s.setup == ["module load rocm/7.0"]
    s = executor_settings(parse(["--partition", "debug", "--sbatch=--exclusive", "--workers", "4"]), [str(manifest)], None)
    assert (s.partition, s.sbatch, s.workers, s.account) == ("debug", ["--exclusive"], 4, "proj1")
    # On --resume the stored settings hold; the command line still wins.
    stored = ExecutorSettings(kind="local", workers=2).to_json()
    s = executor_settings(parse(["--workers", "3"]), [str(manifest)], stored)
    assert (s.kind, s.workers) == ("local", 3)
    assert executor_settings(parse(["--devices", "0, 2,3"]), [], None).devices == ["0", "2", "3"]


def test_the_budget_is_shared_over_rounds_of_parallel_targets():
    s = SweepSettings(target_args=[], budget_s=None)
    assert share_s(s, 1000.0, 4, 1) == 250.0
    assert share_s(s, 1000.0, 4, 2) == 500.0  # two at a time: two rounds of two
    assert share_s(s, 1000.0, 4, None) == 1000.0  # all at once (a Slurm array with no limit)
    assert share_s(s, 1000.0, 1, 8) == 1000.0


@pytest.mark.parametrize("table, argv, message", [
    ('[executor]\nkind = "kubernetes"\n', [], "kind 'kubernetes': choose local or slurm"),
    ('[executor]\npartiton = "a"\n', [], "unknown key(s) partiton"),
    ('[executor]\nworkers = "two"\n', [], "`workers` must be a whole number"),
    ("", ["--executor", "slurm", "--sbatch=-q high"], "give it in its long form"),
    ("", ["--executor", "local", "--devices", "0,1"], "--devices chooses GPUs for the rocm backend"),
    ("", ["--workers", "0"], "--workers 0: must be at least 1"),
])
def test_bad_executor_settings_are_one_line_errors(tmp_path, capsys, table, argv, message):
    (tmp_path / "a.cu").write_text(BROKEN.format(value=1))
    manifest = tmp_path / "sweep.toml"
    manifest.write_text(table + '\n[[target]]\nsource = "a.cu"\n')
    out = tmp_path / "runs"
    assert main(["sweep", str(manifest), "--backend", "host", "--out", str(out)] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and message in err and err.count("\n") == 1
    if table:
        assert str(manifest) in err
    assert not out.exists()  # nothing half-made


def test_slurm_executor_without_slurm_says_what_is_missing(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.cu").write_text(BROKEN.format(value=1))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, and no Slurm command
    assert main(["sweep", str(tmp_path / "a.cu"), "--executor", "slurm", "--backend", "host",
                 "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "--executor slurm: sinfo, squeue, sbatch, scancel not on PATH" in err


# ---- the ledger's tasks ------------------------------------------------------------------------------

def test_a_sweep_ledger_of_schema_1_gains_the_tasks_table_when_opened(tmp_path):
    run = old_run_ledger(tmp_path / "old" / "runs" / "k" / "20260101-000000-k")
    sweep = old_sweep_ledger(tmp_path / "sweep-old", run)
    ledger = SweepLedger(sweep)
    assert ledger.get("schema_version") == 2 and ledger.tasks() == []
    task = ledger.add_task("k", OPTIMIZE, 1, "slurm", batch="rp-x-1:0/1", budget_s=60.0)
    assert (task.state, task.batch, task.result) == (SUBMITTING, "rp-x-1:0/1", {})
    ledger.update_task(task.id, job_id="12_0", state="running", result={"status": "ok"})
    assert [(t.job_id, t.state, t.result) for t in ledger.tasks(open_only=True)] == [("12_0", "running", {"status": "ok"})]
    with pytest.raises(ValueError):
        ledger.update_task(task.id, target="other")
    ledger.close()
    assert main(["report", str(sweep)]) == 0


# ---- the local executor: real worker processes ---------------------------------------------------------

def test_local_workers_run_side_by_side_each_seeing_one_gpu(tmp_path, monkeypatch):
    """Two targets on two GPU slots: one job each, started together, each worker given its own
    ROCR_VISIBLE_DEVICES and none of the variables that would renumber it. (The targets do not
    build, so the real triage in each worker ends in a second, on the host backend.)"""
    folder = tmp_path / "k"
    folder.mkdir()
    for i, name in enumerate(["a", "b"]):
        (folder / f"{name}.cu").write_text(BROKEN.format(value=i))
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "7")
    monkeypatch.setenv("GPU_DEVICE_ORDINAL", "7")
    settings = SweepSettings(target_args=[str(folder)], budget_s=600.0, backend="host")
    sweep_dir = tmp_path / "s"
    assert Sweep(sweep_dir, settings, executor=LocalExecutor(gpu_slots(["3", "5"]))).run() == 0
    ledger = SweepLedger(sweep_dir)
    tasks = ledger.tasks()
    assert [(t.target, t.kind, t.state) for t in tasks] == [("a", TRIAGE, TASK_FAILED), ("b", TRIAGE, TASK_FAILED)]
    assert {t.device for t in tasks} == {"GPU 3", "GPU 5"}
    assert len({t.batch.split(":")[0] for t in tasks}) == 1 and all(t.job_id.startswith("local-") for t in tasks)
    for t in tasks:
        seen = read_progress(Path(t.task_dir))["device_env"]
        assert seen == {"ROCR_VISIBLE_DEVICES": t.device.split()[-1]}  # HIP_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL removed
        assert read_result(Path(t.task_dir))["status"] == "failed"
    # side by side, not one after the other: both handed to the executor in one submission, each
    # on its own device, before either ended (by construction, not by how fast they ran)
    assert len({t.submitted for t in tasks}) == 1 and max(t.submitted for t in tasks) <= min(t.ended for t in tasks)
    assert all(r.status == FAILED and "does not build" in r.reason for r in ledger.targets())
    assert all(r.attempts == 0 for r in ledger.targets())  # a build error is not retried


COORDINATOR = "import sys; from rocm_perf.cli import main; sys.exit(main(sys.argv[1:]))"


def wait_for(predicate, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def running_task(sweep_dir: Path):
    try:
        status = json.loads((sweep_dir / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return next((t for t in status.get("tasks", []) if t["state"] == "running"), None)


@pytest.mark.slow
def test_a_killed_sweep_stops_its_local_workers_and_resume_records_where_they_stopped(tmp_path):
    """kill -9 of the sweep: its worker gets SIGHUP (it dies with its parent), stops at once, records
    that it stopped, and exits; the resumed sweep records the task as stopped, not as a failure."""
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-c", COORDINATOR, "sweep", str(KERNELS / "stencil1d.cu"), "--backend", "host",
                             "--budget", "30m", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        sweep_dir = wait_for(lambda: next(iter(out.glob("sweep-*")), None) if out.exists() else None, "the sweep directory")
        task = wait_for(lambda: running_task(sweep_dir), "the triage task to run")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    ledger = SweepLedger(sweep_dir)
    (row,) = ledger.tasks()
    pid = int(row.job_id.split("-")[1])
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), f"worker {pid} to end with its sweep", timeout=60)
    assert read_result(Path(row.task_dir))["status"] == "stopped"
    assert row.state == "running" and task["job_id"] == row.job_id  # the ledger still says it runs: the sweep died
    ledger.close()
    # Resume with no budget left: it records what the worker said, and starts nothing new.
    assert main(["sweep", "--resume", str(sweep_dir), "--budget", "1s"]) == 0
    ledger = SweepLedger(sweep_dir)
    (row,) = ledger.tasks()
    assert row.state == TASK_STOPPED and row.reason == "stopped: the sweep that ran it died"
    (target,) = ledger.targets()
    assert target.attempts == 0 and target.status == "pending"
    assert ledger.events(target.name, "adopted") and ledger.events(target.name, "stopped")


# ---- what the Slurm commands print (their formats: sinfo/squeue man pages, Slurm 22.05) --------------------

def test_slurm_host_lists_and_gres_are_read_as_slurm_prints_them():
    from rocm_perf.backends.slurm_cluster import expand_hostlist, gpu_count

    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("vm") == ["vm"] and expand_hostlist("") == []
    assert expand_hostlist("n[8-10]-ib") == ["n8-ib", "n9-ib", "n10-ib"]
    assert gpu_count("gpu:8") == 8 and gpu_count("gpu:mi300x:8(S:0-1)") == 8
    assert gpu_count("gpu:a:4,gpu:b:2,nic:1") == 6 and gpu_count("") == 0


def test_a_jobs_reason_is_read_from_its_log():
    from rocm_perf.sweep.executor import reason_from_log

    log = ("submitit INFO (2026-01-01) - Starting with JobEnvironment(job_id=12_0)\n"
           "slurmstepd: error: *** JOB 13 ON gpu01 CANCELLED AT 2026-01-01T00:10:00 DUE TO TIME LIMIT ***\n"
           "srun: error: gpu01: task 0: Terminated\n")
    assert "DUE TO TIME LIMIT" in reason_from_log(log, "none")
    assert reason_from_log("ok\nTraceback (most recent call last):\nKeyError: 'x'\n", "none") == "KeyError: 'x'"
    assert reason_from_log("", "the job left no log") == "the job left no log"


def test_local_gpu_slots_come_from_devices_or_the_gpus_already_visible(tmp_path, monkeypatch):
    from rocm_perf.sweep.executor_settings import make_executor

    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "4,5,6,7")  # a shell (or an allocation) that gives us four GPUs
    assert [s.name for s in make_executor(ExecutorSettings(), tmp_path, "rocm").slots] == ["GPU 4", "GPU 5", "GPU 6", "GPU 7"]
    assert [s.name for s in make_executor(ExecutorSettings(workers=2), tmp_path, "rocm").slots] == ["GPU 4", "GPU 5"]
    (one, three) = make_executor(ExecutorSettings(devices=["1", "3"]), tmp_path, "rocm").slots
    assert one.env == {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": None, "CUDA_VISIBLE_DEVICES": None,
                       "GPU_DEVICE_ORDINAL": None}
    assert three.name == "GPU 3"
    assert [s.name for s in make_executor(ExecutorSettings(workers=3), tmp_path, "host").slots] == \
        ["CPU worker 1", "CPU worker 2", "CPU worker 3"]
