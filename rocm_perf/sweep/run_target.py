"""One target's work, the seam between the sweep and whatever runs a target.

A sweep calls two functions per target (`Sweep(triage=, optimize=)`):

    triage(target: SweepTarget, work_dir: Path, backend: str) -> Triage
        build once, profile once: does it run, how long is its critical path, how much to try;
        raises TargetFailed for what retrying cannot fix (it does not build).
    optimize(options: OptimizeOptions, reporter: Reporter, on_loop) -> Path
        run (or resume) the closed loop of one target, whose options `optimize_options` built
        from the target's spec; returns the run directory, whose ledger holds the result.
        `reporter` receives progress; `on_loop(loop)` receives an object with `run_dir` and
        `request_stop()` as soon as the run exists, so that a stop request reaches it.

`triage_target` and `optimize_target` below run them in this process. Another executor (other
devices, a batch scheduler) is another pair of functions of the same shape.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rocm_perf.backends.replay_build import build_replay, replay_flags
from rocm_perf.errors import RocmPerfError
from rocm_perf.reproducer import DEFAULT_PASSES, read_manifest, replay_args
from rocm_perf.sweep.targets import SweepTarget, source_hash


@dataclass
class Triage:
    """A target's first look: does it build and run, how long is its critical path, how much to try."""

    baseline_ns: float
    candidates: int
    note: str = ""


class TargetFailed(Exception):
    """A target failed in a way retrying cannot fix (it does not build): record it, go on."""


def triage_target(target: SweepTarget, work_dir: Path, backend_name: str) -> Triage:
    """Build once, profile once, weigh the critical path; count the loops a rewrite could touch."""
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.backends.select import select_backend
    from rocm_perf.optimize.measure import program_argv
    from rocm_perf.trace.load import load_trace

    opts = target.options
    flags = list(opts.get("cflags", []))
    timeout = float(opts.get("timeout", 300.0))
    backend = select_backend(backend_name, warp_size=opts.get("warp_size"))
    work_dir.mkdir(parents=True, exist_ok=True)
    if opts.get("project"):
        return _triage_project(target, work_dir, backend, timeout)
    reproducer = read_manifest(target.source) if opts.get("reproducer") else None
    try:
        if reproducer is not None:  # a reproducer: its harness, replaying the captured dispatch
            program = build_replay(backend, reproducer, work_dir / "build", flags=flags, timeout=timeout)
        else:
            program = backend.build(target.source, work_dir / "build", flags, timeout=timeout)
    except RocmPerfError as e:
        raise TargetFailed(f"does not build: {str(e).splitlines()[0][:300]}") from e
    if reproducer is not None:
        argv = [str(program.executable), *replay_args(reproducer.root, int(opts.get("replay_passes", DEFAULT_PASSES)))]
        flags = flags + replay_flags(reproducer)
    else:
        argv = program_argv(program.executable, list(opts.get("args", [])), opts.get("run"))
    result = backend.profile(argv, work_dir / "profile", timeout=timeout, cwd=target.source.parent)
    if result.timed_out:
        raise RocmPerfError(f"{target.source}: the program timed out after {timeout:.0f} s")
    if result.returncode != 0:
        tail = (result.stderr or "").strip().splitlines()[-1:] or [""]
        raise RocmPerfError(f"{target.source}: the program exits with {result.returncode} {tail[0][:200]}".rstrip())
    if not result.databases:
        raise RocmPerfError(f"{target.source}: the profiler wrote no database")
    cp = analyze_critical_path(load_trace(result.databases[0]))
    return Triage(baseline_ns=float(cp.critical_path_ns),
                  candidates=_count_loops(reproducer.kernel_file if reproducer else target.source, flags))


def _triage_project(target: SweepTarget, work_dir: Path, backend, timeout: float) -> Triage:
    """A project target's first look: its tree copied and built once, its run command profiled once."""
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.optimize import project as proj
    from rocm_perf.optimize.outside import run_command_paths, run_store, with_paths_relative
    from rocm_perf.source import analyze_source
    from rocm_perf.trace.load import load_trace

    opts = target.options
    root = target.source
    try:
        files = proj.project_files(root, int(opts.get("max_files", proj.DEFAULT_MAX_FILES)))
        sources = (proj.resolve_sources(root, list(opts["sources"]), files) if opts.get("sources")
                   else proj.kernel_sources(root, files))
    except RocmPerfError as e:
        raise TargetFailed(str(e)) from e
    tree = work_dir / "tree"
    env = proj.build_environment(backend, work_dir / "bin")
    try:
        store = run_store(work_dir, root)  # what the build reads outside the project, copied beside it
        named = with_paths_relative(root, list(opts.get("with", []))) + run_command_paths(root, opts["run"])
        store.add(list(dict.fromkeys(named)), int(opts.get("max_files", proj.DEFAULT_MAX_FILES)))
        proj.build_copy(lambda dest: proj.copy_files(root, files, dest), tree, opts["build"], env, timeout,
                        work_dir / "build.log", str(root), store=store, discover=True)
    except RocmPerfError as e:
        raise TargetFailed(f"does not build: {str(e).splitlines()[0][:300]}") from e
    result = backend.profile(proj.run_argv(opts["run"]), work_dir / "profile", timeout=timeout, cwd=tree, env=env)
    if result.timed_out:
        raise RocmPerfError(f"{root}: the run command timed out after {timeout:.0f} s")
    if result.returncode != 0:
        tail = (result.stderr or "").strip().splitlines()[-1:] or [""]
        raise RocmPerfError(f"{root}: the run command exits with {result.returncode} {tail[0][:200]}".rstrip())
    if not result.databases:
        raise TargetFailed(f"the run command `{opts['run']}` started no HIP program (no trace was written)")
    cp = analyze_critical_path(load_trace(result.databases[0]))
    flags = list(opts.get("cflags", [])) + proj.include_flags(tree, files, work_dir)
    loops = sum(len(analyze_source(tree / rel, flags).loops) for rel in sources)
    return Triage(baseline_ns=float(cp.critical_path_ns), candidates=max(1, loops))


