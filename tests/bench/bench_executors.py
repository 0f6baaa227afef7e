"""Sweep executors: the wall time of one 4-target sweep on the host backend with the local
executor and 1, then 2 worker processes (the host backend's stand-in for devices).

    .venv/bin/python tests/bench/bench_executors.py [--workers 1 2] [--targets stencil1d row_reduce scan transpose]

Each sweep triages its targets and runs one candidate per target with few rounds (max_trials 1,
rounds 2, aa_rounds 2, no compile check). The host backend runs each program on one thread by
default, so on a machine with 2 or more cores two workers should take about half the time of
one; the table shows what they did here. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.cli import main  # noqa: E402

MANIFEST = """[defaults]
max_trials = 1
rounds = 2
max_rounds = 2
aa_rounds = 2
compile_check = "off"
metric = "median-path"
counters = "off"
"""


def sweep_once(work: Path, targets: list[str], workers: int) -> dict:
    manifest = work / f"sweep-{workers}.toml"
    manifest.write_text(MANIFEST + "".join(f'\n[[target]]\nsource = "{ROOT / "kernels" / t}.cu"\n' for t in targets))
    out = work / f"runs-{workers}"
    t0 = time.perf_counter()
    rc = main(["sweep", str(manifest), "--backend", "host", "--executor", "local", "--workers", str(workers),
               "--budget", "2h", "--out", str(out)])
    wall = time.perf_counter() - t0
    (sweep_dir,) = out.iterdir()
    db = sqlite3.connect(sweep_dir / "sweep.db")
    statuses = [s for (s,) in db.execute("SELECT status FROM targets")]
    busy = sum(e - s for s, e in db.execute("SELECT started, ended FROM tasks WHERE started IS NOT NULL AND ended IS NOT NULL"))
    devices = sorted({d for (d,) in db.execute("SELECT device FROM tasks")})
    db.close()
    return {"workers": workers, "rc": rc, "wall_s": wall, "task_s": busy, "done": statuses.count("done"),
            "targets": len(statuses), "slots": ", ".join(devices)}


def main_bench() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--targets", nargs="+", default=["stencil1d", "row_reduce", "scan", "transpose"])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-executors-") as tmp:
        for w in args.workers:
            rows.append(sweep_once(Path(tmp), args.targets, w))
    base = rows[0]["wall_s"]
    print(f"\nlocal executor, host backend, {len(args.targets)} targets ({', '.join(args.targets)}), "
          f"{os.cpu_count()} CPUs")
    print(f"{'workers':>7}  {'wall':>8}  {'speedup':>7}  {'task time':>9}  {'done':>6}  slots")
    for r in rows:
        print(f"{r['workers']:>7}  {r['wall_s']:>7.1f}s  {base / r['wall_s']:>6.2f}x  {r['task_s']:>8.1f}s  "
              f"{r['done']:>3}/{r['targets']:<2}  {r['slots']}")
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
