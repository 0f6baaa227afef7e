"""`rocm-perf mcp` through the real MCP client over stdio (issue 55): the tools are listed with
their schemas; each read tool answers what its command prints with --json, on the fixtures; a path
outside the roots, a missing argument, a wrong type, an unknown job or tool, a refused option are
each a tool error of one line, after which the server still answers; and no tool writes a file of
the user's. (The jobs, which build and run programs, are in test_mcp_jobs.py and test_mcp_agent.py.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import DATA, KERNELS
from mcp_session import data, text, with_server
from rocm_perf.cli import main
from test_live_triage import engine  # noqa: F401  (the fixture: a double of SGLang's profiling API)

TORCH = DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
ROCPD = DATA / "rocpd_v3_multistream.db"
CSV = DATA / "rocprofv3-csv" / "kernel_trace.csv"
DOCS_DB = DATA / "rocpd_v3_docs_kernel_trace.db"  # the run CSV holds, as rocpd: a comparison of two formats
WORKLOAD = DATA / "rocprof-compute" / "MI300X_vcopy"
PC_SAMPLING = DATA / "pc-sampling"
TOOLS = {"doctor", "summary", "critical_path", "triage", "compare", "analyze", "hotspots", "loops", "rewrite_preview",
         "try_patch", "optimize", "job_status", "review", "report"}


def cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_tool_is_listed_with_its_input_schema_a_structured_result_and_a_description(tmp_path):
    async def script(s):
        return (await s.list_tools()).tools

    tools = {t.name: t for t in with_server(tmp_path, [], script)}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.input_schema["type"] == "object" and len(t.description) > 150, t.name
        assert t.output_schema["type"] == "object", t.name  # structured (JSON) results
    req = {name: set(t.input_schema.get("required", [])) for name, t in tools.items()}
    assert req["summary"] == {"path"} and req["compare"] == {"a", "b"} and req["job_status"] == {"job_id"}
    assert req["try_patch"] == set() and req["report"] == {"run"} and req["doctor"] == set()
    props = tools["try_patch"].input_schema["properties"]
    assert {"source", "project", "build", "run", "patch", "backend", "tolerance", "time_budget"} <= set(props)
    assert props["backend"]["pattern"] == "^(auto|host|rocm)$"
    assert "ctx" not in tools["job_status"].input_schema["properties"]  # the injected context is not an argument
    assert tools["summary"].annotations.read_only_hint is True


def test_the_read_tools_answer_what_their_commands_print_with_json(tmp_path, capsys):
    profiles = [TORCH, ROCPD, CSV]

    async def script(s):
        out = {}
        for p in profiles:
            out[("summary", p)] = data(await s.call_tool("summary", {"path": str(p)}))
            out[("critical_path", p)] = data(await s.call_tool("critical_path", {"path": str(p)}))
        out["triage"] = data(await s.call_tool("triage", {"path": str(TORCH)}))
        out["compare"] = data(await s.call_tool("compare", {"a": str(TORCH), "b": str(TORCH)}))
        out["compare_csv_rocpd"] = data(await s.call_tool("compare", {"a": str(CSV), "b": str(DOCS_DB), "min_change": 5}))
        out["analyze"] = data(await s.call_tool("analyze", {"path": str(WORKLOAD)}))
        out["hotspots"] = data(await s.call_tool("hotspots", {"path": str(PC_SAMPLING), "top": 3}))
        out["loops"] = data(await s.call_tool("loops", {"path": str(KERNELS / "stencil2d.cu")}))
        out["review"] = data(await s.call_tool("review", {}))
        return out

    got = with_server(tmp_path, ["--root", str(DATA.parent.parent), "--out", str(tmp_path / "runs")], script)
    for p in profiles:
        assert got[("summary", p)] == cli_json(capsys, "summary", str(p)), p
        assert got[("critical_path", p)] == cli_json(capsys, "critical-path", str(p)), p
    assert got["triage"] == cli_json(capsys, "triage", str(TORCH))
    assert got["compare"] == cli_json(capsys, "compare", str(TORCH), str(TORCH))
    assert got["compare_csv_rocpd"] == cli_json(capsys, "compare", str(CSV), str(DOCS_DB), "--min-change", "5")
    assert got["analyze"] == cli_json(capsys, "analyze", str(WORKLOAD))
    hotspots = cli_json(capsys, "hotspots", str(PC_SAMPLING), "--top", "3")
    # libclang words the fixture's missing header differently on a process's first parse of it and
    # on later ones (a fatal 'file not found', then the unknown types): the server's is its first
    assert len(got["hotspots"].pop("warnings")) == len(hotspots.pop("warnings")) == 1
    assert got["hotspots"] == hotspots and len(got["hotspots"]["kernels"][0]["lines"]) == 3
    assert got["loops"] == cli_json(capsys, "loops", str(KERNELS / "stencil2d.cu"))
    assert got["review"] == {"runs_root": str((tmp_path / "runs").resolve()), "runs": []}


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file() and "runs" not in p.relative_to(folder).parts
            and p.name != "mcp-server.log"}


def test_bad_calls_are_one_line_tool_errors_the_server_survives_and_no_user_file_is_written(tmp_path, engine, capsys):
    root = tmp_path / "work"
    root.mkdir()
    shutil.copy(TORCH, root / TORCH.name)
    shutil.copy(KERNELS / "stencil2d.cu", root / "stencil2d.cu")
    shutil.copytree(DATA / "pc-sampling", root / "pc-sampling")
    shutil.copytree(DATA / "rocprof-compute" / "MI300X_vcopy", root / "vcopy")
    (tmp_path / "outside.json").write_text("{}")
    os.symlink(tmp_path / "outside.json", root / "link.json")  # inside the root, pointing out of it
    before = snapshot(root)
    sglang = engine("sglang")
    bad = [
        ("summary", {"path": "/etc/hosts"}, "outside the allowed roots"),
        ("summary", {"path": "../outside.json"}, "outside the allowed roots"),
        ("summary", {"path": "link.json"}, "outside the allowed roots"),
        ("summary", {}, "argument path: Field required"),
        ("summary", {"path": 3}, "argument path: Input should be a valid string"),
        ("critical_path", {"path": "nothing-here.db"}, "no such file or folder"),
        ("loops", {"path": "stencil2d.cu", "kernel": "nope"}, "no kernel 'nope'"),
        ("rewrite_preview", {"path": "stencil2d.cu", "loop": "stencil_2d:stencil_2d:1:37", "rule": "unroll_pragma", "factor": "four"},
         "argument factor: Input should be a valid integer"),
        ("job_status", {"job_id": "20260101-000000-abcdef"}, "no such job"),
        ("job_status", {"job_id": "../../etc"}, "no such job"),
        ("review", {"run": "no-such-run"}, "no such run"),
        ("triage", {}, "give `path` (a profile) or `live`"),
        ("try_patch", {"patch": "x", "source": "stencil2d.cu", "options": {"out": "/tmp"}}, "not an option a client may set"),
        ("try_patch", {"patch": "x", "source": "stencil2d.cu", "backend": "gpu"}, "argument backend: String should match"),
        ("optimize", {"source": "stencil2d.cu", "project": "."}, "give `source`"),
        ("try_patch", {"source": "stencil2d.cu"}, "give `patch`"),
        ("no_such_tool", {}, "Unknown tool"),
        ("triage", {"live": sglang, "engine": "vllm", "steps": 2, "trace_dir": "."}, "takes no step count"),
        ("triage", {"live": sglang, "trace_dir": "/tmp/elsewhere"}, "outside the allowed roots"),
    ]

    async def script(s):
        answers = []
        for name, args, _ in bad:
            answers.append(await s.call_tool(name, args))
            alive = await s.call_tool("review", {})  # and the server still answers
            assert not alive.is_error
        good = [await s.call_tool("summary", {"path": TORCH.name}),
                await s.call_tool("triage", {"path": TORCH.name}),
                await s.call_tool("loops", {"path": "stencil2d.cu"}),
                await s.call_tool("rewrite_preview", {"path": "stencil2d.cu", "loop": "stencil_2d:stencil_2d:1:37",
                                                      "rule": "unroll_pragma", "factor": 2}),
                await s.call_tool("hotspots", {"path": "pc-sampling"}),
                await s.call_tool("analyze", {"path": "vcopy"}),
                await s.call_tool("triage", {"live": sglang, "steps": 2, "wait_s": 60})]
        return answers, good

    answers, good = with_server(root, [], script)
    for (name, args, words), result in zip(bad, answers):
        message = text(result)
        assert result.is_error and words in message and "\n" not in message, (name, args, message)
    for result in good:
        data(result)
    preview = good[3].structured_content
    assert preview["diff"].startswith("---") and "#pragma unroll 2" in preview["diff"] and preview["guards"]
    live = good[-1].structured_content
    assert live["kernel_table"]["kernels"] == cli_json(capsys, "triage", str(TORCH))["kernel_table"]["kernels"]
    assert live["metadata"]["live_engine"] == "sglang" and live["metadata"]["live_settings"]["num_steps"] == 2
    assert Path(live["capture_dir"]).parent == (root / "runs" / "live").resolve()
    assert (Path(live["capture_dir"]) / "profile_metadata.json").is_file()
    assert snapshot(root) == before  # not one byte of the user's files, not one mtime


def test_an_infinite_bound_is_the_word_the_cli_prints_in_text_and_structured_result_alike():
    from rocm_perf.agents.tools import json_data

    doc = {"interval": {"low": 0.9, "high": float("inf")}, "rows": [float("nan"), -float("inf"), 2]}
    assert json_data(doc) == {"interval": {"low": 0.9, "high": "Infinity"}, "rows": ["NaN", "-Infinity", 2]}
    assert json.dumps(doc).count("Infinity") == 2  # what `--json` prints for them
