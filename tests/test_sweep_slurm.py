"""The slurm executor against a real Slurm: a one-node cluster that tests/slurm/start_slurm.sh
starts for this module (Debian's slurm-wlm and munge; `.ci/run` installs them) and
tests/slurm/stop_slurm.sh stops, by pid, at the end. Where it cannot start (not root, not
installed) the tests skip with the reason; under CI=true that is a failure.

The cluster has no accounting storage, so nothing here asks sacct: the evidence is the sweep
ledger, squeue while jobs live, and submitit's folder (one `<array>_submission.sh` per job array
submitted, one `<job>_submitted.pkl` per task).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import IN_CI, KERNELS, ROOT
from rocm_perf.backends import slurm_cluster
from rocm_perf.cli import main
from rocm_perf.sweep import executor_slurm
from rocm_perf.sweep.dispatch import Dispatcher, Work
from rocm_perf.sweep.executor_slurm import SlurmExecutor
from rocm_perf.sweep.ledger import DONE, QUARANTINED, SUBMITTED, TASK_DONE, TASK_FAILED, TRIAGE, SweepLedger
from rocm_perf.sweep.schedule import SweepSettings
from rocm_perf.sweep.targets import discover_targets

SCRIPTS = ROOT / "tests" / "slurm"
COORDINATOR = "import sys; from rocm_perf.cli import main; sys.exit(main(sys.argv[1:]))"
# Small everything: the machine has 2 cores (docs/commands/sweep.md: the slurm executor's tests).
QUICK = ('max_trials = 1\nrounds = 2\nmax_rounds = 2\naa_rounds = 2\ncompile_check = "off"\n'
         'metric = "median-path"\ncounters = "off"\n')


@dataclass
class Cluster:
    dir: Path
    conf: str
    pids: dict[str, int]


def _unavailable(why: str):
    if IN_CI:
        pytest.fail(f"the test Slurm cannot start: {why}; CI must run it")
    pytest.skip(f"the test Slurm cannot start: {why}")


def _pids(d: Path) -> dict[str, int]:
    files = {"munged": d / "munge" / "munged.pid", "slurmctld": d / "slurmctld.pid", "slurmd": d / "slurmd.pid"}
    return {name: int(f.read_text().strip()) for name, f in files.items() if f.exists() and f.read_text().strip()}


@pytest.fixture(scope="module")
def slurm():
    if os.geteuid() != 0:
        _unavailable("it needs root (slurmctld and slurmd run as root, munged as the munge user)")
    if not all(shutil.which(c, path=os.environ.get("PATH", "") + ":/usr/sbin") for c in ("slurmctld", "slurmd", "munged")):
        _unavailable("slurm-wlm or munge is not installed (apt-get install -y slurm-wlm munge)")
    d = Path(tempfile.mkdtemp(prefix="rp-slurm-", dir="/tmp"))  # munged, as munge, must reach it
    done = subprocess.run([str(SCRIPTS / "start_slurm.sh"), str(d)], capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        subprocess.run([str(SCRIPTS / "stop_slurm.sh"), str(d)], capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)
        _unavailable((done.stderr.strip().splitlines() or ["start_slurm.sh failed"])[-1])
    conf = done.stdout.strip().splitlines()[-1].split("=", 1)[1]
    cluster = Cluster(d, conf, _pids(d))
    assert set(cluster.pids) == {"munged", "slurmctld", "slurmd"}
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        stopped = subprocess.run([str(SCRIPTS / "stop_slurm.sh"), str(d)], capture_output=True, text=True, timeout=120)
        alive = [f"{n} ({p})" for n, p in cluster.pids.items() if Path(f"/proc/{p}").exists()
                 and Path(f"/proc/{p}/comm").read_text().strip() == n]
        shutil.rmtree(d, ignore_errors=True)
        assert stopped.returncode == 0 and not alive, f"daemons left running: {alive} {stopped.stderr}"


def wait_for(predicate, what: str, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def status_json(sweep_dir: Path) -> dict:
    try:
        return json.loads((sweep_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def submitit_files(sweep_dir: Path) -> tuple[list[str], list[str]]:
    folder = sweep_dir / "slurm"
    return sorted(p.name for p in folder.glob("*_submission.sh")), sorted(p.name for p in folder.glob("*_submitted.pkl"))


# ---- doctor --------------------------------------------------------------------------------------------

def test_doctor_says_slurm_answers_with_its_partitions_and_each_nodes_gpus(slurm, tmp_path, monkeypatch, capsys):
    main(["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["area"] == "slurm"}
    assert checks["sinfo"]["ok"] and "partitions debug (default): 1 node(s)" in checks["sinfo"]["detail"]
    node = os.uname().nodename.split(".")[0]
    assert checks[f"node {node}"]["ok"] is False  # the test node has CPUs only
    assert "no GPU in its generic resources" in checks[f"node {node}"]["detail"]
    assert f"{os.cpu_count()} CPUs" in checks[f"node {node}"]["detail"]
    # A controller that does not answer: said in one line (MessageTimeout=1: no long retries).
    text = Path(slurm.conf).read_text()
    bad = tmp_path / "slurm.conf"
    bad.write_text("\n".join(l for l in text.splitlines() if not l.startswith("SlurmctldPort=")) + "\nSlurmctldPort=1\nMessageTimeout=1\n")
    monkeypatch.setenv("SLURM_CONF", str(bad))
    main(["doctor"])
    out = capsys.readouterr().out
    assert "NO  sinfo" in out and "the Slurm controller does not answer" in out and "Unable to contact slurm controller" in out


# ---- the end-to-end sweep ----------------------------------------------------------------------------

def manifest(tmp_path: Path, kernels: list[str], executor: str) -> Path:
    m = tmp_path / "sweep.toml"
    m.write_text(f"[defaults]\n{QUICK}\n[executor]\n{executor}\n"
                 + "".join(f'[[target]]\nsource = "{KERNELS / k}.cu"\n\n' for k in kernels))
    return m


@pytest.mark.slow
@pytest.mark.long
def test_a_slurm_sweep_survives_its_killed_coordinator_and_submits_nothing_twice(slurm, tmp_path, capsys):
    """Three kernels/ programs through the slurm executor: triage as one job array, optimize runs as
    another. The coordinator is killed (SIGKILL) while the optimize jobs run; the jobs go on;
    --resume finds them by the job ids in its ledger, waits, records their results, and the sweep
    completes without a single job submitted again."""
    m = manifest(tmp_path, ["stencil1d", "row_reduce", "scan"], 'kind = "slurm"\npoll = "1s"')
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-c", COORDINATOR, "sweep", str(m), "--backend", "host", "--budget", "30m",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        sweep_dir = wait_for(lambda: next(iter(out.glob("sweep-*")), None) if out.exists() else None, "the sweep directory")
        running = wait_for(lambda: [t for t in status_json(sweep_dir).get("tasks", [])
                                    if t["kind"] == "optimize" and t["state"] == "running"], "optimize jobs running")
        capsys.readouterr()
        assert main(["status", str(sweep_dir)]) == 0
        shown = capsys.readouterr().out
        assert "tasks (slurm):" in shown and running[0]["job_id"] in shown and running[0]["node"] in shown
    finally:
        proc.send_signal(signal.SIGKILL)
        coordinator_output, _ = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, coordinator_output
    ledger = SweepLedger(sweep_dir)
    open_jobs = {t.job_id for t in ledger.tasks(open_only=True)}
    ledger.close()
    live = slurm_cluster.queue()
    assert open_jobs and open_jobs <= set(live), "the jobs outlive the coordinator"
    scripts_before, pickles_before = submitit_files(sweep_dir)

    assert main(["sweep", "--resume", str(sweep_dir)]) == 0
    ledger = SweepLedger(sweep_dir)
    assert {t.name: t.status for t in ledger.targets()} == {"stencil1d": DONE, "row_reduce": DONE, "scan": DONE}
    tasks = ledger.tasks()
    assert sorted((t.target, t.kind) for t in tasks) == sorted(
        (k, kind) for k in ("stencil1d", "row_reduce", "scan") for kind in ("triage", "optimize"))  # once each
    assert all(t.state == TASK_DONE and t.node for t in tasks)
    assert len({t.job_id for t in tasks}) == 6
    assert len({t.job_id.split("_")[0] for t in tasks}) == 2  # two job arrays: triage, then optimize
    assert len(ledger.events(kind="submitted")) == 6
    assert {e[1] for e in ledger.events(kind="adopted")} == {t.target for t in tasks if t.job_id in open_jobs}
    assert len(ledger.sessions()) == 2 and ledger.sessions()[0][5] == ""  # the killed session never ended
    assert submitit_files(sweep_dir) == (scripts_before, pickles_before)  # --resume submitted nothing
    assert len(scripts_before) == 2 and len(pickles_before) == 6
    for t in tasks:  # each worker says which job it ran in
        assert json.loads((Path(t.task_dir) / "result.json").read_text())["job_id"] == t.job_id
    # The report is the sweep's; its table of tasks says where each ran (executor, job id, node).
    report = (sweep_dir / "report.md").read_text().replace("\\_", "_")
    assert all(f"| {k} | done |" in report for k in ("stencil1d", "row_reduce", "scan"))
    assert all(f"| slurm | {t.job_id} | {t.node} |" in report for t in tasks)


def test_a_failing_slurm_task_is_retried_then_quarantined_with_the_reason_from_its_log(slurm, tmp_path, monkeypatch):
    """A node whose set-up fails: each job exits before the worker starts, leaving no result; the
    sweep reads why from the job's log, retries once (--max-attempts 2), then quarantines."""
    monkeypatch.setattr(executor_slurm, "GRACE_S", 1.0)
    broken = tmp_path / "k"
    broken.mkdir()
    shutil.copy(KERNELS / "stencil1d.cu", broken / "stencil1d.cu")
    m = tmp_path / "sweep.toml"
    m.write_text('[executor]\nkind = "slurm"\npoll = "1s"\n'
                 'setup = ["echo \'node prologue failed: /scratch is not mounted\' >&2", "exit 1"]\n\n'
                 '[[target]]\nsource = "k/stencil1d.cu"\n')
    out = tmp_path / "runs"
    assert main(["sweep", str(m), "--backend", "host", "--max-attempts", "2", "--budget", "10m", "--out", str(out)]) == 0
    (sweep_dir,) = out.iterdir()
    ledger = SweepLedger(sweep_dir)
    (target,) = ledger.targets()
    reason = "node prologue failed: /scratch is not mounted"
    assert target.status == QUARANTINED and target.attempts == 2 and reason in target.reason
    tasks = ledger.tasks()
    assert [(t.kind, t.state) for t in tasks] == [(TRIAGE, TASK_FAILED), (TRIAGE, TASK_FAILED)]
    assert all(reason in t.reason for t in tasks) and tasks[0].job_id != tasks[1].job_id
    assert len(ledger.events(target.name, "retry")) == 1 and len(ledger.events(target.name, "quarantined")) == 1
    assert len(submitit_files(sweep_dir)[0]) == 2  # the first try and the retry: nothing more
    report = (sweep_dir / "report.md").read_text()
    assert "quarantined" in report and "/scratch is not mounted" in report


