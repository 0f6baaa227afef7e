"""What lock-step warps cost on the host backend, and what they cost programs that use none.

    .venv/bin/python tests/bench/bench_warp.py [--rounds 7] [--before main] [--only stencil2d ...]

Table 1, warp-op cost: kernels that do K warp operations per thread in a loop (and the same
loop without them), per lane and operation: (time with the ops - time without) / (threads x K).
`__syncthreads()` in the same loop is the reference: the block barrier of round-robin fibers.

Table 2, programs without warp operations before and after: corpus programs (kernels/) built
with the runtime of `--before` (a git ref, default main; its whole rocm_perf package, so its
pre-pass too) and with this checkout's, run interleaved (B A B A ...), per-launch time of the
heaviest kernel (median over launches, then over rounds). One block-pool thread, the steady
setting. Nothing is asserted: machine load moves every number; read the ratio column.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.trace.load import load_trace  # noqa: E402

WARP_OPS = {
    "none (loop only)": "acc += acc * 3 + i;",
    "__shfl_xor": "acc += __shfl_xor(acc, (i & 31) + 1);",
    "__shfl_down (double)": "acc += static_cast<int>(__shfl_down(static_cast<double>(acc), 1));",
    "__ballot": "acc += static_cast<int>(__ballot(acc & 1) & 0xff);",
    "__syncwarp": "__syncwarp(); acc += i;",
    "tile<16>.shfl_down": "acc += tile.shfl_down(acc, 1);",
    "__syncthreads (reference)": "__syncthreads(); acc += i;",
}

MICRO = r"""
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
namespace cg = cooperative_groups;
__global__ void ops(int* out, int k) {
    auto tile = cg::tiled_partition<16>(cg::this_thread_block());
    (void)tile;
    int acc = threadIdx.x;
    for (int i = 0; i < k; ++i) { BODY }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
int main(int argc, char** argv) {
    const int k = std::atoi(argv[1]), blocks = 64, threads = 256;
    int* d;
    hipMalloc(&d, blocks * threads * sizeof(int));
    for (int r = 0; r < 3; ++r) ops<<<blocks, threads>>>(d, k);
    hipDeviceSynchronize();
    return 0;
}
"""


def kernel_ms(db: Path, name: str | None = None) -> float:
    """Median per-launch milliseconds of `name` (or of the heaviest kernel) in one profile."""
    trace = load_trace(db)
    totals = np.bincount(trace.kernel, weights=trace.duration, minlength=len(trace.symbols))
    k = int(np.argmax(totals))
    if name is not None:
        k = next(i for i, s in enumerate(trace.symbols) if s.display_name.split("(")[0] == name)
    return float(np.median(trace.duration[trace.kernel == k])) / 1e6


def warp_op_costs(work: Path, rounds: int, k: int = 64) -> list[tuple[str, float, float]]:
    backend = HostBackend(threads=1)
    rows = []
    programs = {}
    for label, body in WARP_OPS.items():
        source = work / f"op_{len(programs)}.cu"
        source.write_text(MICRO.replace("BODY", body))
        programs[label] = backend.build(source, work / f"build_{len(programs)}").executable
    times: dict[str, list[float]] = {label: [] for label in programs}
    for r in range(rounds):
        for label, exe in programs.items():
            result = backend.profile([str(exe), str(k)], work / f"run_{r}_{abs(hash(label))}", timeout=600)
            if result.returncode != 0 or not result.databases:
                raise RuntimeError(f"{label}: failed: {result.stderr[-300:]}")
            times[label].append(kernel_ms(result.databases[0], "ops"))
    base = statistics.median(times["none (loop only)"])
    lane_ops = 64 * 256 * k
    for label, values in times.items():
        ms = statistics.median(values)
        rows.append((label, ms, (ms - base) * 1e6 / lane_ops if label != "none (loop only)" else 0.0))
    return rows


def build_before(ref: str, work: Path, source: Path, out: Path) -> Path:
    """`source` built by the rocm_perf package as it is at git ref `ref`."""
    tree = work / f"package_{ref.replace('/', '_')}"
    if not tree.is_dir():
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "rocm_perf"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    code = ("import sys; from pathlib import Path; from rocm_perf.backends.host import HostBackend; "
            "print(HostBackend(threads=1).build(Path(sys.argv[1]), Path(sys.argv[2])).executable)")
    done = subprocess.run([sys.executable, "-c", code, str(source), str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


def before_after(work: Path, ref: str, rounds: int, only: list[str] | None) -> list[tuple[str, str, float, float]]:
    backend = HostBackend(threads=1)
    sources = sorted((ROOT / "kernels").glob("*.cu"))
    if only:
        sources = [s for s in sources if s.stem in only]
    rows = []
    for source in sources:
        before = build_before(ref, work, source, work / f"{source.stem}_before")
        after = backend.build(source, work / f"{source.stem}_after").executable
        times: dict[str, list[float]] = {"before": [], "after": []}
        heaviest = ""
        for r in range(rounds):
            for kind, exe in (("before", before), ("after", after)):
                result = backend.profile([str(exe)], work / f"{source.stem}_{kind}_{r}", timeout=600)
                if result.returncode != 0 or not result.databases:
                    raise RuntimeError(f"{source.name} ({kind}): failed: {result.stdout[-300:]}")
                trace = load_trace(result.databases[0])
                totals = np.bincount(trace.kernel, weights=trace.duration, minlength=len(trace.symbols))
                heaviest = trace.symbols[int(np.argmax(totals))].display_name.split("(")[0]
                times[kind].append(kernel_ms(result.databases[0]))
        rows.append((source.stem, heaviest, statistics.median(times["before"]), statistics.median(times["after"])))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", default="main", help="git ref whose runtime is 'before' (default: main)")
    parser.add_argument("--only", nargs="*", default=None, help="corpus programs (stems) for table 2")
    parser.add_argument("--skip-before-after", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_warp_") as tmp:
        work = Path(tmp)
        print(f"host backend, 1 block thread, {args.rounds} rounds, 64 blocks x 256 threads x 64 ops per thread\n")
        print("| operation | kernel ms (median) | ns per lane and op (minus the loop) |")
        print("|---|---:|---:|")
        for label, ms, ns in warp_op_costs(work, args.rounds):
            print(f"| {label} | {ms:.2f} | {ns:.1f} |")
        if args.skip_before_after:
            return 0
        print(f"\nprograms without warp operations: runtime of `{args.before}` (before) and of this checkout (after)\n")
        print("| program | heaviest kernel | before ms | after ms | after / before |")
        print("|---|---|---:|---:|---:|")
        for program, kernel, before, after in before_after(work, args.before, args.rounds, args.only):
            print(f"| {program} | {kernel} | {before:.3f} | {after:.3f} | {after / before:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
