"""`rocm-perf profile SOURCE|PROGRAM [-- args]`: build if given a source, run N profiled rounds,
write the run directory (databases, summary and critical-path artifacts), print the kernel table.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console

from rocm_perf.atomic_file import write_atomic
from rocm_perf.backends.base import Backend
from rocm_perf.process import last_lines
from rocm_perf.backends.select import select_backend
from rocm_perf.errors import RocmPerfError
from rocm_perf.reproducer import DEFAULT_PASSES, is_reproducer, replay_args
from rocm_perf.trace.load import load_trace

SOURCE_SUFFIXES = (".cu", ".hip", ".cpp", ".cc", ".cxx")


def run_directory(out: Path, target: Path) -> Path:
    """A new runs/<YYYYmmdd-HHMMSS>-<target>/ directory (suffixed if that second is taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(out) / f"{stamp}-{target.stem}"
    base.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir()  # atomic: two profiles started in the same second get two directories
            return candidate
        except FileExistsError:
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")


def _program(target: Path, backend: Backend, baseline: Path, cflags: str, timeout: float) -> tuple[Path, bool]:
    """The executable to profile, building it first when `target` is a source."""
    if not target.exists():
        raise RocmPerfError(f"{target}: no such file")
    if target.suffix.lower() in SOURCE_SUFFIXES:
        shutil.copy2(target, baseline / target.name)
        try:
            flags = shlex.split(cflags)
        except ValueError as e:
            raise RocmPerfError(f"--cflags {cflags!r}: {e}") from e
        program = backend.build(target, baseline / "build", flags, timeout=timeout)
        return program.executable, True
    if not os.access(target, os.X_OK):
        raise RocmPerfError(f"{target}: neither a HIP source ({', '.join(SOURCE_SUFFIXES)}) nor an executable program")
    return target.resolve(), False


def _replay_program(target: Path, backend: Backend, baseline: Path, cflags: str, timeout: float) -> Path:
    """A reproducer's harness, built (rocm_perf/reproducer.py, backends/replay_build.py)."""
    from rocm_perf.backends.replay_build import build_replay
    from rocm_perf.reproducer import read_manifest

    reproducer = read_manifest(target)
    if reproducer.backend != backend.name:
        raise RocmPerfError(f"{target}: captured on the {reproducer.backend} backend; profile it there "
                            f"(--backend {reproducer.backend})")
    try:
        flags = shlex.split(cflags)
    except ValueError as e:
        raise RocmPerfError(f"--cflags {cflags!r}: {e}") from e
    return build_replay(backend, reproducer, baseline / "build", flags=flags, timeout=timeout).executable


def _critical_path(trace) -> dict | None:
    try:
        from rocm_perf.analysis.critical_path import analyze_critical_path
    except ImportError:  # the critical-path analysis is not installed in this tree
        return None
    return analyze_critical_path(trace).to_json()


def _environment(target: Path, backend: Backend) -> dict:
    try:
        from rocm_perf.backends.environment import capture_environment
    except ImportError:
        return {}
    return capture_environment(source=target if target.is_file() and target.suffix.lower() in SOURCE_SUFFIXES else None,
                               backend=backend, command=sys.argv)


def _write_json(path: Path, obj) -> None:
    write_atomic(path, json.dumps(obj, indent=2, default=str) + "\n")


def counter_request(request: str, arch: str) -> list[str]:
    """`--counters` as counter names: `roofline` (every counter the roofline of `arch` needs) and/or
    counter names, comma or space separated."""
    from rocm_perf.analysis.gpu_arch import arch_spec

    names: list[str] = []
    for item in request.replace(",", " ").split():
        names += arch_spec(arch).required_counters() if item == "roofline" else [item]
    if not names:
        raise RocmPerfError("--counters: no counters named (use `roofline`, or counter names)")
    return list(dict.fromkeys(names))


def _collect_counters(chosen: Backend, argv: list[str], request: str, traced, run_dir: Path, timeout: float, console):
    """The counter round: collect, join the passes, analyze, write run_dir/analysis/. Returns the summary entry."""
    from rocm_perf.analysis.analyze import analyze_trace
    from rocm_perf.report.analyze_report import print_analysis, write_analysis

    gpus = [a for a in traced.gpu_agents() if a.name]
    arch = gpus[0].name if gpus else (chosen.target_arch() if hasattr(chosen, "target_arch") else None)
    if not arch:
        raise RocmPerfError("--counters: the GPU architecture is unknown (the profile names no GPU agent)")
    counters = counter_request(request, arch)
    console.print(f"collecting {len(counters)} counters (one program run per pass) ...", highlight=False)
    folder = chosen.collect_counters(argv, counters, run_dir / "baseline" / "counters", timeout=timeout)
    trace = load_trace(folder)
    if len(gpus) == 1 and len(trace.agents) == 1:
        # rocprofv3's CSV names the agent by number only: the traced round's database knows the GPU.
        trace.agents = [dataclasses.replace(gpus[0], id=trace.agents[0].id)]
    analysis = analyze_trace(trace, arch=arch)
    written = write_analysis(analysis, run_dir / "analysis", title=f"{run_dir.name}: baseline")
    print_analysis(analysis, console=console)
    return {"request": request, "counters": counters, "folder": str(folder), "passes": trace.metadata.get("counter_passes", []),
            "analysis": str(written[0])}


def _project_program(project: Path, build: str, run: str, max_files: int, backend: Backend, baseline: Path,
                     timeout: float, with_paths: list[str] | None = None) -> tuple[list[str], Path, dict[str, str]]:
    """A project copied into the run and built there: (the run command's argv, where it runs, its env).
    What its build reads outside the project (`with_paths`, and what the build shows it needs) is
    copied in read-only beside the copy (optimize/outside.py)."""
    from rocm_perf.optimize.outside import run_command_paths, run_store, with_paths_relative
    from rocm_perf.optimize.project import build_copy, build_environment, copy_files, project_files, run_argv

    files = project_files(project, max_files)
    # --with, and the files the run command names outside the project (`./main ../x-cuda/data.csv`)
    outside = list(dict.fromkeys(with_paths_relative(project, with_paths or []) + run_command_paths(project, run)))
    store = run_store(baseline.parent, project)
    store.add(outside, max_files)
    tree = baseline / "tree"
    env = build_environment(backend, baseline.parent / "bin")
    build_copy(lambda dest: copy_files(project, files, dest), tree, build, env, timeout, baseline / "build.log",
               str(project), store=store, discover=True, limit=max_files)
    report_outside(store)
    return run_argv(run), tree, env


def report_outside(store) -> None:
    """One line on what the build read outside the project, when it read anything."""
    if store.files:
        shown = ", ".join(sorted(store.files)[:3]) + (" ..." if len(store.files) > 3 else "")
        print(f"rocm-perf: the build reads {len(store.files)} file(s) outside the project ({shown}): copied read-only "
              f"into {store.directory}", file=sys.stderr)


def run_profile(
    target: Path | None,
    program_args: list[str] | None = None,
    backend: str = "auto",
    rounds: int = 1,
    out: Path = Path("runs"),
    cflags: str = "",
    timeout: float = 600,
    counters: str | None = None,
    sample: bool | None = None,
    pc_sampling: str | None = None,
    att: bool = False,
    warp_size: int | None = None,
    project: Path | None = None,
    build: str | None = None,
    run: str | None = None,
    max_files: int = 5000,
    replay_passes: int = DEFAULT_PASSES,
    with_paths: list[str] | None = None,
) -> int:
    """Profile `target` (or a project: its tree built with `build`, running `run`); returns 0, or 1
    when the program fails its own check (non-zero exit).

    `counters` (`roofline`, or counter names): after the traced rounds, one counter round (as many
    profiler passes as the counters need), joined per dispatch and analyzed into run_dir/analysis/.
    With instruction-level evidence (the host sampler, `pc_sampling`, `att`) the hot loops and
    lines of the last round are printed too and written to hotspots.json."""
    from rocm_perf.optimize.artifacts import outside_summary
    from rocm_perf.report.summary import build_summary, print_summary, write_artifacts

    if rounds < 1:
        raise RocmPerfError(f"--rounds must be at least 1, got {rounds}")
    if project is not None:
        if target is not None or program_args:
            raise RocmPerfError("profile --project: the project's --run command says what runs; give no program")
        if not build or not run:
            raise RocmPerfError("profile --project needs --build CMD (how the tree builds) and --run CMD (how the built "
                                "program runs, from the top of the tree)")
    elif target is None:
        raise RocmPerfError("profile: name a source or a program to profile, or a --project")
    elif build or run or with_paths:
        raise RocmPerfError("profile: --build, --run and --with go with --project DIR")
    target = Path(project if project is not None else target)
    chosen = select_backend(backend, sample=sample, pc_sampling=pc_sampling, att=att, warp_size=warp_size)
    if counters and not chosen.has_counters:
        raise RocmPerfError(chosen.no_counters_message())
    console = Console()
    console.print(f"backend: {chosen.name} ({chosen.describe()})", highlight=False, soft_wrap=True)
    run_dir = run_directory(out, target.resolve() if project is not None else target)
    baseline = run_dir / "baseline"
    baseline.mkdir()
    cwd, env = None, None
    if project is not None:
        argv, cwd, env = _project_program(target, build, run, max_files, chosen, baseline, timeout, with_paths)
        argv = ["/bin/sh", "-c", f"cd {shlex.quote(str(cwd.resolve()))} && {run}"]  # also for the counter round
        built = True
    elif is_reproducer(target):  # `rocm-perf isolate`'s folder: its harness replays the captured dispatch
        if program_args:
            raise RocmPerfError(f"{target}: a reproducer replays its captured dispatch and takes no program arguments")
        if replay_passes < 1:
            raise RocmPerfError(f"--replay-passes {replay_passes}: must be at least 1")
        argv, built = [str(_replay_program(target, chosen, baseline, cflags, timeout)), *replay_args(target, replay_passes)], True
    else:
        executable, built = _program(target, chosen, baseline, cflags, timeout)
        argv = [str(executable), *(program_args or [])]

    round_records = []
    traces = []
    for i in range(1, rounds + 1):
        result = chosen.profile(argv, baseline / f"round_{i}", timeout=timeout, cwd=cwd, env=env)
        if result.timed_out:
            raise RocmPerfError(f"{target}: round {i} timed out after {timeout:g} s (log: {result.log})")
        if result.returncode != 0:
            tail = last_lines(result.stdout + "\n" + result.stderr, 10)
            console.print(f"[bold red]{target}: the program failed (exit {result.returncode}) in round {i}[/]; "
                          f"its last output lines:", highlight=False, soft_wrap=True)
            console.print(tail, highlight=False, markup=False, soft_wrap=True)
            console.print(f"log: {result.log}", highlight=False, soft_wrap=True)
            return 1
        if not result.databases:
            if project is not None:
                raise RocmPerfError(f"{target}: the run command `{run}` (exit {result.returncode}) started no HIP "
                                    "program: no trace was written. It runs from the top of the built tree and must "
                                    "start the program the build makes")
            raise RocmPerfError(f"{target}: round {i} left no profile database (did the program make any HIP calls?)")
        trace = load_trace(result.databases[0])
        traces.append(trace)
        round_records.append({
            "round": i,
            "databases": [str(p) for p in result.databases],
            "wall_s": result.wall_s,
            "dispatches": len(trace),
            "runtime_ns": trace.runtime_ns,
            "digests": list(trace.digests),
        })

    trace = traces[-1]
    summary = build_summary(trace)
    write_artifacts(summary, run_dir)
    sections = {name for s in summary.sections for name in s.files}
    critical = None
    if "critical_path.json" not in sections:
        critical = _critical_path(trace)
        if critical is not None:
            _write_json(run_dir / "critical_path.json", critical)
    digests_agree = all(r["digests"] == round_records[0]["digests"] for r in round_records)
    print_summary(summary, top=20, console=console)
    counter_round = _collect_counters(chosen, argv, counters, trace, run_dir, timeout, console) if counters else None
    _write_json(run_dir / "summary.json", {
        "target": str(target),
        "built": built,
        "program": argv,
        "backend": chosen.name,
        "device": chosen.describe(),
        "gpu_timings": chosen.gpu_timings,
        "rounds": round_records,
        "digests_agree_across_rounds": digests_agree,
        **summary.kernel_table_json(),
        **({"counter_round": counter_round} if counter_round else {}),
        **({"outside": outside} if (outside := outside_summary(run_dir)) else {}),
    })
    _write_json(run_dir / "metadata.json", {"environment": _environment(target, chosen),
                                            "command": sys.argv, "backend": chosen.name})

    if rounds > 1:
        runtimes = ", ".join(f"{r['runtime_ns'] / 1e6:.3f}" for r in round_records)
        console.print(f"runtime per round (ms, SUM of dispatch durations): {runtimes}", highlight=False)
    if not digests_agree:
        console.print("[yellow]warning:[/] the device-to-host copies differ between rounds: the program's output "
                      "is not deterministic, so outputs cannot be compared for correctness", highlight=False)
    if getattr(chosen, "sample", False) or pc_sampling or att:
        _print_hotspots(baseline / f"round_{rounds}", run_dir, baseline / "tree" if project is not None else target,
                        cflags, console)
    console.print(f"run directory: {run_dir}", highlight=False, soft_wrap=True)
    return 0


def _print_hotspots(round_dir: Path, run_dir: Path, target: Path, cflags: str, console: Console) -> None:
    """The hot loops and lines of one round (and hotspots.json in the run directory)."""
    from rocm_perf.report.hotspots_report import build_hotspots, hotspots_document, print_hotspots

    source = target if target.is_dir() or target.suffix.lower() in SOURCE_SUFFIXES else None  # a project: its tree
    try:
        sourced = build_hotspots(round_dir, source=source, cflags=cflags)
    except RocmPerfError as e:
        console.print(f"[yellow]warning:[/] no hot-line table: {e}", highlight=False, soft_wrap=True)
        return
    _write_json(run_dir / "hotspots.json", hotspots_document(sourced, top=None))
    console.print("")
    print_hotspots(sourced, top=10, console=console)
