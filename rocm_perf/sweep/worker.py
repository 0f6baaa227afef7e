"""One task's work, wherever it runs: in the sweep's own process (the inline executor), in a
worker process of the local executor (`python -m rocm_perf.sweep.worker TASK_DIR`), or in a
Slurm job (submitit calls `run_task(TASK_DIR)`).

`execute` runs a target's triage or optimize run from a task spec and says how it ended, as a
dict (the result): {"status": ok | failed | stopped | error, "reason", ...}. It never raises for
the target's own failures: a result says what happened and the sweep decides (retry, quarantine).

The task spec (task.json, written by the sweep; see dispatch.py):
    kind        triage | optimize
    target      the target's spec (targets.py)
    backend     the backend name
    work_dir    triage: where the first build and profile go
    out         optimize: the target's runs folder; run_dir: the run to continue, if any
    budget_s    optimize: this task's share of the sweep budget
    deadline    optimize: epoch seconds when the sweep's budget ends (a task that waited in a
                queue gets only what is left)
    max_trials  optimize: candidates per target (None: optimize's own)
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from rocm_perf.disk_space import is_out_of_space
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.progress import Reporter
from rocm_perf.sweep import task_files
from rocm_perf.sweep.ledger import TRIAGE
from rocm_perf.sweep.run_target import TargetFailed, optimize_options, optimize_target, run_elapsed, triage_target
from rocm_perf.sweep.schedule import MIN_SHARE_S
from rocm_perf.sweep.targets import SweepTarget
from rocm_perf.sweep.task_files import ERROR, FAILED, OK, STOPPED

Publish = Callable[[dict[str, Any]], None]

log = logging.getLogger("rocm_perf.sweep")

PARENT_VARIABLE = "ROCM_PERF_SWEEP_PARENT"  # set by the local executor: the worker stops when that process dies
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# The signal the kernel sends a local worker when its sweep dies (kill -9 included): stop at once,
# ending the program it runs (a SIGTERM from a live sweep finishes the round instead). Workers run
# in their own session, so no terminal sends it.
PARENT_DIED = signal.SIGHUP
SWEEP_DIED_REASON = "stopped: the sweep that ran it died"


class TaskStopped(Exception):
    """A stop request reached a task before its loop existed (during triage or a build)."""


class StopHandle:
    """How a stop request reaches a task: the optimize loop once it exists (it finishes its round)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.loop = None

    def request_stop(self) -> None:
        self.requested.set()
        loop = self.loop
        if loop is not None:
            loop.request_stop()


class TaskReporter(Reporter):
    """The optimize loop's progress, handed to `publish` as a dict (progress.json, or memory)."""

    def __init__(self, publish: Publish, name: str):
        super().__init__()
        self.publish = publish
        self.name = name

    def update(self) -> None:
        s = self.state
        self.publish({"stage": s.stage, "candidate": s.candidate,
                      "rounds": f"{s.rounds}/{s.max_rounds}" if s.max_rounds else "",
                      "last_verdict": s.last, "accepted": s.accepted})

    def verdict(self, label: str, text: str, accepted: bool) -> None:
        super().verdict(label, text, accepted)
        log.info("%s: %s: %s", self.name, label, text)

    def message(self, text: str) -> None:
        log.info("%s: %s", self.name, text)


def execute(spec: dict[str, Any], *, triage=triage_target, optimize=optimize_target, publish: Publish,
            handle: StopHandle) -> dict[str, Any]:
    """Run the task `spec` describes; its result (never raises for the target's own failures)."""
    from rocm_perf.optimize.loop import Stopped

    target = SweepTarget.from_spec(spec["target"])
    try:
        if spec["kind"] == TRIAGE:
            publish({"stage": "build and one profiled run"})
            t = triage(target, Path(spec["work_dir"]), spec["backend"])
            return {"status": OK, "baseline_ns": t.baseline_ns, "candidates": t.candidates, "note": t.note}
        return _optimize(spec, target, optimize, publish, handle)
    except (Stopped, TaskStopped):
        return {"status": STOPPED, "reason": "stopped on request"}
    except TargetFailed as e:
        return {"status": FAILED, "reason": str(e)}
    except Exception as e:  # noqa: BLE001 - the sweep decides what a failure means; the worker reports it
        from rocm_perf.sweep.retry import reason_of

        if is_out_of_space(e):  # no verdict on the target: the sweep stops, --resume continues it
            return {"status": STOPPED, "reason": f"the disk is full: {reason_of(e)}", "disk_full": True}
        result = {"status": ERROR, "reason": reason_of(e)}
        if not isinstance(e, RocmPerfError):
            result["traceback"] = "".join(traceback.format_exception(e))
        return result