def _count_loops(source: Path, flags: list[str]) -> int:
    """Loops in the source's kernels: the candidates still to try, before any run has tried one."""
    from rocm_perf.source import analyze_source

    analysis = analyze_source(source, flags)
    return max(1, len(analysis.loops))


def optimize_options(target: SweepTarget, *, out: Path, budget_s: float, backend: str, resume: str | None,
                     max_trials: int | None):
    """The OptimizeOptions of one target's run, from its manifest options."""
    from rocm_perf.optimize.options import OptimizeOptions, parse_duration, parse_fraction

    o = target.options
    kw: dict[str, Any] = dict(
        source=target.source, program_args=list(o.get("args", [])), backend=backend, run=o.get("run"),
        kernels=list(o.get("kernels", [])), rules=list(o.get("rules", [])),
        rules_dir=Path(o["rules_dir"]) if o.get("rules_dir") else None, factors=list(o.get("factors", [])),
        time_budget_s=budget_s, cflags=list(o.get("cflags", [])), out=out, resume=resume, quiet=True,
    )
    if "budget" in o:
        kw["time_budget_s"] = min(budget_s, parse_duration(o["budget"]))
    if "min_gain" in o:
        kw["min_gain"] = parse_fraction(o["min_gain"], f"{target.name}: min_gain")
    if "confidence" in o:
        kw["confidence"] = parse_fraction(o["confidence"], f"{target.name}: confidence")
    for key in ("rounds", "max_rounds", "aa_rounds", "settle_close_calls", "arch", "compile_check", "timing_lines", "allow_lower_occupancy",
                "counters", "metric"):
        if key in o:
            kw[key] = o[key]
    if "timeout" in o:
        kw["timeout_s"] = float(o["timeout"])
    if "max_trials" in o or max_trials is not None:
        kw["max_trials"] = int(o.get("max_trials", max_trials))
    if o.get("warp_size"):
        kw["warp_size"] = int(o["warp_size"])
    if o.get("project"):
        from rocm_perf.optimize.outside import with_paths_relative

        kw.update(project=True, build=o["build"], sources=list(o.get("sources", [])),
                  max_files=int(o.get("max_files", 5000)), with_paths=with_paths_relative(target.source, list(o.get("with", []))))
    if o.get("reproducer"):
        kw.update(replay=True, replay_passes=int(o.get("replay_passes", DEFAULT_PASSES)))
    return OptimizeOptions(**kw)


def optimize_target(options, reporter, on_loop: Callable[[Any], None]) -> Path:
    """Run (or resume) the closed loop for one target; returns its run directory.

    A thin adapter over rocm_perf.optimize.command's pieces (its `run_optimize` takes argparse
    arguments, prints, and owns the signals; a sweep needs none of that). It resumes the
    unfinished run of the same source and options under `options.out` when there is one, so a
    run a killed sweep left behind is continued, never started twice. `on_loop` receives the
    loop as soon as it exists, so that a stop request reaches it between rounds.
    """
    from dataclasses import replace

    from rocm_perf.backends.select import select_backend
    from rocm_perf.optimize import command as oc
    from rocm_perf.optimize.ledger import open_ledger
    from rocm_perf.optimize.loop import OptimizeLoop
    from rocm_perf.optimize.services import Services, SourceTools

    if options.resume:
        existing = oc.find_run(options.out, options.resume)
    else:
        existing = oc.unfinished_run_for(options.out, options.fingerprint())
        current = source_hash(Path(options.source), options.sources if options.project else None)
        if existing is not None and run_source_sha(existing) != current:
            existing = None  # an unfinished run of an older version of the source: start afresh
    if existing is not None:
        run_dir = existing
        ledger = open_ledger(run_dir)
        opt = replace(oc.recorded_options(ledger, options), time_budget_s=options.time_budget_s)
        backend = select_backend(ledger.get("backend"), warp_size=opt.warp_size)
    else:
        backend = select_backend(options.backend, warp_size=options.warp_size)
        opt = options
        run_dir, ledger = oc.create_run(opt, backend.name, backend.describe(), sys.argv)
        oc.write_run_metadata(run_dir, opt, backend)
    lock = oc.RunLock(run_dir)
    try:
        runner = oc.make_runner(run_dir, ledger, opt, backend)
        services = Services(backend=backend, runner=runner, tools=SourceTools.default(),
                            compile_check=oc.compile_checker(opt.compile_check), reporter=reporter)
        loop = OptimizeLoop(run_dir, ledger, opt, services)
        on_loop(loop)
        loop.run()
        return run_dir
    finally:
        lock.release()
        ledger.close()


def run_elapsed(run_dir: Path) -> float:
    """Seconds an interrupted run has already spent (its ledger keeps them)."""
    from rocm_perf.optimize.ledger import LEDGER_NAME, Ledger

    if not (run_dir / LEDGER_NAME).exists():
        return 0.0
    ledger = Ledger(run_dir / LEDGER_NAME)
    try:
        return float(ledger.get("elapsed_s", 0.0) or 0.0)
    finally:
        ledger.close()


def run_source_sha(run_dir: Path) -> str | None:
    from rocm_perf.optimize.ledger import open_ledger

    ledger = open_ledger(run_dir)
    try:
        return ledger.get("source_sha256")
    finally:
        ledger.close()