def test_a_submission_the_killed_sweep_never_recorded_is_found_again(slurm, tmp_path):
    """Killed between sbatch and recording the job ids: --resume finds the jobs (by the array's
    name in squeue, or by submitit's batch script once the queue has forgotten them) instead of
    submitting them again; a task that never reached sbatch is submitted anew."""
    folder = tmp_path / "k"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.cu").write_text("__global__ void k(float* x) { x[0] = 1 }\nint main() { return 0; }\n")
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    ledger = SweepLedger(sweep_dir, create=True)
    for t in discover_targets([folder]):
        ledger.add_target(t.identity(), t.name, t.spec(), "0" * 64)
    settings = SweepSettings(target_args=[str(folder)], budget_s=600.0, backend="host")
    held = SlurmExecutor(sweep_dir, sbatch=["--hold"], poll_s=1.0)  # held: they wait in the queue, unrun
    dispatch = Dispatcher(sweep_dir, ledger, settings, held, lambda name, run: None)
    real_submit = held.submit
    jobs = []

    def submit_then_die(batch, submissions):
        jobs.extend(real_submit(batch, submissions))
        raise SystemExit("killed before the job ids were recorded")

    held.submit = submit_then_die
    with pytest.raises(SystemExit):
        dispatch.submit([Work(r, TRIAGE) for r in ledger.targets()])
    assert [t.state for t in ledger.tasks()] == ["submitting", "submitting"] and len(jobs) == 2
    array = jobs[0].job_id.split("_")[0]
    try:
        fresh = Dispatcher(sweep_dir, ledger, settings, SlurmExecutor(sweep_dir, poll_s=1.0), lambda name, run: None)
        fresh.reconcile()  # by name, in the queue
        assert [(t.state, t.job_id) for t in ledger.tasks()] == [(SUBMITTED, j.job_id) for j in jobs]
    finally:
        slurm_cluster.cancel([array])
    wait_for(lambda: not any(j.startswith(array) for j in slurm_cluster.queue()), "the held jobs to leave the queue", 60)
    for t in ledger.tasks():
        ledger.update_task(t.id, state="submitting", job_id="")
    fresh = Dispatcher(sweep_dir, ledger, settings, SlurmExecutor(sweep_dir, poll_s=1.0), lambda name, run: None)
    fresh.reconcile()  # by submitit's batch script: the queue has forgotten the array
    assert [t.job_id for t in ledger.tasks()] == [j.job_id for j in jobs]
    # Never submitted: cancelled in the ledger, and the target is free for a new task.
    t = ledger.add_task("a", TRIAGE, 1, "slurm", batch="rp-nowhere-99:0/1")
    Dispatcher(sweep_dir, ledger, settings, SlurmExecutor(sweep_dir, poll_s=1.0), lambda name, run: None).reconcile()
    assert ledger.task(t.id).state == "cancelled" and "never submitted" in ledger.task(t.id).reason
    ledger.close()
