"""Benchmark: reading PyTorch profiler (Kineto) traces, and the commands built on them.

Goal (issue 16): under 3 s to read one A100 trace of the control/test pair (about 109k events).
Each measurement runs in a fresh subprocess (no warm caches, its own peak RSS); the table shows
the median of --repeat runs in wall seconds and, in parentheses, CPU seconds (steadier on a shared
machine), and for comparison the floor any reader pays: gunzip + json.loads of the same file.

Run: .venv/bin/python tests/bench/bench_kineto.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "torch-trace"
TRACES = ["a100_control.json.gz", "a100_test.json.gz", "mi250_minitoy_train_ROCm6_2_kineto.json.gz"]

_MEASURE = """
import gzip, json, resource, sys, time
from pathlib import Path
path = Path(sys.argv[1]); what = sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
events = None
if what == "json":
    events = len(json.loads(gzip.decompress(path.read_bytes()))["traceEvents"])
elif what == "read":
    from rocm_perf.trace.load import load_trace
    t = load_trace(path)
    events = len(t)
elif what == "triage":
    import contextlib, io
    from rocm_perf.report.triage_report import run_triage
    with contextlib.redirect_stdout(io.StringIO()):
        run_triage(path)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": rss, "n": events}))
"""


def measure(path: Path, what: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", _MEASURE, str(path), what], capture_output=True, text=True,
                              cwd=ROOT, check=True)
        runs.append(json.loads(done.stdout))
    return {k: statistics.median(r[k] for r in runs) if k != "n" else runs[0][k] for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'trace':44} {'step':8} {'wall s':>8} {'(cpu s)':>9} {'RSS MB':>8}  result")
    for name in TRACES:
        path = DATA / name
        for what in ("json", "read", "triage"):
            r = measure(path, what, args.repeat)
            result = {"json": f"{r['n']} events", "read": f"{r['n']} dispatches", "triage": ""}[what]
            goal = "  (goal < 3 s)" if what == "read" and name.startswith("a100") else ""
            print(f"{name:44} {what:8} {r['wall']:8.2f} ({r['cpu']:7.2f}) {r['rss_mb']:8.0f}  {result}{goal}")


if __name__ == "__main__":
    main()
