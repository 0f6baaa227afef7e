"""`rocm-perf optimize`: create or resume a run directory, wire the loop to the real world, print."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rocm_perf import __version__
from rocm_perf.errors import RocmPerfError
from rocm_perf.atomic_file import write_atomic
from rocm_perf.optimize.artifacts import build_summary, terminal_summary
from rocm_perf.optimize.ledger import LEDGER_NAME, Ledger, open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop, Stopped
from rocm_perf.optimize.run_context import sha256_bytes
from rocm_perf.optimize.services import Services, SourceTools
from rocm_perf.optimize.measure import ProfiledRounds
from rocm_perf.optimize.options import OptimizeOptions, options_from_args, resolve_metric, resolve_pairing
from rocm_perf.optimize.output_tolerance import KeptOutputs
from rocm_perf.tolerance import parse_tolerance
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


def project_plan(opt: OptimizeOptions) -> tuple[list[str], list[str], dict[str, str]]:
    """A project's files to copy, its sources to rewrite and their sha256s (RocmPerfError on bad input)."""
    from rocm_perf.optimize.outside import expand
    from rocm_perf.optimize.project import file_digests, kernel_sources, project_files, resolve_sources

    root = Path(opt.source)
    files = project_files(root, opt.max_files)
    for rel in opt.with_paths:  # bad --with input stops here, before a run directory exists
        expand(root.absolute(), rel, opt.max_files, shown=f"--with {rel}")
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
        from rocm_perf.optimize.outside import run_command_paths, run_store
        from rocm_perf.optimize.project import copy_files, tree_digest

        files, sources, digests = project_plan(opt)
        run_dir = _new_run_dir(opt.out, source.resolve())
        ledger = open_ledger(run_dir, create=True)
        try:
            copy_files(source, files, run_dir / "baseline" / "tree")
            # --with, and the files the run command names outside the project: copied read-only, hashed
            run_store(run_dir, source).add(list(dict.fromkeys(opt.with_paths + run_command_paths(source, opt.run))),
                                           opt.max_files)
        except OSError as e:
            raise RocmPerfError(f"{run_dir}: cannot copy the project into the run ({e.strerror or e})") from e
        _copy_style(source / "any.cu", run_dir)
        with ledger.transaction():
            ledger.set("project", {"root": str(source.resolve()), "build": opt.build, "run": opt.run,
                                   "sources": sources, "files": len(files)})
            ledger.set("source_files", digests)
            ledger.set("source_path", str(source.resolve()))
            ledger.set("source_sha256", tree_digest(digests))
            _record_run(ledger, opt, backend_name, device, command_line)
        return run_dir, ledger
    replay = None
    if opt.replay:  # a reproducer: its kernel file is the source; its harness, the program
        from rocm_perf.reproducer import read_manifest

        reproducer = read_manifest(source)
        replay = {"reproducer": str(reproducer.root), "kernel": reproducer.kernel_name, "passes": opt.replay_passes,
                  "origin": reproducer.origin, "dispatch": reproducer.doc["dispatch"]}
        source = reproducer.kernel_file
    try:
        data = source.read_bytes()
    except OSError as e:
        raise RocmPerfError(f"{source}: cannot read the source ({e.strerror or e})") from e
    run_dir = _new_run_dir(opt.out, Path(replay["reproducer"]) if replay else source)
    ledger = open_ledger(run_dir, create=True)
    try:
        (run_dir / "baseline").mkdir(exist_ok=True)
        write_atomic(run_dir / "baseline" / "source.cu", data)
    except OSError as e:
        raise RocmPerfError(f"{run_dir}: cannot write the run directory ({e.strerror or e})") from e
    _copy_style(source, run_dir)
    with ledger.transaction():
        ledger.set("source_path", str(source.resolve()))
        ledger.set("source_sha256", sha256_bytes(data))
        if replay:
            ledger.set("replay", replay)
        _record_run(ledger, opt, backend_name, device, command_line)
    return run_dir, ledger


