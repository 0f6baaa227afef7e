"""Benchmark: `summary`, `triage` and `compare` on PyTorch (Kineto) traces of a million events.

The traces are the real A100 control/test pair (tests/data/torch-trace, 109k events each) replicated
COPIES times: copy k shifts every timestamp by k times the trace's span plus a millisecond and every
correlation, External id and flow id by k times the largest id plus one, so that every copy is a new
stretch of the same program. Made once into --dir (about 310 MB of JSON each), then each command
runs in its own process under `/usr/bin/time -v`: CPU seconds (user + system, the figure that
means something on a shared machine), wall seconds and peak RSS.

    .venv/bin/python tests/bench/bench_kineto_scale.py [--copies 10] [--dir DIR] [--code TREE]

`--code TREE` runs another checkout's rocm_perf (e.g. `git archive main | tar -x -C /tmp/before`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import timed  # noqa: E402

DATA = ROOT / "tests" / "data" / "torch-trace"
ID_KEYS = ("correlation", "External id")


def replicate(source: Path, target: Path, copies: int) -> int:
    """Write `copies` shifted copies of a Kineto trace's events as one trace; returns the event count."""
    doc = json.loads(gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes())
    events = doc["traceEvents"]
    timed_events = [e for e in events if isinstance(e.get("ts"), (int, float))]
    first = min(e["ts"] for e in timed_events)
    last = max(e["ts"] + e.get("dur", 0) for e in timed_events)
    shift = (last - first) + 1000
    top = max([e["id"] for e in events if isinstance(e.get("id"), int)]
              + [e["args"][k] for e in events for k in ID_KEYS if isinstance(e.get("args"), dict)
                 and isinstance(e["args"].get(k), int)] + [0]) + 1
    out = []
    for k in range(copies):
        for e in events:
            if e.get("ph") == "M" and k:
                continue  # process and thread names once
            c = dict(e)
            if "ts" in c and isinstance(c["ts"], (int, float)):
                c["ts"] = c["ts"] + k * shift
            if isinstance(c.get("id"), int):
                c["id"] = c["id"] + k * top
            if isinstance(c.get("args"), dict):
                args = dict(c["args"])
                for key in ID_KEYS:
                    if isinstance(args.get(key), int) and args[key] >= 0:
                        args[key] += k * top
                c["args"] = args
            out.append(c)
    doc["traceEvents"] = out
    target.write_text(json.dumps(doc))
    return len(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "rocm-perf-bench-kineto")
    ap.add_argument("--code", type=Path, help="run the rocm_perf of this source tree (default: this checkout)")
    ap.add_argument("--commands", nargs="+", default=["summary", "triage", "compare"])
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    traces = {}
    for name in ("control", "test"):
        path = args.dir / f"a100_{name}_x{args.copies}.json"
        if not path.is_file():
            n = replicate(DATA / f"a100_{name}.json.gz", path, args.copies)
            print(f"made {path}: {n:,} events, {path.stat().st_size / 2**20:,.0f} MB", flush=True)
        traces[name] = path
    code = (args.code or ROOT).resolve()
    env = {**os.environ, "PYTHONPATH": str(code)}
    print(f"code: {code}; machine: {os.cpu_count()} cores; CPU s = user + system (wall s varies with load)")
    print(f"{'command':10} {'CPU s':>7} {'(user':>7} {'+ sys)':>7} {'wall s':>7} {'peak MB':>8}")
    for command in args.commands:
        argv = [sys.executable, "-m", "rocm_perf.cli", command, str(traces["control"])]
        if command == "compare":
            argv.append(str(traces["test"]))
        r, _ = timed(argv, env, cwd=code)
        print(f"{command:10} {r['user'] + r['sys']:7.1f} {r['user']:7.1f} {r['sys']:7.1f} {r['wall']:7.1f} "
              f"{r['rss_mb']:8,.0f}", flush=True)


if __name__ == "__main__":
    main()
