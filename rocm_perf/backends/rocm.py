"""The rocm backend: hipcc builds, rocprofv3 profiles (kernel trace + HIP runtime trace, rocpd out)."""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from rocm_perf import process
from rocm_perf.disk_space import check_space
from rocm_perf.backends.base import Backend, Program, ProfileResult
from rocm_perf.backends.compiler_output import first_errors
from rocm_perf.backends.gpu_agents import GpuAgent, find_gpu_agents
from rocm_perf.backends.hipcc import amd_build_env, find_hipcc
from rocm_perf.backends.rocprofv3 import TRACE_OPTIONS, evidence_options, find_rocprofv3, pc_sampling_method, run_rocprofv3
from rocm_perf.errors import RocmPerfError

_OPT_LEVEL = re.compile(r"-O[0-3sz]?|-Ofast")


class RocmBackend(Backend):
    """hipcc + rocprofv3 on a machine with an AMD GPU. Dispatch times are GPU timestamps."""

    name = "rocm"
    gpu_timings = True
    has_counters = True

    def __init__(self, arch: str | None = None, attempts: int = 3, retry_wait_s: float = 2.0, *,
                 pc_sampling: str | None = None, att: bool = False):
        """`arch`: --offload-arch for builds (default: the first GPU agent's); `attempts`/`retry_wait_s`:
        how often and how patiently transient profiler failures are retried (exponential backoff);
        `pc_sampling` (a method or "auto") and `att`: also collect instruction-level evidence
        (builds then get -g for source lines)."""
        self.arch = arch
        self.attempts = attempts
        self.retry_wait_s = retry_wait_s
        if pc_sampling:
            pc_sampling_method(pc_sampling, None)  # reject an unknown method before anything runs
        self.pc_sampling = pc_sampling
        self.att = att

    @cached_property
    def _agents(self) -> tuple[list[GpuAgent], str]:
        return find_gpu_agents()

    def available(self) -> tuple[bool, str]:
        missing = []
        if find_rocprofv3() is None:
            missing.append("rocprofv3 not found on PATH or under ROCM_PATH/bin")
        agents, why = self._agents
        if not agents:
            missing.append(f"no AMD GPU agent ({why})")
        if missing:
            return False, "; ".join(missing)
        return True, f"rocprofv3 and {len(agents)} GPU agent(s): {self.describe()}"

    def describe(self) -> str:
        agents, _ = self._agents
        if not agents:
            return "AMD GPU (none found)"
        first = agents[0]
        label = f"{first.product or 'AMD GPU'} ({first.arch})"
        return label if len(agents) == 1 else f"{label} x{len(agents)}"

    def target_arch(self) -> str | None:
        """The --offload-arch builds use: the one asked for, else the profiled agent's."""
        if self.arch:
            return self.arch
        agents, _ = self._agents
        return agents[0].arch if agents else None

    def build(self, source: Path, out_dir: Path, flags: list[str] | None = None, timeout: float = 600) -> Program:
        source = Path(source)
        if not source.is_file():
            raise RocmPerfError(f"{source}: no such file")
        hipcc = find_hipcc()
        if hipcc is None:
            raise RocmPerfError(f"cannot build {source}: hipcc not found (set HIPCC or ROCM_PATH, or install ROCm's hipcc)")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        flags = list(flags or [])
        argv = [hipcc]
        if not any(_OPT_LEVEL.fullmatch(f) for f in flags):
            argv.append("-O3")
        arch = self.target_arch()
        if arch and not any(f.startswith("--offload-arch") for f in flags):
            argv.append(f"--offload-arch={arch}")
        if (self.pc_sampling or self.att) and not any(f.startswith("-g") for f in flags):
            argv.append("-g")  # source lines for the samples; the docs ask for -g with optimization
        executable = out_dir / source.stem
        argv += [*flags, str(source), "-o", str(executable)]
        log = out_dir / "build.log"
        with amd_build_env() as env:
            done = process.run(argv, timeout=timeout, env=env, log=log)
        if done.timed_out:
            raise RocmPerfError(f"{source}: hipcc timed out after {timeout:g} s (log: {log})")
        if done.returncode != 0 or not executable.is_file():
            output = done.stderr + "\n" + done.stdout
            check_space(out_dir, output)  # a full disk is not a compile error
            errors = first_errors(output) or process.last_lines(output)
            raise RocmPerfError(f"{source}: hipcc failed (log: {log}):\n{errors}")
        return Program(executable=executable, source=source, backend=self.name, flags=argv[1:-3], build_log=log)

    def profile(
        self,
        argv: list[str],
        out_dir: Path,
        timeout: float = 600,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> ProfileResult:
        """rocprofv3 --kernel-trace --hip-runtime-trace --output-format rocpd; every database it wrote
        (one per profiled process). Transient failures are retried (see rocprofv3.run_rocprofv3).

        Like the host backend, a program that exits non-zero but leaves a database, or that times
        out (`timed_out`), is returned for the caller to judge; no database after a non-zero exit
        raises RocmPerfError with rocprofv3's last lines."""
        if not argv:
            raise RocmPerfError("nothing to profile: empty command")
        out_dir = Path(out_dir).resolve()  # the program may run elsewhere (cwd): its output must not move
        out_dir.mkdir(parents=True, exist_ok=True)
        options = evidence_options(self.pc_sampling, self.att, self.target_arch()) \
            if (self.pc_sampling or self.att) else list(TRACE_OPTIONS)
        run = run_rocprofv3(
            options,
            [str(a) for a in argv],
            out_dir,
            timeout=timeout,
            cwd=cwd,
            env=env,
            attempts=self.attempts,
            retry_wait_s=self.retry_wait_s,
            log=out_dir / "profile.log",
        )
        done = run.completed
        return ProfileResult(
            databases=run.outputs,
            returncode=done.returncode,
            stdout=done.stdout,
            stderr=done.stderr,
            wall_s=done.wall_s,
            timed_out=done.timed_out,
            log=out_dir / "profile.log",
        )

    def collect_counters(
        self,
        argv: list[str],
        counters: list[str],
        out_dir: Path,
        timeout: float = 600,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Path:
        """rocprofv3 -i (one `pmc:` line per pass, split by the per-block limits), CSV out: the passes
        land in `pmc_<n>/` folders below the returned folder, which load_trace joins per dispatch."""
        from rocm_perf.backends.counters import collect_counters

        if not argv:
            raise RocmPerfError("nothing to profile: empty command")
        collection = collect_counters([str(a) for a in argv], counters, Path(out_dir), timeout=timeout, cwd=cwd,
                                      env=env, attempts=self.attempts, retry_wait_s=self.retry_wait_s)
        if not collection.files or collection.output_dir is None:
            raise RocmPerfError(f"rocprofv3 wrote no counter_collection.csv below {out_dir} (log: {Path(out_dir) / 'counters.log'})")
        return collection.output_dir
