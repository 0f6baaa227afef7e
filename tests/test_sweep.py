"""Sweeps: targets, order, budget, failures and quarantine, kill -9 and resume, SIGTERM, lock, status, watch.

Most tests drive the real Sweep with scripted stand-ins for its two workers (triage and optimize:
the seam `Sweep(triage=, optimize=)`), so that kills and signals land at known points in seconds;
the stand-in writes a real run ledger (rocm_perf.optimize.ledger) that the sweep reads back. One
slow test runs the real thing end to end on the host backend.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from rocm_perf.cli import main
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import close_calls
from rocm_perf.report.html import write_run_reports, write_sweep_reports
from rocm_perf.sweep.daemon import SweepLock
from rocm_perf.sweep.ledger import DONE, FAILED, QUARANTINED, RUNNING, SweepLedger
from rocm_perf.sweep.loop import Sweep
from rocm_perf.sweep.run_target import TargetFailed, Triage, optimize_options, triage_target
from rocm_perf.sweep.schedule import SweepSettings, parse_budget
from rocm_perf.sweep.status import STATUS_FILE, read_status, status_text
from rocm_perf.sweep.targets import discover_targets, load_manifest, source_hash

KERNEL = "__global__ void k(float* x) {{ x[0] = {value}; }}\nint main() {{ return 0; }}\n"


def write_sources(folder: Path, names: list[str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, name in enumerate(names):
        p = folder / f"{name}.cu"
        p.write_text(KERNEL.format(value=i))
        paths.append(p)
    return paths


# ---- scripted workers ----------------------------------------------------------------------------

def finished_run(out: Path, source: Path, accepted: int = 0) -> Path:
    """A run directory with a real (finished) optimize ledger, as the loop leaves it."""
    from rocm_perf.optimize.ledger import open_ledger

    run_dir = out / f"run-{source.stem}"
    ledger = open_ledger(run_dir, create=True)
    ledger.set("source_path", str(source))
    ledger.set("backend", "host")
    for i in range(accepted):
        tid = ledger.add_trial(generation=0, loop_key=f"k@{i}", kernel="k", loop_id=f"k:{i}", rule="unroll_pragma",
                               factor=4, expected_value=1.0)
        ledger.update_trial(tid, status="accepted", reason="significant gain")
    ledger.transition("done")
    ledger.close()
    return run_dir


class ScriptedLoop:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.stop_requested = False

    def request_stop(self) -> None:
        self.stop_requested = True


class Script:
    """Triage by a table of critical-path times; optimize records its calls and finishes a run."""

    def __init__(self, cp: dict[str, float] | None = None, fail: dict[str, list[Exception]] | None = None):
        self.cp = cp or {}
        self.fail = fail or {}
        self.triaged: list[str] = []
        self.calls: list[tuple[str, float, str | None]] = []

    def triage(self, target, work_dir, backend) -> Triage:
        self.triaged.append(target.name)
        if target.name.startswith("broken"):
            raise TargetFailed("does not build: k.cu:1: error: expected ';'")
        return Triage(baseline_ns=self.cp.get(target.name, 1000.0), candidates=1)

    def optimize(self, options, reporter, on_loop) -> Path:
        name = Path(options.out).name
        self.calls.append((name, options.time_budget_s, options.resume))
        queue = self.fail.get(name, [])
        if queue:
            raise queue.pop(0)
        run_dir = finished_run(Path(options.out), Path(options.source), accepted=1)
        on_loop(ScriptedLoop(run_dir))
        reporter.stage("screen")
        return run_dir


# What the CLI hands a sweep to write its reports with (the sweep never imports the report).
REPORTS = {"write_run_report": write_run_reports, "write_sweep_report": write_sweep_reports}


def settings(args: list[Path], **kw) -> SweepSettings:
    s = SweepSettings(target_args=[str(a) for a in args], budget_s=kw.pop("budget_s", 3000.0), backend="host")
    s.retry_wait_s = (0.01, 0.02)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


# ---- targets -------------------------------------------------------------------------------------

def test_targets_from_files_dirs_and_manifest(tmp_path):
    a, b = write_sources(tmp_path / "k", ["a", "b"])
    other = write_sources(tmp_path / "other", ["a"])[0]
    manifest = tmp_path / "m.toml"
    manifest.write_text(
        '[defaults]\nmax_trials = 4\n\n'
        '[[target]]\nsource = "k/a.cu"\nname = "a-big"\nargs = ["--n", "4096"]\nkernels = "k"\nbudget = "30m"\n'
        'cflags = "-DN=4 -O2"\nfactors = [2, 4]\n\n'
        '[[target]]\nsource = "other/a.cu"\nrun = "{exe} --fast"\nsettle_close_calls = 0\n')
    targets = discover_targets([tmp_path / "k", manifest, a])
    names = [t.name for t in targets]
    assert names == ["a", "b", "a-big", "a-2"]  # a.cu listed twice with no options: once; clashing stems renamed
    big = targets[2]
    assert big.source == a.resolve()
    assert big.options == {"max_trials": 4, "args": ["--n", "4096"], "kernels": ["k"], "budget": "30m",
                           "cflags": ["-DN=4", "-O2"], "factors": [2, 4]}
    assert targets[3].source == other.resolve() and targets[3].options["run"] == "{exe} --fast"
    # what the loop is told: a manifest key overrides the default (here: never settle close calls)
    options = optimize_options(targets[3], out=tmp_path / "runs", budget_s=60.0, backend="host", resume=None, max_trials=None)
    assert options.settle_close_calls == 0
    assert optimize_options(big, out=tmp_path / "runs", budget_s=60.0, backend="host", resume=None,
                            max_trials=None).settle_close_calls == close_calls.SETTLE_MAX_PAIRS


def test_a_manifest_target_can_be_a_project(tmp_path):
    shutil.copytree(DATA / "projects" / "make_app", tmp_path / "app")
    manifest = tmp_path / "m.toml"
    manifest.write_text('[defaults]\nwarp_size = 32\n\n[[target]]\nproject = "app"\nbuild = "make"\nrun = "./app"\n'
                        'sources = ["src/xor_rows.cu"]\nmax_files = 100\n')
    (target,) = load_manifest(manifest)
    assert target.name == "app" and target.source == (tmp_path / "app").resolve()
    assert target.options == {"warp_size": 32, "project": True, "build": "make", "run": "./app",
                              "sources": ["src/xor_rows.cu"], "max_files": 100}
    options = optimize_options(target, out=tmp_path / "runs", budget_s=60.0, backend="host", resume=None, max_trials=None)
    assert options.project and options.build == "make" and options.run == "./app"
    assert options.sources == ["src/xor_rows.cu"] and options.max_files == 100 and options.warp_size == 32
    # the daemon's change detection: the digest of the project's sources, as its run records it
    before = source_hash(target.source, ["src/xor_rows.cu"])
    (tmp_path / "app" / "src" / "weighted_rows.cu").write_text("// not a listed source\n")
    assert source_hash(target.source, ["src/xor_rows.cu"]) == before
    (tmp_path / "app" / "src" / "xor_rows.cu").write_text("// changed\n")
    assert source_hash(target.source, ["src/xor_rows.cu"]) != before


@pytest.mark.slow
def test_a_project_target_is_triaged_by_building_and_running_it(tmp_path):
    shutil.copytree(DATA / "projects" / "make_app", tmp_path / "app")
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[target]]\nproject = "app"\nbuild = "make"\nrun = "./app"\n')
    (target,) = load_manifest(manifest)
    triage = triage_target(target, tmp_path / "triage", "host")
    assert triage.baseline_ns > 0 and triage.candidates >= 2  # a loop in each of the two kernel files
    assert (tmp_path / "triage" / "tree" / "app").is_file() and not (tmp_path / "app" / "app").exists()


@pytest.mark.parametrize("text, message", [
    ('[[target]]\nsource = "nope.cu"\n', "not found"),
    ('[[target]]\nproject = "."\nrun = "./x"\n', "a project target needs `build` and `run`"),
    ('[[target]]\nsource = "a.cu"\nbuild = "make"\n', "`build` goes with `project`"),
    ('[[target]]\nsource = "a.cu"\nwarp_size = 16\n', "`warp_size` must be 32 or 64"),
    ('[[target]]\nsource = "a.cu"\nmax_trails = 3\n', "unknown key(s) max_trails"),
    ('[[target]]\nname = "x"\n', "needs `source` (a .cu file) or `project`"),
    ('[[target]]\nsource = "a.cu"\nrounds = "five"\n', "`rounds` must be an integer"),
    ('[target\n', "not valid TOML"),
    ('[defaults]\nmax_trials = 2\n', "no [[target]] entries"),
])
def test_bad_manifest_names_file_and_problem(tmp_path, text, message):
    write_sources(tmp_path, ["a"])
    m = tmp_path / "bad.toml"
    m.write_text(text)
    with pytest.raises(RocmPerfError) as e:
        load_manifest(m)
    assert message in str(e.value)
    assert str(m) in str(e.value)


def test_parse_budget():
    assert parse_budget("8h") == 8 * 3600
    assert parse_budget("1h30m") == 5400
    assert parse_budget("90") == 90
    assert parse_budget("45s") == 45
    for bad in ("soon", "8x", "-1", "0", "1h 30"):
        with pytest.raises(RocmPerfError):
            parse_budget(bad)


# ---- order, budget, failures ---------------------------------------------------------------------

def test_targets_run_in_order_of_expected_value_with_budget_rebalanced(tmp_path):
    write_sources(tmp_path / "k", ["a", "b", "c"])
    script = Script(cp={"a": 1e3, "b": 3e3, "c": 2e3})
    sweep_dir = tmp_path / "sweep"
    assert Sweep(sweep_dir, settings([tmp_path / "k"], budget_s=3000.0), triage=script.triage, optimize=script.optimize,
                 **REPORTS).run() == 0
    assert [c[0] for c in script.calls] == ["b", "c", "a"]  # longest critical path first
    shares = [c[1] for c in script.calls]
    # Each target gets the budget left over the targets left: targets finishing early pass time on.
    assert shares[0] == pytest.approx(1000, rel=0.02)
    assert shares[1] == pytest.approx(1500, rel=0.02)
    assert shares[2] == pytest.approx(3000, rel=0.02)
    ledger = SweepLedger(sweep_dir)
    assert {t.name: t.status for t in ledger.targets()} == {"a": DONE, "b": DONE, "c": DONE}
    assert all(t.accepted == 1 for t in ledger.targets())
    status = json.loads((sweep_dir / STATUS_FILE).read_text())
    assert status["state"] == "finished" and status["accepted"] == 3 and status["queue"] == []
    assert (sweep_dir / "report.html").exists() and (sweep_dir / "report.md").exists()
    assert "target b: optimizing" in (sweep_dir / "sweep.log").read_text()


def test_per_target_budget_caps_the_share(tmp_path):
    write_sources(tmp_path / "k", ["a", "b"])
    script = Script()
    Sweep(tmp_path / "s", settings([tmp_path / "k"], budget_s=3000.0, per_target_s=600.0),
          triage=script.triage, optimize=script.optimize).run()
    assert [c[1] for c in script.calls] == [600.0, 600.0]


def test_failures_are_recorded_retried_and_quarantined_and_the_sweep_goes_on(tmp_path):
    write_sources(tmp_path / "k", ["broken", "flaky", "bad", "good"])
    script = Script(
        cp={"good": 4e3, "flaky": 3e3, "bad": 2e3},
        fail={"flaky": [RocmPerfError("flaky.cu: the baseline failed in A/A round 2 (crash)")] * 2,
              "bad": [RocmPerfError("bad.cu: the baseline program fails (timeout, exit -9)") for _ in range(9)]},
    )
    sweep_dir = tmp_path / "s"
    Sweep(sweep_dir, settings([tmp_path / "k"], max_attempts=3), triage=script.triage, optimize=script.optimize).run()
    ledger = SweepLedger(sweep_dir)
    rows = {t.name: t for t in ledger.targets()}
    assert rows["broken"].status == FAILED and "does not build" in rows["broken"].reason
    assert script.triaged.count("broken") == 1  # a build error is not retried
    assert rows["flaky"].status == DONE and rows["flaky"].attempts == 2
    assert rows["bad"].status == QUARANTINED and "timeout" in rows["bad"].reason and rows["bad"].attempts == 3
    assert [c[0] for c in script.calls].count("bad") == 3
    assert rows["good"].status == DONE
    assert len(ledger.events("flaky", "retry")) == 2
    assert len(ledger.events("bad", "quarantined")) == 1
    # A resumed sweep does not try a quarantined or failed target again.
    script.calls.clear()
    Sweep(sweep_dir, settings([tmp_path / "k"], max_attempts=3), triage=script.triage, optimize=script.optimize,
          **REPORTS).run()
    assert script.calls == []
    report = (sweep_dir / "report.md").read_text()
    assert "quarantined" in report and "does not build" in report


def test_unexpected_exception_in_a_target_is_recorded_not_fatal(tmp_path):
    write_sources(tmp_path / "k", ["a", "b"])
    script = Script(cp={"a": 2e3, "b": 1e3}, fail={"a": [KeyError("stage")] * 5})
    sweep_dir = tmp_path / "s"
    Sweep(sweep_dir, settings([tmp_path / "k"], max_attempts=2), triage=script.triage, optimize=script.optimize).run()
    rows = {t.name: t for t in SweepLedger(sweep_dir).targets()}
    assert rows["a"].status == QUARANTINED and rows["a"].reason == "KeyError: 'stage'"
    assert rows["b"].status == DONE
    assert "Traceback" in (sweep_dir / "sweep.log").read_text()


def test_budget_spent_stops_before_the_next_target(tmp_path):
    write_sources(tmp_path / "k", ["a"])
    script = Script()
    sweep_dir = tmp_path / "s"
    Sweep(sweep_dir, settings([tmp_path / "k"], budget_s=10.0), triage=script.triage, optimize=script.optimize).run()
    assert script.calls == [] and script.triaged == []
    assert json.loads((sweep_dir / STATUS_FILE).read_text())["state"] == "budget spent"


# ---- one process per sweep directory -------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from pathlib import Path
from rocm_perf.sweep.daemon import SweepLock
SweepLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_lock_refuses_a_second_sweep_and_dies_with_its_holder(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RocmPerfError, match=f"pid {holder.pid}") as e:
            SweepLock(tmp_path).acquire()
        assert e.value.exit_code == 3
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    lock = SweepLock(tmp_path)
    lock.acquire()  # the kernel released the dead holder's lock
    lock.release()


# ---- kill -9, resume, SIGTERM, status ------------------------------------------------------------

SCRIPTED_SWEEP = r"""
import json, sys, time
from pathlib import Path
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import Stopped
from rocm_perf.report.html import write_run_reports, write_sweep_reports
from rocm_perf.sweep import daemon
from rocm_perf.sweep.display import PlainDisplay
from rocm_perf.sweep.loop import Sweep
from rocm_perf.sweep.run_target import Triage
from rocm_perf.sweep.schedule import SweepSettings

