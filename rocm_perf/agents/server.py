"""`rocm-perf mcp`: the Model Context Protocol server over every command, on stdio.

Built on the official Python SDK's `mcp.server.mcpserver.MCPServer` (mcp 2.x; FastMCP before 2.0,
docs/migration.md "FastMCP renamed to MCPServer"): a tool is a typed function whose signature is its
input schema and whose `dict` return is its structured result (docs/servers/tools.md,
structured-output.md); plain `def` tools run on a worker thread, so a long analysis never blocks
the others (migration.md "Sync handlers now run on a worker thread"). While it serves, the SDK
points fd 1 at stderr and fd 0 at /dev/null (mcp/server/stdio.py `stdio_server`), so nothing a
tool or a child prints can reach the protocol stream.

Errors: a tool's RocmPerfError, a missing or mistyped argument and an unknown tool each come back
as a tool error (`is_error`) of one line; a bug comes back as one line too (its traceback goes to
stderr); the server keeps serving. Resources: each run's report.md and summary.json as
`rocm-perf://runs/<run>/report.md` and `.../summary.json`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.types import Resource, ToolAnnotations
from pydantic import ValidationError

from rocm_perf import __version__
from rocm_perf.agents.job_tools import job_tools
from rocm_perf.agents.jobs import Jobs
from rocm_perf.agents.roots import Roots
from rocm_perf.agents.tools import Agent, read_tools
from rocm_perf.errors import RocmPerfError

log = logging.getLogger("rocm_perf.mcp")
RUN_RESOURCES = {"report.md": "text/markdown", "summary.json": "application/json"}
INSTRUCTIONS = ("rocm-perf profiles HIP programs and serving engines on AMD GPUs and judges kernel changes by "
                "measurement. Start with doctor; read a profile with critical_path, summary or triage; explain a kernel "
                "with analyze, hotspots and loops; measure a change with try_patch (your diff) or optimize (its own "
                "rewrites), follow the job with job_status, then review the run. No tool writes the user's files; "
                "host-backend timings are CPU times, never GPU times.")


def one_line(tool: str, error: ToolError) -> str:
    """The tool error as one line: which argument was wrong and how, or the RocmPerfError's line."""
    cause = error.__cause__
    if isinstance(cause, ValidationError):
        parts = []
        for e in cause.errors():
            where = ".".join(str(p) for p in e.get("loc", ())) or "arguments"
            got = "" if e.get("type") == "missing" else f" (got {str(e.get('input'))[:60]!r})"
            parts.append(f"argument {where}: {e.get('msg', 'invalid')}{got}")
        return f"Error executing tool {tool}: " + "; ".join(parts)
    if isinstance(cause, RocmPerfError):
        return f"Error executing tool {tool}: " + " ".join(str(cause).split())
    if isinstance(error, UnexpectedToolError) and cause is not None:
        log.error("tool %s failed", tool, exc_info=cause)
        return f"Error executing tool {tool}: internal error ({type(cause).__name__}: {' '.join(str(cause).split())[:300]})"
    return " ".join(str(error).split())


class RocmPerfServer(MCPServer):
    """MCPServer with one-line tool errors and the runs' files listed as resources."""

    def __init__(self, agent: Agent, **kw: Any):
        super().__init__(**kw)
        self.agent = agent

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            raise ToolError(one_line(name, e)) from e

    async def list_resources(self) -> list[Resource]:
        from rocm_perf.optimize.command import list_runs

        listed = await super().list_resources()
        for run in list_runs(self.agent.runs_root):
            for name, mime in RUN_RESOURCES.items():
                if (run / name).exists():
                    listed.append(Resource(uri=f"rocm-perf://runs/{run.name}/{name}", name=f"{run.name}/{name}",
                                           mime_type=mime, description=f"{name} of the run {run.name}"))
        return listed


def run_file(agent: Agent, run: str, name: str) -> str:
    """A run's report.md or summary.json, by the run's name under the runs root."""
    if "/" in run or run in (".", ".."):
        raise ResourceError(f"rocm-perf://runs/{run}/{name}: a run is named by its folder under the runs root")
    path = agent.runs_root / run / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ResourceError(f"{path}: cannot read ({e.strerror or e}); a run has it once it has finished") from e


def build_server(agent: Agent) -> RocmPerfServer:
    """The server with every tool and the runs' resources."""
    server = RocmPerfServer(agent, name="rocm-perf", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    for name, description, fn in read_tools(agent):
        annotations = read_only if name not in ("triage", "report") else ToolAnnotations(destructive_hint=False)
        server.add_tool(fn, name=name, description=description, annotations=annotations)
    for name, description, fn in job_tools(agent):
        annotations = read_only if name == "job_status" else ToolAnnotations(destructive_hint=False, idempotent_hint=False)
        server.add_tool(fn, name=name, description=description, annotations=annotations)

    @server.resource("rocm-perf://runs/{run}/report.md", mime_type="text/markdown",
                     description="a finished run's report (verdicts, evidence, figures linked)")
    def run_report(run: str) -> str:
        return run_file(agent, run, "report.md")

    @server.resource("rocm-perf://runs/{run}/summary.json", mime_type="application/json",
                     description="a finished run's summary.json (what `review --json` shows as its summary)")
    def run_summary(run: str) -> str:
        return run_file(agent, run, "summary.json")

    return server


def run_mcp(roots: list[Path], *, out: Path = Path("runs"), max_jobs: int = 2) -> int:
    """Serve on stdio until the client closes it; then ask this server's running jobs to stop
    after their step in flight (their runs resume)."""
    checked = Roots(roots, out)
    jobs = Jobs(checked.runs_root, max_jobs=max_jobs, cwd=Path.cwd())
    server = build_server(Agent(checked, jobs))
    print(f"rocm-perf mcp {__version__}: on stdio; roots {checked.describe()}; runs in {checked.runs_root}; "
          f"at most {max_jobs} jobs", file=sys.stderr, flush=True)
    if sys.stdin.isatty():
        print("rocm-perf mcp: waiting for an MCP client on stdin; this is not an interactive command: configure your "
              "agent to start it (docs/agents.md), or Ctrl-D to end", file=sys.stderr, flush=True)
    try:
        server.run("stdio")
    finally:
        stopped = jobs.stop_all()
        if stopped:
            print(f"rocm-perf mcp: asked {len(stopped)} running job(s) to stop after the step in flight "
                  f"({', '.join(stopped)}); their runs resume", file=sys.stderr, flush=True)
    return 0
