"""Benchmark: the run report's size and drawing time as candidates and dispatches grow.

Goal (issue 20): the page of a run with 30 candidates stays under 2 MB (the browser test asserts
it on a real loop's ledger); here the same page for 10 to 200 candidates, and with a baseline
profile of 1228 dispatches (tests/data/mytrace.rpd.gz, a real PyTorch run) whose timeline is
drawn as time bins. Candidates are synthetic records (a RunView built here), so only the report is
measured. Prints a table; asserts nothing. CPU seconds are steadier than wall on a shared machine.

Run: .venv/bin/python tests/bench/bench_report.py
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from rocm_perf.optimize.run_view import KernelTime, RoundPoint, RunView, TrialView
from rocm_perf.report.html import build_report, render_html, render_markdown

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "tests" / "data" / "mytrace.rpd.gz"
REASONS = ["not significant", "inconclusive", "slower", "superseded", "guard: barrier under a non-uniform trip"]


def synthetic_run(candidates: int, with_profile: bool) -> RunView:
    rng = random.Random(candidates)
    trials = []
    for i in range(1, candidates + 1):
        accepted = i % 12 == 5
        ratio = rng.uniform(0.85, 0.92) if accepted else rng.uniform(0.95, 1.08)
        half = rng.uniform(0.01, 0.05)
        rounds = [RoundPoint(phase, k, role, 1e6 * (1.0 if role == "B" else ratio) * rng.uniform(0.98, 1.02))
                  for phase in (("screen", "confirm") if accepted else ("screen",)) for k in range(rng.randint(5, 30))
                  for role in ("B", "C")]
        trials.append(TrialView(
            id=str(i), kernel=f"kernel_{i % 5}", loop_id=f"kernel_{i % 5}:kernel_{i % 5}:1:{10 + i % 5}",
            rule=("unroll_manual", "unroll_pragma")[i % 2], factor=(2, 4, 8)[i % 3],
            decision="accepted" if accepted else "rejected", reason="significant gain" if accepted else REASONS[i % 5],
            diff="--- a/x.cu\n+++ b/x.cu\n@@ -1,3 +1,4 @@\n-for (int c = 0; c < n; ++c)\n+#pragma unroll 4\n+for (int c = 0; c < n; ++c)\n",
            ratio=ratio, ratio_low=ratio - half, ratio_high=ratio + half, phase="confirm" if accepted else "screen",
            rounds=rounds))
    return RunView(name=f"bench-{candidates}", path=ROOT, backend="host", state="done", trials=trials,
                   baseline_ns=1e6, final_ns=0.9e6, ratio=0.9, ratio_low=0.88, ratio_high=0.92, confidence=0.95,
                   effective_min_gain=0.02, min_gain=0.02, noise_floor=0.015,
                   kernel_times=[KernelTime(f"kernel_{k}", 2e5, 1.8e5) for k in range(5)],
                   baseline_profiles=[PROFILE] if with_profile else [])


def main() -> None:
    print(f"{'candidates':>10} {'profile':>8} {'figures':>8} {'draw s (cpu)':>14} {'html KiB':>9} {'md KiB':>7} {'figures KiB':>12}")
    for candidates in (10, 30, 100, 200):
        for with_profile in (False, True):
            view = synthetic_run(candidates, with_profile)
            t0, c0 = time.perf_counter(), time.process_time()
            report = build_report(view)
            html = render_html(view, report)
            md = render_markdown(view, report)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            files = sum(len(f.file_text().encode()) for f in report.figures())
            print(f"{candidates:>10} {'1228' if with_profile else '-':>8} {len(report.figures()):>8} "
                  f"{wall:>6.2f} ({cpu:>5.2f}) {len(html.encode()) / 1024:>9.0f} {len(md.encode()) / 1024:>7.1f} {files / 1024:>12.0f}")


if __name__ == "__main__":
    main()
