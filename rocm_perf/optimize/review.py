"""`rocm-perf review`: list runs (latest first), or show one run's accepted diffs and evidence."""

from __future__ import annotations

import json
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.apply import accepted_patch
from rocm_perf.optimize.artifacts import add_change_summaries, build_summary, render_markdown, terminal_summary
from rocm_perf.optimize.command import find_run, list_runs
from rocm_perf.optimize.ledger import open_ledger


def runs_document(out_root: Path) -> dict:
    """The runs under `out_root`, latest first: name, directory, state, trials, accepted, source
    (an unreadable run: its `error`)."""
    rows = []
    for r in list_runs(out_root):
        try:
            s = _summary(r)
        except RocmPerfError as e:
            rows.append({"run": r.name, "dir": str(r), "error": str(e)})
            continue
        rows.append({"run": r.name, "dir": str(r), "command": s["command"], "state": s["state"], "trials": s["trials"],
                     "accepted": len(s["accepted"]), "source": s["source"]})
    return {"runs_root": str(out_root), "runs": rows}


def review_document(out_root: Path, run: str) -> dict:
    """One run as `review --json` prints it: its summary (summary.json's keys: verdicts, evidence,
    options, noise floor) and the accepted patch as `apply --patch` prints it (empty when nothing was
    accepted). Writes nothing; never touches the user's files."""
    run_dir = find_run(out_root, run)
    return {"run_dir": str(run_dir), "summary": _summary(run_dir, changes=True), "accepted_patch": accepted_patch(run_dir),
            "apply_command": f"rocm-perf apply {run_dir}"}


def _summary(run_dir: Path, *, changes: bool = False) -> dict:
    """The run's summary; with `changes`, each accepted change hunk by hunk (it parses the
    baselines, so the run list does without)."""
    ledger = open_ledger(run_dir)
    try:
        s = build_summary(run_dir, ledger)
        return add_change_summaries(run_dir, ledger, s) if changes else s
    finally:
        ledger.close()


def run_review(out_root: Path, run: str | None = None, *, as_json: bool = False) -> int:
    if as_json:
        doc = runs_document(out_root) if run is None else review_document(out_root, run)
        print(json.dumps(doc, indent=2, default=str))
        return 0
    if run is None:
        runs = runs_document(out_root)["runs"]
        if not runs:
            print(f"no runs under {out_root}/ (start one with `rocm-perf optimize SOURCE.cu`)")
            return 0
        print(f"{'run':<40} {'state':<12} {'trials':>6} {'accepted':>8}  source")
        for r in runs:
            if "error" in r:
                print(f"{r['run']:<40} unreadable: {r['error']}")
                continue
            print(f"{r['run']:<40} {str(r['state']):<12} {r['trials']:>6} {r['accepted']:>8}  {r['source']}")
        return 0
    s = _summary(find_run(out_root, run), changes=True)
    print(terminal_summary(s))
    print()
    print(render_markdown(s))
    return 0
