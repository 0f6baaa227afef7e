"""Benchmark: the roofline analysis (analyze_trace) of synthetic traces with counters, 10k to 1M dispatches.

Each trace has 40 kernels with skewed popularity on one gfx942 agent and every roofline counter per
dispatch (random, realistic magnitudes). Measured: analyze_trace alone (formulas, per-kernel sums,
rules), and to_json + the roofline chart (what `--out` adds). Wall and CPU seconds; the goal is
about a second of CPU per million dispatches for the analysis, well under reading the profile
itself (see bench_summary.py), and a chart in a few seconds whatever the size.

Run: .venv/bin/python tests/bench/bench_analyze.py [--sizes 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.analysis.analyze import analyze_trace  # noqa: E402
from rocm_perf.analysis.gpu_arch import arch_spec  # noqa: E402
from rocm_perf.report.roofline_chart import write_roofline_chart  # noqa: E402
from rocm_perf.trace.model import Agent, KernelSymbol, Trace  # noqa: E402

N_KERNELS = 40


def synthetic(n: int, seed: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, N_KERNELS + 1)
    kernel = rng.choice(N_KERNELS, size=n, p=weights / weights.sum()).astype(np.int32)
    duration = rng.integers(2_000, 200_000, size=n)
    start = np.cumsum(duration + 1_000)
    counters = {c: rng.uniform(0, 1e6, size=n) for c in arch_spec("gfx942").required_counters()}
    agent = Agent(2, "GPU", "gfx942", "AMD Instinct MI300X", 304, {"max_engine_clk_fcompute": 2100})
    symbols = [KernelSymbol(f"_Z6kernel{i}Pf", f"kernel{i}(float*)", vgpr=32, agpr=0, sgpr=16) for i in range(N_KERNELS)]
    return Trace.from_rows(start=start, end=start + duration, kernel=kernel, symbols=symbols, agent=np.full(n, 2),
                           agents=[agent], counters=counters, grid=np.tile([65536, 1, 1], (n, 1)),
                           workgroup=np.tile([256, 1, 1], (n, 1)))


def measure(fn) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print(f"{'dispatches':>11} {'analyze s (cpu)':>18} {'json+chart s (cpu)':>20} {'kernels':>8}")
    for n in args.sizes:
        trace = synthetic(n)
        result = {}
        wall, cpu = measure(lambda: result.setdefault("a", analyze_trace(trace)))
        with tempfile.TemporaryDirectory() as out:
            wall2, cpu2 = measure(lambda: write_roofline_chart(result["a"].to_json(), Path(out)))
        print(f"{n:>11,} {wall:>9.3f} ({cpu:>6.3f}) {wall2:>11.3f} ({cpu2:>6.3f}) {len(result['a'].kernels):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