daemon.HEARTBEAT_S = 0.2
sweep_dir, calls_file, slow = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
targets = sys.argv[4:]

def triage(target, work_dir, backend):
    return Triage(baseline_ns={"a": 3e3, "b": 2e3, "c": 1e3}[target.name], candidates=1)

def optimize(options, reporter, on_loop):
    name = Path(options.out).name
    with open(calls_file, "a") as f:
        f.write(json.dumps({"target": name, "resume": options.resume, "budget": options.time_budget_s}) + "\n")
    run_dir = Path(options.out) / f"run-{name}"
    ledger = open_ledger(run_dir, create=True)
    ledger.set("source_path", str(options.source)); ledger.set("backend", "host")
    class Loop:
        stop_requested = False
        def request_stop(self): self.stop_requested = True
    loop = Loop(); loop.run_dir = run_dir
    on_loop(loop)
    if name == slow:
        reporter.stage("screen")
        for i in range(1200):  # measurement rounds of 0.05 s; a stop lands after the current one
            time.sleep(0.05)
            if loop.stop_requested:
                ledger.set("stopped_after_round", i)
                ledger.close()
                raise Stopped("stopped on request")
    ledger.transition("done")
    ledger.close()
    return run_dir

settings = SweepSettings(target_args=targets, budget_s=3600.0, backend="host")
sys.exit(Sweep(sweep_dir, settings, triage=triage, optimize=optimize, display=PlainDisplay(sys.stdout),
               write_run_report=write_run_reports, write_sweep_report=write_sweep_reports).run())
