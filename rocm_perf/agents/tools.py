"""The MCP server's read-only tools: each calls the function the Python API gives for it
(`rp.summary`, `rp.critical_path`, `rp.triage`, `rp.compare`, `rp.analyze`, `rp.hotspots`;
one set of functions for both) or, for what the API does not cover (doctor, loops, rewrite
preview, review, report), the package function its CLI command calls, and returns what that
command prints with `--json` (or writes as its artifacts), never writing a user file. Paths are
checked against the server's roots (roots.py) before anything is read.

The descriptions are written for a model that has never seen rocm-perf: what the tool answers,
how long it takes, and what it never does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from rocm_perf import api
from rocm_perf.agents.jobs import Jobs
from rocm_perf.agents.roots import Roots
from rocm_perf.errors import RocmPerfError

PROFILE = ("a profile under the server's roots: a rocpd .db (or rocprofv3 output folder), a legacy .rpd(.gz), a "
           "rocprofv3 kernel_trace.csv or folder of CSVs, or a PyTorch profiler trace (.json, .json.gz, or a folder of "
           "them, one per rank); relative paths are taken from the first root")


@dataclass
class Agent:
    """What every tool needs: the roots it may read and the jobs it may start."""

    roots: Roots
    jobs: Jobs

    @property
    def runs_root(self) -> Path:
        return self.roots.runs_root


def json_data(doc: Any) -> dict:
    """A document as the CLI's `--json` prints it (json.dumps with default=str), back as data. JSON
    has no infinity: where the command prints the tokens Infinity, -Infinity or NaN (an open
    confidence interval), the tool gives those words as strings, the same in its text and its
    structured result (the SDK would otherwise put null in one and Infinity in the other)."""
    return _finite(json.loads(json.dumps(doc, default=str)))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _opt(agent: Agent, value: str | None, what: str, kind: str | None = None) -> Path | None:
    return None if value is None else agent.roots.existing(value, what=what, kind=kind)


# ---- the tools: (name, description, function) ---------------------------------------------------------------


def read_tools(agent: Agent) -> list[tuple[str, str, Any]]:
    """The read-only tools bound to `agent`, each with its description."""

    def doctor() -> dict[str, Any]:
        from rocm_perf.backends.doctor import doctor_json

        return json_data(doctor_json())

    def summary(path: Annotated[str, Field(description=PROFILE)],
                by_phase: Annotated[bool, Field(description="a kernel table per roctx range / PyTorch annotation")] = False,
                expect_arch: Annotated[str | None, Field(description="the GPU architecture meant, e.g. gfx942")] = None,
                ) -> dict[str, Any]:
        return json_data(api.summary(agent.roots.existing(path, what="path"), expect_arch=expect_arch,
                                     by_phase=by_phase).to_dict())

    def critical_path(path: Annotated[str, Field(description=PROFILE)],
                      null_stream: Annotated[Literal["legacy", "per-thread"], Field(
                          description="legacy: the null stream waits for every blocking stream (HIP's default)")] = "legacy",
                      ) -> dict[str, Any]:
        return json_data(api.critical_path(agent.roots.existing(path, what="path"), null_stream=null_stream).to_dict())

    def triage(path: Annotated[str | None, Field(description=PROFILE + "; or give `live` instead")] = None,
               live: Annotated[str | None, Field(description="the base URL of a running SGLang or vLLM server to "
                                                 "profile now, e.g. http://127.0.0.1:30000")] = None,
               engine: Annotated[Literal["auto", "sglang", "vllm"], Field(description="with live: the engine "
                                                                          "(auto: asks the server)")] = "auto",
               steps: Annotated[int | None, Field(ge=1, description="with live, SGLang: forward steps to profile "
                                                  "(default 5)")] = None,
               seconds: Annotated[float | None, Field(gt=0, description="with live: seconds between start and stop "
                                                      "(vLLM's only way; default 10)")] = None,
               trace_dir: Annotated[str | None, Field(description="with live: where the engine writes its traces (vLLM: "
                                                      "its torch_profiler_dir; SGLang default: a new folder under the "
                                                      "runs root)")] = None,
               wait_s: Annotated[float, Field(gt=0, le=3600, description="with live: the longest wait for the "
                                              "traces")] = 600.0,
               top: Annotated[int, Field(ge=1, description="rows per table")] = 10,
               ) -> dict[str, Any]:

        if (path is None) == (live is None):
            raise RocmPerfError("triage: give `path` (a profile) or `live` (a serving engine's URL), one of them")
        if path is not None:
            return json_data(api.triage(agent.roots.existing(path, what="path"), top=top).to_dict())
        from rocm_perf.agents.live_engines import LiveRequest
        from rocm_perf.agents.live_triage import live_triage_document

        folder = agent.roots.resolve(trace_dir, what="trace_dir") if trace_dir else None
        req = LiveRequest(url=live, engine=engine, steps=steps, seconds=seconds, trace_dir=folder, wait_s=wait_s)
        return json_data(live_triage_document(req, runs_root=agent.runs_root, top=top))

    def compare(a: Annotated[str, Field(description="the baseline profile (A); " + PROFILE)],
                b: Annotated[str, Field(description="the profile to compare with it (B), of any format")],
                alpha: Annotated[float, Field(gt=0, lt=1, description="family-wise error over all kernels (Holm)")] = 0.05,
                min_change: Annotated[float, Field(ge=0, description="percent a median must move to count")] = 2.0,
                strict: Annotated[bool, Field(description="refuse profiles whose metadata differ")] = False,
                ) -> dict[str, Any]:
        return json_data(api.compare(agent.roots.existing(a, what="a"), agent.roots.existing(b, what="b"),
                                     alpha=alpha, min_change=min_change / 100, strict=strict).to_dict())

    def analyze(path: Annotated[str, Field(description="a profile with hardware counters: a rocpd .db, a "
                                           "counter_collection.csv, a folder of pmc_N passes, or a rocprof-compute "
                                           "workload folder")],
                kernel: Annotated[str | None, Field(description="only kernels matching this regular expression")] = None,
                arch: Annotated[str | None, Field(description="gfx90a, gfx942, gfx950 for profiles that do not name it")] = None,
                source: Annotated[str | None, Field(description="the program's .cu: its AMD compile check adds registers, "
                                                    "spills and occupancy")] = None,
                peaks: Annotated[str | None, Field(description="a roofline.csv or JSON/TOML of peaks to use")] = None,
                cflags: Annotated[str, Field(description="flags for the source's compile check")] = "",
                ) -> dict[str, Any]:
        return json_data(api.analyze(agent.roots.existing(path, what="path"), kernel=kernel, arch=arch,
                                     source=_opt(agent, source, "source", "file"),
                                     peaks=_opt(agent, peaks, "peaks", "file"), cflags=cflags).to_dict())

    def hotspots(path: Annotated[str, Field(description="a decoded PC-sampling or thread-trace folder, a `rocm-perf "
                                            "profile` run directory, rocprofv3's output folder, or a host_samples_*.json, "
                                            "stats_*.csv or pc_sampling_*.csv")],
                 source: Annotated[str | None, Field(description="the folder of your sources (matched by file name)")] = None,
                 kernel: Annotated[str | None, Field(description="only kernels whose name contains a match")] = None,
                 top: Annotated[int, Field(ge=1, description="lines and loops per kernel")] = 20,
                 cflags: Annotated[str, Field(description="the build's -D/-I/-std flags, to find loops")] = "",
                 ) -> dict[str, Any]:
        return json_data(api.hotspots(agent.roots.existing(path, what="path"), source=_opt(agent, source, "source"),
                                      cflags=cflags, kernel=kernel, top=top).to_dict())

    def loops(path: Annotated[str, Field(description="a .cu/.hip source under the roots")],
              kernel: Annotated[str | None, Field(description="only this kernel")] = None,
              cflags: Annotated[str, Field(description="the build's -D/-I/-std flags")] = "",
              ) -> dict[str, Any]:
        from rocm_perf.source.commands import loops_document

        return json_data(loops_document(agent.roots.existing(path, what="path", kind="file"), kernel=kernel, cflags=cflags))

    def rewrite_preview(path: Annotated[str, Field(description="a .cu/.hip source under the roots")],
                        loop: Annotated[str, Field(description="the loop id, as `loops` gives it (e.g. stencil_2d:stencil_2d:1:37)")],
                        rule: Annotated[str, Field(description="the rule name, as `loops` lists it (e.g. unroll_pragma)")],
                        factor: Annotated[int, Field(ge=1, description="the unroll factor, one `loops` lists")],
                        cflags: Annotated[str, Field(description="the build's -D/-I/-std flags")] = "",
                        ) -> dict[str, Any]:
        from rocm_perf.source.commands import rewrite_preview as preview

        return json_data(preview(agent.roots.existing(path, what="path", kind="file"), loop_id=loop, rule=rule,
                                 factor=factor, cflags=cflags))

    def review(run: Annotated[str | None, Field(description="a run directory, or its name under the runs root, or "
                                                "`latest`; omitted: list the runs")] = None) -> dict[str, Any]:
        from rocm_perf.optimize.review import review_document, runs_document

        if run is None:
            return json_data(runs_document(agent.runs_root))
        return json_data(review_document(agent.runs_root, str(agent.roots.run(run))))

    def report(run: Annotated[str, Field(description="a run directory, or its name under the runs root, or `latest`")],
               regenerate: Annotated[bool, Field(description="write report.html/report.md again")] = False,
               ) -> dict[str, Any]:
        from rocm_perf.report.html import report_files

        return json_data(report_files(agent.roots.run(run), out_root=agent.runs_root, regenerate=regenerate))

    return [
        ("doctor", "What this machine can do for rocm-perf: which backend works (rocm needs rocprofv3 and an AMD GPU; "
         "host builds the same HIP source for the CPU), the compilers, profilers, libclang and clocks found, with the "
         "command that installs what is missing. Same as `rocm-perf doctor --json`. Takes a few seconds; changes "
         "nothing. Call it first.", doctor),
        ("summary", "The kernel table of a profile: each kernel's calls, total and median time, share, category; the "
         "GPUs and streams; the top of the critical path; the profile's metadata (GPU, ROCm, command, and whether its "
         "timings are GPU or CPU host-backend times). Same as `rocm-perf summary PATH --json`. Seconds for most "
         "profiles; reads only.", summary),
        ("critical_path", "Which kernels the program actually waits for: ranks kernels by their share of the dispatch "
         "DAG's critical path (streams, events, the null stream), with the critical path's length and how much of the "
         "GPU time is off it. Optimize the top of this list first. Same as `rocm-perf critical-path PATH --json`. "
         "Seconds; reads only.", critical_path),
        ("triage", "Where the time goes, what overlaps and what could be fused: the kernel table, per-kernel overlap "
         "(time exposed on the critical path), idle gaps, and sequences of short kernels repeated back to back. Give "
         "`path` for a profile, or `live` to profile a running SGLang or vLLM server now through its HTTP profiling "
         "API (it waits for the engine to write its traces: the capture plus the flush, seconds to minutes; the "
         "traces and triage's files go to a new folder under the runs root). Same as `rocm-perf triage PATH --json` "
         "/ `rocm-perf triage --live URL --json`. Never writes a user file.", triage),
        ("compare", "Two profiles of one workload kernel by kernel, with statistics: per-kernel median change, a "
         "Mann-Whitney test with Holm's correction over all kernels, new and missing kernels, and whether the "
         "profiles are comparable (GPU, clocks, ROCm, command). Same as `rocm-perf compare A B --json`. Seconds; "
         "reads only.", compare),
        ("analyze", "Why a kernel is slow, from hardware counters: where it sits on the roofline, what bounds it "
         "(memory level, compute pipe, latency), the time the roofline allows to save, and findings with what "
         "usually helps. Needs a counter profile (`rocm-perf profile --counters roofline`). Same as `rocm-perf "
         "analyze PATH --json`. Seconds (plus a compile check with `source`); reads only.", analyze),
        ("hotspots", "Where inside kernels the time goes: hot loops (ids as `loops` gives them), source lines and "
         "instructions, with stall reasons where the profiler records them (PC sampling, thread trace, the host "
         "sampler). Same as `rocm-perf hotspots PATH --json`. Seconds; reads only.", hotspots),
        ("loops", "The kernels of a HIP source and their loops (id, kind, depth, trip count, pragma), each with the "
         "rewrite rules that apply and why the others do not. Same as `rocm-perf loops PATH --json`. A second or "
         "two (libclang); reads only.", loops),
        ("rewrite_preview", "One rewrite candidate of a source: the unified diff a rule (e.g. unroll_pragma x4 on "
         "loop stencil_2d:stencil_2d:1:37) would make, and each guard's verdict (parses, same kernels, bounds, barriers...). Same as "
         "`rocm-perf rewrite`, but the rewritten file is never written anywhere: apply the diff yourself or use "
         "`try_patch` to measure it. Seconds.", rewrite_preview),
        ("review", "A run's verdicts, accepted diffs and evidence: its summary (every candidate's verdict and "
         "reason, the confirmed speedup and its confidence interval, the A/A noise floor, the decision metric) and the "
         "accepted patch as a unified diff to apply yourself (empty when nothing was accepted). Without `run`: the "
         "runs under the runs root. Same as `rocm-perf review [RUN] --json`. Reads only: there is no apply tool; "
         "`rocm-perf apply RUN` writes an accepted change.", review),
        ("report", "The paths of a run's report files: report.md, report.html (with figures), summary.json, "
         "accepted.diff, final.cu, metadata.json. Writes report.html and report.md into the run directory when "
         "missing (or with regenerate), as `rocm-perf report RUN` does; never anywhere else.", report),
    ]
