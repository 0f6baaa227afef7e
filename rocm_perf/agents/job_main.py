"""One background job of the MCP server, in its own process: `python -m rocm_perf.agents.job_main JOB_DIR`.

It runs what job.json asks through the functions the CLI runs: try_patch() (try_command.py, the
`rocm-perf try` of a patch given as text), run_try() for `try --resume`, optimize_run() for
`rocm-perf optimize` and its `--resume`. Progress goes to stderr as `--json` writes it (JSON lines;
jobs.py reads them); at the end result.json says what it came to.

SIGTERM (from the server, or from the parent watch below when the server is gone) stops the run
after the step in flight, as Ctrl-C stops the CLI: the run stays resumable.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError

PARENT_POLL_S = 1.0


def watch_parent(parent: int) -> None:
    """Stop the job (SIGTERM to itself) once its server is gone (it is re-parented)."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        print(json.dumps({"at": round(time.time(), 3), "event": "message",
                          "text": "the MCP server is gone: stopping after the step in flight"}), file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _parser(command: str) -> argparse.ArgumentParser:
    """`rocm-perf try` / `rocm-perf optimize`'s options, as the CLI adds them."""
    from rocm_perf.optimize.options import add_optimize_arguments
    from rocm_perf.optimize.try_command import add_try_arguments

    p = argparse.ArgumentParser(prog=f"rocm-perf {command}")
    if command == "try":
        add_try_arguments(p)
    else:
        add_optimize_arguments(p)
    p.add_argument("--backend", choices=["auto", "host", "rocm"], default="auto")
    p.add_argument("--warp-size", type=int, choices=[32, 64], default=None)
    return p


def _args(command: str, argv: list[str], program_args: list[str]) -> argparse.Namespace:
    args = _parser(command).parse_args(argv)
    args.program_args = list(program_args)
    args.command = command
    return args


def run_job(job_dir: Path, job: dict) -> tuple[Path, int]:
    """Run the job; its run directory and exit code (as the CLI's)."""
    from rocm_perf.optimize.command import optimize_run
    from rocm_perf.optimize.try_command import run_try, try_patch
    from rocm_perf.report.html import write_run_reports

    req = job["request"]
    if job["kind"] == "try_patch" and not req.get("resume"):
        name = req.get("patch_name") or "patch.diff"
        run_dir = try_patch(req.get("source"), (job_dir / "patch" / name).read_bytes(), name=name,
                            project=req.get("project"), build=req.get("build"), run=req.get("run"),
                            backend=req.get("backend") or "auto", tolerance=req.get("tolerance"),
                            time_budget=req.get("time_budget") or "1h", out=req["out"],
                            program_args=req.get("program_args") or [], extra=[*req.get("argv", []), "--json"],
                            write_report=write_run_reports)
        return Path(run_dir), 0
    if job["kind"] == "try_patch":
        result = run_try(_args("try", ["--resume", req["resume"], "--out", req["out"], "--quiet", "--json"], []),
                         write_report=write_run_reports)
        return result.run_dir, result.exit_code
    argv = (["--resume", req["resume"]] if req.get("resume") else req.get("argv", [])) + ["--out", req["out"], "--quiet", "--json"]
    run_dir, _opt, summary = optimize_run(_args("optimize", argv, req.get("program_args") or []),
                                          write_report=write_run_reports)
    return run_dir, 0 if summary is not None else 130


def _result(run_dir: Path) -> dict:
    """What the run came to, from its ledger and summary.json (the same as the CLI's)."""
    from rocm_perf.agents.jobs import DONE, STOPPED, run_state
    from rocm_perf.optimize.try_command import verdict_lines

    if run_state(run_dir) != "done":
        return {"state": STOPPED}
    summary = json.loads((run_dir / "summary.json").read_text())
    verdicts = ([{"candidate": t["label"], "verdict": "accepted", "accepted": True} for t in summary["accepted"]]
                + [{"candidate": t["label"], "verdict": f"rejected: {t['reason']}", "accepted": False,
                    "detail": (t.get("detail") or "").splitlines()[0][:200] if t.get("detail") else ""}
                   for t in sorted(summary["rejected"], key=lambda t: t["id"])])
    return {"state": DONE, "verdicts": verdicts, "result_lines": verdict_lines(summary, run_dir)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job_dir = Path(argv[0])
    watch_parent(os.getppid())
    job = json.loads((job_dir / "job.json").read_text())
    result: dict
    code = 0
    try:
        run_dir, code = run_job(job_dir, job)
        result = {"run": str(run_dir), **_result(run_dir)}
    except RocmPerfError as e:
        print(f"rocm-perf: error: {e}", file=sys.stderr, flush=True)
        result, code = {"state": "failed", "error": str(e).splitlines()[0]}, e.exit_code
    except Exception as e:  # a bug: its traceback goes to progress.log, the job says so in one line
        traceback.print_exc()
        result, code = {"state": "failed", "error": f"internal error: {type(e).__name__}: {e}".splitlines()[0]}, 1
    write_atomic(job_dir / "result.json", json.dumps({**result, "exit_code": code, "ended": time.time()}, indent=2) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
