"""Benchmark: memory and time of `optimize` itself as a run grows to 200 trials.

The real loop (real libclang analysis, rewrites and guards, the real ledger and the real HTML and
Markdown report) runs on a generated program of --kernels kernels with one runtime-trip loop each
(7 rule/factor candidates per loop), with the tests' build double (the "executable" is the
source) and a measurement double whose per-kernel times follow the text of each kernel's loop,
with seeded noise, as tests/report_runs.py does for the report's tests. Doubles, because 200
real candidates take a day of builds and rounds; the loop's own bookkeeping, which is what grows
with run length, is real. Each size runs in its own process: peak RSS (VmHWM), CPU seconds of
the run and of the report, and the ledger's size.

    .venv/bin/python tests/bench/bench_optimize_memory.py [--trials 25 50 100 200] [--kernels 32]

Goal (issue 59): a 200-trial run's ledger and report under 200 MB RSS, and the cost per trial
flat with run length.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

KERNEL = """
__global__ void k{i:02d}(const unsigned char* data, unsigned* sums, int rows, int cols) {{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const unsigned char* values = data + static_cast<size_t>(row) * cols;
    unsigned acc = 0;
    for (int c = 0; c < cols; ++c) {{
        acc += values[c] ^ static_cast<unsigned>(c + {i});
    }}
    sums[row] = acc;
}}
"""

MAIN = """
int main() {{
    const int rows = 64, cols = 4099;
    std::vector<unsigned char> host(static_cast<size_t>(rows) * cols, 7);
    unsigned char* data; unsigned* sums;
    hipMalloc(&data, host.size()); hipMalloc(&sums, rows * sizeof(unsigned));
    hipMemcpy(data, host.data(), host.size(), hipMemcpyHostToDevice);
{launches}
    hipDeviceSynchronize();
    std::printf("PASS\\n");
    return 0;
}}
"""


def program(kernels: int) -> str:
    body = "".join(KERNEL.format(i=i) for i in range(kernels))
    launches = "\n".join(f"    hipLaunchKernelGGL(k{i:02d}, dim3(1), dim3(64), 0, 0, data, sums, rows, cols);"
                         for i in range(kernels))
    return "#include <hip/hip_runtime.h>\n#include <cstdio>\n#include <vector>\n" + body + MAIN.format(launches=launches)


class Rounds:
    """Measurement double: kernel k takes 10 + k ms, hand-unrolled copies make it faster by a gain
    that depends on k (some slower, most not different), times seeded noise per round."""

    signature = "(unsigned char const*, unsigned int*, int, int)"

    def __init__(self, kernels: int, cv: float = 0.02):
        self.kernels = kernels
        self.cv = cv

    def __call__(self, exe: Path, round_dir: Path, key: str):
        from rocm_perf.optimize.measure import RoundResult, output_fingerprint

        text = Path(exe).read_text()
        seed = hashlib.sha256((key + hashlib.sha256(text.encode()).hexdigest()).encode()).hexdigest()
        rng = random.Random(int(seed[:16], 16))
        noise = math.exp(rng.gauss(0.0, self.cv))
        ns = {}
        for i in range(self.kernels):
            segment = text.split(f"__global__ void k{i:02d}(", 1)[1].split("__global__", 1)[0]
            copies = segment.count("acc += ")
            gain = (0.06, 0.0, -0.03, 0.0)[i % 4]
            pragma = re.search(r"#pragma unroll (\d+)", segment)
            base = (10.0 + i) * (1 - gain * math.log2(copies - 1) if copies > 1 else
                                 1.05 if pragma and pragma.group(1) == "1" else 1.0)
            ns[f"k{i:02d}{self.signature}"] = base * noise * 1e6
        total = sum(ns.values())
        return RoundResult(True, "", total, total, ns, {k: v / total for k, v in ns.items()},
                           {**output_fingerprint(0, ["sums"], "PASS\n", r"(?!)"), "median_path_ns": total})


def one_run(trials: int, kernels: int, work: Path) -> dict:
    from test_optimize_loop import TOOLS, CopyBuildDouble
    from rocm_perf.optimize.command import create_run
    from rocm_perf.optimize.loop import DONE, OptimizeLoop, Services
    from rocm_perf.optimize.options import OptimizeOptions
    from rocm_perf.report.html import write_run_reports

    source = work / "many_loops.cu"
    source.write_text(program(kernels))
    opt = OptimizeOptions(source=source, out=work / "runs", backend="host", compile_check="off",
                          kernels=[f"k{i:02d}" for i in range(kernels)], max_trials=trials, rounds=4, max_rounds=10,
                          aa_rounds=6, jobs=1)
    run_dir, ledger = create_run(opt, "copy-double", "build double, injected measurements", ["bench"])
    c0 = time.process_time()
    loop = OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), Rounds(kernels), TOOLS, None))
    assert loop.run() == DONE
    run_cpu = time.process_time() - c0
    run_peak = _peak_mb()
    c1 = time.process_time()
    write_run_reports(run_dir)
    report_cpu = time.process_time() - c1
    measured = sum(1 for _ in ledger.trials()) if hasattr(ledger, "trials") else -1
    return {"trials": trials, "measured": measured, "run_cpu": run_cpu, "report_cpu": report_cpu,
            "run_peak_mb": run_peak, "peak_mb": _peak_mb(),
            "ledger_mb": (run_dir / "ledger.db").stat().st_size / 2**20,
            "report_mb": sum(p.stat().st_size for p in run_dir.glob("report.*")) / 2**20}


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, nargs="+", default=[25, 50, 100, 200])
    ap.add_argument("--kernels", type=int, default=32, help="loops in the generated program (7 candidates each)")
    ap.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        with tempfile.TemporaryDirectory(prefix="bench-optimize-memory-") as work:
            print(json.dumps(one_run(args.case, args.kernels, Path(work))))
        return
    print("CPU s of the run (the loop over its trials) and of the report; peak RSS of the whole process")
    print(f"{'trials':>6} {'in ledger':>9} {'run CPU s':>9} {'per trial':>9} {'report CPU s':>12} "
          f"{'peak MB (run)':>13} {'peak MB':>8} {'ledger MB':>9} {'report MB':>9}")
    for trials in args.trials:
        done = subprocess.run([sys.executable, __file__, "--case", str(trials), "--kernels", str(args.kernels)],
                              capture_output=True, text=True, cwd=ROOT, check=False)
        if done.returncode:
            print(f"{trials:>6} failed: {done.stderr.strip()[-600:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{r['trials']:>6} {r['measured']:>9} {r['run_cpu']:9.1f} {r['run_cpu'] / max(r['trials'], 1):9.2f} "
              f"{r['report_cpu']:12.1f} {r['run_peak_mb']:13.0f} {r['peak_mb']:8.0f} {r['ledger_mb']:9.1f} "
              f"{r['report_mb']:9.1f}", flush=True)


if __name__ == "__main__":
    main()
