"""The MCP server's background jobs: a `try_patch` or `optimize` run in its own process, so that a
tool call never waits for it and the server never shares its fate.

Each job is a folder `RUNS/mcp-jobs/<job_id>/`:
  job.json      what was asked (the tool, its arguments, the equivalent command line)
  patch/NAME    try_patch: the patch's text, as handed in, under its name (patch.diff unless named)
  process.json  the job process (pid and start time, to tell it from a later process of that pid)
  progress.log  its standard error: the loop's JSON-lines progress (`--json`: stage, verdict and
                message events, the first stage naming the run directory) and any other line
  stdout.log    its standard output
  result.json   written by the job at its end: state, run directory, exit code, error line
The run itself is an ordinary run directory under RUNS/, made and driven by the same functions as
`rocm-perf try` / `rocm-perf optimize`: `rocm-perf review RUN` reviews it, `--resume RUN` resumes it.

A job's states: `running`, `done` (its verdicts are in), `failed` (one line says why; no verdict),
and `stopped` (asked to stop, or its process was killed: the run is recorded so far and resumes).

The job process runs in its own session (as rocm-perf starts the programs it measures), so the
client's kill of the server's process group does not reach it mid-step. When the server exits it
asks each of its running jobs to stop (SIGTERM, as Ctrl-C asks the CLI): the job finishes the build,
program run or measured pair in flight (bounded by its --timeout), records it, and exits; its run
resumes. A job
whose server dies without asking notices within a second (job_main.py) and stops the same way. No
job outlives its server by more than the step it was in.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError

JOBS_DIR = "mcp-jobs"
RUNNING, DONE, FAILED, STOPPED = "running", "done", "failed", "stopped"
STOP_MARK = "stop-requested"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return int(fields[19]) if len(fields) > 19 else None


def run_state(run_dir: Path) -> str | None:
    """The state the run's ledger records (None when it cannot be read)."""
    from rocm_perf.optimize.ledger import open_ledger

    try:
        ledger = open_ledger(run_dir)
    except RocmPerfError:
        return None
    try:
        return ledger.state
    finally:
        ledger.close()


def progress_events(job_dir: Path) -> tuple[list[dict], list[str]]:
    """The job's JSON-lines progress events, and its other stderr lines (errors, warnings)."""
    events, other = [], []
    try:
        text = (job_dir / "progress.log").read_text(errors="replace")
    except OSError:
        return [], []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
        elif line.strip():
            other.append(line.strip())
    return events, other


