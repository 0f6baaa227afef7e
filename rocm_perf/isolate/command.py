"""`rocm-perf isolate SOURCE.cu --kernel REGEX [--dispatch N] --out DIR [-- ARGS]` and
`rocm-perf isolate --project DIR --build CMD --run CMD --kernel REGEX --out DIR`: run the program
once, capture one dispatch, write a standalone reproducer of it (rocm_perf/reproducer.py's layout),
check that it replays, and put it in place whole.

Everything is made in a staging folder beside DIR (`.DIR.isolate-<pid>`) and renamed to DIR only
when complete: a kill at any moment leaves no half-written reproducer (a later isolate into the same
DIR removes the staging folders of processes that are gone).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.backends.demangle import demangle_all
from rocm_perf.backends.replay_build import build_replay
from rocm_perf.backends.select import select_backend
from rocm_perf.isolate.capture import capture_environment, check_pattern, checked_capture, run_capture
from rocm_perf.isolate.extract import extract_kernel
from rocm_perf.isolate.folder import Origin, write_folder, write_manifest
from rocm_perf.isolate.snapshots import human_bytes
from rocm_perf.optimize.project import (build_environment, build_tree, copy_files, include_flags, kernel_sources,
                                        project_files, run_argv)
from rocm_perf.process import last_lines, run
from rocm_perf.tolerance import parse_tolerance
from rocm_perf.reproducer import read_manifest, replay_args
from rocm_perf.source import analyze_source, match_kernel
from rocm_perf.source.libclang_check import require_libclang

DEFAULT_MAX_SNAPSHOT = 2 << 30
VERIFY_PASSES = 2  # the check at isolate time: a second pass proves the restore, not only the first run
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'2G', '512MiB', '1e6'-free plain bytes -> bytes (binary units)."""
    if isinstance(text, int):
        return text
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise RocmPerfError(f"--max-snapshot {text!r}: expected bytes or a size like 512M or 2G")
    return int(float(m.group(1)) * 1024 ** "bkmgt".index((m.group(2) or "b").lower()))


@dataclass
class IsolateRequest:
    """What `rocm-perf isolate` was asked (validated by `validate`)."""

    source: Path | None
    kernel: str
    out: Path
    dispatch: int = 1
    program_args: tuple[str, ...] = ()
    cflags: str = ""
    project: Path | None = None
    build: str | None = None
    run: str | None = None
    max_files: int = 5000
    max_snapshot: int = DEFAULT_MAX_SNAPSHOT
    timeout: float = 600.0
    verify: bool = True
    tolerance: str = ""  # the check's: `rtol=R,atol=A` (as try's --tolerance); "": bit-exact
    tolerance_type: str = "float32"