def _optimize(spec: dict[str, Any], target: SweepTarget, optimize, publish: Publish, handle: StopHandle) -> dict:
    run_dir = Path(spec["run_dir"]) if spec.get("run_dir") else None
    budget = float(spec["budget_s"])
    if spec.get("deadline") is not None:
        budget = min(budget, float(spec["deadline"]) - time.time())
    if budget < MIN_SHARE_S:
        return {"status": STOPPED, "reason": "the sweep's budget was spent before this task started"}
    prior = run_elapsed(run_dir) if run_dir else 0.0
    options = optimize_options(target, out=Path(spec["out"]), budget_s=prior + budget, backend=spec["backend"],
                               resume=run_dir.name if run_dir else None, max_trials=spec.get("max_trials"))
    publish({"stage": "starting", "budget_s": budget})

    def on_loop(loop) -> None:
        handle.loop = loop
        publish({"run_dir": str(loop.run_dir)})
        if handle.requested.is_set():
            loop.request_stop()

    done = optimize(options, TaskReporter(publish, target.name), on_loop)
    return {"status": OK, "run_dir": str(done)}


def run_task(directory: str) -> dict[str, Any]:
    """A task in this process, from its directory: progress.json while it runs, result.json at the
    end; returns the result. SIGTERM (a stop, a preemption notice) finishes the current
    measurement round and records it; before the loop exists, it stops at once. PARENT_DIED (the
    sweep of a local worker died) stops at once, wherever the work is."""
    d = Path(directory)
    spec = task_files.read_spec(d)
    progress = task_files.ProgressFile(d)
    handle = StopHandle()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")

    def on_term(signum, frame) -> None:
        # Once only: a dying multi-threaded parent may deliver its death signal more than once
        # (once per thread the child is handed to), and the result must still be written.
        if handle.requested.is_set():
            return
        handle.request_stop()
        if handle.loop is None and working.is_set():  # no round to finish: stop now
            raise TaskStopped()

    def on_parent_death(signum, frame) -> None:
        handle.request_stop()
        if working.is_set():
            # Leave from here (the round in flight is not recorded: a resume measures it again). An
            # exception would unwind through the thread pool of the builds in
            # flight (a baseline and its twin), whose exit waits for them: bench_kill9 saw the
            # worker and both compilers outlive a sweep killed mid-build by 5-10 s. The result is
            # written first; each build's supervisor ends its compiler when its thread is gone.
            finish({"status": STOPPED, "reason": SWEEP_DIED_REASON})
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

    def finish(result: dict[str, Any]) -> dict[str, Any]:
        result.update({k: progress.state.get(k) for k in ("node", "device", "job_id", "started", "run_dir")
                       if progress.state.get(k)})
        result["ended"] = time.time()
        task_files.write_result(d, result)
        return result

    working = threading.Event()  # while set, a stop may interrupt the code it lands in
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main_thread else None
    previous_hup = signal.signal(PARENT_DIED, on_parent_death) if main_thread else None
    result: dict[str, Any] | None = None
    try:
        try:
            working.set()
            if not _follow_parent():
                raise TaskStopped()
            result = execute(spec, publish=progress.update, handle=handle)
        except TaskStopped:
            result = result or {"status": STOPPED, "reason": "stopped on request"}
        finally:
            working.clear()
        progress.flush()
        finish(result)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(PARENT_DIED, previous_hup)
    if result.get("traceback"):
        print(result["traceback"], file=sys.stderr)
    return result


def _follow_parent() -> bool:
    """With PARENT_VARIABLE set: PARENT_DIED when that parent dies (PR_SET_PDEATHSIG); False when it
    has already died (before the request could be made)."""
    parent = os.environ.get(PARENT_VARIABLE)
    if not parent or not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, PARENT_DIED, 0, 0, 0)
    except (OSError, AttributeError):
        return True  # no prctl: the worker outlives a killed sweep, which finds it again on resume
    return os.getppid() == int(parent)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m rocm_perf.sweep.worker TASK_DIR", file=sys.stderr)
        return 2
    result = run_task(args[0])
    if result.get("reason") == SWEEP_DIED_REASON:
        # Builds and runs on other threads (a baseline and its twin build side by side) would keep
        # this process, and their programs, alive until they finish: a sweep killed during a build
        # left its worker and two compilers running for another 12 s. The result is written; leave
        # now, and each program's supervisor ends it when its parent thread is gone (PR_SET_PDEATHSIG).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0 if result["status"] in (OK, STOPPED, FAILED) else 1


if __name__ == "__main__":
    sys.exit(main())
