"""`rocm-perf optimize`: create or resume a run directory, wire the loop to the real world, print."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rocm_perf import __version__
from rocm_perf.errors import RocmPerfError
from rocm_perf.atomic_file import write_atomic
from rocm_perf.optimize.artifacts import build_summary, terminal_summary
from rocm_perf.optimize.ledger import LEDGER_NAME, Ledger, open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop, Services, SourceTools, Stopped, sha256_bytes
from rocm_perf.optimize.measure import ProfiledRounds
from rocm_perf.optimize.options import OptimizeOptions, options_from_args, resolve_metric, resolve_pairing
from rocm_perf.optimize.progress import make_reporter

EXIT_STOPPED = 130


def find_run(out_root: Path, run: str) -> Path:
    """A run directory given as a path, as a name under the runs root, or as `latest`."""
    if run == "latest":
        runs = list_runs(out_root)
        if not runs:
            raise RocmPerfError(f"{out_root}: no runs yet")
        return runs[0]
    candidates = list(dict.fromkeys((Path(run), Path(out_root) / run)))  # one entry for an absolute path
    for candidate in candidates:
        if (candidate / LEDGER_NAME).exists():
            return candidate
    looked = " and ".join(str(c / LEDGER_NAME) for c in candidates)
    raise RocmPerfError(f"{run}: no such run (looked for {looked}; `rocm-perf review` lists runs)")


def list_runs(out_root: Path) -> list[Path]:
    """Run directories under out_root, latest first."""
    if not Path(out_root).is_dir():
        return []
    runs = [p for p in Path(out_root).iterdir() if (p / LEDGER_NAME).exists()]
    return sorted(runs, key=lambda p: p.name, reverse=True)


def unfinished_run_for(out_root: Path, fingerprint: str) -> Path | None:
    for run in list_runs(out_root):
        try:
            ledger = open_ledger(run)
        except RocmPerfError as e:  # a damaged old run must not block new ones
            print(f"rocm-perf: note: skipping {run}: {e}", file=sys.stderr)
            continue
        try:
            if ledger.get("fingerprint") == fingerprint and ledger.state != DONE:
                return run
        finally:
            ledger.close()
    return None


def _new_run_dir(out_root: Path, source: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run = Path(out_root) / f"{stamp}-{source.stem}"
    n = 1
    while run.exists():
        n += 1
        run = Path(out_root) / f"{stamp}-{source.stem}-{n}"
    return run


def _project_plan(opt: OptimizeOptions) -> tuple[list[str], list[str], dict[str, str]]:
    """A project's files to copy, its sources to rewrite and their sha256s (RocmPerfError on bad input)."""
    from rocm_perf.optimize.project import file_digests, kernel_sources, project_files, resolve_sources

    root = Path(opt.source)
    files = project_files(root, opt.max_files)
    sources = resolve_sources(root, opt.sources, files) if opt.sources else kernel_sources(root, files)
    if not sources:
        raise RocmPerfError(f"{root}: no .cu/.hip file of the project defines a kernel; name the sources to rewrite "
                            "with --source")
    return files, sources, file_digests(root, sources)


def create_run(opt: OptimizeOptions, backend_name: str, device: str, command_line: list[str]) -> tuple[Path, Ledger]:
    """A new run directory with its ledger, the source copy (a project: the tree's copy) and the
    recorded options."""
    source = Path(opt.source)
    if opt.project:
        from rocm_perf.optimize.project import copy_files, tree_digest

        files, sources, digests = _project_plan(opt)
        run_dir = _new_run_dir(opt.out, source.resolve())
        ledger = open_ledger(run_dir, create=True)
        try:
            copy_files(source, files, run_dir / "baseline" / "tree")
        except OSError as e:
            raise RocmPerfError(f"{run_dir}: cannot copy the project into the run ({e.strerror or e})") from e
        with ledger.transaction():
            ledger.set("project", {"root": str(source.resolve()), "build": opt.build, "run": opt.run,
                                   "sources": sources, "files": len(files)})
            ledger.set("source_files", digests)
            ledger.set("source_path", str(source.resolve()))
            ledger.set("source_sha256", tree_digest(digests))
            _record_run(ledger, opt, backend_name, device, command_line)
        return run_dir, ledger
    try:
        data = source.read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{source}: cannot read the source ({e.strerror or e})") from e
    run_dir = _new_run_dir(opt.out, source)
    ledger = open_ledger(run_dir, create=True)
    try:
        (run_dir / "baseline").mkdir(exist_ok=True)
        write_atomic(run_dir / "baseline" / "source.cu", data)
    except OSError as e:
        raise RocmPerfError(f"{run_dir}: cannot write the run directory ({e.strerror or e})") from e
    with ledger.transaction():
        ledger.set("source_path", str(source.resolve()))
        ledger.set("source_sha256", sha256_bytes(data))
        _record_run(ledger, opt, backend_name, device, command_line)
    return run_dir, ledger