class Jobs:
    """The jobs under `runs_root/mcp-jobs/`: those this server started, and those an earlier server
    left (found again by their folders)."""

    def __init__(self, runs_root: Path, *, max_jobs: int = 2, cwd: Path | None = None):
        if max_jobs < 1:
            raise RocmPerfError(f"--max-jobs {max_jobs}: must be at least 1")
        self.runs_root = Path(runs_root)
        self.folder = self.runs_root / JOBS_DIR
        self.max_jobs = max_jobs
        self.cwd = cwd or Path.cwd()
        self.procs: dict[str, subprocess.Popen] = {}

    # ---- starting ----------------------------------------------------------------------------

    def start(self, kind: str, request: dict, command: list[str], patch: tuple[str, str] | None = None) -> str:
        """Start a job (`kind`: try_patch or optimize) and return its id at once. `request` is
        what job_main.py runs; `command` the equivalent `rocm-perf` command line, for people, where
        PATCH stands for the patch file; `patch`: (file name, text), kept in the job's folder."""
        running = [j for j in self.ids() if self.state_of(j) == RUNNING]
        if len(running) >= self.max_jobs:
            raise RocmPerfError(f"{len(running)} jobs are running ({', '.join(running)}), the server's --max-jobs is "
                                f"{self.max_jobs}: wait for one (job_status) or start the server with a larger --max-jobs")
        job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        job_dir = self.folder / job_id
        try:
            job_dir.mkdir(parents=True)
            if patch is not None:  # in its own folder: a patch named job.json must not be the job's
                (job_dir / "patch").mkdir()
                write_atomic(job_dir / "patch" / patch[0], patch[1].encode("utf-8", "surrogateescape"))
                command = [str(job_dir / "patch" / patch[0]) if word == "PATCH" else word for word in command]
            write_atomic(job_dir / "job.json", json.dumps({
                "id": job_id, "kind": kind, "created": time.time(), "request": request,
                "command": command, "server_pid": os.getpid()}, indent=2) + "\n")
            with open(job_dir / "progress.log", "ab") as err, open(job_dir / "stdout.log", "ab") as out:
                proc = subprocess.Popen([sys.executable, "-m", "rocm_perf.agents.job_main", str(job_dir)],
                                        cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                        start_new_session=True)  # the client's kill of our group must not cut a step
        except OSError as e:
            raise RocmPerfError(f"{job_dir}: cannot start the job ({e.strerror or e})") from e
        self.procs[job_id] = proc
        write_atomic(job_dir / "process.json", json.dumps({"pid": proc.pid, "start_ticks": process_start_ticks(proc.pid)}))
        return job_id

    # ---- looking -----------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """Every job id under the runs root, oldest first."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir() if (p / "job.json").exists())

    def job_dir(self, job_id: str) -> Path:
        if not isinstance(job_id, str) or not job_id or "/" in job_id or job_id.startswith(".") \
                or not (self.folder / job_id / "job.json").exists():
            known = self.ids()
            hint = f" (known: {', '.join(known[-5:])})" if known else " (no job has been started here)"
            raise RocmPerfError(f"job_id {job_id!r}: no such job under {self.folder}{hint}")
        return self.folder / job_id

    def alive(self, job_id: str) -> bool:
        proc = self.procs.get(job_id)
        if proc is not None:
            return proc.poll() is None  # also reaps it: no zombie
        rec = _read_json(self.folder / job_id / "process.json")
        if not rec:
            return False
        ticks = process_start_ticks(rec["pid"])
        return ticks is not None and ticks == rec.get("start_ticks")

    def state_of(self, job_id: str) -> str:
        job_dir = self.folder / job_id
        result = _read_json(job_dir / "result.json")
        if result:
            return result.get("state", FAILED)
        if self.alive(job_id):
            return RUNNING
        run_dir = self.run_dir_of(job_dir)
        if run_dir is None:
            return FAILED
        return DONE if run_state(run_dir) == "done" else STOPPED  # killed before it wrote its result

    @staticmethod
    def run_dir_of(job_dir: Path) -> Path | None:
        result = _read_json(job_dir / "result.json") or {}
        if result.get("run"):
            return Path(result["run"])
        for e in progress_events(job_dir)[0]:
            if e.get("event") == "stage" and e.get("stage") == "run" and e.get("detail"):
                return Path(e["detail"])
        return None

    def status(self, job_id: str) -> dict:
        """What the job is doing or came to: state, stage, last verdict, verdicts so far, its run,
        the command it equals, and when done its result line and summary file."""
        job_dir = self.job_dir(job_id)
        job = _read_json(job_dir / "job.json") or {}
        result = _read_json(job_dir / "result.json") or {}
        events, other = progress_events(job_dir)
        state = self.state_of(job_id)
        stages = [e for e in events if e.get("event") == "stage" and e.get("stage") != "run"]
        verdicts = [{"candidate": e.get("candidate"), "verdict": e.get("verdict"), "accepted": bool(e.get("accepted"))}
                    for e in events if e.get("event") == "verdict"]
        run_dir = self.run_dir_of(job_dir)
        doc: dict = {
            "job_id": job_id, "kind": job.get("kind"), "state": state,
            "stage": ({"name": stages[-1].get("stage"), "detail": stages[-1].get("detail") or ""} if stages else None),
            "last_verdict": verdicts[-1] if verdicts else None, "verdicts": verdicts,
            "run": str(run_dir) if run_dir else None, "command": " ".join(job.get("command") or []),
            "elapsed_s": round((result.get("ended") or time.time()) - job.get("created", time.time()), 1),
            "stop_requested": (job_dir / STOP_MARK).exists(),
        }
        if state == DONE:
            doc.update(result=result.get("result_lines") or [], summary_file=str(run_dir / "summary.json") if run_dir else None,
                       verdicts=result.get("verdicts") or verdicts, next=f"review(run={str(run_dir)!r})")
        elif state == FAILED:
            doc["error"] = result.get("error") or _last_error(other) or "the job process ended without a result"
        elif state == STOPPED:
            doc["next"] = (f"the run is recorded so far; resume it with {job.get('kind')}(resume={str(run_dir)!r}) or "
                           f"`rocm-perf {'try' if job.get('kind') == 'try_patch' else 'optimize'} --resume {run_dir}`")
        return doc

    def events_since(self, job_id: str, seen: int) -> list[dict]:
        """The progress events after the first `seen` (for progress notifications)."""
        return progress_events(self.job_dir(job_id))[0][seen:]

    # ---- stopping ----------------------------------------------------------------------------

    def stop_all(self) -> list[str]:
        """Ask every running job this server started to stop after its step in flight; their ids."""
        stopped = []
        for job_id, proc in self.procs.items():
            if proc.poll() is None and not (self.folder / job_id / "result.json").exists():  # not one ending by itself
                try:
                    (self.folder / job_id / STOP_MARK).touch()
                    proc.send_signal(signal.SIGTERM)
                    stopped.append(job_id)
                except OSError:
                    pass  # it ended between the poll and the signal
        return stopped


def _last_error(lines: list[str]) -> str | None:
    errors = [l for l in lines if l.startswith("rocm-perf: error:")]
    return (errors or lines or [None])[-1]
