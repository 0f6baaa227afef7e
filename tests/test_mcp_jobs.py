"""The MCP server's background jobs through the real client (issue 55), on the real host backend.

- `--max-jobs` refuses one job too many in one line;
- a client that disconnects leaves the run resumable: the server asks its job to stop, the job
  finishes its step in flight and exits, and no process of it is left running;
- a restarted server finds the job (stopped, with how to resume), resumes its run to a verdict
  and sends progress notifications while job_status waits;
- a server killed outright (SIGKILL) leaves no job running either: the job sees it is gone and
  stops the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from mcp_session import data, text, with_server
from rocm_perf.agents.tools import json_data
from rocm_perf.source.rewrite import unified_diff
from test_try import PROGRAMS

pytestmark = pytest.mark.slow

FAST = {"compile_check": "off", "aa_rounds": 6, "max_rounds": 30}


def comment_patch(src: Path) -> str:
    before = src.read_bytes()
    return unified_diff(Path(src.name), before, before.replace(b"unsigned acc = 0;", b"unsigned acc = 0;  // the sum"))


def job_dir(work: Path, job_id: str) -> Path:
    return work / "runs" / "mcp-jobs" / job_id


def processes_under(folder: Path) -> list[str]:
    """Command lines of live processes naming `folder` (the job, its builds, its programs)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder) in cmd and state != "Z":
            found.append(cmd)
    return found


def wait_until_gone(pid: int, folder: Path, limit: float = 600) -> float:
    """Seconds until the job process and every process naming `folder` have ended (fails after `limit`)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        alive = Path(f"/proc/{pid}").exists() and (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z")
        if not alive and not processes_under(folder):
            return time.monotonic() - t0
        time.sleep(0.5)
    raise AssertionError(f"still running after {limit} s: {processes_under(folder)}")


@pytest.fixture
def work(tmp_path) -> Path:
    folder = tmp_path / "w"
    folder.mkdir()
    shutil.copy(PROGRAMS / "unroll_wins.cu", folder / "unroll_wins.cu")
    return folder


@pytest.mark.long
def test_a_stopped_job_resumes_after_a_restart_and_no_process_outlives_its_server(work):
    src = work / "unroll_wins.cu"
    before = src.read_bytes()
    args = {"patch": comment_patch(src), "source": "unroll_wins.cu", "backend": "host", "patch_name": "comment.diff",
            "options": FAST}

    async def first(s):
        started = data(await s.call_tool("try_patch", args))
        second = await s.call_tool("try_patch", args)
        return started, second

    started, second = with_server(work, ["--max-jobs", "1"], first)
    assert started["state"] == "running" and started["run"]
    message = text(second)
    assert second.is_error and "1 jobs are running" in message and "--max-jobs is 1" in message and "\n" not in message
    # The client is gone: the job was asked to stop, finishes its step and exits; nothing of it runs on.
    folder = job_dir(work, started["job_id"])
    pid = json.loads((folder / "process.json").read_text())["pid"]
    wait_until_gone(pid, work)
    result = json.loads((folder / "result.json").read_text())
    assert result["state"] == "stopped" and result["run"] == started["run"] and (folder / "stop-requested").exists()

    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    async def again(s):
        found = data(await s.call_tool("job_status", {"job_id": started["job_id"]}))
        resumed = data(await s.call_tool("try_patch", {"resume": started["run"]}))
        status = resumed
        for _ in range(6):
            if status["state"] != "running":
                break
            status = data(await s.call_tool("job_status", {"job_id": resumed["job_id"], "wait_s": 600},
                                            progress_callback=on_progress))
        return found, resumed, status, data(await s.call_tool("review", {"run": started["run"]}))

    found, resumed, status, review = with_server(work, [], again)
    assert found["state"] == "stopped" and "resume" in found["next"] and found["run"] == started["run"]
    assert resumed["run"] == started["run"] and "--resume" in resumed["command"]
    assert status["state"] == "done", status
    assert status["verdicts"][0]["candidate"] == "patch comment.diff"
    assert status["verdicts"][0]["verdict"] == "rejected: duplicate"  # the same machine code: never measured
    assert progress and any(m.startswith("stage ") for _, m in progress)
    assert review["summary"]["state"] == "done" and review["accepted_patch"] == ""
    assert src.read_bytes() == before


def test_a_job_whose_server_is_killed_stops_by_itself(work):
    src = work / "unroll_wins.cu"
    args = {"patch": comment_patch(src), "source": "unroll_wins.cu", "backend": "host", "patch_name": "comment.diff",
            "options": FAST}

    async def script(s):
        started = data(await s.call_tool("try_patch", args))
        server = json.loads((job_dir(work, started["job_id"]) / "job.json").read_text())["server_pid"]
        os.kill(server, signal.SIGKILL)  # no goodbye: the server cannot ask its job to stop
        return started

    started = with_server(work, [], script)
    folder = job_dir(work, started["job_id"])
    wait_until_gone(json.loads((folder / "process.json").read_text())["pid"], work)
    result = json.loads((folder / "result.json").read_text())
    assert result["state"] == "stopped" and not (folder / "stop-requested").exists()
    assert "the MCP server is gone" in (folder / "progress.log").read_text()


@pytest.mark.long
def test_an_optimize_job_runs_the_loop_to_its_summary_as_the_cli_does(work, capsys, monkeypatch):
    from rocm_perf.cli import main

    src = work / "unroll_wins.cu"
    before = src.read_bytes()
    options = {"rules": "unroll_manual", "factors": "4", "max_trials": 1, "aa_rounds": 5, "max_rounds": 10,
               "metric": "median-path", "compile_check": "off"}

    async def script(s):
        started = data(await s.call_tool("optimize", {"source": "unroll_wins.cu", "backend": "host",
                                                      "time_budget": "20m", "options": options}))
        status = started
        for _ in range(6):
            if status["state"] != "running":
                break
            status = data(await s.call_tool("job_status", {"job_id": started["job_id"], "wait_s": 600}))
        return started, status, data(await s.call_tool("review", {"run": "latest"}))

    started, status, review = with_server(work, [], script)
    assert started["kind"] == "optimize" and "--rules=unroll_manual" in started["command"]
    assert status["state"] == "done" and status["verdicts"], status
    assert review["summary"]["state"] == "done" and review["summary"]["command"] == "optimize"
    assert review["summary"]["options"]["max_trials"] == 1 and review["summary"]["backend"] == "host"
    written = json.loads(Path(status["summary_file"]).read_text())  # what `optimize --json` prints
    assert written["run"] == review["summary"]["run"] and json_data(written["accepted"]) == review["summary"]["accepted"]
    assert src.read_bytes() == before
