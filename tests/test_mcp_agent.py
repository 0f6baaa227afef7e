"""A scripted "agent" (issue 55): no model, the fixed sequence of tool calls an agent would make,
through the real MCP client over stdio against `rocm-perf mcp`, from doctor to a reviewed accepted
patch, on the real host backend (g++ builds, real runs, real statistics).

doctor -> loops (the kernel's loops) -> try_patch (a hand-unrolled loop, as a diff's text) ->
job_status (waiting, with progress notifications) until done -> critical_path of the run's baseline
profile -> review (the verdict, the evidence, the accepted patch) -> report (the files) -> the
run's report.md as an MCP resource. The user's source is never written; the accepted patch, applied
to it, is the change the agent proposed.
"""

from __future__ import annotations

import json
import shutil

import pytest

from mcp_session import data, text, with_server
from rocm_perf.agents.tools import json_data
from rocm_perf.cli import main
from rocm_perf.source.patch_apply import apply_patch, parse_patch
from rocm_perf.source.rewrite import unified_diff
from test_try import PROGRAMS

pytestmark = pytest.mark.slow

FAST = {"compile_check": "off", "aa_rounds": 6, "max_rounds": 30}
LOOP = b"    for (int c = 0; c < cols; ++c) {\n        acc += values[c] ^ static_cast<unsigned>(c);\n    }"
UNROLLED = (b"    int c = 0;\n    for (; c + 3 < cols; c += 4) {\n"
            b"        acc += values[c] ^ static_cast<unsigned>(c);\n"
            b"        acc += values[c + 1] ^ static_cast<unsigned>(c + 1);\n"
            b"        acc += values[c + 2] ^ static_cast<unsigned>(c + 2);\n"
            b"        acc += values[c + 3] ^ static_cast<unsigned>(c + 3);\n    }\n"
            b"    for (; c < cols; ++c) {\n        acc += values[c] ^ static_cast<unsigned>(c);\n    }")


def test_an_agent_goes_from_doctor_to_a_reviewed_accepted_patch(tmp_path, capsys, monkeypatch):
    work = tmp_path / "project"
    work.mkdir()
    src = work / "unroll_wins.cu"
    shutil.copy(PROGRAMS / "unroll_wins.cu", src)
    before = src.read_bytes()
    fast = before.replace(LOOP, UNROLLED)
    assert fast != before
    patch = unified_diff(src.relative_to(work), before, fast)
    progress: list[tuple[float, str]] = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    async def agent(s):
        seen = {}
        seen["doctor"] = data(await s.call_tool("doctor", {}))
        seen["loops"] = data(await s.call_tool("loops", {"path": "unroll_wins.cu"}))
        started = data(await s.call_tool("try_patch", {"patch": patch, "source": "unroll_wins.cu", "backend": "host",
                                                       "patch_name": "unrolled.diff", "time_budget": "20m",
                                                       "options": FAST}))
        seen["started"] = started
        status = started
        for _ in range(6):  # an agent polls; each call waits up to ten minutes
            if status["state"] != "running":
                break
            status = data(await s.call_tool("job_status", {"job_id": started["job_id"], "wait_s": 600},
                                            progress_callback=on_progress))
        seen["status"] = status
        run = status["run"]
        [profile, *_] = sorted((work / "runs").glob(f"{run.rsplit('/', 1)[1]}/baseline/profiles/*/*.db"))
        seen["critical_path"] = data(await s.call_tool("critical_path", {"path": str(profile)}))
        seen["review"] = data(await s.call_tool("review", {"run": run}))
        seen["report"] = data(await s.call_tool("report", {"run": run.rsplit("/", 1)[1]}))
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        seen["resources"] = listed
        name = run.rsplit("/", 1)[1]
        seen["report_md"] = (await s.read_resource(f"rocm-perf://runs/{name}/report.md")).contents[0].text
        missing = await s.call_tool("report", {"run": "no-such-run"})
        seen["missing"] = (missing.is_error, text(missing))
        return seen

    seen = with_server(work, [], agent)
    assert seen["doctor"]["host_backend_works"] is True
    assert [k["name"] for k in seen["loops"]["kernels"]] == ["row_xor_sum"]
    assert seen["started"]["state"] == "running" and seen["started"]["run"]  # returned at once, with its run
    assert "rocm-perf try" in seen["started"]["command"] and "--patch" in seen["started"]["command"]
    status = seen["status"]
    assert status["state"] == "done", status
    assert status["verdicts"] == [{"candidate": "patch unrolled.diff", "verdict": "accepted", "accepted": True}]
    assert status["result"][0].startswith("patch unrolled.diff: ACCEPTED")
    stages = [m for _, m in progress if m.startswith("stage ")]
    assert {"stage noise-floor", "stage screen", "stage confirm", "stage final-check"} <= set(stages)
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)  # progress only increases
    assert seen["critical_path"]["critical_path_ns"] > 0
    review = seen["review"]
    [accepted] = review["summary"]["accepted"]
    assert accepted["provenance"]["file"] == "unrolled.diff" and review["summary"]["state"] == "done"
    assert accepted["evidence"]["confirm"]["critical_path"]["estimate"] < 1  # faster, confirmed on fresh pairs
    assert apply_patch(parse_patch(review["accepted_patch"].encode(), "accepted"), before, src.name) == fast
    assert review["apply_command"].startswith("rocm-perf apply ")
    assert {"report.md", "report.html", "summary.json", "accepted.diff"} <= set(seen["report"]["files"])
    name = status["run"].rsplit("/", 1)[1]
    assert f"rocm-perf://runs/{name}/report.md" in seen["resources"]
    assert f"rocm-perf://runs/{name}/summary.json" in seen["resources"]
    assert seen["report_md"].startswith("# ") and "unrolled.diff" in seen["report_md"]
    assert seen["missing"][0] and "no such run" in seen["missing"][1]
    assert src.read_bytes() == before  # the agent applies the patch; rocm-perf never wrote the file
    monkeypatch.chdir(work)  # `apply --patch` names the file relative to where it runs, as the server's cwd was
    assert main(["review", status["run"], "--json"]) == 0
    assert json_data(json.loads(capsys.readouterr().out)) == review  # the tool is the command's --json
