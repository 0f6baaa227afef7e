"""The host backend: the same `.cu` built by the machine's C++ compiler against our HIP host
runtime (package data in host_runtime/), run on the CPU, traced into a rocpd v3 database.

Its timings are CPU timings. Measurements default to one block-pool thread per launch: on a
shared machine that gives the steadiest per-round medians (HOST_RUNTIME.md); streams still run
concurrently, one worker thread each.
"""

from __future__ import annotations

import copy
import os
import platform
import shutil
import socket
import uuid
from pathlib import Path

from rocm_perf.backends.base import Backend, Program, ProfileResult
from rocm_perf.backends.host_prebuilt import CONFIGURATION_SYMBOL, object_path, prebuilt_dir, unit_flags
from rocm_perf.backends.host_trace import read_host_log
from rocm_perf.backends.host_sources import include_dirs_from_flags, prepare_unit
from rocm_perf.disk_space import check_space
from rocm_perf.process import run
from rocm_perf.errors import RocmPerfError

RUNTIME_DIR = Path(__file__).resolve().parent / "host_runtime"
STEADY_THREADS = 1
DEFAULT_WARP_SIZE = 64  # CDNA's wavefront
DEFAULT_FLAGS = ["-std=c++17", "-O2"]
# The sampler's rate (samples per second per busy worker thread): high enough for a few hundred
# samples from a fraction of a second of kernels, low enough to stay within the overhead budget
# (tests/bench/bench_sampler.py).
DEFAULT_SAMPLE_HZ = 1000
# Whether profiled runs sample unless told otherwise: only if the measured overhead is under 3 %.
# It is not (tests/bench/bench_sampler.py: about 1 % per 1000 samples/s on a quiet machine, 2-9 %
# on a busy one, where signals are costlier), so timed runs are never sampled; the optimizer
# samples separate, untimed rounds instead (evidence_backend).
SAMPLE_BY_DEFAULT = False
HEAT_SAMPLE_HZ = 4000
# Whether block workers are pinned to one CPU each (ROCM_PERF_HOST_PIN; dispatch_clocks.h) unless
# told otherwise: see tests/bench/bench_noise.py for what pinning does to the paired noise.
PIN_BY_DEFAULT = False
# -rdynamic exports the kernels' symbols so that the runtime reads their mangled names (dladdr).
LINK_FLAGS = ["-rdynamic", "-lpthread", "-ldl"]


def first_errors(stderr: str, limit: int = 3) -> str:
    """The compiler's first errors, each with the user's line where the compiler gives one.

    For a failed static_assert in the runtime (an unsupported feature), the line that matters is
    the "required from here" in the user's file, not the header's.
    """
    lines = stderr.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if " error: " not in line and not line.startswith("error:") and " fatal error: " not in line:
            continue
        message = line
        if "rocm-perf host backend:" in line:
            message = line[line.index("rocm-perf host backend:") :].rstrip("\"'")
            where = next((l.split(": required from here")[0] for l in lines[i + 1 : i + 12] if "required from here" in l),
                         None)
            if where is None:  # the use is the line before, in g++'s instantiation context
                where = next((l.split(":   required from here")[0] for l in reversed(lines[:i]) if "required from here" in l),
                             None)
            if where:
                message = f"{where.strip()}: {message}"
        out.append(message.strip())
        if len(out) >= limit:
            break
    if not out:
        out = [l for l in lines if l.strip()][:limit]
    return "\n".join(out)


