"""The MCP server's tools for long work: `try_patch` and `optimize` start a background job
(jobs.py) and return its id within seconds; `job_status` says what it is doing or came to, waiting
and sending MCP progress notifications when asked.

What a job runs is what `rocm-perf try --patch` / `rocm-perf optimize` run (job_main.py); the
options a client may add are the measuring and searching ones (no paths, no output folder).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from rocm_perf.agents.jobs import RUNNING
from rocm_perf.agents.tools import Agent
from rocm_perf.errors import RocmPerfError

# Options of `try` / `optimize` a client may pass in `options` ({"min_gain": "3%", "aa_rounds": 6}): how to
# measure and what to search, never a path, a command, the runs root or a resume.
OPTIONS = {"aa-rounds", "allow-host-changes", "allow-lower-occupancy", "arch", "build-timeout", "cflags",
           "compile-check", "confidence", "counters", "factors", "jobs", "kernels", "max-files", "max-rounds",
           "max-trials", "metric", "min-gain", "pairing", "proposers", "rounds", "rules", "settle-close-calls", "timeout",
           "timing-lines", "tolerance-type", "tune", "warmup"}
FIRST_SIGNS_S = 60.0  # how long try_patch/optimize wait for the job to make its run (or to refuse its input)

BACKEND = Annotated[str, Field(pattern="^(auto|host|rocm)$", description="rocm (hipcc + rocprofv3 on an AMD GPU), host "
                               "(the same HIP source built for this CPU: timings rank, they are not GPU times) or auto")]
OPTIONS_ARG = Annotated[dict[str, str | int | float | bool | list[str]], Field(
    description="more options of `rocm-perf try`/`optimize` by name, e.g. {\"min_gain\": \"3%\", \"aa_rounds\": 6, "
                "\"compile_check\": \"off\"}: " + ", ".join(sorted(OPTIONS)))]
PROGRAM_ARGS = Annotated[list[str], Field(description="arguments for the program (what follows -- on the command line)")]


def option_argv(options: dict | None) -> list[str]:
    """`options` as command-line words; RocmPerfError naming an option not in OPTIONS."""
    argv: list[str] = []
    for key, value in (options or {}).items():
        name = str(key).lstrip("-").replace("_", "-")
        if name not in OPTIONS:
            raise RocmPerfError(f"options: {key!r} is not an option a client may set (allowed: {', '.join(sorted(OPTIONS))})")
        if isinstance(value, bool):
            argv += [f"--{name}"] if value else []
        elif isinstance(value, list):
            argv += [f"--{name}={v}" for v in value]
        else:
            argv.append(f"--{name}={value}")
    return argv


def _target(agent: Agent, source: str | None, project: str | None, build: str | None, run: str | None) -> list[str]:
    """The source (or project and its commands) as the command line names them, checked against the roots."""
    if (source is None) == (project is None):
        raise RocmPerfError("give `source` (a .cu file) or `project` (a source tree, with `build` and `run`), one of them")
    if source is not None:
        return [str(agent.roots.existing(source, what="source", kind="file"))]
    if not build or not run:
        raise RocmPerfError("project: give `build` (the shell command that builds the tree copy) and `run` (the one "
                            "that runs the built program, from the top of the tree)")
    return ["--project", str(agent.roots.existing(project, what="project", kind="dir")), "--build", build, "--run", run]


async def first_signs(agent: Agent, job_id: str, timeout: float = FIRST_SIGNS_S) -> dict:
    """The job's status once it has made its run (or failed on its input, a tool error then), or
    after `timeout` while it is still getting there."""
    deadline = time.monotonic() + timeout
    while True:
        status = agent.jobs.status(job_id)
        if status["state"] == "failed":
            raise RocmPerfError(f"job {job_id} refused its input: {status.get('error')}")
        if status["run"] or status["state"] != RUNNING or time.monotonic() > deadline:
            return status
        await anyio.sleep(0.2)


def job_tools(agent: Agent) -> list[tuple[str, str, Any]]:
    """try_patch, optimize and job_status bound to `agent`, each with its description."""

    async def try_patch(
        patch: Annotated[str | None, Field(min_length=1, description="the change as the text of a unified diff (git "
                                           "diff or diff -u) of the source, paths relative to its folder or the "
                                           "project; required unless resume")] = None,
        source: Annotated[str | None, Field(description="the .cu/.hip file the patch changes (or give project)")] = None,
        project: Annotated[str | None, Field(description="a source tree with its own build (copied into the run, "
                                             "never written)")] = None,
        build: Annotated[str | None, Field(description="with project: the shell command that builds the copy")] = None,
        run: Annotated[str | None, Field(description="with project: the shell command that runs the built program")] = None,
        backend: BACKEND = "auto",
        tolerance: Annotated[str | None, Field(description="compare outputs within rtol=R,atol=A instead of bit for "
                                               "bit (floating-point rewrites)")] = None,
        time_budget: Annotated[str, Field(description="stop after this long: 900, 30m, 2h")] = "30m",
        patch_name: Annotated[str, Field(pattern=r"^[\w.+-]{1,100}$", description="the candidate's name in the "
                                         "verdicts")] = "patch.diff",
        program_args: PROGRAM_ARGS = [],
        options: OPTIONS_ARG = {},
        resume: Annotated[str | None, Field(description="instead: resume this stopped try run (its name or "
                                            "directory)")] = None,
    ) -> dict[str, Any]:
        if resume is not None:
            run_dir = str(agent.roots.run(resume))
            request = {"resume": run_dir, "out": str(agent.runs_root)}
            job_id = agent.jobs.start("try_patch", request, ["rocm-perf", "try", "--resume", run_dir])
            return await first_signs(agent, job_id)
        if patch is None:
            raise RocmPerfError("try_patch: give `patch`, the text of a unified diff (or `resume`, a stopped try run)")
        if set(patch_name) == {"."}:
            raise RocmPerfError(f"patch_name {patch_name!r}: name the patch like a file, e.g. faster.diff")
        target = _target(agent, source, project, build, run)
        extra = option_argv(options)
        request = {"source": target[0] if source is not None else None, "project": target[1] if project else None,
                   "build": build, "run": run, "backend": backend, "tolerance": tolerance, "time_budget": time_budget,
                   "patch_name": patch_name, "program_args": list(program_args), "argv": extra,
                   "out": str(agent.runs_root)}
        command = (["rocm-perf", "try", *target, "--patch", "PATCH", "--backend", backend, "--time-budget", time_budget]
                   + (["--tolerance", tolerance] if tolerance else []) + extra + ["--out", str(agent.runs_root)]
                   + (["--", *program_args] if program_args else []))
        job_id = agent.jobs.start("try_patch", request, command, patch=(patch_name, patch))
        return await first_signs(agent, job_id)

    async def optimize(
        source: Annotated[str | None, Field(description="the .cu/.hip file to optimize (or give project)")] = None,
        project: Annotated[str | None, Field(description="a source tree with its own build (copied into the run, "
                                             "never written)")] = None,
        build: Annotated[str | None, Field(description="with project: the shell command that builds the copy")] = None,
        run: Annotated[str | None, Field(description="with project: the shell command that runs the built program")] = None,
        backend: BACKEND = "auto",
        time_budget: Annotated[str, Field(description="stop proposing after this long: 900, 30m, 2h")] = "1h",
        program_args: PROGRAM_ARGS = [],
        options: OPTIONS_ARG = {},
        resume: Annotated[str | None, Field(description="instead: resume this stopped optimize run (its name or "
                                            "directory)")] = None,
    ) -> dict[str, Any]:
        if resume is not None:
            run_dir = str(agent.roots.run(resume))
            job_id = agent.jobs.start("optimize", {"resume": run_dir, "out": str(agent.runs_root)},
                                      ["rocm-perf", "optimize", "--resume", run_dir])
            return await first_signs(agent, job_id)
        target = _target(agent, source, project, build, run)
        argv = [*target, "--backend", backend, "--time-budget", time_budget, *option_argv(options)]
        command = ["rocm-perf", "optimize", *argv, "--out", str(agent.runs_root)] + (["--", *program_args] if program_args else [])
        job_id = agent.jobs.start("optimize", {"argv": argv, "program_args": list(program_args),
                                               "out": str(agent.runs_root)}, command)
        return await first_signs(agent, job_id)

    async def job_status(
        job_id: Annotated[str, Field(min_length=1, description="the id try_patch or optimize returned")],
        wait_s: Annotated[float, Field(ge=0, le=600, description="wait up to this long for the job to end, sending "
                                       "a progress notification per stage and verdict when the call asks for "
                                       "progress; 0: answer at once")] = 0,
        ctx: Context | None = None,  # injected by the SDK, never in the schema (docs/handlers/context.md)
    ) -> dict[str, Any]:
        status = agent.jobs.status(job_id)
        seen = 0
        deadline = time.monotonic() + wait_s
        while status["state"] == RUNNING and time.monotonic() < deadline:
            for event in agent.jobs.events_since(job_id, seen):
                seen += 1
                if ctx is not None:  # a no-op unless the call asked for progress (docs/handlers/progress.md)
                    await ctx.report_progress(seen, None, _event_text(event))
            await anyio.sleep(0.5)
            status = agent.jobs.status(job_id)
        return status

    return [
        ("try_patch", "Is this change to a HIP kernel faster, and still correct? Give the patch as the text of a "
         "unified diff. rocm-perf builds it as a candidate beside the unchanged source, checks it (the patch's scope, "
         "the kernels' launch signatures, the AMD compile check where hipcc exists, the outputs on every timed round, "
         "bit for bit or within `tolerance`), measures the run's A/A noise floor, races the change against the "
         "original in interleaved pairs, confirms a winner on fresh pairs and checks the final result. It starts a "
         "background job and returns its `job_id` within seconds (a patch that does not apply, or a bad argument, is "
         "an error at once); the job takes minutes (at most `time_budget`). Follow it with job_status, then review. "
         "Never writes the source: the run works on its own copy.", try_patch),
        ("optimize", "Let rocm-perf search for a faster version of a HIP source: it profiles it, ranks kernels by the "
         "critical path, proposes guarded loop rewrites (unrolls) of the hot loops, builds and measures each against "
         "the original as try_patch does, and keeps only confirmed wins, combined. Starts a background job and returns "
         "its `job_id` within seconds; the job runs up to `time_budget` (default 1h). Follow it with job_status, then "
         "review. Never writes the source.", optimize),
        ("job_status", "What a try_patch or optimize job is doing or came to: `state` (running, done, failed, "
         "stopped), the stage (baseline, noise-floor, rank, propose, build, screen, confirm, combine, final-check), "
         "the last verdict and all verdicts so far, its run directory and the command it equals; when done the result "
         "lines and summary file (then call review with the run); when failed one line saying why; when stopped how to "
         "resume. With wait_s it waits for the end (up to wait_s) and reports progress. Reads only.", job_status),
    ]


def _event_text(event: dict) -> str:
    kind = event.get("event")
    if kind == "stage":
        return f"stage {event.get('stage')} {event.get('detail') or ''}".strip()
    if kind == "verdict":
        return f"{event.get('candidate')}: {event.get('verdict')}"
    return str(event.get("text") or kind)
