"""Command line: argument parsing and printing only. Every command calls into a package function.

Each `cmd_*` function below belongs to one command; keep them short and keep logic out of here.
"""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

from rocm_perf import __version__
from rocm_perf.errors import RocmPerfError, one_line

_CANNOT_WRITE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _add_backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        choices=["auto", "host", "rocm"],
        default="auto",
        help="where to build and measure: rocm (hipcc + rocprofv3 on an AMD GPU), host (CPU), "
        "auto = rocm when rocprofv3 and a GPU agent are present, else host (default: auto)",
    )
    p.add_argument(
        "--warp-size",
        type=int,
        choices=[32, 64],
        default=None,
        help="host backend: lanes per emulated wavefront, 64 as on CDNA (default) or 32 for code written "
        "for 32-lane waves",
    )


def _parse_meta(items: list[str]) -> dict[str, str]:
    meta = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RocmPerfError(f"--meta {item!r}: expected key=value")
        meta[key] = value
    return meta


# ---- commands ---------------------------------------------------------------------------------


def cmd_summary(args: argparse.Namespace) -> int:
    from rocm_perf.report.summary import run_summary

    return run_summary(
        Path(args.profile),
        out=Path(args.out) if args.out else None,
        as_json=args.json,
        expect_arch=args.expect_arch,
        top=None if args.all else args.top,
        meta=_parse_meta(args.meta),
        by_phase=args.by_phase,
        fold_range_numbers=not args.keep_range_numbers,
    )


