"""`rocm-perf sweep`: its arguments, a new or resumed sweep directory, and its settings; then the
sweep (loop.py) runs in this process until its work or budget is done."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.executor_settings import ExecutorSettings, add_executor_arguments, executor_settings, make_executor
from rocm_perf.sweep.ledger import SWEEP_DB, SweepLedger
from rocm_perf.sweep.schedule import SweepSettings, parse_budget
from rocm_perf.sweep.targets import discover_targets


def add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", help=".cu files, directories of them, or TOML manifests")
    p.add_argument("--budget", default=None, help="total wall-clock budget, e.g. 90m, 8h, 1h30m (default: 8h; with --watch: none)")
    p.add_argument("--per-target-budget", default=None, metavar="DURATION", help="cap for any one target (default: the budget left shared over the targets left)")
    p.add_argument("--resume", metavar="SWEEP", help="continue this sweep directory inside its remaining budget")
    p.add_argument("--watch", action="store_true", help="keep running: re-optimize changed sources, pick up new targets")
    p.add_argument("--poll", default="30s", metavar="DURATION", help="with --watch: how often to look for changes (default: 30s)")
    p.add_argument("--max-attempts", type=int, default=3, help="tries of a failing target before it is quarantined (default: 3)")
    p.add_argument("--max-trials", type=int, default=None, help="candidates per target (default: optimize's own)")
    p.add_argument("--out", default="runs", help="output root for a new sweep (default: runs/; with --executor slurm, "
                                                  "on a file system the compute nodes share)")
    add_executor_arguments(p)


def new_sweep_dir(out_root: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out_root / f"sweep-{stamp}"
    k = 2
    while path.exists():
        path = out_root / f"sweep-{stamp}-{k}"
        k += 1
    return path


def settings_from_args(args: argparse.Namespace, stored: dict | None) -> SweepSettings:
    """New settings from the command line; on --resume the stored ones, with what the line overrides."""
    if stored:
        s = SweepSettings.from_json(stored)
        s.target_args += [str(Path(t).resolve()) for t in args.targets if str(Path(t).resolve()) not in s.target_args]
    else:
        if not args.targets:
            raise RocmPerfError("sweep: name targets (.cu files, directories, TOML manifests) or --resume SWEEP")
        s = SweepSettings(target_args=[str(Path(t).resolve()) for t in args.targets], budget_s=None)
        s.budget_s = None if args.watch and args.budget is None else parse_budget(args.budget or "8h")
    if stored and args.budget is not None:
        s.budget_s = parse_budget(args.budget)
    if args.per_target_budget is not None:
        s.per_target_s = parse_budget(args.per_target_budget, "--per-target-budget")
    if args.watch:
        s.watch = True
    s.poll_s = parse_budget(args.poll, "--poll")
    if args.max_attempts < 1:
        raise RocmPerfError(f"--max-attempts {args.max_attempts}: must be at least 1")
    s.max_attempts = args.max_attempts if not stored or args.max_attempts != 3 else s.max_attempts
    if args.max_trials is not None:
        s.max_trials = args.max_trials
    if getattr(args, "backend", None) and (not stored or args.backend != "auto"):
        s.backend = args.backend
    s.executor = executor_settings(args, s.target_args, s.executor if stored else None).to_json()
    if getattr(args, "warp_size", None):
        s.warp_size = args.warp_size
    return s


def run_sweep(args: argparse.Namespace, *, write_run_report: Callable[[Path], None] | None = None,
              write_sweep_report: Callable[[Path], None] | None = None) -> int:
    """`rocm-perf sweep TARGETS... [--budget 8h] [--per-target-budget D] [--resume SWEEP] [--watch]
    [--executor local|slurm ...]`.

    The writers of each run's and the sweep's report come from the caller (the report layer)."""
    if args.resume:
        sweep_dir = Path(args.resume)
        if not sweep_dir.is_dir():
            sweep_dir = Path(args.out) / args.resume
        if not (sweep_dir / SWEEP_DB).exists():
            raise RocmPerfError(f"{args.resume}: not a sweep directory (no {SWEEP_DB}; looked in . and {args.out})")
        ledger = SweepLedger(sweep_dir)
        stored = ledger.get("settings")
        open_tasks = ledger.tasks(open_only=True)
        ledger.close()
    else:
        sweep_dir, stored, open_tasks = new_sweep_dir(Path(args.out)), None, []
    settings = settings_from_args(args, stored)
    from rocm_perf.source.libclang_check import require_libclang

    require_libclang()  # every target's triage parses its sources: a missing piece is one line, before any work
    kind = ExecutorSettings.from_json(settings.executor).kind
    held = sorted({t.executor for t in open_tasks} - {kind, "inline"})
    if held:
        raise RocmPerfError(f"{sweep_dir}: {held[0]} tasks are still open (jobs "
                            f"{', '.join(t.job_id for t in open_tasks if t.executor == held[0])}); "
                            f"resume with --executor {held[0]}")
    if not discover_targets([Path(a) for a in settings.target_args]) and not settings.watch:
        raise RocmPerfError(f"{' '.join(settings.target_args)}: no .cu/.hip sources found")  # checked before any directory is made
    from rocm_perf.sweep.display import PlainDisplay, RichDisplay  # here: every command builds this module's parser
    from rocm_perf.sweep.loop import Sweep

    executor = make_executor(ExecutorSettings.from_json(settings.executor), sweep_dir, settings.backend)
    display = RichDisplay() if sys.stdout.isatty() else PlainDisplay(sys.stdout)
    print(f"sweep directory: {sweep_dir} (executor: {executor.describe()})", flush=True)
    return Sweep(sweep_dir, settings, executor=executor, display=display, write_run_report=write_run_report,
                 write_sweep_report=write_sweep_report).run()
