"""`rocm-perf review`: list runs (latest first), or show one run's accepted diffs and evidence."""

from __future__ import annotations

from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.artifacts import build_summary, render_markdown, terminal_summary
from rocm_perf.optimize.command import find_run, list_runs
from rocm_perf.optimize.ledger import open_ledger


def run_review(out_root: Path, run: str | None = None) -> int:
    if run is None:
        runs = list_runs(out_root)
        if not runs:
            print(f"no runs under {out_root}/ (start one with `rocm-perf optimize SOURCE.cu`)")
            return 0
        print(f"{'run':<40} {'state':<12} {'trials':>6} {'accepted':>8}  source")
        for r in runs:
            try:
                ledger = open_ledger(r)
            except RocmPerfError as e:
                print(f"{r.name:<40} unreadable: {e}")
                continue
            try:
                s = build_summary(r, ledger)
            finally:
                ledger.close()
            print(f"{r.name:<40} {str(s['state']):<12} {s['trials']:>6} {len(s['accepted']):>8}  {s['source']}")
        return 0
    run_dir = find_run(out_root, run)
    ledger = open_ledger(run_dir)
    try:
        s = build_summary(run_dir, ledger)
    finally:
        ledger.close()
    print(terminal_summary(s))
    print()
    print(render_markdown(s))
    return 0
