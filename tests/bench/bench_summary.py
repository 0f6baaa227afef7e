"""Benchmark: `rocm-perf summary` on generated rocpd v3 databases of 10k, 100k and 1M dispatches.

Each database is written by our own writer (write_rocpd, the fixtures' schema) from a synthetic
trace: 4 streams, 40 kernels with skewed popularity, a launch call per dispatch optional.
Each measurement runs in a fresh subprocess, so peak RSS is that of the measured work alone:
- summary: load_trace + the kernel/category/agent tables + the --out files (what the command does)
- plain SELECT: `SELECT * FROM rocpd_kernel_dispatch` fetched with sqlite3 (the floor for any reader;
  with --api also every row of rocpd_region and rocpd_arg, which the summary then reads too)
Times are wall seconds and, in parentheses, CPU seconds (steadier on a shared machine).
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

from rocm_perf.trace import Agent, ApiCalls, KernelSymbol, Trace  # noqa: E402
from rocm_perf.trace.rocpd_write import write_rocpd  # noqa: E402

N_KERNELS = 40

_SUMMARY = """
import io, json, sys, tempfile, time, contextlib
from pathlib import Path
t0, c0 = time.perf_counter(), time.process_time()
from rocm_perf.report.summary import run_summary
with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
    code = run_summary(Path(sys.argv[1]), out=Path(out), as_json=False, top=20)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"s": wall, "cpu": cpu, "rss_mb": peak_mb(), "code": code}))
"""

_SELECT = """
import json, sqlite3, sys, time
t0, c0 = time.perf_counter(), time.process_time()
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT * FROM rocpd_kernel_dispatch").fetchall()
# with an API trace the summary also reads every region and argument: so does the baseline
extra = [con.execute(f"SELECT * FROM {t}").fetchall() for t in ("rocpd_region", "rocpd_arg") if sys.argv[2] == "api"]
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"s": wall, "cpu": cpu, "rss_mb": peak_mb(), "rows": len(rows)}))
"""

_BASELINE = """
import json
print(json.dumps({"rss_mb": peak_mb()}))
"""


def synthetic_api(trace: Trace) -> ApiCalls:
    """One hipLaunchKernel per dispatch, 10 us before it, with the six arguments rocprofv3 records."""
    n = len(trace)
    handles = np.array([0, 0x55D1C0A3E2B0, 0x55D1C0A3F180, 0x55D1C0A40050])
    stream = handles[trace.stream]
    args = {
        r: {"function_address": "0x55d1b0000040", "numBlocks": "{z=1, y=1, x=1024}", "dimBlocks": "{z=1, y=1, x=256}",
            "args": "0x7ffd5a1c2e80", "sharedMemBytes": "0", "stream": hex(int(stream[r]))}
        for r in range(n)
    }
    return ApiCalls(names=["hipLaunchKernel"], name=np.zeros(n, np.int32), start=trace.start - 10_000,
                    end=trace.start - 6_000, tid=np.full(n, 1), corr=trace.corr.copy(), stream=stream,
                    event=np.full(n, -1), args=args)


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


def _run(code: str, db: Path | None, *extra: str) -> dict:
    argv = [sys.executable, "-c", _PEAK + code] + ([str(db)] if db else []) + list(extra)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    ap.add_argument("--keep", type=Path, help="keep the generated databases here")
    ap.add_argument("--api", action="store_true", help="also write a hipLaunchKernel region (6 args) per dispatch")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-summary-"))
    work.mkdir(parents=True, exist_ok=True)
    python_rss = _run(_BASELINE, None)["rss_mb"]
    print(f"python interpreter alone: {python_rss:.0f} MB peak RSS")
    header = (f"{'dispatches':>10} | {'write s':>7} | {'db MB':>5} | {'SELECT s (cpu)':>14} | {'SELECT MB':>9} | "
              f"{'summary s (cpu)':>15} | {'summary MB':>10} | {'ratio wall (cpu)':>16}")
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        db = work / f"bench_{n}{'_api' if args.api else ''}.db"
        t0 = time.perf_counter()
        trace = synthetic_trace(n)
        if args.api:
            trace.api = synthetic_api(trace)
        write_rocpd(trace, db, command="bench", hostname="bench-host", pid=1)
        del trace
        write_s = time.perf_counter() - t0
        select = min((_run(_SELECT, db, "api" if args.api else "-") for _ in range(args.repeat)), key=lambda r: r["s"])
        summary = min((_run(_SUMMARY, db) for _ in range(args.repeat)), key=lambda r: r["s"])
        assert select["rows"] == n and summary["code"] == 0
        sel = f"{select['s']:.2f} ({select['cpu']:.2f})"
        summ = f"{summary['s']:.2f} ({summary['cpu']:.2f})"
        ratio = f"{summary['s'] / select['s']:.2f} ({summary['cpu'] / select['cpu']:.2f})"
        print(f"{n:>10,} | {write_s:>7.2f} | {db.stat().st_size / 2**20:>5.0f} | {sel:>14} | {select['rss_mb']:>9.0f} | "
              f"{summ:>15} | {summary['rss_mb']:>10.0f} | {ratio:>16}")
        if not args.keep:
            db.unlink()


if __name__ == "__main__":
    main()
