"""Benchmark: A/A false accepts of `rocm-perf try` with patches that change nothing that matters
(prints a table).

Two no-op-in-effect patches of tests/data/programs/bench_twin.cu (or --program), each tried in whole
`rocm-perf try` runs on the host backend, every run a fresh process with the protocol's defaults:

- `renamed`: the kernel's local variable renamed. It compiles to the same machine code, so every
  run must reject it as `duplicate (no change in machine code)` without measuring it;
- `machine-code`: an early-exit test the compiler keeps (a bounds check no thread fails): the
  machine code changes, the speed does not. It must not be accepted in --runs runs (20).

The table gives, per patch, the runs, how often its build was the baseline's code, how many runs
accepted it, the rejections by reason, and the median pairs and seconds per run.

Usage: nice -n 10 .venv/bin/python tests/bench/bench_try_aa.py [--runs 20] [--renamed-runs 3] [--program P]
Progress goes to stderr, one line per run; the table to stdout. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.source.rewrite import unified_diff  # noqa: E402

PROGRAM = ROOT / "tests" / "data" / "programs" / "bench_twin.cu"


def patches(source: bytes) -> dict[str, bytes]:
    """{name: the changed program}: a renamed local, and a kept bounds check."""
    renamed = source.replace(b"unsigned h = ", b"unsigned hash = ").replace(b"h = (h ^", b"hash = (hash ^").replace(
        b"out[t] = h;", b"out[t] = hash;")
    checked = source.replace(b"    unsigned h = 2166136261u", b"    if (t < 0) return;  // no thread has t < 0\n"
                             b"    unsigned h = 2166136261u")
    assert renamed != source and checked != source, "the program is not bench_twin.cu's kernel: write its patches"
    return {"renamed": renamed, "machine-code": checked}


def try_once(source: Path, patch: Path, out: Path) -> dict:
    """One whole `rocm-perf try` run in its own process: its summary.json and seconds."""
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rocm_perf.cli", "try", str(source), "--patch", str(patch), "--backend",
                           "host", "--compile-check", "off", "--out", str(out), "--new", "--quiet", "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"try failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    summary = json.loads(done.stdout)
    summary["seconds"] = time.monotonic() - t0
    return summary


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20, help="runs of the machine-code patch (default 20)")
    ap.add_argument("--renamed-runs", type=int, default=3, help="runs of the renamed-local patch (default 3)")
    ap.add_argument("--program", type=Path, default=PROGRAM)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_try_aa-") as tmp:
        work = Path(tmp)
        source = work / args.program.name
        source.write_bytes(args.program.read_bytes())
        for name, changed in patches(source.read_bytes()).items():
            patch = work / f"{name}.diff"
            patch.write_bytes(unified_diff(Path(source.name), source.read_bytes(), changed).encode())
            runs = args.renamed_runs if name == "renamed" else args.runs
            results = []
            for k in range(runs):
                s = try_once(source, patch, work / "runs")
                [t] = s["accepted"] + s["rejected"]
                pairs = sum((t["evidence"].get(p) or {}).get("rounds", 0) for p in ("screen", "confirm"))
                results.append((t["status"], t["reason"], pairs, s["seconds"], t["detail"]))
                print(f"{name} {k + 1}/{runs}: {t['status']} {t['reason']} after {pairs} pairs, {s['seconds']:.0f} s"
                      f" ({(t['detail'] or '')[:90]})", file=sys.stderr)
            rows.append((name, results))
    print(f"# rocm-perf try A/A on {args.program.name}, host backend, the protocol's defaults; one fresh process per run\n")
    print("| patch | runs | same machine code (duplicate) | accepted | rejected by reason | median pairs | median s |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for name, results in rows:
        reasons = Counter(reason for status, reason, *_ in results if status == "rejected")
        duplicates = sum(1 for _, reason, _, _, detail in results if reason == "duplicate"
                         and detail.startswith("no change in machine code"))
        accepted = sum(1 for status, *_ in results if status == "accepted")
        print(f"| {name} | {len(results)} | {duplicates} | {accepted} | "
              + ", ".join(f"{n} {r}" for r, n in reasons.most_common())
              + f" | {statistics.median(p for _, _, p, _, _ in results):.0f} | {statistics.median(s for *_, s, _ in results):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