class HostBackend(Backend):
    name = "host"
    gpu_timings = False

    def no_counters_message(self) -> str:
        return ("the host backend runs kernels on the CPU and has no GPU hardware counters: "
                "--counters needs the rocm backend (rocprofv3 on an AMD GPU)")

    def __init__(self, threads: int | None = None, *, serial: bool = False, compiler: str | None = None,
                 sample: bool | None = None, sample_hz: int = DEFAULT_SAMPLE_HZ, pin: bool | None = None,
                 warp_size: int = DEFAULT_WARP_SIZE):
        """`threads`: OS threads per launch's block pool; default ROCM_PERF_HOST_THREADS, else 1 (steady).
        `sample`: run the sampling profiler in every profiled run (builds get -g; see
        host_runtime/rocm_perf_host/sampler.h); None = SAMPLE_BY_DEFAULT.
        `pin`: bind each block worker thread to one CPU; default ROCM_PERF_HOST_PIN (0/1), else
        PIN_BY_DEFAULT. Where the machine refuses, workers run unpinned and the trace says so.
        `warp_size`: lanes per emulated wavefront, 64 (CDNA) or 32 (code written for 32-lane waves)."""
        if warp_size not in (32, 64):
            raise RocmPerfError(f"--warp-size must be 32 or 64, got {warp_size}")
        self.warp_size = warp_size
        if threads is None:
            from_env = os.environ.get("ROCM_PERF_HOST_THREADS", "").strip()
            if from_env and not from_env.isdigit():
                raise RocmPerfError(f"ROCM_PERF_HOST_THREADS={from_env!r} is not a whole number")
            threads = int(from_env) if from_env else STEADY_THREADS
        self.threads = threads
        if self.threads < 1:
            raise RocmPerfError(f"host backend threads must be at least 1, got {self.threads}")
        self.serial = serial
        if pin is None:
            from_env = os.environ.get("ROCM_PERF_HOST_PIN", "").strip()
            if from_env not in ("", "0", "1"):
                raise RocmPerfError(f"ROCM_PERF_HOST_PIN={from_env!r}: expected 0 or 1")
            pin = PIN_BY_DEFAULT if not from_env else from_env == "1"
        self.pin = bool(pin)
        self.compiler = compiler or os.environ.get("CXX") or "g++"
        self.sample = SAMPLE_BY_DEFAULT if sample is None else bool(sample)
        if sample_hz < 1 or sample_hz > 100000:
            raise RocmPerfError(f"host sampling rate must be 1-100000 samples/s, got {sample_hz}")
        self.sample_hz = int(sample_hz)
        self.copies_limit = 0  # bytes of device-to-host copies kept per process (keeping_copies); 0: none

    def keeping_copies(self, limit_bytes: int) -> "HostBackend":
        """The same backend with each run's device-to-host copies kept (rocm_perf_host/kept_copies.h)."""
        keeping = copy.copy(self)
        keeping.copies_limit = int(limit_bytes)
        return keeping

    def take_kept_copies(self, out_dir: Path) -> list:
        """The copies a run into `out_dir` kept (backends/host_copies.py), their bytes' files then
        removed (a round's copies can be hundreds of MiB); [] when none was kept."""
        from rocm_perf.backends.host_copies import read_kept_copies

        if not self.copies_limit:
            return []
        copies = read_kept_copies(out_dir)
        for kept in Path(out_dir).glob("host_copies_*.bin"):
            kept.unlink()
        return copies

    def pairs_together_refusal(self) -> str:
        """Pairs run together only where block workers may be pinned: unpinned, the two builds would
        run side by side on different cores, whose speeds do not move together (noisier than apart)."""
        from rocm_perf.backends.host_clocks import pinning_status

        why = pinning_status()
        return f"block workers cannot be pinned here ({why})" if why else ""

    def for_pairs_together(self) -> "HostBackend":
        """The same backend with block workers pinned: each process's first block worker binds to
        the highest CPU it may use (dispatch_clocks.h), so the kernels of builds run at the same time
        share one core and meet the same speed of it, each timed in its own threads' CPU time."""
        pinned = copy.copy(self)
        pinned.pin = True
        return pinned

    def evidence_backend(self) -> "HostBackend | None":
        """The same backend with the sampler on (a -g build) at HEAT_SAMPLE_HZ: those rounds are not
        timed, so a higher rate costs nothing; None when no symbolizer is installed."""
        from rocm_perf.backends.symbolizer import find_symbolizer

        try:
            if find_symbolizer() is None:
                return None
        except RocmPerfError:
            return None
        return HostBackend(self.threads, serial=self.serial, compiler=self.compiler, sample=True,
                           sample_hz=HEAT_SAMPLE_HZ, pin=self.pin, warp_size=self.warp_size)  # copies not kept: untimed rounds

    def warp_flags(self) -> list[str]:
        """Compiler flags that set the emulated wavefront size (none for the default 64)."""
        return [] if self.warp_size == DEFAULT_WARP_SIZE else [f"-DROCM_PERF_WARP_SIZE={self.warp_size}"]

    def dispatch_clocks(self) -> dict[str, str]:
        """CPU time always (Linux); instructions and cycles where perf_event_open is allowed."""
        from rocm_perf.backends.host_clocks import clock_availability

        return clock_availability()

    def available(self) -> tuple[bool, str]:
        if shutil.which(self.compiler) is None:
            return False, f"no C++ compiler `{self.compiler}` on PATH (install g++ or set CXX)"
        if not (RUNTIME_DIR / "hip" / "hip_runtime.h").is_file():
            return False, f"the host runtime headers are missing from {RUNTIME_DIR}"
        return True, ""

    def describe(self) -> str:
        cpu = cpu_model() or platform.machine()
        mode = ((", serial" if self.serial else "") + (", pinned" if self.pin else "")
                + (f", sampling {self.sample_hz}/s" if self.sample else ""))
        if self.warp_size != DEFAULT_WARP_SIZE:
            mode += f", {self.warp_size}-lane warps"
        return f"CPU: {cpu} ({self.threads} block thread{'s' if self.threads != 1 else ''}{mode}; host backend, CPU timings)"

    def build(self, source: Path, out_dir: Path, flags: list[str] | None = None, timeout: float = 600) -> Program:
        """Pre-pass the source (<<<>>>, extern __shared__) into out_dir, then compile it with the runtime."""
        source = Path(source).resolve()
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        user_flags = list(flags or [])
        include_dirs, quote_dirs = include_dirs_from_flags(user_flags, Path.cwd())
        # The unit and the project headers it includes, pre-passed; #line keeps compiler messages
        # (and unsupported-feature errors) on the user's files and lines.
        unit = prepare_unit(source, out_dir, include_dirs=[source.parent, *include_dirs], quote_dirs=quote_dirs,
                            runtime_dir=RUNTIME_DIR)
        executable = out_dir / source.stem
        log = out_dir / "build.log"
        # -g for the sampler's line information; GCC's code does not depend on -g (-fcompare-debug).
        debug = ["-g"] if self.sample and not any(f.startswith("-g") for f in user_flags) else []
        flags = [*DEFAULT_FLAGS, *debug, *self.warp_flags(), *unit.runtime_defines]
        # host_prebuilt.py: the runtime's headers precompiled and its functions in an object, made once
        prebuilt = prebuilt_dir(self.compiler, [*flags, *user_flags], Path.cwd(), timeout=timeout,
                                source_dirs=(source.parent,))
        while True:
            runtime_flags = unit_flags(prebuilt) if prebuilt else []
            runtime_object = [str(object_path(prebuilt))] if prebuilt and object_path(prebuilt).is_file() else []
            argv = [self.compiler, *flags, *runtime_flags, "-I", str(RUNTIME_DIR), "-I", str(source.parent),
                    *user_flags, "-x", "c++", str(unit.compile_path), "-x", "none", *runtime_object, "-o",
                    str(executable), *LINK_FLAGS, *unit.link_libraries]
            done = run(argv, timeout=timeout, log=log)
            if not (runtime_object and done.returncode != 0 and CONFIGURATION_SYMBOL in done.stderr):
                break
            prebuilt = None  # the source configures the runtime itself (a #define before the include)
        if done.timed_out:
            raise RocmPerfError(f"{source}: the host build timed out after {timeout:g} s (log: {log})")
        if done.returncode != 0:
            check_space(out_dir, done.stderr + done.stdout)  # a full disk is not a compile error
            raise RocmPerfError(f"{source}: the host build failed:\n{first_errors(done.stderr)}\n(full log: {log})")
        return Program(executable=executable, source=source, backend=self.name, flags=user_flags, build_log=log)

    def environment(self, log_path: Path, samples_path: Path | None = None, copies_path: Path | None = None) -> dict[str, str]:
        """The variables that configure the runtime for one profiled run."""
        env = {
            "ROCM_PERF_HOST_LOG": str(log_path),
            "ROCM_PERF_HOST_THREADS": str(self.threads),
            "ROCM_PERF_HOST_SERIAL": "1" if self.serial else "0",
            "ROCM_PERF_HOST_PIN": "1" if self.pin else "0",
            "ROCM_PERF_HOST_SAMPLES": str(samples_path) if (self.sample and samples_path) else "",
        }
        if self.sample:
            env["ROCM_PERF_HOST_SAMPLE_HZ"] = str(self.sample_hz)
        if self.copies_limit and copies_path is not None:  # kept_copies.h
            env["ROCM_PERF_HOST_COPIES"] = str(copies_path)
            env["ROCM_PERF_HOST_COPIES_LIMIT"] = str(self.copies_limit)
        return env

    def profile(
        self,
        argv: list[str],
        out_dir: Path,
        timeout: float = 600,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> ProfileResult:
        """Run argv with tracing on; each process that used HIP leaves a rocpd database in out_dir."""
        from rocm_perf.trace.rocpd_write import write_rocpd

        out_dir = Path(out_dir).resolve()  # the program may run elsewhere (cwd): its log path must not move
        out_dir.mkdir(parents=True, exist_ok=True)
        tag = uuid.uuid4().hex[:8]
        log_template = out_dir / f"host_trace_{tag}_%pid%.jsonl"
        samples_template = out_dir / f"host_samples_raw_{tag}_%pid%.jsonl"
        copies_template = out_dir / f"host_copies_{tag}_%pid%.bin"
        run_log = out_dir / "run.log"
        done = run([str(a) for a in argv], timeout=timeout, cwd=cwd,
                   env={**(env or {}), **self.environment(log_template, samples_template, copies_template)}, log=run_log)
        if self.sample:
            self._symbolize(argv, out_dir, tag, run_log)
        databases: list[Path] = []
        hostname = socket.gethostname()
        for raw in sorted(out_dir.glob(f"host_trace_{tag}_*.jsonl")):
            trace = read_host_log(raw, program=str(argv[0]))
            pid = int(trace.metadata.get("pid", 0))
            trace.metadata["hostname"] = hostname
            trace.metadata["command"] = " ".join(str(a) for a in argv)
            db = out_dir / f"{pid}_results.db"
            databases.append(write_rocpd(trace, db, command=trace.metadata["command"], hostname=hostname, pid=pid))
        return ProfileResult(
            databases=databases,
            returncode=done.returncode,
            stdout=done.stdout,
            stderr=done.stderr,
            wall_s=done.wall_s,
            timed_out=done.timed_out,
            log=run_log,
        )


    def _symbolize(self, argv: list[str], out_dir: Path, tag: str, run_log: Path) -> None:
        """Raw samples -> host_samples_<pid>.json beside the trace. A failure is written to the run
        log (the measurement stands; only the hot-line table is missing)."""
        from rocm_perf.backends.host_sampler import symbolize_samples

        executable = Path(str(argv[0])) if argv else None
        for raw in sorted(out_dir.glob(f"host_samples_raw_{tag}_*.jsonl")):
            pid = raw.stem.rsplit("_", 1)[-1]
            try:
                if executable is None or not executable.is_file():
                    raise RocmPerfError(f"cannot symbolize {raw}: the program {executable} is not a file")
                symbolize_samples(raw, out_dir / f"host_samples_{pid}.json", executable=executable,
                                  aliases=prepass_aliases(executable), runtime_dir=RUNTIME_DIR)
            except RocmPerfError as e:
                with open(run_log, "a", encoding="utf-8") as f:
                    f.write(f"# host samples not symbolized: {e}\n")


def prepass_aliases(executable: Path) -> dict[str, str]:
    """{pre-passed file: user's source} for a program build() made (its `#line 1 "source"`)."""
    prepped = Path(executable).with_name(Path(executable).name + ".host.cpp")
    try:
        first = prepped.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return {}
    if first.startswith('#line 1 "') and first.endswith('"'):
        return {str(prepped): first[len('#line 1 "') : -1], str(prepped.resolve()): first[len('#line 1 "') : -1]}
    return {}


def cpu_model() -> str | None:
    """The CPU's model name (Linux), for reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def is_source(path: Path) -> bool:
    """Whether `path` is a source the host backend builds (as opposed to a built program)."""
    return Path(path).suffix.lower() in (".cu", ".hip", ".cpp", ".cc", ".cxx")

