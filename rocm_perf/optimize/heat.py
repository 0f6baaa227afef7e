"""Loop heat: which loops of the baseline the measured time is in, for ordering candidates.

When the baseline's profiled rounds carry instruction-level evidence (the host sampler, or
rocprofv3 PC sampling / thread trace), each loop of each top kernel gets its measured share of
its kernel's samples (the innermost loop holding a line, inlined code counted where it was
inlined: analysis/hotspots.py). Loops are keyed like candidates (`plan.loop_key`: kernel and
line in the original source), so the heat measured once on the original baseline still names the
same loops after accepted rewrites.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rocm_perf.analysis.hotspots import hotspots_json
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.plan import loop_key

# A loop holding less than this share of its kernel's samples counts as cold: tried last.
COLD_SHARE = 0.01


def measure_loop_heat(profiles: Path, source: Path, flags: list[str], *, write_to: Path | None = None) -> dict | None:
    """{evidence, samples, kernels: {kernel: samples}, loops: {loop_key: share}} from the
    evidence below `profiles`, or None when there is none (or it cannot be read: the run goes on
    without heat, ordered as before). `write_to`: also write hotspots.json there."""
    from rocm_perf.source.profile_sources import source_hotspots
    from rocm_perf.trace.instruction_load import load_instruction_profile

    try:
        profile = load_instruction_profile(profiles)
        sourced = source_hotspots(profile, source=source, cflags=" ".join(flags))
    except RocmPerfError:
        return None
    result = sourced.result
    kernels: dict[str, float] = {}
    loop_samples: dict[str, float] = {}
    for k in result.kernels:
        if not k.loops_known:
            continue
        for loop in k.loops:
            kernel, _, _, line = loop.id.rsplit(":", 3)
            key = loop_key(kernel.split(":")[0], int(line))
            loop_samples[key] = loop_samples.get(key, 0.0) + loop.samples
        name = k.loops[0].id.split(":")[0] if k.loops else None
        if name:
            kernels[name] = kernels.get(name, 0.0) + k.heat.samples
    if not kernels:
        return None
    loops = {}
    for key, samples in loop_samples.items():
        kernel = key.split("@")[0]
        loops[key] = samples / kernels[kernel] if kernels.get(kernel) else 0.0
    heat = {"evidence": result.evidence, "unit": result.unit, "samples": result.total, "kernels": kernels,
            "loops": loops}
    if write_to is not None:
        data = hotspots_json(result)
        data["sources"] = {"mapped": [{"recorded": r, "file": f} for r, f in sorted(sourced.resolution.mapped.items())]}
        write_atomic(Path(write_to), json.dumps(data, indent=2) + "\n")
    return heat


def samples_recorded(profiles: Path) -> float:
    """The samples (or other weight) recorded below `profiles` so far, in any kernel; 0 when none
    can be read."""
    from rocm_perf.trace.instruction_load import load_instruction_profile

    try:
        return float(load_instruction_profile(profiles).weight.sum())
    except RocmPerfError:
        return 0.0


# Untimed sampled runs of the baseline: enough samples for shares, little time. At least
# HEAT_ROUNDS runs; a short program then runs again until its kernels hold HEAT_MIN_SAMPLES
# samples (a share of 10 samples is a guess: a 1 ms kernel at 4000 samples/s gave 10 over 2 runs,
# and its loop body none), stopping at HEAT_MAX_ROUNDS runs or HEAT_MAX_SECONDS of them.
HEAT_ROUNDS = 2
HEAT_MIN_SAMPLES = 200
HEAT_MAX_ROUNDS = 20
HEAT_MAX_SECONDS = 30.0


class HeatRounds:
    """Where the baseline's time goes, measured apart from the timed rounds: a build of the
    baseline by the backend's evidence twin (backends: `evidence_backend`, e.g. the host sampler's
    -g build) and HEAT_ROUNDS or more runs of it (above) with the same arguments as the timed
    rounds. The timed rounds stay unsampled, so sampling never touches what the acceptance test
    compares."""

    def __init__(self, backend, *, program_args: list[str], run_template: str | None, timeout_s: float,
                 cwd: Path, rounds: int = HEAT_ROUNDS, build=None):
        """`build(backend, source, out_dir, flags, timeout) -> Program`: how the sampled build is made
        (runners.ProgramRunner.build_with; default the backend's build of the source)."""
        self.backend = backend
        self.build = build
        self.program_args = list(program_args)
        self.run_template = run_template
        self.timeout_s = timeout_s
        self.cwd = cwd
        self.rounds = rounds

    @classmethod
    def like(cls, runner, build=None) -> "HeatRounds | None":
        """Heat rounds run the way `runner` (a measure.ProfiledRounds) runs rounds; None for others."""
        from rocm_perf.optimize.measure import ProfiledRounds

        if not isinstance(runner, ProfiledRounds):
            return None
        return cls(runner.backend, program_args=runner.program_args, run_template=runner.run_template,
                   timeout_s=runner.timeout_s, cwd=runner.cwd, build=build)

    def __call__(self, source: Path, out_dir: Path, flags: list[str], *, build_timeout_s: float,
                 write_to: Path | None = None) -> tuple[dict | None, str]:
        """(heat or None, what happened: one line for the run's report)."""
        from rocm_perf.optimize.measure import program_argv

        evidence = self.backend.evidence_backend()
        if evidence is None:
            return None, f"no loop heat: the {self.backend.name} backend records no samples by default here"
        try:
            if self.build is not None:
                program = self.build(evidence, Path(source), Path(out_dir) / "build", flags, build_timeout_s)
            else:
                program = evidence.build(Path(source), Path(out_dir) / "build", flags, timeout=build_timeout_s)
            started, samples = time.monotonic(), 0.0
            for i in range(max(self.rounds, HEAT_MAX_ROUNDS)):
                if i >= self.rounds and (time.monotonic() - started > HEAT_MAX_SECONDS or samples >= HEAT_MIN_SAMPLES):
                    break
                round_dir = Path(out_dir) / f"round-{i}"
                result = evidence.profile(program_argv(program.executable, self.program_args, self.run_template),
                                          round_dir, timeout=self.timeout_s, cwd=self.cwd)
                if result.returncode != 0 or result.timed_out:
                    return None, f"no loop heat: the sampled baseline run failed (exit {result.returncode})"
                samples += samples_recorded(round_dir)
        except RocmPerfError as e:
            return None, f"no loop heat: {str(e).splitlines()[0]}"
        heat = measure_loop_heat(Path(out_dir), Path(source), flags, write_to=write_to)
        if heat is None:
            return None, "no loop heat: the sampled rounds left no samples in the source's kernels"
        return heat, ""