def _record_run(ledger: Ledger, opt: OptimizeOptions, backend_name: str, device: str, command_line: list[str]) -> None:
    """The options and circumstances of a new run (inside the caller's transaction)."""
    ledger.set("options", opt.recorded())
    ledger.set("fingerprint", opt.fingerprint())
    ledger.set("backend", backend_name)
    ledger.set("device", device)
    ledger.set("cwd", os.getcwd())
    ledger.set("command_line", command_line)
    ledger.set("tool_version", __version__)
    ledger.set("created", time.time())


def recorded_options(ledger: Ledger, display: OptimizeOptions) -> OptimizeOptions:
    """The options a run was started with, plus this invocation's display-only choices."""
    rec = dict(ledger.get("options"))
    rec["source"] = Path(rec["source"])
    rec["rules_dir"] = Path(rec["rules_dir"]) if rec.get("rules_dir") else None
    return OptimizeOptions(**rec, out=display.out, resume=display.resume, new=False, quiet=display.quiet,
                           as_json=display.as_json, jobs=display.jobs)


def make_runner(run_dir: Path, ledger: Ledger, opt: OptimizeOptions, backend) -> ProfiledRounds:
    """The rounds of a run: the built program (or harness) for a source; for a project, its run
    command in the built tree, with the environment its build had (host backend: the wrapper)."""
    if not opt.project:
        return ProfiledRounds(backend, program_args=opt.program_args, run_template=opt.run, timeout_s=opt.timeout_s,
                              cwd=Path(ledger.get("cwd") or "."), timing_lines=opt.timing_lines, warmup=opt.warmup)
    from rocm_perf.optimize.project import build_environment

    return ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s,
                          cwd=Path(ledger.get("cwd") or "."), timing_lines=opt.timing_lines, project_run=opt.run,
                          env=build_environment(backend, run_dir / "bin"), warmup=opt.warmup)


def _ask_resume(run: Path) -> bool:
    if not sys.stdin.isatty():
        print(f"rocm-perf: resuming the unfinished run {run} for this source and options (--new starts afresh)", file=sys.stderr)
        return True
    answer = input(f"An unfinished run {run} exists for this source and options. Resume it? [Y/n] ").strip().lower()
    return answer in ("", "y", "yes")


def compile_checker(mode: str):
    """The AMD compile check for --compile-check MODE: None for off (or auto without hipcc)."""
    if mode == "off":
        return None
    from rocm_perf.backends.compile_check import compile_check, hipcc_available

    ok, why = hipcc_available()
    if not ok:
        if mode == "on":
            raise RocmPerfError(f"--compile-check on: {why}")
        return None
    return compile_check


def write_run_metadata(run_dir: Path, opt: OptimizeOptions, backend) -> None:
    """metadata.json of a new run: the machine, tools, command line and source it started with."""
    from rocm_perf.backends.environment import capture_environment

    env = capture_environment(source=Path(opt.source), backend=backend, command=sys.argv)
    write_atomic(run_dir / "metadata.json", json.dumps(env, indent=2, default=str).encode())


def environment_changes(run_dir: Path, current: dict) -> list[str]:
    """What differs between the environment a run started in (its metadata.json) and `current`."""
    from rocm_perf.backends.environment import compare_environments

    try:
        recorded = json.loads((run_dir / "metadata.json").read_text())
    except (OSError, ValueError):
        return []  # killed before the metadata was written: nothing to compare against
    return compare_environments(recorded, current)


