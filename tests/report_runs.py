"""A run with 30 measured candidates for the report's tests: the real loop (real libclang analysis,
rewrites and guards of tests/data/programs/five_loops.cu) with the build double and a measurement
double, as test_optimize_loop.py does, plus a real host-backend profile of the program as its
baseline's reference round.

Doubles, and why: measuring 30 real candidates takes most of an hour on this machine; the report
only reads what the ledger holds, and the ledger is written by the real loop here.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from pathlib import Path

from conftest import DATA
from test_optimize_loop import TOOLS, CopyBuildDouble
from rocm_perf.backends.host import HostBackend
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.loop import DONE, OptimizeLoop
from rocm_perf.optimize.services import Services
from rocm_perf.optimize.measure import RoundResult, output_fingerprint
from rocm_perf.optimize.options import OptimizeOptions

FIVE_LOOPS = DATA / "programs" / "five_loops.cu"
KERNELS = ("rows_xor", "rows_mul", "rows_add", "rows_sub", "rows_or")
SIGNATURE = "(unsigned char const*, unsigned int*, int, int)"
# Per kernel: base time (ms) and the gain per doubling of hand-unrolled copies (negative: slower).
MODEL = {"rows_xor": (30.0, 0.08), "rows_mul": (25.0, 0.0), "rows_add": (20.0, -0.05), "rows_sub": (15.0, 0.01),
         "rows_or": (10.0, 0.0)}


class FiveLoopRounds:
    """Measurement double for five_loops.cu: each kernel's time follows the text of its own loop
    (hand-unrolled copies; `#pragma unroll 1` a little slower), with seeded noise per round, so
    that the run holds every verdict: accepted, slower, not significant, inconclusive, superseded."""

    def __init__(self, cv: float = 0.02):
        self.cv = cv

    def kernel_ms(self, text: str) -> dict[str, float]:
        times = {}
        for name in KERNELS:
            segment = text.split(f"__global__ void {name}(", 1)[1].split("__global__", 1)[0]
            base, gain = MODEL[name]
            copies = segment.count("acc += ")
            pragma = re.search(r"#pragma unroll (\d+)", segment)
            if copies > 1:
                times[name] = base * (1 - gain * math.log2(copies - 1))
            elif pragma and pragma.group(1) == "1":
                times[name] = base * 1.06
            else:
                times[name] = base
        return times

    def __call__(self, exe: Path, round_dir: Path, key: str) -> RoundResult:
        text = Path(exe).read_text()
        seed = hashlib.sha256((key + hashlib.sha256(text.encode()).hexdigest()).encode()).hexdigest()
        rng = random.Random(int(seed[:16], 16))
        noise = math.exp(rng.gauss(0.0, self.cv))
        ns = {f"{name}{SIGNATURE}": ms * noise * 1e6 for name, ms in self.kernel_ms(text).items()}
        total = sum(ns.values())
        return RoundResult(True, "", total, total, ns, {k: v / total for k, v in ns.items()},
                           {**output_fingerprint(0, ["sums"], "five_loops PASS\n", r"(?!)"), "median_path_ns": total})


def thirty_candidate_run(root: Path) -> Path:
    """A finished run directory with 30 measured candidates and a real baseline profile."""
    opt = OptimizeOptions(source=FIVE_LOOPS, out=root / "runs", backend="host", compile_check="off",
                          kernels=list(KERNELS), max_trials=30, rounds=4, max_rounds=10, aa_rounds=6, jobs=1)
    run_dir, ledger = create_run(opt, "copy-double", "build double, injected measurements", ["test"])
    # The reference round's profile, as measure.keep_baseline_profiles keeps it: a real one.
    backend = HostBackend()
    program = backend.build(FIVE_LOOPS, root / "host-build")
    result = backend.profile([str(program.executable)], run_dir / "baseline" / "profiles" / "reference-0-B")
    assert result.returncode == 0, result.stderr
    from rocm_perf.report.html import write_run_reports

    loop = OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), FiveLoopRounds(), TOOLS, None,
                                                       write_report=write_run_reports))
    assert loop.run() == DONE
    return run_dir


class RealProfilesOfKeptRounds:
    """Measurement double that decides like InjectedRounds (timings injected: the verdicts are known
    in advance) but, for the rounds the real runner keeps (measure.keep_baseline_profiles: the
    baseline's reference round and the final check), also profiles the real program on the host
    backend into the round's folder, so the report reads real traces of the original and final source."""

    def __init__(self, build_root: Path):
        from test_optimize_loop import InjectedRounds

        self.timings = InjectedRounds()
        self.host = HostBackend()
        self.build_root = build_root
        self.built: dict[str, Path] = {}

    def __call__(self, exe: Path, round_dir: Path, key: str) -> RoundResult:
        from rocm_perf.optimize.measure import keep_baseline_profiles

        result = self.timings(exe, round_dir, key)
        if keep_baseline_profiles(key):
            text = Path(exe).read_bytes()  # the build double's "executable" is the source
            digest = hashlib.sha256(text).hexdigest()[:12]
            if digest not in self.built:
                source = self.build_root / digest / "two_loops.cu"
                source.parent.mkdir(parents=True)
                source.write_bytes(text)
                self.built[digest] = self.host.build(source, source.parent / "build").executable
            profiled = self.host.profile([str(self.built[digest])], round_dir)
            assert profiled.returncode == 0, profiled.stderr
        return result


def evidence_run(root: Path) -> Path:
    """A finished run directory holding the evidence of issues 14-16 beside its own: the real loop on
    tests/data/programs/two_loops.cu (real libclang rewrites and guards) with

    - a counter backend double (test_optimize_roofline.py: real-format counter_collection.csv,
      analyzed by the real analysis): the baseline's and the accepted result's rooflines;
    - the real host sampler's untimed heat rounds of the baseline (optimize/heat.py): hotspots.json,
      the hot loop's annotated source;
    - real host profiles of the reference round and of the final check (RealProfilesOfKeptRounds):
      the baseline's timeline and the before/after comparison of `rocm-perf compare`.
    """
    from test_optimize_loop import TOOLS, WEIGHTED, XOR, options
    from test_optimize_roofline import CounterBackendDouble
    from rocm_perf.optimize.heat import HeatRounds
    from rocm_perf.report.html import write_run_reports

    opt = options(root, arch="gfx942", max_trials=4, rounds=4, max_rounds=8, aa_rounds=6)
    run_dir, ledger = create_run(opt, "copy-double", "build double, injected timings, real profiles", ["test"])
    heat = HeatRounds(HostBackend(), program_args=[], run_template=None, timeout_s=300, cwd=root)
    services = Services(CounterBackendDouble({XOR: 0.75, WEIGHTED: 0.10}), RealProfilesOfKeptRounds(root / "builds"),
                        TOOLS, None, write_report=write_run_reports, heat=heat)
    assert OptimizeLoop(run_dir, ledger, opt, services).run() == DONE
    return run_dir
