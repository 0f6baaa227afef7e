"""The fuzz campaign over every reader: each real fixture format, how a mutant of it is made, the
commands that read it, and how one case is run and judged.

A case: hypothesis draws a fixture of the format, damages a copy of it (tests/fuzz_mutations.py)
and a command that reads it; the command runs in a forked copy of this process (`rocm_perf.cli.main`
in-process: a few milliseconds a case instead of a second for a fresh interpreter), with its own
process group, a memory limit and a time bound. The verdict:

- normal answer: exit 0, nothing but rocm-perf's own lines on stderr, and a sane answer (valid JSON
  without NaN where JSON was asked for, a Perfetto file that parses, some output);
- clean error: non-zero exit with exactly one `rocm-perf: error: ...` line naming a file of the
  case (the mutant, or the other profile of a `compare`);
- failure: anything else: an exception other than RocmPerfError (a traceback), a Python warning,
  a crash, a run past the bound (a hang), an error that names no file, an insane answer.
"""

from __future__ import annotations

import json
import os
import re
import resource
import select
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

from fuzz_mutations import (
    Draw,
    damage_file,
    gzip_bytes,
    mutate_bytes,
    mutate_csv,
    mutate_json_file,
    mutate_sqlite,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SQLITE_PAGE = 4096
CASE_BOUND_S = 20.0  # a case past this is a hang (a normal one takes 0.01-0.3 s; 1.5 s with libclang)
MEMORY_HEADROOM = 3 << 30  # bytes a case may allocate beyond what the process holds when it forks

NORMAL, CLEAN, FAILURE = "normal answer", "clean error", "failure"


# ---- the formats ---------------------------------------------------------------------------------

@dataclass
class Format:
    """A fixture format: its real files, how one mutant is made in a case folder, and the commands
    (argv templates: {p} the mutant, {orig} the fixture it came from, {out} a fresh folder)."""

    name: str
    fixtures: tuple[Path, ...]
    make: Callable[[Draw, Path, Path], Path]  # (draw, fixture, case folder) -> the path to read
    commands: tuple[tuple[str, ...], ...]


def _copy(fixture: Path, case: Path, name: str | None = None) -> Path:
    target = case / (name or fixture.name)
    if fixture.is_dir():
        shutil.copytree(fixture, target)
    else:
        shutil.copyfile(fixture, target)
    return target


def _make_sqlite(prefer: tuple[str, ...]) -> Callable[[Draw, Path, Path], Path]:
    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        p = _copy(fixture, case)
        how = draw(st.sampled_from(["rows", "rows", "bytes", "both"]))
        if how in ("rows", "both"):
            mutate_sqlite(draw, p, prefer=prefer)
        if how in ("bytes", "both"):
            damage_file(draw, p, page=SQLITE_PAGE)
        return p
    return make


def _make_rpd_gz(draw: Draw, fixture: Path, case: Path) -> Path:
    """A gzip'd RPD: a damaged database compressed, or a good one whose compressed bytes are damaged."""
    import gzip

    target = case / (fixture.name if fixture.suffix == ".gz" else fixture.name + ".gz")
    plain = case / "plain.rpd"
    plain.write_bytes(gzip.decompress(fixture.read_bytes()) if fixture.suffix == ".gz" else fixture.read_bytes())
    how = draw(st.sampled_from(["rows", "pages", "compressed"] if fixture.stat().st_size < 1 << 20 else
                               ["pages", "compressed"]))  # the 4 MB one: no row edits (slow), damage only
    if how == "rows":
        mutate_sqlite(draw, plain, prefer=("rocpd_op", "rocpd_api", "rocpd_string", "rocpd_kernelapi"))
    elif how == "pages":
        damage_file(draw, plain, page=SQLITE_PAGE)
    data = gzip_bytes(plain.read_bytes())
    plain.unlink()
    target.write_bytes(mutate_bytes(draw, data) if how == "compressed" else data)
    return target


def _make_csv_file(draw: Draw, fixture: Path, case: Path) -> Path:
    p = _copy(fixture, case)
    if draw(st.integers(0, 3)):
        mutate_csv(draw, p)
    if draw(st.integers(0, 3)) == 0:
        damage_file(draw, p)
    return p


def _make_csv_folder(draw: Draw, fixture: Path, case: Path) -> Path:
    """rocprofv3's CSV output folder: a kernel trace with its API, marker and copy traces (all real
    files of the rocprofv3 documentation), one or two of them damaged, or one missing."""
    folder = case / "rocprofv3-out"
    folder.mkdir()
    csvs = DATA / "rocprofv3-csv"
    shutil.copyfile(csvs / "kernel_trace.csv", folder / "834304_kernel_trace.csv")
    shutil.copyfile(csvs / "hip_runtime_trace.csv", folder / "834304_hip_api_trace.csv")
    shutil.copyfile(csvs / "marker_api_trace.csv", folder / "834304_marker_api_trace.csv")
    shutil.copyfile(csvs / "memory_copy_trace.csv", folder / "834304_memory_copy_trace.csv")
    files = sorted(folder.iterdir())
    for _ in range(draw(st.integers(1, 2))):
        victim = draw(st.sampled_from(files))
        if not victim.exists():
            continue
        how = draw(st.sampled_from(["cells", "cells", "cells", "bytes", "missing"]))
        if how == "missing":
            victim.unlink()
        elif how == "cells":
            mutate_csv(draw, victim)
        else:
            damage_file(draw, victim)
    return folder


def _make_kineto(compressed: bool) -> Callable[[Draw, Path, Path], Path]:
    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        import gzip

        name = fixture.name if compressed else fixture.name.removesuffix(".gz")
        p = case / name
        plain = gzip.decompress(fixture.read_bytes())
        p.write_bytes(gzip_bytes(plain) if compressed else plain)
        how = draw(st.sampled_from(["events", "events", "events", "bytes"]))
        if how == "events":
            mutate_json_file(draw, p, focus=("traceEvents",), compressed=compressed)
        elif compressed and draw(st.booleans()):
            p.write_bytes(mutate_bytes(draw, p.read_bytes()))  # the gzip stream itself
        else:
            data = mutate_bytes(draw, plain)
            p.write_bytes(gzip_bytes(data) if compressed else data)
        return p
    return make


def _make_folder(files: dict[str, str]) -> Callable[[Draw, Path, Path], Path]:
    """A folder format: one or two of its files damaged by kind ("csv", "json:<focus>", "bytes"), or
    one missing."""
    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        folder = _copy(fixture, case)
        present = [name for name in files if (folder / name).exists()]
        for _ in range(draw(st.integers(1, 2))):
            name = draw(st.sampled_from(present))
            p = folder / name
            if not p.exists():
                continue
            kind = files[name]
            how = draw(st.sampled_from(["typed", "typed", "typed", "bytes", "missing"]))
            if how == "missing":
                p.unlink()
            elif how == "bytes" or kind == "bytes":
                damage_file(draw, p)
            elif kind == "csv":
                mutate_csv(draw, p)
            else:
                focus = tuple(k for k in kind.removeprefix("json").strip(":").split("/") if k)
                mutate_json_file(draw, p, focus=focus)
        return folder
    return make


def _make_host_samples(with_source: bool) -> Callable[[Draw, Path, Path], Path]:
    """A host sample file; its rows name `tests/data/host/sampler_two_loops.cu` relative to where the
    command runs (the case folder): a copy is put there only if `with_source` (libclang: a second)."""
    inner = _make_json_file(("rows",))

    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        if with_source:
            (case / "tests/data/host").mkdir(parents=True)
            shutil.copyfile(DATA / "host/sampler_two_loops.cu", case / "tests/data/host/sampler_two_loops.cu")
        return inner(draw, fixture, case)
    return make


def _make_json_file(focus: tuple) -> Callable[[Draw, Path, Path], Path]:
    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        p = _copy(fixture, case)
        if draw(st.integers(0, 3)):
            mutate_json_file(draw, p, focus=focus)
        else:
            damage_file(draw, p)
        return p
    return make


def _make_pc_sampling(with_source: bool) -> Callable[[Draw, Path, Path], Path]:
    """The decoded PC-sampling folder. Without the saved source copy unless `with_source` (its
    libclang parse takes a second a case: the deep profile only)."""
    inner = _make_folder({"code.json": "json:code", "filenames.json": "json", "snapshots.json": "json"})

    def make(draw: Draw, fixture: Path, case: Path) -> Path:
        folder = inner(draw, fixture, case)
        if not with_source:
            (folder / "source_2_kernel.cpp").unlink(missing_ok=True)
            shutil.rmtree(folder / "include", ignore_errors=True)
        return folder
    return make


TRACE_COMMANDS = (
    ("summary", "{p}"), ("summary", "{p}", "--json"), ("summary", "{p}", "--by-phase"),
    ("summary", "{p}", "--out", "{out}"), ("critical-path", "{p}"), ("critical-path", "{p}", "--json"),
    ("triage", "{p}"), ("triage", "{p}", "--json"), ("export", "{p}", "--perfetto", "{out}/trace.json"),
    ("compare", "{orig}", "{p}"), ("compare", "{orig}", "{p}", "--json"),
)
COUNTER_COMMANDS = (("analyze", "{p}", "--arch", "gfx942"), ("analyze", "{p}", "--json", "--arch", "gfx942"),
                    ("analyze", "{p}", "--out", "{out}", "--arch", "gfx90a"))
HOTSPOT_COMMANDS = (("hotspots", "{p}"), ("hotspots", "{p}", "--json"), ("hotspots", "{p}", "--out", "{out}"))

ROCPD = (DATA / "rocpd_v3_multistream.db", DATA / "rocpd_v3_docs_kernel_trace.db",
         DATA / "host-samples" / "14368_results.db")
ROCPD_PREFER = ("rocpd_kernel_dispatch", "rocpd_event", "rocpd_region", "rocpd_arg", "rocpd_string",
                "rocpd_info_kernel_symbol", "rocpd_info_agent", "rocpd_track", "rocpd_sample")


def formats(*, with_source: bool = False) -> list[Format]:
    """Every fixture format of tests/data/ the readers take, with the commands that read it."""
    kineto = (DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",)
    rocprof_compute = (DATA / "rocprof-compute" / "MI200_vcopy", DATA / "rocprof-compute" / "MI300X_vcopy")
    return [
        Format("rocpd v3", ROCPD, _make_sqlite(ROCPD_PREFER), TRACE_COMMANDS + COUNTER_COMMANDS[:1]),
        Format("legacy RPD", (DATA / "matmul_result.rpd",),
               _make_sqlite(("rocpd_op", "rocpd_api", "rocpd_string", "rocpd_kernelapi", "rocpd_api_ops")),
               TRACE_COMMANDS),
        Format("legacy RPD .gz", (DATA / "matmul_result.rpd", DATA / "mytrace.rpd.gz"), _make_rpd_gz,
               TRACE_COMMANDS[:9]),
        Format("kernel-trace CSV", (DATA / "rocprofv3-csv" / "kernel_trace.csv",
                                    DATA / "rocprofv3-csv" / "kernel_trace_truncated.csv"),
               _make_csv_file, TRACE_COMMANDS),
        Format("rocprofv3 CSV folder", (DATA / "rocprofv3-csv",), _make_csv_folder, TRACE_COMMANDS[:9]),
        Format("counter CSV", (DATA / "rocprofv3-csv" / "counter_collection.csv",), _make_csv_file,
               COUNTER_COMMANDS + TRACE_COMMANDS[:2]),
        Format("Kineto JSON", kineto, _make_kineto(False), TRACE_COMMANDS),
        Format("Kineto .json.gz", kineto, _make_kineto(True), TRACE_COMMANDS),
        Format("rocprof-compute", rocprof_compute,
               _make_folder({"pmc_perf.csv": "csv", "sysinfo.csv": "csv", "roofline.csv": "csv",
                             "timestamps.csv": "csv", "pmc_dispatch_info.csv": "csv"}),
               COUNTER_COMMANDS + TRACE_COMMANDS[:1] + TRACE_COMMANDS[6:7]),
        Format("PC-sampling code.json", (DATA / "pc-sampling",), _make_pc_sampling(with_source), HOTSPOT_COMMANDS),
        Format("PC-sampling CSV", (DATA / "rocprofv3-csv" / "pc_sampling_host_trap.csv",), _make_csv_file,
               HOTSPOT_COMMANDS),
        Format("ATT output", (DATA / "att",),
               _make_folder({"ui_output_agent_1_dispatch_1/code.json": "json:code",
                             "ui_output_agent_1_dispatch_1/filenames.json": "json",
                             "ui_output_agent_1_dispatch_1/occupancy.json": "json",
                             "stats_ui_output_agent_1_dispatch_1.csv": "csv"}), HOTSPOT_COMMANDS),
        Format("ATT stats CSV", (DATA / "att-stats" / "stats_ui_output_agent_1_dispatch_1.csv",), _make_csv_file,
               HOTSPOT_COMMANDS),
        Format("host samples", (DATA / "host-samples" / "host_samples_14368.json",), _make_host_samples(with_source),
               HOTSPOT_COMMANDS),
    ]


def format_named(name: str, **kw) -> Format:
    return next(f for f in formats(**kw) if f.name == name)


# ---- one case ------------------------------------------------------------------------------------

@dataclass
class Case:
    """A mutant and the command that reads it."""

    format: str
    folder: Path  # everything of the case lives here
    argv: list[str]
    mutant: Path
    others: tuple[Path, ...] = ()  # other inputs the command names (compare's baseline)


@dataclass
class Verdict:
    kind: str  # NORMAL, CLEAN or FAILURE
    detail: str = ""
    seconds: float = 0.0
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def draw_case(draw: Draw, fmt: Format, folder: Path) -> Case:
    """Draw a fixture, make its mutant in `folder`, and a command that reads it."""
    fixture = draw(st.sampled_from(fmt.fixtures))
    folder.mkdir(parents=True, exist_ok=True)
    mutant = fmt.make(draw, fixture, folder)
    template = draw(st.sampled_from(fmt.commands))
    out = folder / "out"
    argv = [part.format(p=mutant, orig=fixture, out=out) for part in template]
    return Case(fmt.name, folder, argv, mutant, (fixture,) if "{orig}" in template else ())


def _memory_in_use() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


_QUIET_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _child(argv: list[str], out: Path, err: Path, report: int, limit: int) -> None:
    """In the forked child: run the command as the CLI would, report how it ended, never return."""
    status: dict[str, Any] = {}
    try:
        os.setpgid(0, 0)  # the parent kills the whole group at the bound (c++filt and friends too)
        os.chdir(out.parent)  # relative paths a file records resolve inside the case, not the repository
        for stream, path in ((1, out), (2, err)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, stream)
            os.close(fd)
        sys.stdin = open(os.devnull)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        import warnings

        from rocm_perf import cli

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                status["rc"] = cli.main(list(argv))
            except SystemExit as e:
                status["rc"] = e.code if isinstance(e.code, int) else 2
            except BaseException:  # everything that would reach the user as a traceback
                status["exception"] = traceback.format_exc(limit=-3)[-3000:]
        status["warnings"] = [f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})"
                              for w in caught if not issubclass(w.category, _QUIET_WARNINGS)][:5]
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException as e:  # the harness itself failed: report it as a failure of the case
        status["exception"] = f"harness: {e!r}"
    finally:
        try:
            os.write(report, json.dumps(status, default=str).encode()[:60000])
        finally:
            os._exit(0)