def _warn_if_environment_changed(run_dir: Path, opt: OptimizeOptions, backend) -> None:
    """A resumed run's later rounds are compared with its earlier ones: say if the machine changed."""
    from rocm_perf.backends.environment import capture_environment

    current = capture_environment(source=Path(opt.source), backend=backend, command=sys.argv)
    for line in environment_changes(run_dir, current):
        print(f"rocm-perf: warning: resuming {run_dir.name} in another environment: {line}", file=sys.stderr)


class RunLock:
    """One process per run: a second `--resume` of a running run is refused."""

    def __init__(self, run_dir: Path):
        self.file = open(run_dir / ".lock", "w")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            self.file.close()
            raise RocmPerfError(f"{run_dir}: another rocm-perf process is running this run") from e

    def release(self) -> None:
        self.file.close()


def run_optimize(args: argparse.Namespace, *, write_report: Callable[[Path], None] | None = None) -> int:
    """`rocm-perf optimize`: create or resume the run, drive the loop, print its summary.

    `write_report(run_dir)` writes the finished run's report.html (the CLI passes the report
    layer's writer; the loop never imports the report)."""
    display = options_from_args(args)
    from rocm_perf.backends.select import select_backend

    if display.resume:
        run_dir = find_run(display.out, display.resume)
        ledger = open_ledger(run_dir)
        opt = recorded_options(ledger, display)
    else:
        source = Path(display.source)
        if display.project:
            if not source.is_dir():
                raise RocmPerfError(f"{source}: no such project directory")
        elif not source.is_file():
            raise RocmPerfError(f"{source}: no such source file")
        existing = None if display.new else unfinished_run_for(display.out, display.fingerprint())
        if existing is not None and _ask_resume(existing):
            run_dir = existing
            ledger = open_ledger(run_dir)
            opt = recorded_options(ledger, replace(display, resume=str(existing)))
        else:
            run_dir = None
            opt = display
    backend = select_backend(opt.backend if run_dir is None else ledger.get("backend"), warp_size=opt.warp_size)
    if run_dir is None:
        resolve_metric(opt.metric, backend)  # a metric this backend cannot give: say so before making a run
        resolve_pairing(opt.pairing, backend)  # and a pairing it cannot run
        run_dir, ledger = create_run(opt, backend.name, backend.describe(), sys.argv)
        write_run_metadata(run_dir, opt, backend)
    else:
        _warn_if_environment_changed(run_dir, opt, backend)
    lock = RunLock(run_dir)
    if not opt.quiet:  # on stderr: --json keeps stdout for the summary
        print(f"backend: {backend.name} ({backend.describe()})", file=sys.stderr)
    reporter = make_reporter(quiet=opt.quiet, as_json=opt.as_json)
    runner = make_runner(run_dir, ledger, opt, backend)
    services = Services(backend=backend, runner=runner, tools=SourceTools.default(),
                        compile_check=compile_checker(opt.compile_check), reporter=reporter, write_report=write_report)
    loop = OptimizeLoop(run_dir, ledger, opt, services)
    if not opt.quiet:
        print(f"decision metric: {loop.opt.metric} ({(ledger.get('metric') or {}).get('how', '')})", file=sys.stderr)
    previous = {sig: signal.signal(sig, lambda *_: loop.request_stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        reporter.stage("run", str(run_dir))
        loop.run()
    except Stopped:
        reporter.close()
        reporter = make_reporter(quiet=True, as_json=False)  # closed already
        print(f"rocm-perf: stopped; everything so far is in {run_dir / LEDGER_NAME}. "
              f"Continue with: rocm-perf optimize --resume {run_dir}", file=sys.stderr)
        return EXIT_STOPPED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        reporter.close()
        lock.release()
    summary = build_summary(run_dir, ledger)
    if opt.as_json:
        print(json.dumps(summary, indent=2, default=str))
    elif opt.quiet:
        print(f"{run_dir}: {len(summary['accepted'])} accepted of {summary['trials']} trials")
    else:
        print(terminal_summary(summary))
        print(f"\nevidence: {run_dir / 'report.md'}\nreview:   rocm-perf review {run_dir}\napply:    rocm-perf apply {run_dir}")
    return 0

