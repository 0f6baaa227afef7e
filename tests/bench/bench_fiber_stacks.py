"""Benchmark: what a change to the host runtime's fiber stacks does to the paired noise of the CPU-time path.

Every kernels/ program whose kernels reach __syncthreads() runs its GPU threads on fiber stacks
(rocm_perf_host/fiber.h). Per program: the same source built twice (A/A) against each of two
runtimes, the one of another revision (`--before`, e.g. a scratch commit with the change) and
this checkout's, measured in interleaved pairs as the loop measures them (cpu-path, one warm-up
run), the two alternating pair by pair so that both meet the same machine. Columns: the robust
spread of the paired log ratios (1.4826 x MAD, about the CV of one pair's ratio) with the plain
sd beside it, and the median CPU-time path of this runtime over the other's (speed).

A smaller A/A spread is not enough to keep a change: a layout that is the same in every run is
also the same for every candidate, so a candidate that happens to suit it measures as a gain no
A/A pair can expose (docs/measurement.md: what 2 MiB-aligned stack chunks did).

Usage: .venv/bin/python tests/bench/bench_fiber_stacks.py --before REV [--pairs 30] [--busy 0] [--only NAME ...]
Not collected by pytest (no test_ functions).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import checkout_of  # noqa: E402
from busy_load import busy_processes, machine_load  # noqa: E402
import rocm_perf.backends.host as host  # noqa: E402
from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.interleaved import pair_order  # noqa: E402
from rocm_perf.optimize.measure import METRIC_CPU_PATH, ProfiledRounds, metric_of  # noqa: E402

SETTINGS = ("before", "now")


def runtime_at(rev: str) -> Path:
    """The host runtime headers of git revision `rev` (a tree unpacked by bench_search.checkout_of)."""
    return checkout_of(str(ROOT), rev) / "rocm_perf" / "backends" / "host_runtime"


def programs_with_barriers(only: list[str]) -> list[Path]:
    found = [p for p in sorted((ROOT / "kernels").glob("*.cu")) if "__syncthreads" in p.read_text()]
    return [p for p in found if not only or p.stem in only]


def cpu_path(result) -> float:
    if not result.ok:
        raise SystemExit(f"a round failed ({result.failure}): {result.outputs.get('stderr_tail', '')}")
    return metric_of(result.cp_ns, result.outputs, METRIC_CPU_PATH)


def bench_program(source: Path, work: Path, pairs: int, before_runtime: Path) -> dict[str, tuple[list[float], list[float]]]:
    backend = HostBackend()
    builds = {}
    for runtime in SETTINGS:
        saved = host.RUNTIME_DIR
        host.RUNTIME_DIR = before_runtime if runtime == "before" else saved
        try:
            builds[runtime] = [backend.build(source, work / f"{runtime}-{k}", []).executable for k in (1, 2)]
        finally:
            host.RUNTIME_DIR = saved
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=300, cwd=work,
                            timing_lines=r"(?!)", keep_profiles=lambda key: False)  # warms each executable once
    series: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in SETTINGS}
    for i in range(pairs):
        for name in (SETTINGS if i % 2 == 0 else SETTINGS[::-1]):
            a, a2 = builds[name]
            got = {role: cpu_path(runner(Path(exe), work / f"{name}-{i}-{role}", f"{name}-{i}-{role}"))
                   for role, exe in pair_order(i, str(a), str(a2))}
            series[name][0].append(got["B"])
            series[name][1].append(got["C"])
    return series


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=30, help="A/A pairs per program and runtime (default 30)")
    ap.add_argument("--busy", type=int, default=0, help="busy processes beside the runs (default 0)")
    ap.add_argument("--before", required=True, help="git revision of the other runtime")
    ap.add_argument("--only", nargs="*", default=[], help="program stems (default: every one with barriers)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_fiber_stacks-"))
    t0 = time.time()
    before_runtime = runtime_at(args.before)
    print(f"# fiber stacks: the runtime of {args.before} vs this checkout's; {args.pairs} A/A pairs each; {args.busy} busy processes; "
          f"{machine_load()}; clocks: {HostBackend().dispatch_clocks()}\n")
    print(f"| program | {args.before}: robust sd % (sd) | this runtime: robust sd % (sd) | speed: this / {args.before} |")
    print("|---|---:|---:|---:|")
    with busy_processes(args.busy):
        for source in programs_with_barriers(args.only):
            s = bench_program(source, work / source.stem, args.pairs, before_runtime)
            cell = {}
            for name, (b, c) in s.items():
                cell[name] = f"{acc.paired_spread(b, c) * 100:.2f} ({np.std(acc.log_ratios(b, c), ddof=1) * 100:.2f})"
            level = {name: np.median(b + c) for name, (b, c) in s.items()}
            print(f"| {source.stem} | {cell['before']} | {cell['now']} | {level['now'] / level['before']:.3f} |", flush=True)
    print(f"\n(total {time.time() - t0:.0f} s; work dir {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