def preload() -> None:
    """Import what the commands import, once, before the first fork: a child then starts warm."""
    import importlib
    import pkgutil

    import rocm_perf

    for info in pkgutil.walk_packages(rocm_perf.__path__, "rocm_perf."):
        if info.name.split(".")[1] in ("trace", "analysis", "report", "source", "backends", "cli"):
            importlib.import_module(info.name)


def run_isolated(argv: list[str], folder: Path, bound_s: float = CASE_BOUND_S) -> tuple[dict[str, Any], float]:
    """Run `rocm_perf.cli.main(argv)` in a forked child with stdout/stderr in files of `folder`;
    ({rc | exception, warnings, hang, signal}, seconds)."""
    if "rocm_perf.cli" not in sys.modules:
        preload()
    out, err = folder / ".stdout", folder / ".stderr"
    limit = _memory_in_use() + MEMORY_HEADROOM if _memory_in_use() else 0
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(argv, out, err, w, limit)
    os.close(w)
    chunks, hang = [], False
    try:
        deadline = t0 + bound_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                hang = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(r)
        if hang:
            for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    target()
                except ProcessLookupError:
                    pass
        _, wait_status = os.waitpid(pid, 0)
    seconds = time.monotonic() - t0
    try:
        status = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        status = {"exception": "harness: unreadable report"}
    if hang:
        status["hang"] = True
    elif os.WIFSIGNALED(wait_status):
        status["signal"] = os.WTERMSIG(wait_status)
    return status, seconds