def cmd_critical_path(args: argparse.Namespace) -> int:
    from rocm_perf.report.critical_path_report import run_critical_path

    return run_critical_path(
        Path(args.profile),
        top=args.top,
        as_json=args.json,
        null_stream=args.null_stream,
        gap_heuristic_us=args.gap_heuristic_us,
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from rocm_perf.report.compare_report import run_compare

    return run_compare(
        Path(args.a),
        Path(args.b),
        out=Path(args.out) if args.out else None,
        fail_on_regression=args.fail_on_regression,
        strict=args.strict,
        meta_a=_parse_meta(args.meta_a),
        meta_b=_parse_meta(args.meta_b),
        alpha=args.alpha,
        min_change_pct=args.min_change,
        top=None if args.all else args.top,
        as_json=args.json,
    )


def cmd_triage(args: argparse.Namespace) -> int:
    from rocm_perf.report.triage_report import run_triage

    if (args.profile is None) == (args.live is None):
        raise RocmPerfError("triage: give a profile or --live URL (a running SGLang or vLLM server), one of them")
    if args.live is not None:
        from rocm_perf.agents.live_engines import LiveRequest
        from rocm_perf.agents.live_triage import run_live_triage

        req = LiveRequest(url=args.live, engine=args.engine, steps=args.steps, seconds=args.seconds,
                          trace_dir=Path(args.trace_dir) if args.trace_dir else None, wait_s=args.wait)
        return run_live_triage(req, runs_root=Path("runs"), out=Path(args.out) if args.out else None,
                               expect_arch=args.expect_arch, meta=_parse_meta(args.meta), top=args.top,
                               short_us=args.short_us, max_gap_us=args.max_gap_us, as_json=args.json)
    return run_triage(
        Path(args.profile),
        out=Path(args.out) if args.out else None,
        expect_arch=args.expect_arch,
        meta=_parse_meta(args.meta),
        top=args.top,
        short_us=args.short_us,
        max_gap_us=args.max_gap_us,
        as_json=args.json,
    )


def cmd_analyze(args: argparse.Namespace) -> int:
    from rocm_perf.report.analyze_report import run_analyze

    return run_analyze(
        Path(args.profile),
        kernel=args.kernel,
        peaks=Path(args.peaks) if args.peaks else None,
        out=Path(args.out) if args.out else None,
        as_json=args.json,
        arch=args.arch,
        source=Path(args.source) if args.source else None,
        cflags=args.cflags,
        top=None if args.all else args.top,
    )


def cmd_profile(args: argparse.Namespace) -> int:
    from rocm_perf.report.profile_command import run_profile

    return run_profile(
        Path(args.target) if args.target else None,
        program_args=args.program_args,
        backend=args.backend,
        rounds=args.rounds,
        out=Path(args.out),
        cflags=args.cflags,
        timeout=args.timeout,
        counters=args.counters,
        sample=args.sample,
        pc_sampling=args.pc_sampling,
        att=args.att,
        warp_size=args.warp_size,
        project=Path(args.project) if args.project else None,
        build=args.build,
        run=args.run,
        max_files=args.max_files,
        replay_passes=args.replay_passes,
        with_paths=args.with_paths,
    )


def cmd_hotspots(args: argparse.Namespace) -> int:
    from rocm_perf.report.hotspots_report import run_hotspots

    return run_hotspots(
        Path(args.profile),
        source=Path(args.source) if args.source else None,
        kernel=args.kernel,
        top=args.top,
        as_json=args.json,
        out=Path(args.out) if args.out else None,
        cflags=args.cflags,
    )


def cmd_check(args: argparse.Namespace) -> int:
    from rocm_perf.backends.check_command import run_check

    return run_check(Path(args.source), arch=args.arch, cflags=args.cflags, as_json=args.json, keep_isa=args.isa)


def cmd_doctor(args: argparse.Namespace) -> int:
    from rocm_perf.backends.doctor import run_doctor

    return run_doctor(as_json=args.json)


def cmd_loops(args: argparse.Namespace) -> int:
    from rocm_perf.source.commands import run_loops

    return run_loops(Path(args.source), kernel=args.kernel, cflags=args.cflags, as_json=args.json)


def cmd_rewrite(args: argparse.Namespace) -> int:
    from rocm_perf.source.commands import run_rewrite

    return run_rewrite(
        Path(args.source),
        loop_id=args.loop,
        rule=args.rule,
        factor=args.factor,
        cflags=args.cflags,
        write=Path(args.write) if args.write else None,
    )


def cmd_optimize(args: argparse.Namespace) -> int:
    from rocm_perf.optimize.command import run_optimize
    from rocm_perf.report.html import write_run_reports

    return run_optimize(args, write_report=write_run_reports)


def cmd_isolate(args: argparse.Namespace) -> int:
    from rocm_perf.isolate.command import IsolateRequest, parse_size, run_isolate

    request = IsolateRequest(
        source=Path(args.source) if args.source else None,
        kernel=args.kernel,
        out=Path(args.out),
        dispatch=args.dispatch,
        program_args=tuple(args.program_args),
        cflags=args.cflags,
        project=Path(args.project) if args.project else None,
        build=args.build,
        run=args.run,
        max_files=args.max_files,
        max_snapshot=parse_size(args.max_snapshot),
        timeout=args.timeout,
        verify=not args.no_verify,
        tolerance=args.tolerance or "",
        tolerance_type=args.tolerance_type,
    )
    return run_isolate(request, backend=args.backend, warp_size=args.warp_size)


def cmd_try(args: argparse.Namespace) -> int:
    from rocm_perf.optimize.try_command import run_try_command
    from rocm_perf.report.html import write_run_reports

    return run_try_command(args, write_report=write_run_reports)


def cmd_review(args: argparse.Namespace) -> int:
    from rocm_perf.optimize.review import run_review

    return run_review(Path(args.out), run=args.run, as_json=args.json)


def cmd_apply(args: argparse.Namespace) -> int:
    from rocm_perf.optimize.apply import run_apply

    return run_apply(Path(args.run), trial=args.trial, patch=args.patch, out_root=Path(args.out))


def cmd_export(args: argparse.Namespace) -> int:
    from rocm_perf.report.perfetto_export import run_export

    return run_export(
        Path(args.profile),
        perfetto=Path(args.perfetto),
        null_stream=args.null_stream,
        critical_path=not args.no_critical_path,
    )


def cmd_report(args: argparse.Namespace) -> int:
    from rocm_perf.report.html import run_report

    return run_report(
        Path(args.run),
        html=Path(args.html) if args.html else None,
        markdown=Path(args.md) if args.md else None,
        out_root=Path(args.out),
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    from rocm_perf.report.html import write_run_reports, write_sweep_reports
    from rocm_perf.sweep.command import run_sweep

    return run_sweep(args, write_run_report=write_run_reports, write_sweep_report=write_sweep_reports)


def cmd_mcp(args: argparse.Namespace) -> int:
    from rocm_perf.agents.server import run_mcp

    return run_mcp([Path(r) for r in args.root], out=Path(args.out), max_jobs=args.max_jobs)


def cmd_skill(args: argparse.Namespace) -> int:
    from rocm_perf.agents.skill import run_skill

    return run_skill(args.action, Path(args.dir) if args.dir else None)


def cmd_status(args: argparse.Namespace) -> int:
    from rocm_perf.sweep.status import run_status

    return run_status(Path(args.sweep), as_json=args.json)


# ---- parser -----------------------------------------------------------------------------------


PROFILE_HELP = ("a rocpd .db (or rocprofv3 output folder), a legacy .rpd (or .rpd.gz), a kernel_trace.csv or a folder "
                "of rocprofv3 CSVs, or a PyTorch profiler trace (.json, .json.gz, or a folder of them, one per rank)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocm-perf",
        description="Closed-loop kernel optimization for AMD GPUs: profile a HIP program, weigh "
        "kernels by the critical path, try guarded loop rewrites, keep only measured wins.",
    )
    parser.add_argument("--version", action="version", version=f"rocm-perf {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("summary", help="kernel table of a profile (rocpd, legacy RPD, rocprofv3 CSV, PyTorch trace)")
    p.add_argument("profile", help=PROFILE_HELP)
    p.add_argument("--out", help="write kernel_table.json, profile_summary.md, profile_metadata.json, critical_path.json here")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--expect-arch", help="the GPU architecture you meant to profile (e.g. gfx942)")
    p.add_argument("--top", type=int, default=20, help="kernels to show (default: 20)")
    p.add_argument("--all", action="store_true", help="show every kernel")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata only you know (model_name, experiment_id, ...)")
    p.add_argument("--by-phase", action="store_true",
                   help="a kernel table per roctx range (nested as outer/inner; PyTorch: user annotations), "
                   "with each phase's wall and GPU time; --json adds `phases`")
    p.add_argument("--keep-range-numbers", action="store_true",
                   help="with --by-phase: keep NAME#<number> ranges (PyTorch's ProfilerStep#12) apart instead of "
                   "folding them into NAME#*")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("critical-path", help="rank kernels by their share of the dispatch DAG's critical path")
    p.add_argument("profile", help=PROFILE_HELP)
    p.add_argument("--top", type=int, default=None, help="show only the first N kernels")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--null-stream",
        choices=["legacy", "per-thread"],
        default="legacy",
        help="legacy: the null stream waits for and is waited for by every blocking stream (HIP's default); "
        "per-thread: it is an ordinary stream",
    )
    p.add_argument(
        "--gap-heuristic-us",
        type=float,
        default=None,
        help="opt-in: guess cross-stream edges where a dispatch starts within this many us of another's end "
        "(invents edges; only for traces without an API trace)",
    )
    p.set_defaults(func=cmd_critical_path)

    p = sub.add_parser("triage", help="where the time is, what overlaps, what could be fused (any profile format, "
                       "or a running SGLang/vLLM server)")
    p.add_argument("profile", nargs="?", help=PROFILE_HELP)
    p.add_argument("--live", metavar="URL", help="profile a running SGLang or vLLM server now through its HTTP profiling "
                   "API (e.g. http://127.0.0.1:30000), wait for its traces, triage them; traces and files go to "
                   "runs/live/<time>-<engine>/")
    p.add_argument("--engine", choices=["auto", "sglang", "vllm"], default="auto",
                   help="with --live: the engine (default: auto, asked of the server)")
    p.add_argument("--steps", type=int, help="with --live, SGLang: forward steps to profile (default: 5)")
    p.add_argument("--seconds", type=float, help="with --live: seconds between start and stop instead (vLLM's only "
                   "way; default: 10)")
    p.add_argument("--trace-dir", metavar="DIR", help="with --live: where the engine writes its traces (vLLM: its "
                   "--profiler-config torch_profiler_dir, required unless VLLM_TORCH_PROFILER_DIR is set here; SGLang: "
                   "sent as output_dir, default runs/live/<time>-sglang/traces)")
    p.add_argument("--wait", type=float, default=600.0, metavar="S",
                   help="with --live: the longest wait for the engine and its traces, in seconds (default: 600)")
    p.add_argument("--out", help="write kernel_table.json, overlap_opportunities.json, fuse_opportunities.json, "
                   "profile_summary.md, profile_metadata.json here")
    p.add_argument("--top", type=int, default=10, help="rows per table (default: 10)")
    p.add_argument("--short-us", type=float, default=10.0,
                   help="a kernel shorter than this (or than its launch call) counts as short for fusion (default: 10)")
    p.add_argument("--max-gap-us", type=float, default=50.0,
                   help="kernels at most this far apart count as back to back (default: 50)")
    p.add_argument("--expect-arch", help="the GPU architecture you meant to profile (e.g. gfx942)")
    p.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata only you know")
    p.add_argument("--json", action="store_true", help="print everything as one JSON document")
    p.set_defaults(func=cmd_triage)

    p = sub.add_parser("compare", help="two profiles of one workload, kernel by kernel, with statistics (any formats)")
    p.add_argument("a", help="the baseline profile (A); " + PROFILE_HELP)
    p.add_argument("b", help="the profile to compare with it (B), of any format")
    p.add_argument("--out", help="write compare.json and compare.md (ready for a pull request) here")
    p.add_argument("--fail-on-regression", type=float, metavar="PCT",
                   help="exit 1 when a kernel got significantly slower per dispatch, or the total GPU time grew, "
                   "by more than PCT %% (for CI); errors exit 2")
    p.add_argument("--strict", action="store_true",
                   help="refuse profiles whose metadata differ (GPU, clocks, ROCm, host, command, --meta-a/-b fields)")
    p.add_argument("--meta-a", action="append", default=[], metavar="KEY=VALUE",
                   help="what only you know about A (base_image, benchmark_config_hash, ...): compared with --meta-b")
    p.add_argument("--meta-b", action="append", default=[], metavar="KEY=VALUE", help="the same for B")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="family-wise error over all kernels compared (Holm; default: 0.05)")
    p.add_argument("--min-change", type=float, default=2.0, metavar="PCT",
                   help="a kernel is faster/slower only if its median per-dispatch time moved at least this much "
                   "(default: 2)")
    p.add_argument("--top", type=int, default=20, help="kernels to show (default: 20)")
    p.add_argument("--all", action="store_true", help="show every kernel")
    p.add_argument("--json", action="store_true", help="print compare.json instead of tables")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "analyze",
        help="roofline, bound, headroom and findings per kernel, from hardware counters",
        description="Where each kernel sits on the roofline, what bounds it (memory level, compute pipe, latency), "
        "how much time the roofline allows to save, and what usually helps. Reads counters from rocpd databases, "
        "rocprofv3 counter_collection.csv (or the pmc_N folders of a multi-pass collection) and rocprof-compute "
        "workload folders.",
    )
    p.add_argument("profile", help="a rocpd .db, a counter_collection.csv, a folder of pmc_N pass folders, or a rocprof-compute workload folder")
    p.add_argument("--kernel", metavar="REGEX", help="only kernels whose name matches this regular expression")
    p.add_argument("--peaks", metavar="FILE", help="peaks to use: a rocprof-compute roofline.csv, or JSON/TOML like "
                   '{"hbm_gbs": 5300, "mfma_f16_tflops": 1300} (they override measured and theoretical peaks)')
    p.add_argument("--out", metavar="DIR", help="write analysis.json, analysis.md, roofline.svg and roofline.png here")
    p.add_argument("--json", action="store_true", help="print analysis.json instead of the table")
    p.add_argument("--arch", help="the GPU architecture, for profiles that do not name it (rocprofv3 CSV): gfx90a, gfx942, gfx950")
    p.add_argument("--source", metavar="FILE.cu", help="the program's source: its AMD compile check gives registers, spills and occupancy")
    p.add_argument("--cflags", default="", help="flags for the --source compile check (write = when they start with -)")
    p.add_argument("--top", type=int, default=20, help="kernels to show (default: 20)")
    p.add_argument("--all", action="store_true", help="show every kernel")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("profile", help="build (if given a source or a project) and profile a HIP program")
    p.add_argument("target", nargs="?", help="a .cu/.hip/.cpp source, a built program, or a reproducer folder of "
                   "`rocm-perf isolate` (or --project)")
    p.add_argument("program_args", nargs="*", help="arguments for the program (after --)")
    _add_backend_option(p)
    p.add_argument("--rounds", type=int, default=1, help="profiled runs (default: 1)")
    p.add_argument("--out", default="runs", help="output root (default: runs/)")
    p.add_argument("--cflags", default="", help="extra compiler flags, e.g. --cflags='-I include -DN=1024' (write = when they start with -)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per build or run (default: 600)")
    p.add_argument("--counters", metavar="SET", help="also collect hardware counters (rocm backend): `roofline` for "
                   "everything `analyze` needs, and/or counter names (comma separated); as many profiler passes as they "
                   "need, joined per dispatch and analyzed into RUN/analysis/")
    p.add_argument("--sample", action=argparse.BooleanOptionalAction, default=None,
                   help="host backend: sample the kernels' program counters (a -g build) and print the hot loops "
                   "and lines (see `rocm-perf hotspots`)")
    p.add_argument("--pc-sampling", nargs="?", const="auto", metavar="METHOD",
                   help="rocm backend: rocprofv3 PC sampling (stochastic on MI300 and later, host_trap before; "
                   "default: auto) and the hot loops and lines")
    p.add_argument("--att", action="store_true", help="rocm backend: rocprofv3 thread trace, decoded per instruction")
    p.add_argument("--project", metavar="DIR", help="a source tree with its own build: copied into the run "
                   "(.gitignore respected, never written), built with --build, profiled running --run")
    p.add_argument("--build", metavar="CMD", help="with --project: the shell command that builds the tree copy")
    p.add_argument("--run", metavar="CMD", help="with --project: the shell command that runs the built program, "
                   "from the top of the tree")
    p.add_argument("--max-files", type=int, default=5000, help="with --project: refuse trees with more files (default: 5000)")
    p.add_argument("--replay-passes", type=int, default=10, metavar="N",
                   help="a reproducer: passes of the captured dispatch per run, its memory restored between them (default: 10)")
    p.add_argument("--with", dest="with_paths", action="append", default=[], metavar="PATH",
                   help="with --project: a file or folder outside DIR that the build reads (repeatable); copied "
                   "read-only beside the copy at the same relative path (what a failed build names is found by itself)")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser(
        "hotspots",
        help="hot loops and lines of kernels, and why they stall (PC sampling, thread trace, host sampler)",
        description="Where inside kernels the time goes: per loop (ids as `rocm-perf loops` prints them), per "
        "source line and per instruction, with stall reasons where the profiler records them and findings "
        "(memory-latency, barrier, dependency, instruction-fetch bound; LDS heavy).",
    )
    p.add_argument("profile", help="a decoded PC-sampling or thread-trace folder (code.json), a `rocm-perf profile` "
                   "run directory, rocprofv3's output directory, a host_samples_*.json, stats_*.csv or pc_sampling_*.csv")
    p.add_argument("--source", metavar="DIR", help="where your sources are: recorded paths are matched by file name "
                   "(default: the recorded path, else the copy the profiler saved)")
    p.add_argument("--kernel", metavar="REGEX", help="only kernels whose name contains a match")
    p.add_argument("--top", type=int, default=20, help="lines and loops to show per kernel (default: 20)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--out", metavar="DIR", help="write hotspots.json here")
    p.add_argument("--cflags", default="", help="the build's -D/-I/-std flags, for finding loops in the source")
    p.set_defaults(func=cmd_hotspots)

    p = sub.add_parser("check", help="compile for an AMD target and print per-kernel resource usage")
    p.add_argument("source")
    p.add_argument("--arch", default="gfx90a", help="AMD target (default: gfx90a)")
    p.add_argument("--cflags", default="")
    p.add_argument("--json", action="store_true")
    p.add_argument("--isa", action="store_true", help="keep the ISA and count instructions per kernel")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("doctor", help="what this machine can do, and what to install")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("loops", help="kernels and their loops, with the rewrite rules that apply")
    p.add_argument("source")
    p.add_argument("--kernel", help="only this kernel")
    p.add_argument("--cflags", default="", help="the build's -D/-I/-std flags")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_loops)

    p = sub.add_parser("rewrite", help="print the diff of one rewrite candidate and its guard verdicts")
    p.add_argument("source")
    p.add_argument("--loop", required=True, help="loop id (from `rocm-perf loops`)")
    p.add_argument("--rule", required=True, help="rule name (from rewrites/)")
    p.add_argument("--factor", type=int, required=True)
    p.add_argument("--cflags", default="")
    p.add_argument("--write", metavar="OUT", help="also write the rewritten file here (never the input)")
    p.set_defaults(func=cmd_rewrite)

    p = sub.add_parser("optimize", help="the closed loop: rewrite, rebuild, measure, keep what is faster")
    from rocm_perf.optimize.options import add_optimize_arguments

    add_optimize_arguments(p)
    _add_backend_option(p)
    p.set_defaults(func=cmd_optimize)

    p = sub.add_parser(
        "isolate",
        help="capture one dispatch of a program into a standalone reproducer that replays it",
        description="Run the program once; at the chosen launch of the chosen kernel record every live allocation "
        "(address, size, bytes), the launch (grid, block, dynamic LDS, stream, argument bytes) and what the kernel "
        "changed; write a reproducer folder (the kernel's device code, a replay harness, the snapshots, manifest.json) "
        "that every command takes as a program: profile DIR, optimize DIR, sweep.",
    )
    p.add_argument("source", nargs="?", help="the program's .cu/.hip source (or --project)")
    p.add_argument("program_args", nargs="*", help="arguments for the program (after --)")
    p.add_argument("--kernel", required=True, metavar="REGEX",
                   help="the kernel: a regular expression searched in the launched kernels' names (the first kernel it "
                   "matches is the one whose launches --dispatch counts)")
    p.add_argument("--dispatch", type=int, default=1, metavar="N", help="which launch of that kernel, from 1 (default: 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="the reproducer folder to write (must not exist)")
    p.add_argument("--cflags", default="", help="the program's compiler flags, e.g. --cflags='-DN=1024' (write = when they start with -)")
    p.add_argument("--project", metavar="DIR", help="a source tree with its own build, copied and built (never written)")
    p.add_argument("--build", metavar="CMD", help="with --project: the shell command that builds the tree copy")
    p.add_argument("--run", metavar="CMD", help="with --project: the shell command that runs the built program, "
                   "from the top of the tree")
    p.add_argument("--max-files", type=int, default=5000, help="with --project: refuse trees with more files (default: 5000)")
    p.add_argument("--max-snapshot", default="2G", metavar="SIZE",
                   help="refuse a capture of more memory than this, before and after together (default: 2G)")
    p.add_argument("--timeout", type=float, default=600, help="seconds for the build and for the program's run (default: 600)")
    p.add_argument("--no-verify", action="store_true", help="do not build and replay the reproducer once written")
    p.add_argument("--tolerance", metavar="rtol=R,atol=A", help="the check's replay passes where the memory it wrote is "
                   "within this tolerance of the capture's, element by element (a kernel of float atomics), not bit for bit; "
                   "try/optimize on the reproducer take the same --tolerance")
    p.add_argument("--tolerance-type", default="float32", metavar="TYPE",
                   help="with --tolerance: the memory's element type (default: float32; float64, float16, bfloat16)")
    _add_backend_option(p)
    p.set_defaults(func=cmd_isolate)

    p = sub.add_parser("try", help="is my change faster, and still correct? a patch, a second version of the file, "
                       "or values of a constant, measured and guarded as optimize's candidates")
    from rocm_perf.optimize.try_command import add_try_arguments

    add_try_arguments(p)
    _add_backend_option(p)
    p.set_defaults(func=cmd_try)

    p = sub.add_parser("review", help="list runs, or show one run's accepted diffs and evidence")
    p.add_argument("run", nargs="?", help="run directory or name (default: list runs)")
    p.add_argument("--out", default="runs", help="runs root (default: runs/)")
    p.add_argument("--json", action="store_true", help="print the run's summary and accepted patch (or the runs) as JSON")
    p.set_defaults(func=cmd_review)

    p = sub.add_parser("apply", help="write a run's accepted result to your source file")
    p.add_argument("run")
    p.add_argument("--trial", help="apply the result up to this accepted trial")
    p.add_argument("--patch", action="store_true", help="print a unified diff for `git apply` instead")
    p.add_argument("--out", default="runs", help="runs root (default: runs/)")
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("export", help="a profile as a trace for ui.perfetto.dev (trace-event JSON or .pftrace)")
    p.add_argument("profile", help=PROFILE_HELP)
    p.add_argument("--perfetto", required=True, metavar="OUT.json|OUT.pftrace",
                   help="write the trace here: Chrome trace-event JSON, or Perfetto's protobuf format for a name ending in "
                   ".pftrace (a fraction of the size, and what the Perfetto UI loads best for large profiles)")
    p.add_argument("--null-stream", choices=["legacy", "per-thread"], default="legacy", help="as for critical-path")
    p.add_argument("--no-critical-path", action="store_true", help="skip the DAG analysis (no critical-path track or dependency arrows)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", help="a run's or a sweep's report as self-contained HTML and Markdown")
    p.add_argument("run", help="a run directory (or its name under --out) or a sweep directory")
    p.add_argument("--html", metavar="OUT", help="write the HTML here (default: report.html in the run/sweep directory)")
    p.add_argument("--md", metavar="OUT", help="write the Markdown here (default: report.md in the run/sweep directory)")
    p.add_argument("--out", default="runs", help="runs root for run names (default: runs/)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("sweep", help="optimize many targets within a time budget; resumable; --watch keeps running")
    from rocm_perf.sweep.command import add_sweep_arguments

    add_sweep_arguments(p)
    _add_backend_option(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("hipcc", help="hipcc's command line, building for the CPU with the host runtime (also: rocm-perf-hipcc)",
                       add_help=False)
    p.add_argument("hipcc_args", nargs=argparse.REMAINDER)

    p = sub.add_parser("mcp", help="serve every command as Model Context Protocol tools on stdio, for agents",
                       description="A Model Context Protocol server on stdin/stdout: the commands as tools with typed "
                       "arguments and JSON results (the same as their --json), try_patch and optimize as background "
                       "jobs, the runs' reports as resources. No tool writes your files. See docs/agents.md.")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="a folder the client may name paths in (repeatable; default: the current directory)")
    p.add_argument("--out", default="runs", help="runs root for the jobs' runs (default: runs/ in the first root)")
    p.add_argument("--max-jobs", type=int, default=2, help="background jobs running at once (default: 2)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("skill", help="the agent skill (SKILL.md) shipped with rocm-perf: show it or install it")
    p.add_argument("action", choices=["show", "install"], help="show: print SKILL.md; install: write it for an agent")
    p.add_argument("--dir", metavar="DIR", help="install into this folder (default: ~/.claude/skills/rocm-perf/)")
    p.set_defaults(func=cmd_skill)

    p = sub.add_parser("status", help="what a sweep (or its daemon) is doing: every target with its state, attempts "
                                      "and gain (metric, interval), the open tasks, the queue, budget left")
    p.add_argument("sweep", help="the sweep directory")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    return parser


def _split_program_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after the first `--` belongs to the profiled program."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hipcc"]:  # hipcc's own command line follows, options and all: no argparse
        from rocm_perf.backends.host_hipcc import main as hipcc_main

        return hipcc_main(argv[1:])
    ours, program_args = _split_program_args(argv)
    parser = build_parser()
    args = parser.parse_args(ours)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if hasattr(args, "program_args"):
        args.program_args = list(getattr(args, "program_args") or []) + program_args
    try:
        return int(args.func(args) or 0)
    except RocmPerfError as e:
        if args.debug:
            raise
        print(f"rocm-perf: error: {one_line(str(e))}", file=sys.stderr)
        return e.exit_code
    except OSError as e:
        if args.debug or e.errno not in _CANNOT_WRITE:
            raise
        # a full disk (or a read-only one) anywhere: what the commands with a ledger say more precisely
        print(f"rocm-perf: error: {one_line(str(e.filename or 'a file'))}: cannot write ({e.strerror}); free disk space, then run "
              "the command again (optimize and sweep: with --resume)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rocm-perf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