def validate(req: IsolateRequest) -> list[str]:
    """The request checked (one RocmPerfError line for bad input); returns the build flags."""
    if req.tolerance or req.tolerance_type != "float32":
        if not req.tolerance:
            raise RocmPerfError("--tolerance-type goes with --tolerance rtol=R,atol=A")
        parse_tolerance(req.tolerance, req.tolerance_type)
    if req.project is not None:
        if req.source is not None or req.program_args:
            raise RocmPerfError("isolate --project: the project's --run command says what runs; give no source or arguments")
        if not req.build or not req.run:
            raise RocmPerfError("isolate --project needs --build CMD (how the tree builds) and --run CMD (how the built "
                                "program runs, from the top of the tree)")
        if not Path(req.project).is_dir():
            raise RocmPerfError(f"{req.project}: no such project directory")
    else:
        if req.source is None:
            raise RocmPerfError("isolate: name the program's .cu source, or a --project")
        if req.build or req.run:
            raise RocmPerfError("isolate: --build and --run go with --project DIR")
        if not Path(req.source).is_file():
            raise RocmPerfError(f"{req.source}: no such source file")
    check_pattern(req.kernel)
    if req.dispatch < 1:
        raise RocmPerfError(f"--dispatch {req.dispatch}: launches are counted from 1")
    if req.max_snapshot < 1:
        raise RocmPerfError("--max-snapshot must be positive")
    out = Path(req.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RocmPerfError(f"{out}: already exists; isolate writes a new folder (remove it or choose another --out)")
    try:
        return shlex.split(req.cflags)
    except ValueError as e:
        raise RocmPerfError(f"--cflags {req.cflags!r}: {e}") from e


def _stale_staging(out: Path) -> None:
    """Remove the staging folders earlier isolates into `out` left when they were killed."""
    for p in Path(out).resolve().parent.glob(f".{Path(out).name}.isolate-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _say(text: str) -> None:
    print(f"isolate: {text}", file=sys.stderr, flush=True)


def _kernel_candidates(files: list[Path], flags_of, kernel: str) -> list[tuple[Path, str]]:
    """(file, kernel name) of every source kernel whose name the pattern matches."""
    found = []
    for f in files:
        kernels = analyze_source(f, flags_of(f)).kernels
        # A template's instances by the names the runtime gives them (`softmax_rows<64>(float const*, ...)`),
        # which is what the capture's pattern is searched in.
        shown = demangle_all([m for k in kernels for m in k.instantiations])
        for k in kernels:
            names = (k.name, k.qualified_name, k.mangled, *k.instantiations, *(shown[m] for m in k.instantiations))
            if any(n and re.search(kernel, n) for n in names):
                found.append((f, k.mangled or k.qualified_name))
    return found


def _program_files(req: IsolateRequest) -> tuple[Path, list[str], list[Path]]:
    """(root, the files of the program's tree, its kernel sources)."""
    if req.project is None:
        source = Path(req.source).resolve()
        return source.parent, [source.name], [source]
    root = Path(req.project).resolve()
    files = project_files(root, req.max_files)
    return root, files, [root / rel for rel in kernel_sources(root, files)]


def run_isolate(req: IsolateRequest, *, backend: str = "host", warp_size: int | None = None,
                command: list[str] | None = None) -> int:
    """Capture one dispatch of the program into the reproducer `req.out`; 0 when it replays."""
    flags = validate(req)
    require_libclang()  # the kernel is found and cut out with libclang: a missing piece is one line, before the build
    chosen = select_backend(backend, warp_size=warp_size)
    out = Path(req.out)
    what = str(req.project or req.source)
    root, files, kernel_files = _program_files(req)
    if req.project is not None:
        flags = flags + include_flags(root, files)
    parse_flags = lambda f: flags  # noqa: E731 - the same for every file of the program
    candidates = _kernel_candidates(kernel_files, parse_flags, req.kernel)
    if not candidates:
        names = sorted({k.qualified_name for f in kernel_files for k in analyze_source(f, flags).kernels})
        raise RocmPerfError(f"{what}: no kernel matches --kernel {req.kernel!r} (its kernels: {', '.join(names) or 'none'})")
    seen = [extract_kernel(f, flags, name, root) for f, name in candidates]
    # The device variables every candidate kernel uses, so the capture records them whichever it is.
    symbols = sorted({v.symbol for e in seen for v in e.variables if not v.internal})
    layouts = {tuple(e.layout) for e in seen}
    if chosen.name != "host" and len(layouts) > 1:
        raise RocmPerfError(f"{what}: --kernel {req.kernel!r} matches kernels with different parameters "
                            f"({', '.join(e.kernel.qualified_name for e in seen)}): the rocm capture needs one kernel's "
                            "sizes; make --kernel narrower")
    _stale_staging(out)
    staging = out.resolve().parent / f".{out.name}.isolate-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        return _isolate(req, chosen, flags, root, files, kernel_files, symbols, list(next(iter(layouts))), staging, out,
                        what, command or sys.argv)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _isolate(req: IsolateRequest, chosen, flags: list[str], root: Path, files: list[str], kernel_files: list[Path],
             symbols: list[str], layout: list[tuple[int, int]], staging: Path, out: Path, what: str, command: list[str]) -> int:
    """The work of run_isolate inside `staging`."""
    capture_dir = staging / "capture"
    if req.project is None:
        _say(f"building {req.source} ({chosen.name} backend)")
        program = chosen.build(Path(req.source), staging / "build", flags, timeout=req.timeout)
        argv, cwd, env = [str(program.executable), *req.program_args], Path.cwd(), {}
    else:
        _say(f"copying and building the project {req.project}")
        tree = staging / "tree"
        copy_files(root, files, tree)
        env = build_environment(chosen, staging / "bin")
        build_tree(tree, req.build, env, req.timeout, staging / "build.log", str(req.project))
        argv, cwd = run_argv(req.run), tree
    env = {**env, **capture_environment(req.kernel, req.dispatch, capture_dir, req.max_snapshot, symbols)}
    if chosen.name == "host":
        env["ROCM_PERF_HOST_THREADS"] = str(getattr(chosen, "threads", 1))
    else:  # the rocm backend: the interposer (it has never run on a GPU: backends/rocm_capture.py)
        from rocm_perf.backends.rocm_capture import build_interposer, interposer_environment

        _say("building the capture interposer with hipcc")
        env.update(interposer_environment(build_interposer(staging / "interposer", timeout=req.timeout), layout))
    _say(f"running the program; capturing dispatch {req.dispatch} of the kernel matching {req.kernel!r}")
    ran = run_capture(argv, cwd=cwd, env=env, directory=capture_dir, timeout=req.timeout)
    cap = checked_capture(ran, kernel=req.kernel, dispatch=req.dispatch, what=what, timeout=req.timeout)
    mangled = cap["kernel"]["mangled"]
    source = _defining_file(kernel_files, flags, cap["kernel"]["demangled"] if cap["kernel"]["naming"] == "source" else mangled)
    if source is None:
        raise RocmPerfError(f"{what}: the captured kernel {cap['kernel']['demangled']} is defined in no source of the "
                            "program rocm-perf can read")
    extracted = extract_kernel(source, flags, mangled if cap["kernel"]["naming"] != "source" else cap["kernel"]["demangled"], root)
    rel = source.relative_to(root).as_posix()
    if req.project is None:
        origin = Origin("source", root, rel, Path(req.source).name,
                        {"args": list(req.program_args), "cflags": flags, "cwd": str(Path.cwd())})
    else:
        origin = Origin("project", root, rel, f"{root.name}: {req.run}",
                        {"build": req.build, "run": req.run, "max_files": req.max_files})
    program = {"exit_status": ran.returncode, "seconds": round(ran.seconds, 3),
               "stdout_tail": last_lines(ran.stdout, 3), "stderr_tail": last_lines(ran.stderr, 3)}
    include_dirs = _include_dirs(flags, root, rel)
    cflags = [f for f in flags if not f.startswith("-I")]
    _say(f"writing the reproducer ({human_bytes(sum(a['size'] for a in cap['allocations']))} in "
         f"{len(cap['allocations'])} allocations)")
    folder = staging / "reproducer"
    doc = write_folder(folder, cap=cap, capture_dir=capture_dir, extracted=extracted, origin=origin, backend=chosen.name,
                       flags=cflags, include_dirs=include_dirs, command=command, program=program)
    verified = (_verify(chosen, folder, staging / "verify", req.timeout, req.tolerance, req.tolerance_type) if req.verify
                else {"ok": None, "detail": "not checked (--no-verify)"})
    doc["verified"] = verified
    write_manifest(folder, doc)
    os.rename(folder, out)  # whole, or not at all
    _report(doc, out, ran.returncode)
    if verified["ok"] is False:
        raise RocmPerfError(f"{out}: the reproducer does not replay the capture: {verified['detail']}", exit_code=1)
    return 0


def _defining_file(kernel_files: list[Path], flags: list[str], name: str) -> Path | None:
    for f in kernel_files:
        if match_kernel(name, analyze_source(f, flags)) is not None:
            return f
    return None


def _include_dirs(flags: list[str], root: Path, rel: str) -> list[str]:
    """The kernel's header directories as folders of the reproducer's kernel/ (the -I flags under
    the program's root, and the kernel file's own folder)."""
    dirs = [Path(rel).parent.as_posix()]
    for i, f in enumerate(flags):
        path = f[2:] if f.startswith("-I") and len(f) > 2 else (flags[i + 1] if f == "-I" and i + 1 < len(flags) else None)
        if path is None:
            continue
        full = Path(path).resolve()
        if full.is_relative_to(root):
            dirs.append(full.relative_to(root).as_posix())
    return list(dict.fromkeys(d or "." for d in dirs))


def _verify(backend, folder: Path, build_dir: Path, timeout: float, tolerance: str = "",
            element: str = "float32") -> dict:
    """Build the harness and replay VERIFY_PASSES passes, bit-exact or within `tolerance`:
    {"ok", "passes", "detail", "tolerance"}."""
    _say("building the harness and checking that it replays the capture")
    reproducer = read_manifest(folder)
    criterion = {"tolerance": f"{parse_tolerance(tolerance, element).spec} as {element}"} if tolerance else {}
    try:
        program = build_replay(backend, reproducer, build_dir, timeout=timeout)
    except RocmPerfError as e:
        return {"ok": False, "passes": 0, "detail": f"the harness does not build: {e}", **criterion}
    done = run([program.executable, *replay_args(folder, VERIFY_PASSES, tolerance, element)], timeout=timeout,
               env={"ROCM_PERF_HOST_THREADS": str(getattr(backend, "threads", 1))})
    if done.returncode != 0:
        why = last_lines(done.stderr or done.stdout, 1) or f"exit status {done.returncode}"
        return {"ok": False, "passes": VERIFY_PASSES, "detail": why.removeprefix("replay: "), **criterion}
    return {"ok": True, "passes": VERIFY_PASSES, "detail": last_lines(done.stdout, 1), **criterion}


def _report(doc: dict, out: Path, returncode: int) -> None:
    launch = doc["launch"]
    print(f"{out}: {doc['kernel']['demangled']}, dispatch {doc['dispatch']} "
          f"(grid {tuple(launch['grid'])}, block {tuple(launch['block'])}, {launch['shmem']} bytes of dynamic LDS)")
    print(f"  memory: {len(doc['allocations'])} allocations, {human_bytes(doc['snapshot_bytes'])} captured "
          f"({human_bytes(doc['compressed_bytes'])} compressed), {sum(1 for a in doc['allocations'] if a['changed'])} "
          f"changed by the dispatch")
    for note in doc["not_captured"]:
        print(f"  not captured: {note}")
    for note in doc["warnings"]:
        print(f"  warning: {note}")
    v = doc.get("verified") or {}
    if v.get("ok"):
        print(f"  replay: {v['passes']} passes " + (f"within {v['tolerance']}" if v.get("tolerance") else "bit-exact"))
    if returncode != 0:
        print(f"  note: the program exited with status {returncode} after the capture")
    print(f"  next: rocm-perf profile {out}   |   rocm-perf optimize {out}")