_PY_WARNING = re.compile(r"\b\w+Warning: ")


def judge(case: Case, status: dict[str, Any], seconds: float) -> Verdict:
    """The verdict on one case (module docstring)."""
    stdout = (case.folder / ".stdout").read_text(encoding="utf-8", errors="replace")
    stderr = (case.folder / ".stderr").read_text(encoding="utf-8", errors="replace")

    def failure(why: str) -> Verdict:
        return Verdict(FAILURE, why, seconds, stderr[-2000:])

    if status.get("hang"):
        return failure(f"hang: still running after {CASE_BOUND_S:g} s")
    if "signal" in status:
        return failure(f"crash: died by signal {status['signal']}")
    if status.get("exception"):
        return failure("traceback: " + status["exception"].strip().splitlines()[-1][:300]
                       + " | " + _where(status["exception"]))
    if status.get("warnings"):
        return failure("python warning: " + status["warnings"][0])
    if "Traceback (most recent call last)" in stderr or _PY_WARNING.search(stderr):
        return failure("traceback or warning text on stderr")
    foreign = [line for line in stderr.splitlines() if line.strip() and not line.startswith("rocm-perf: ")]
    rc = status.get("rc")
    if rc == 0:
        if foreign:
            return failure(f"stray stderr line: {foreign[0][:200]}")
        insane = _insane(case, stdout)
        return failure(f"insane answer: {insane}") if insane else Verdict(NORMAL, "", seconds)
    errors = [line for line in stderr.splitlines() if line.startswith("rocm-perf: error: ")]
    if len(errors) != 1:
        return failure(f"exit {rc} without one `rocm-perf: error:` line (stderr: {stderr[-300:]!r})")
    if foreign:
        return failure(f"the error spans several lines: {errors[0][:150]} / {foreign[0][:150]}")
    named = [str(case.folder), *map(str, case.others)]
    if not any(n in errors[0] for n in named):
        return failure(f"the error names no file of the case: {errors[0][:300]}")
    return Verdict(CLEAN, errors[0].removeprefix("rocm-perf: error: ").replace(str(case.folder), "<case>"), seconds)


def _where(tb: str) -> str:
    """The innermost rocm_perf frame of a traceback (`trace/csv_read.py:95`)."""
    frames = re.findall(r'File "[^"]*?/rocm_perf/([^"]+)", line (\d+)', tb)
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else "outside rocm_perf"


def _strict_json(text: str) -> str:
    """'' when `text` is one JSON document without NaN/Infinity, else why not."""
    def refuse(token: str):
        raise ValueError(f"{token} is not JSON")

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError as e:
        return str(e)[:200]
    return ""


def _insane(case: Case, stdout: str) -> str:
    if "--json" in case.argv:
        return _strict_json(stdout)
    if case.argv[0] == "export":
        target = Path(case.argv[case.argv.index("--perfetto") + 1])
        if not target.is_file():
            return "no Perfetto file written"
        return _strict_json(target.read_text(encoding="utf-8", errors="replace"))
    if not stdout.strip():
        return "nothing printed"
    return ""


def run_case(case: Case, bound_s: float = CASE_BOUND_S) -> Verdict:
    status, seconds = run_isolated(case.argv, case.folder, bound_s)
    verdict = judge(case, status, seconds)
    verdict.extra["argv"] = [a.replace(str(case.folder), "<case>") for a in case.argv]
    return verdict
