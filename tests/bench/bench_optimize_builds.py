"""Benchmark: the search's end-to-end time on the host backend with the runtime prebuilt
(host_prebuilt.py) and without (ROCM_PERF_PREBUILT_RUNTIME=0), on three kernels/ programs.

Per program and setting, one `rocm-perf optimize` with the same options (--max-trials, a fresh
--out, --quiet --json), run in turn with the other setting so that drift of a shared machine
hits both alike. Printed per run: wall seconds, the CPU seconds of the whole run (rocm-perf and
every compiler and program it started: children's user + system), the candidates built, the
trials measured (summary.json), and the final check's speedup when it accepted one. The prebuilt
runtime's cache entries are made first, by an uncounted run of one trial, so that no counted run
pays for them (bench_host_build.py times their making). Issue 59 asks for this before and after.
The decisions may differ between runs (a measured search on a noisy machine); what the builds
cost of the whole is what the table shows.

    .venv/bin/python tests/bench/bench_optimize_builds.py [--programs stencil2d,softmax,row_reduce]
        [--max-trials 8]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "rocm_perf"]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def optimize(program: str, prebuilt: bool, max_trials: int, out: Path) -> dict:
    env = {**os.environ, "ROCM_PERF_PREBUILT_RUNTIME": "1" if prebuilt else "0"}
    argv = [*CLI, "optimize", str(ROOT / "kernels" / f"{program}.cu"), "--backend", "host",
            "--max-trials", str(max_trials), "--out", str(out), "--quiet", "--json"]
    cpu0, wall0 = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    wall, cpu = time.perf_counter() - wall0, children_cpu() - cpu0
    if done.returncode:
        raise SystemExit(f"{program}: optimize exited {done.returncode}: {done.stderr.strip()[-600:]}")
    summary = json.loads(done.stdout)
    return {"program": program, "prebuilt": prebuilt, "wall": wall, "cpu": cpu, "summary": summary,
            "in_build": seconds_in(out / summary["run"] / "ledger.db", "build")}


def seconds_in(ledger: Path, state: str) -> float:
    """Wall seconds the run spent in one state of its ledger (optimize/states.py): the build
    state builds and compile-checks the candidates."""
    with sqlite3.connect(ledger) as db:
        times = db.execute("SELECT state, at FROM transitions ORDER BY id").fetchall()
    return sum(after - at for (name, at), (_, after) in zip(times, times[1:]) if name == state)


def described(summary: dict) -> tuple[str, str, str]:
    """Candidates built, trials measured, and the final check's gain, from summary.json."""
    search = summary.get("search") or {}
    check = summary.get("final_check") or {}
    gain = f"{1 / check['estimate']:.3f}x" if summary.get("accepted") and check.get("estimate") else "none"
    return str(search.get("builds", "?")), str(summary.get("trials", "?")), gain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="stencil2d,softmax,row_reduce")
    parser.add_argument("--max-trials", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="write each run's summary.json lines here")
    args = parser.parse_args()
    programs = [p for p in args.programs.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="bench-optimize-builds-") as tmp:
        # The cache entries (one per set of flags optimize builds with: candidates, the loop-heat
        # build with -g) made first, by a run of one trial that is not counted.
        optimize(programs[0], True, 1, Path(tmp) / "warm")
        rows = []
        for program in programs:
            for prebuilt in (False, True):
                row = optimize(program, prebuilt, args.max_trials, Path(tmp) / f"{program}-{int(prebuilt)}")
                rows.append(row)
                print(f"  {program} {'prebuilt' if prebuilt else 'whole runtime'}: {row['wall']:.1f} s wall, "
                      f"{row['cpu']:.1f} s CPU", file=sys.stderr, flush=True)
        if args.keep:
            args.keep.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print("| program | runtime | wall s | CPU s | in build state s | built | measured | accepted |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        built, measured, gain = described(row["summary"])
        print(f"| {row['program']} | {'prebuilt' if row['prebuilt'] else 'whole'} | {row['wall']:.1f} | "
              f"{row['cpu']:.1f} | {row['in_build']:.1f} | {built} | {measured} | {gain} |")
    for program in programs:
        whole, pre = [r for r in rows if r["program"] == program]
        print(f"{program}: {whole['wall'] / pre['wall']:.2f}x less wall, {whole['cpu'] / pre['cpu']:.2f}x less CPU")


if __name__ == "__main__":
    main()