def _copy_style(source: Path, run_dir: Path) -> None:
    """The clang-format style that governs the user's source, copied to the run's root, where the
    rewrites of the run's copies find it (source/formatting.py); none copied when none governs it."""
    from rocm_perf.source.formatting import style_file_for

    style = style_file_for(source)
    if style is not None:
        try:
            write_atomic(run_dir / ".clang-format", style.read_bytes())
        except OSError as e:
            raise RocmPerfError(f"{style}: cannot copy the clang-format style into the run ({e.strerror or e})") from e


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
    command in the built tree, with the environment its build had (host backend: the wrapper).
    Under --tolerance each round's outputs are compared with the reference round's, kept in the run.
    For a reproducer: its harness, replaying the dispatch `passes` times a round (its own check is
    of the memory the kernel wrote, bit for bit or within the run's tolerance)."""
    replay = ledger.get("replay")
    if replay:
        from rocm_perf.reproducer import replay_args

        args = replay_args(Path(replay["reproducer"]), replay["passes"], opt.tolerance, opt.tolerance_type)
        return ProfiledRounds(backend, program_args=args,
                              run_template=None, timeout_s=opt.timeout_s, cwd=Path(ledger.get("cwd") or "."),
                              timing_lines=opt.timing_lines, warmup=opt.warmup, stderr_tail=bool(opt.tolerance))
    outputs = KeptOutputs(run_dir, parse_tolerance(opt.tolerance, opt.tolerance_type)) if opt.tolerance else None
    if not opt.project:
        return ProfiledRounds(backend, program_args=opt.program_args, run_template=opt.run, timeout_s=opt.timeout_s,
                              cwd=Path(ledger.get("cwd") or "."), timing_lines=opt.timing_lines, warmup=opt.warmup,
                              outputs=outputs)
    from rocm_perf.optimize.project import build_environment

    return ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s,
                          cwd=Path(ledger.get("cwd") or "."), timing_lines=opt.timing_lines, project_run=opt.run,
                          env=build_environment(backend, run_dir / "bin"), warmup=opt.warmup, outputs=outputs)


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
    """One process per run: a second `--resume` of a running run is refused (exit 3), before it
    reads or writes anything else of the run. The kernel drops the lock when its holder dies, kill -9
    included, so a killed run is never locked out."""

    def __init__(self, run_dir: Path):
        self.file = open(run_dir / ".lock", "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            self.file.seek(0)
            holder = self.file.read(32).strip() or "?"
            self.file.close()
            raise RocmPerfError(f"{run_dir}: another rocm-perf process (pid {holder}) is running this run; wait for it, "
                                "or stop it (Ctrl-C or SIGTERM: it records where it stopped)", exit_code=3) from e
        self.file.truncate(0)
        self.file.write(f"{os.getpid()}\n")
        self.file.flush()

    def release(self) -> None:
        self.file.close()


def start_or_resume(display: OptimizeOptions, *, record: Callable[[Path, Ledger], None] | None = None,
                    command_line: list[str] | None = None) -> tuple[Path, Ledger, OptimizeOptions, object, RunLock]:
    """The run `display` asks for: resumed (--resume, or an unfinished run of the same source and
    options), else created, with `record(run_dir, ledger)` writing what the new run must keep
    beyond its options (a try's patches); the backend it runs on; and the run's lock, held by this
    process from before anything of a resumed run is read (a run another process drives is refused
    with one line, before any question is asked). Pass the lock on to `drive_run`."""
    from rocm_perf.backends.select import select_backend
    from rocm_perf.source.libclang_check import require_libclang

    require_libclang()  # before any build or measurement: a missing piece is one line, at once

    lock = None
    try:
        if display.resume:
            run_dir = find_run(display.out, display.resume)
            lock = RunLock(run_dir)
            ledger = open_ledger(run_dir)
            opt = recorded_options(ledger, display)
        else:
            source = Path(display.source)
            if display.project:
                if not source.is_dir():
                    raise RocmPerfError(f"{source}: no such project directory")
            elif not (source.is_file() or display.replay):
                raise RocmPerfError(f"{source}: no such source file")
            existing = None if display.new else unfinished_run_for(display.out, display.fingerprint())
            if existing is not None:
                lock = RunLock(existing)
                if not _ask_resume(existing):
                    lock.release()
                    lock, existing = None, None
            if existing is not None:
                run_dir = existing
                ledger = open_ledger(run_dir)
                opt = recorded_options(ledger, replace(display, resume=str(existing)))
            else:
                run_dir = None
                opt = display
        backend = select_backend(opt.backend if run_dir is None else ledger.get("backend"), warp_size=opt.warp_size)
        if opt.replay and run_dir is None:
            from rocm_perf.reproducer import read_manifest

            captured_on = read_manifest(Path(opt.source)).backend
            if captured_on != backend.name:
                raise RocmPerfError(f"{opt.source}: captured on the {captured_on} backend; replay it there "
                                    f"(--backend {captured_on}): its memory and addresses are that backend's")
        if run_dir is None:
            resolve_metric(opt.metric, backend)  # a metric this backend cannot give: say so before making a run
            resolve_pairing(opt.pairing, backend)  # and a pairing it cannot run
            run_dir, ledger = create_run(opt, backend.name, backend.describe(), command_line or sys.argv)
            lock = RunLock(run_dir)
            if record is not None:
                record(run_dir, ledger)
            write_run_metadata(run_dir, opt, backend)
        else:
            _warn_if_environment_changed(run_dir, opt, backend)
    except BaseException:
        if lock is not None:  # a caller in this process (a test, a sweep's thread) may take it again
            lock.release()
        raise
    if opt.tolerance:  # the outputs are compared within it: the runs keep their copies' bytes
        from rocm_perf.backends.host_copies import DEFAULT_COPIES_LIMIT

        backend = backend.keeping_copies(DEFAULT_COPIES_LIMIT)
    return run_dir, ledger, opt, backend, lock


def drive_run(run_dir: Path, ledger: Ledger, opt: OptimizeOptions, backend, *, lock: RunLock | None = None,
              write_report: Callable[[Path], None] | None = None, signals: bool = True) -> dict | None:
    """Drive the run to its end and return its summary (None when it was stopped: everything so far
    is recorded). `lock`: the run's lock from `start_or_resume` (taken here when None), released at
    the end. `signals`: SIGINT and SIGTERM stop it after the step in flight (only the main thread
    may install handlers: a caller on another thread passes False)."""
    lock = lock or RunLock(run_dir)
    if not opt.quiet:  # on stderr: --json keeps stdout for the summary
        print(f"backend: {backend.name} ({backend.describe()})", file=sys.stderr)
    reporter = make_reporter(quiet=opt.quiet, as_json=opt.as_json)
    runner = make_runner(run_dir, ledger, opt, backend)
    services = Services(backend=backend, runner=runner, tools=SourceTools.default(),
                        compile_check=compile_checker(opt.compile_check), reporter=reporter, write_report=write_report)
    loop = OptimizeLoop(run_dir, ledger, opt, services)
    if not opt.quiet:
        print(f"decision metric: {loop.opt.metric} ({(ledger.get('metric') or {}).get('how', '')})", file=sys.stderr)
    previous = ({sig: signal.signal(sig, lambda *_: loop.request_stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
                if signals else {})
    try:
        reporter.stage("run", str(run_dir))
        loop.run()
    except Stopped:
        reporter.close()
        reporter = make_reporter(quiet=True, as_json=False)  # closed already
        print(f"rocm-perf: stopped; everything so far is in {run_dir / LEDGER_NAME}. "
              f"Continue with: rocm-perf {'try' if ledger.get('command') == 'try' else 'optimize'} --resume {run_dir}",
              file=sys.stderr)
        return None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        reporter.close()
        lock.release()
    return build_summary(run_dir, ledger)


def rewritten_file(opt: OptimizeOptions) -> Path:
    """The one file a single-source run's candidates change: the source, or a reproducer's kernel file."""
    if opt.replay:
        from rocm_perf.reproducer import read_manifest

        return read_manifest(Path(opt.source)).kernel_file
    return Path(opt.source)


def check_tunables(opt: OptimizeOptions) -> None:
    """The tunables named by --tune (and declared in the source) exist and parse, before any run
    directory is made (RocmPerfError naming the file and the name)."""
    if opt.proposers and "tunables" not in opt.proposers:
        if opt.tune:
            raise RocmPerfError("--tune needs the tunables proposer: add it to --proposers")
        return
    from rocm_perf.optimize.proposers.tunables import tunables_of

    flags = list(opt.cflags)
    if not opt.project:
        source = rewritten_file(opt)
        if source.is_file():
            tunables_of(source, source.read_bytes(), opt.tune, flags)
        return
    _files, sources, _digests = project_plan(opt)
    missing = dict(opt.tune)
    for rel in sources:
        path = Path(opt.source) / rel
        for t in tunables_of(path, path.read_bytes(), opt.tune, flags, strict=False):
            missing.pop(t.name, None)
    if missing:
        raise RocmPerfError(f"{opt.source}: no tunable {', '.join(missing)} in the project's sources ({', '.join(sources)})")


def optimize_run(args: argparse.Namespace, *, write_report: Callable[[Path], None] | None = None
                 ) -> tuple[Path, OptimizeOptions, dict | None]:
    """Create or resume the run `args` asks for and drive it to its end: the run directory, its
    options and its summary (None when it was stopped; it resumes). The MCP server's `optimize`
    job calls this as the CLI does."""
    display = options_from_args(args)
    if not display.resume:
        check_tunables(display)
    run_dir, ledger, opt, backend, lock = start_or_resume(display)
    summary = drive_run(run_dir, ledger, opt, backend, lock=lock, write_report=write_report,
                        signals=threading.current_thread() is threading.main_thread())
    return run_dir, opt, summary


def run_optimize(args: argparse.Namespace, *, write_report: Callable[[Path], None] | None = None) -> int:
    """`rocm-perf optimize`: create or resume the run, drive the loop, print its summary.

    `write_report(run_dir)` writes the finished run's report.html (the CLI passes the report
    layer's writer; the loop never imports the report)."""
    run_dir, opt, summary = optimize_run(args, write_report=write_report)
    if summary is None:
        return EXIT_STOPPED
    if opt.as_json:
        print(json.dumps(summary, indent=2, default=str))
    elif opt.quiet:
        print(f"{run_dir}: {len(summary['accepted'])} accepted of {summary['trials']} trials")
    else:
        print(terminal_summary(summary))
        print(f"\nevidence: {run_dir / 'report.md'}\nreview:   rocm-perf review {run_dir}\napply:    rocm-perf apply {run_dir}")
    return 0