"""


def start_scripted_sweep(tmp_path: Path, slow: str) -> tuple[subprocess.Popen, Path, Path]:
    write_sources(tmp_path / "k", ["a", "b", "c"])
    sweep_dir, calls = tmp_path / "sweep", tmp_path / "calls.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPTED_SWEEP, str(sweep_dir), str(calls), slow, str(tmp_path / "k")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    return proc, sweep_dir, calls


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def current_is(sweep_dir: Path, target: str) -> dict | None:
    try:
        s = json.loads((sweep_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    cur = s["current"]
    return s if cur["target"] == target and cur["stage"] == "screen" and cur["run_dir"] else None


def read_calls(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_kill_9_then_resume_loses_and_redoes_nothing(tmp_path):
    proc, sweep_dir, calls = start_scripted_sweep(tmp_path, slow="b")
    try:
        live = wait_for(lambda: current_is(sweep_dir, "b"), "target b to be measured")
        time.sleep(0.5)  # a few heartbeats into b
        status = read_status(sweep_dir)
        assert status["alive"] and status["current"]["target"] == "b" and status["queue"] == ["c"]
        assert status["counts"] == {"done": 1, "running": 1, "pending": 1}
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert live["pid"] == proc.pid
    killed = read_status(sweep_dir)
    assert not killed["alive"] and "NOT RUNNING" in status_text(killed)
    used_before = SweepLedger(sweep_dir).used_s()
    assert used_before > 0.5
    b_run = SweepLedger(sweep_dir).target("b").run_dir
    assert b_run.endswith("run-b")
    # The report of a killed sweep shows where it stands.
    assert main(["report", str(sweep_dir), "--html", str(tmp_path / "k.html"), "--md", str(tmp_path / "k.md")]) == 0
    killed_md = (tmp_path / "k.md").read_text()
    assert "| b | running |" in killed_md and "| a | done |" in killed_md and "| c | pending |" in killed_md

    script = Script()
    Sweep(sweep_dir, settings([tmp_path / "k"], budget_s=3600.0), triage=script.triage, optimize=script.optimize).run()
    # a was done before the kill: not triaged, not optimized again. b resumes its own run; c runs once.
    assert script.triaged == []
    assert [(c[0], c[2]) for c in script.calls] == [("b", "run-b"), ("c", None)]
    assert [c["target"] for c in read_calls(calls)] == ["a", "b"]
    ledger = SweepLedger(sweep_dir)
    assert {t.name: t.status for t in ledger.targets()} == {"a": DONE, "b": DONE, "c": DONE}
    # The killed session's time still counts against the budget: the resumed sweep ran inside what was left.
    assert ledger.used_s() >= used_before
    assert len(ledger.sessions()) == 2 and ledger.sessions()[0][5] == ""  # the first session never ended cleanly
    assert script.calls[0][1] < 3600.0 - used_before + 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_finishes_the_round_records_and_exits_0(tmp_path, sig):
    proc, sweep_dir, calls = start_scripted_sweep(tmp_path, slow="a")
    wait_for(lambda: current_is(sweep_dir, "a"), "target a to be measured")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"stopped ({sig.name})" in out
    assert "--resume" in out and "stopped in a" in out
    ledger = SweepLedger(sweep_dir)
    a = ledger.target("a")
    assert a.status == RUNNING  # recorded as interrupted, to be resumed
    assert ledger.events("a", "stopped")
    from rocm_perf.optimize.ledger import open_ledger

    run = open_ledger(Path(a.run_dir))
    assert run.get("stopped_after_round") is not None  # the loop saw the stop between rounds
    run.close()
    assert ledger.sessions()[-1][5] == "stopped"
    assert read_status(sweep_dir)["state"] == "stopped"
    assert "stopped" in status_text(read_status(sweep_dir))


def test_status_command_prints_current_queue_accepted_and_budget(tmp_path, capsys):
    write_sources(tmp_path / "k", ["a", "b"])
    script = Script()
    sweep_dir = tmp_path / "s"
    Sweep(sweep_dir, settings([tmp_path / "k"], budget_s=7200.0), triage=script.triage, optimize=script.optimize).run()
    capsys.readouterr()
    assert main(["status", str(sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert "finished" in out and "accepted so far: 2" in out and "left of 2h00m" in out and "2 done" in out
    assert main(["status", str(sweep_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alive"] is False and doc["accepted"] == 2 and doc["budget_s"] == 7200.0
    assert main(["status", str(tmp_path)]) == 2  # not a sweep directory: one-line error


# ---- watch mode ------------------------------------------------------------------------------------

def test_watch_reoptimizes_changed_sources_and_picks_up_new_targets(tmp_path):
    folder = tmp_path / "k"
    (a,) = write_sources(folder, ["a"])
    script = Script()
    sweep = Sweep(tmp_path / "s", settings([folder], budget_s=None, watch=True, poll_s=0.1),
                  triage=script.triage, optimize=script.optimize)
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("rc", sweep.run()))
    thread.start()
    try:
        wait_for(lambda: [c[0] for c in script.calls] == ["a"], "a optimized")
        wait_for(lambda: json.loads((tmp_path / "s" / STATUS_FILE).read_text())["state"] == "idle", "idle")
        time.sleep(0.3)
        assert [c[0] for c in script.calls] == ["a"]  # unchanged: idle, not re-optimized
        a.write_text(a.read_text() + "// edited\n")
        wait_for(lambda: [c[0] for c in script.calls] == ["a", "a"], "a re-optimized after its change")
        write_sources(tmp_path / "new", ["d"])[0].rename(folder / "d.cu")
        wait_for(lambda: [c[0] for c in script.calls] == ["a", "a", "d"], "new target d picked up")
    finally:
        sweep.request_stop("test over")
        thread.join(timeout=30)
    assert result["rc"] == 0
    ledger = SweepLedger(tmp_path / "s")
    assert ledger.target("a").generation == 2 and ledger.target("d").status == DONE
    assert ledger.events("a", "changed")
    log = (tmp_path / "s" / "sweep.log").read_text()
    assert "source changed" in log and "target d: added" in log


# ---- the real thing ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.long
def test_real_sweep_on_the_host_backend(tmp_path, capsys):
    """Real triage and optimize: one target wins or not, one does not build; the sweep records both."""
    folder = tmp_path / "targets"
    folder.mkdir()
    (folder / "unroll_wins.cu").write_bytes((DATA / "programs" / "unroll_wins.cu").read_bytes())
    (folder / "broken.cu").write_text("__global__ void k(float* x) { x[0] = 1 }\nint main() { return 0; }\n")
    manifest = tmp_path / "sweep.toml"
    manifest.write_text('[[target]]\nsource = "targets/unroll_wins.cu"\nmax_trials = 1\nrounds = 3\nmax_rounds = 6\n'
                        'aa_rounds = 3\ncompile_check = "off"\n\n[[target]]\nsource = "targets/broken.cu"\n')
    out = tmp_path / "runs"
    assert main(["sweep", str(manifest), "--budget", "20m", "--backend", "host", "--out", str(out)]) == 0
    (sweep_dir,) = out.iterdir()
    rows = {t.name: t for t in SweepLedger(sweep_dir).targets()}
    assert rows["broken"].status == FAILED and "does not build" in rows["broken"].reason
    win = rows["unroll_wins"]
    assert win.status == DONE and win.baseline_ns and win.baseline_ns > 0
    assert Path(win.run_dir).parent == sweep_dir / "runs" / "unroll_wins"
    assert (Path(win.run_dir) / "summary.json").exists() and (Path(win.run_dir) / "report.html").exists()
    md = (sweep_dir / "report.md").read_text()
    assert "unroll\\_wins" in md and "does not build" in md
    assert main(["report", str(sweep_dir)]) == 0
    assert "sweep-table" in (sweep_dir / "report.html").read_text()

    # status after the sweep ended: every target, its state and attempts, and the run's gain in the
    # decision metric with its interval, exactly as the report gives it (not a wall-clock ratio)
    from rocm_perf.optimize.run_view import load_run, speedup_text

    run = load_run(Path(win.run_dir))
    capsys.readouterr()
    assert main(["status", str(sweep_dir), "--json"]) == 0
    targets = {e["name"]: e for e in json.loads(capsys.readouterr().out)["targets"]}
    assert set(targets) == {"unroll_wins", "broken"}
    assert targets["broken"]["status"] == FAILED and targets["broken"]["gain"] is None
    entry = targets["unroll_wins"]
    assert entry["status"] == DONE and entry["attempts"] == win.attempts and entry["metric"] == run.metric
    assert entry["gain"] == pytest.approx(1 / run.ratio) and entry["interval"] == pytest.approx(list(run.speedup_interval))
    assert main(["status", str(sweep_dir)]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.strip().startswith("unroll_wins"))
    shown = speedup_text(run.speedup, run.speedup_interval)
    assert shown in line and f"({run.metric})" in line and shown in md
    assert next(x for x in text.splitlines() if x.strip().startswith("broken")).split()[1] == FAILED


def test_progress_on_a_terminal_and_as_a_plain_log(tmp_path):
    import io

    from rich.console import Console

    from rocm_perf.sweep.display import PlainDisplay, RichDisplay

    write_sources(tmp_path / "k", ["a", "b"])
    screen = io.StringIO()
    rich = RichDisplay(console=Console(file=screen, force_terminal=True, width=120))
    script = Script()
    Sweep(tmp_path / "s", settings([tmp_path / "k"]), triage=script.triage, optimize=script.optimize, display=rich).run()
    shown = screen.getvalue()
    assert "targets" in shown and "2 done, 0 left" in shown and "time left" in shown and "accepted" in shown
    plain = io.StringIO()
    Sweep(tmp_path / "s2", settings([tmp_path / "k"]), triage=script.triage, optimize=script.optimize,
          display=PlainDisplay(plain)).run()
    lines = plain.getvalue().splitlines()
    assert any("[triage] a" in line for line in lines) and any("[optimizing] b" in line for line in lines)
    assert "\x1b[" not in plain.getvalue()  # no terminal codes in a log
    assert "[finished]" in lines[-1] and "2 done, 0 queued, 2 accepted" in lines[-1]


@pytest.mark.parametrize("argv, message", [
    (["sweep"], "name targets"),
    (["sweep", "--resume", "nowhere"], "not a sweep directory"),
    (["sweep", "missing.cu"], "missing.cu: no such file or directory"),
    (["sweep", "x.cu", "--budget", "soon"], "--budget 'soon'"),
    (["sweep", "empty"], "no .cu/.hip sources found"),
])
def test_sweep_command_errors_are_one_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.cu").write_text(KERNEL.format(value=1))
    (tmp_path / "empty").mkdir()
    assert main(argv + ["--out", str(tmp_path / "runs")]) in (2, 3)
    err = capsys.readouterr().err
    assert err.startswith("rocm-perf: error:") and message in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()  # nothing half-made
