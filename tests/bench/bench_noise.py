"""Benchmark: the paired noise of each decision metric on the host backend (prints tables).

The same program built twice (A/A), measured in interleaved pairs as the loop measures; for each
metric the spread of the paired log ratios (1.4826 x MAD, about the CV of one pair's ratio; the
plain sd beside it), for pairs run apart (one after the other) with block workers pinned or not,
and run together (both at once, their kernels pinned to one CPU: --pairing together), on the
machine as it is ("idle": nothing started by this benchmark) and with `--busy` (default 2) busy
processes beside it ("loaded"). The three ways alternate pair by pair, so all meet the same machine.

A second table: what the warm-up run does, i.e. how far each program's first timed round after
its build lies from its own later rounds, with and without one untimed run before it.

Usage: .venv/bin/python tests/bench/bench_noise.py [--pairs 30] [--busy 2] [--builds 6] [--program FILE.cu]
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

from busy_load import busy_processes, machine_load, steal_ticks  # noqa: E402
from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.interleaved import pair_order  # noqa: E402
from rocm_perf.optimize.measure import (METRIC_CPU_PATH, METRIC_CRITICAL_PATH, METRIC_CYCLES,  # noqa: E402
                                        METRIC_INSTRUCTIONS, METRIC_MEDIAN_PATH, METRIC_PROBED_PATH, ProfiledRounds,
                                        metric_of)

PROGRAM = ROOT / "tests" / "data" / "programs" / "bench_twin.cu"
ROWS = [(METRIC_CRITICAL_PATH, "wall path (critical-path)"), (METRIC_MEDIAN_PATH, "wall path at kernel medians (median-path)"),
        (METRIC_CPU_PATH, "CPU-time path (cpu-path)"), (METRIC_PROBED_PATH, "CPU-time path / speed probe (probed-path)"),
        (METRIC_INSTRUCTIONS, "instructions"), (METRIC_CYCLES, "cycles")]


def runner_for(backend: HostBackend, work: Path, warmup: int) -> ProfiledRounds:
    return ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=120, cwd=work, timing_lines=r"(?!)",
                          keep_profiles=lambda key: False, warmup=warmup)


def values(result) -> dict[str, float]:
    if not result.ok:
        raise SystemExit(f"a round failed ({result.failure}): {result.outputs.get('stderr_tail', '')}")
    return {m: metric_of(result.cp_ns, result.outputs, m) for m, _ in ROWS}


# How a pair runs: apart (one after the other) unpinned or pinned, or together (at once, their
# kernels pinned to one CPU: measure.ProfiledRounds.together, the host backend's --pairing auto).
WAYS = [("apart", False, "apart, unpinned"), ("apart", True, "apart, pinned"), ("together", True, "together")]


def noise_table(a: Path, a2: Path, work: Path, pairs: int, busy: int) -> None:
    runners = {way: runner_for(HostBackend(pin=way[1]), work, warmup=1) for way in WAYS}
    cells: dict[tuple[str, tuple, str], str] = {}
    notes = []
    for load, count in (("idle", 0), ("loaded", busy)):
        with busy_processes(count):
            steal0, t0 = steal_ticks(), time.time()
            load_text = machine_load()
            series = {way: {m: ([], []) for m, _ in ROWS} for way in runners}
            for i in range(pairs):
                for way, runner in runners.items():
                    order = pair_order(i, str(a), str(a2))
                    tag = f"{load}-{way[2].replace(', ', '-')}-{i}"
                    if way[0] == "together":
                        ran = runner.together([(Path(exe), work / f"{tag}-{role}", f"{i}-{role}") for role, exe in order])
                    else:
                        ran = [runner(Path(exe), work / f"{tag}-{role}", f"{i}-{role}") for role, exe in order]
                    got = {role: values(r) for (role, _), r in zip(order, ran)}
                    for m, _ in ROWS:
                        if got["B"][m] is not None and got["C"][m] is not None:
                            series[way][m][0].append(got["B"][m])
                            series[way][m][1].append(got["C"][m])
            for way in runners:
                for m, _ in ROWS:
                    b, c = series[way][m]
                    if len(b) < pairs:
                        cells[(load, way, m)] = "n/a"
                        continue
                    x = acc.log_ratios(b, c)
                    cells[(load, way, m)] = f"{acc.paired_spread(b, c) * 100:.2f} ({np.std(x, ddof=1) * 100:.2f})"
            notes.append(f"{load}: {count} busy processes started here; {load_text} at the start; "
                         f"steal {steal_ticks() - steal0} ticks; {time.time() - t0:.0f} s")
    print(f"\n## 1. Paired noise, {pairs} A/A pairs per cell: robust sd of the log ratio in % (plain sd)\n")
    print("| metric | " + " | ".join(f"{label}, {load}" for load in ("idle", "loaded") for _, _, label in WAYS) + " |")
    print("|---|" + "---:|" * (2 * len(WAYS)))
    for m, label in ROWS:
        print(f"| {label} | " + " | ".join(cells[(load, way, m)] for load in ("idle", "loaded") for way in WAYS) + " |")
    print("\n" + "\n".join(f"- {n}" for n in notes))


def warmup_table(backend: HostBackend, work: Path, builds: int, later: int = 4) -> None:
    """Per metric: median over fresh builds of |first timed round / median of the next `later| - 1|."""
    gaps: dict[int, dict[str, list[float]]] = {0: {m: [] for m, _ in ROWS}, 1: {m: [] for m, _ in ROWS}}
    for k in range(builds):
        for warmup in (0, 1):
            exe = backend.build(PROGRAM, work / f"fresh-{k}-{warmup}", [f"-DBUILD_TAG={k * 2 + warmup}"]).executable
            runner = runner_for(backend, work, warmup)
            rounds = [values(runner(exe, work / f"w{k}-{warmup}-{i}", f"{i}")) for i in range(1 + later)]
            for m, _ in ROWS:
                if rounds[0][m] is None:
                    continue
                rest = float(np.median([r[m] for r in rounds[1:]]))
                gaps[warmup][m].append(abs(rounds[0][m] / rest - 1))
    print(f"\n## 2. The first timed round after a build, against the same program's next {later} rounds "
          f"(median |ratio - 1| over {builds} fresh builds, %)\n")
    print("| metric | no warm-up | one untimed warm-up run |")
    print("|---|---:|---:|")
    for m, label in ROWS:
        cell = lambda w: f"{np.median(gaps[w][m]) * 100:.2f}" if gaps[w][m] else "n/a"  # noqa: E731
        print(f"| {label} | {cell(0)} | {cell(1)} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=30, help="A/A pairs per cell (default 30)")
    ap.add_argument("--busy", type=int, default=2, help="busy processes in the loaded columns (default 2)")
    ap.add_argument("--builds", type=int, default=6, help="fresh builds for the warm-up table (default 6; 0 skips it)")
    ap.add_argument("--program", type=Path, default=PROGRAM, help="the .cu program (default: bench_twin.cu)")
    args = ap.parse_args()

    backend = HostBackend()
    work = Path(tempfile.mkdtemp(prefix="bench_noise-"))
    t0 = time.time()
    a = backend.build(args.program, work / "a", []).executable
    a2 = backend.build(args.program, work / "a2", []).executable
    print(f"# paired noise on {backend.describe()}; program {args.program.name}; {machine_load()}; "
          f"clocks: {backend.dispatch_clocks()}")
    noise_table(a, a2, work, args.pairs, args.busy)
    if args.builds:
        warmup_table(backend, work, args.builds)
    print(f"\n(total {time.time() - t0:.0f} s; work dir {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
