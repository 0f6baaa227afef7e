"""Benchmark: `rocm-perf summary` on generated rocpd v3 databases of 10k, 100k and 1M dispatches.

Each database is written by our own writer (write_rocpd, the fixtures' schema) from a synthetic
trace: 4 streams, 40 kernels with skewed popularity, a launch call per dispatch optional.
Each measurement runs in a fresh subprocess, so peak RSS is that of the measured work alone:
- summary: load_trace + the kernel/category/agent tables + the --out files (what the command does)
- plain SELECT: `SELECT * FROM rocpd_kernel_dispatch` fetched with sqlite3 (the floor for any reader)
Goal: summary within 3x of the plain SELECT at 1M dispatches.

Run: .venv/bin/python tests/bench/bench_summary.py [--sizes 10000 100000 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.trace import Agent, KernelSymbol, Trace  # noqa: E402
from rocm_perf.trace.rocpd_write import write_rocpd  # noqa: E402

N_KERNELS = 40

_SUMMARY = """
import io, json, sys, tempfile, time, contextlib
from pathlib import Path
t0 = time.perf_counter()
from rocm_perf.report.summary import run_summary
with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
    code = run_summary(Path(sys.argv[1]), out=Path(out), as_json=False, top=20)
wall = time.perf_counter() - t0
print(json.dumps({"s": wall, "rss_mb": peak_mb(), "code": code}))
"""

_SELECT = """
import json, sqlite3, sys, time
t0 = time.perf_counter()
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT * FROM rocpd_kernel_dispatch").fetchall()
wall = time.perf_counter() - t0
print(json.dumps({"s": wall, "rss_mb": peak_mb(), "rows": len(rows)}))
"""

_BASELINE = """
import json
print(json.dumps({"rss_mb": peak_mb()}))
"""


def synthetic_trace(n: int, seed: int = 1) -> Trace:
    """n dispatches on 4 streams of one GPU, back to back per stream with small gaps."""
    rng = np.random.default_rng(seed)
    symbols = [
        KernelSymbol(f"_Z8kernel{i:02d}Pfi.kd", f"kernel{i:02d}(float*, int)", vgpr=16 + i, agpr=0, sgpr=20,
                     lds_bytes=0 if i % 3 else 4096, scratch_bytes=0)
        for i in range(N_KERNELS)
    ]
    weights = 1.0 / np.arange(1, N_KERNELS + 1)
    kernel = rng.choice(N_KERNELS, size=n, p=weights / weights.sum()).astype(np.int32)
    duration = rng.integers(2_000, 200_000, size=n)
    gap = rng.integers(500, 5_000, size=n)
    stream = rng.integers(0, 4, size=n)
    start = np.empty(n, dtype=np.int64)
    for s in range(4):  # each stream runs its dispatches one after another
        idx = np.flatnonzero(stream == s)
        ends = np.cumsum(duration[idx] + gap[idx])
        start[idx] = 1_000_000_000 + ends - duration[idx]
    grid = np.column_stack([rng.integers(1, 4096, size=n) * 256, np.ones(n, np.int64), np.ones(n, np.int64)])
    wg = np.column_stack([np.full(n, 256), np.ones(n, np.int64), np.ones(n, np.int64)])
    return Trace.from_rows(
        start=start, end=start + duration, kernel=kernel, symbols=symbols, agent=np.full(n, 2),
        queue=stream + 1, stream=stream, corr=np.arange(1, n + 1), grid=grid, workgroup=wg,
        agents=[Agent(1, "CPU", "cpu"), Agent(2, "GPU", "gfx942", product="AMD Instinct MI300X", cu_count=304)],
    )


# VmHWM is this process's own peak RSS; ru_maxrss would also count the parent's memory at fork.
_PEAK = """
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""


def _run(code: str, db: Path | None) -> dict:
    argv = [sys.executable, "-c", _PEAK + code] + ([str(db)] if db else [])
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    ap.add_argument("--keep", type=Path, help="keep the generated databases here")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-summary-"))
    work.mkdir(parents=True, exist_ok=True)
    python_rss = _run(_BASELINE, None)["rss_mb"]
    print(f"python interpreter alone: {python_rss:.0f} MB peak RSS")
    header = f"{'dispatches':>10} | {'write s':>8} | {'db MB':>6} | {'SELECT s':>8} | {'SELECT MB':>9} | " \
             f"{'summary s':>9} | {'summary MB':>10} | {'ratio':>5}"
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        db = work / f"bench_{n}.db"
        t0 = time.perf_counter()
        write_rocpd(synthetic_trace(n), db, command="bench", hostname="bench-host", pid=1)
        write_s = time.perf_counter() - t0
        select = min((_run(_SELECT, db) for _ in range(args.repeat)), key=lambda r: r["s"])
        summary = min((_run(_SUMMARY, db) for _ in range(args.repeat)), key=lambda r: r["s"])
        assert select["rows"] == n and summary["code"] == 0
        print(f"{n:>10,} | {write_s:>8.2f} | {db.stat().st_size / 2**20:>6.0f} | {select['s']:>8.2f} | "
              f"{select['rss_mb']:>9.0f} | {summary['s']:>9.2f} | {summary['rss_mb']:>10.0f} | "
              f"{summary['s'] / select['s']:>5.2f}")
        if not args.keep:
            db.unlink()


if __name__ == "__main__":
    main()
