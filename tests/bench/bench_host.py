"""Host backend benchmark: per corpus program, the per-launch time of its heaviest kernel, the
tracer's overhead against an untraced build (-DROCM_PERF_NO_TRACE), and the run-to-run spread
of per-round medians.

    .venv/bin/python tests/bench/bench_host.py [--rounds 5] [--threads 1] [--only NAME ...]

Traced and untraced runs are interleaved (T U T U ...) so that drift of a shared machine hits
both alike. Wall times include process start; the overhead column is the ratio of medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.process import run  # noqa: E402
from rocm_perf.trace.load import load_trace  # noqa: E402


def cv(values: list[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 and len(values) > 1 else 0.0


def bench_program(source: Path, work: Path, rounds: int, threads: int) -> dict:
    backend = HostBackend(threads=threads)
    traced = backend.build(source, work / "traced")
    untraced = backend.build(source, work / "untraced", ["-DROCM_PERF_NO_TRACE"])
    per_round_medians: list[float] = []
    traced_wall: list[float] = []
    untraced_wall: list[float] = []
    launches = 0
    heaviest = ""
    for r in range(rounds):
        result = backend.profile([str(traced.executable)], work / f"round_{r}", timeout=600)
        if result.returncode != 0 or not result.databases:
            raise RuntimeError(f"{source.name}: round {r} failed (exit {result.returncode}): {result.stdout[-300:]}")
        traced_wall.append(result.wall_s)
        trace = load_trace(result.databases[0])
        totals = np.bincount(trace.kernel, weights=trace.duration, minlength=len(trace.symbols))
        k = int(np.argmax(totals))
        heaviest = trace.symbols[k].display_name.split("(")[0]
        durations = trace.duration[trace.kernel == k]
        launches = len(durations)
        per_round_medians.append(float(np.median(durations)))
        plain = run([str(untraced.executable)], timeout=600, env={"ROCM_PERF_HOST_THREADS": str(threads)})
        if plain.returncode != 0:
            raise RuntimeError(f"{source.name}: untraced run failed (exit {plain.returncode})")
        untraced_wall.append(plain.wall_s)
    return {
        "program": source.stem,
        "kernel": heaviest,
        "launches": launches,
        "per_launch_ms": statistics.median(per_round_medians) / 1e6,
        "traced_s": statistics.median(traced_wall),
        "untraced_s": statistics.median(untraced_wall),
        "overhead": statistics.median(traced_wall) / statistics.median(untraced_wall) - 1.0,
        "spread_cv": cv(per_round_medians),
    }


LAUNCH_LOOP = r"""
#include <hip/hip_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
__global__ void tiny(int* x) { x[threadIdx.x] += 1; }
int main(int argc, char** argv) {
    int n = std::atoi(argv[1]);
    int* d;
    hipMalloc(&d, 64 * sizeof(int));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) tiny<<<1, 64>>>(d);
    hipDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    std::printf("loop_us %.3f\n", std::chrono::duration<double, std::micro>(t1 - t0).count());
    int h[64];
    hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost);
    std::printf("checksum %d\n", h[0]);
    return h[0] == n ? 0 : 1;
}
"""


def tracer_cost_per_launch(work: Path, rounds: int, launches: int = 20000) -> dict[str, float]:
    """Microseconds per launch, traced and untraced, from a loop of tiny launches (medians):
    inside the program's launch loop, and for the whole process (which includes writing the log)."""
    source = work / "launch_loop.cu"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(LAUNCH_LOOP)
    backend = HostBackend(threads=1)
    traced = backend.build(source, work / "traced")
    untraced = backend.build(source, work / "untraced", ["-DROCM_PERF_NO_TRACE"])
    walls: dict[str, list[float]] = {"traced": [], "untraced": []}
    loops: dict[str, list[float]] = {"traced": [], "untraced": []}
    for r in range(rounds):
        for kind, exe in (("traced", traced.executable), ("untraced", untraced.executable)):
            env = {"ROCM_PERF_HOST_THREADS": "1"}
            if kind == "traced":
                env["ROCM_PERF_HOST_LOG"] = str(work / f"log_{r}.jsonl")
            done = run([str(exe), str(launches)], timeout=600, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"launch loop failed: {done.stdout} {done.stderr[-300:]}")
            walls[kind].append(done.wall_s * 1e6 / launches)
            loops[kind].append(float(done.stdout.split("loop_us")[1].split()[0]) / launches)
    return {f"{k}_{what}": statistics.median(v[k]) for what, v in (("loop", loops), ("process", walls)) for k in v}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="block-pool threads (default 1: the steady setting)")
    parser.add_argument("--only", nargs="*", default=None, help="program names (stems) to run")
    args = parser.parse_args()
    sources = sorted((ROOT / "kernels").glob("*.cu")) or sorted((ROOT / "tests" / "data" / "host").glob("*.cu"))
    if args.only:
        sources = [s for s in sources if s.stem in args.only]
    print(f"host backend, {args.threads} block thread(s), {args.rounds} rounds; machine load affects every column")
    header = f"{'program':<18} {'heaviest kernel':<22} {'launches':>8} {'per launch ms':>14} {'traced s':>9} " \
             f"{'untraced s':>10} {'tracer overhead':>16} {'CV of round medians':>20}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="bench_host_") as tmp:
        c = tracer_cost_per_launch(Path(tmp) / "launch_loop", args.rounds)
        print(f"20000 tiny launches, us per launch: in the launch loop {c['traced_loop']:.2f} traced vs "
              f"{c['untraced_loop']:.2f} untraced; whole process (incl. writing the log at exit) "
              f"{c['traced_process']:.2f} vs {c['untraced_process']:.2f}")
        for source in sources:
            if source.stem.startswith("unsupported") or source.stem == "misuse":
                continue
            row = bench_program(source, Path(tmp) / source.stem, args.rounds, args.threads)
            print(f"{row['program']:<18} {row['kernel'][:22]:<22} {row['launches']:>8} {row['per_launch_ms']:>14.3f} "
                  f"{row['traced_s']:>9.3f} {row['untraced_s']:>10.3f} {row['overhead'] * 100:>15.1f}% "
                  f"{row['spread_cv'] * 100:>19.2f}%", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
