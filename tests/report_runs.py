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
from rocm_perf.optimize.loop import DONE, OptimizeLoop, Services
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
