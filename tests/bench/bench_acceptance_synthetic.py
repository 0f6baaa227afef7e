"""Benchmark: the acceptance protocol on simulated paired rounds (prints tables; no timing).

Real host measurements on a shared machine say what the protocol does there; this says what it
does at a known noise level: per-round lognormal noise of spread s on each member of a pair plus a
drift that hits both. Rows: false accepts over A/A sequences, power at 3/5/10 % gains, rounds per
decision, for screening alone and for screening followed by a fresh confirmation (what the loop
accepts). Seeded: every run prints the same table.

Usage: .venv/bin/python tests/bench/bench_acceptance_synthetic.py [--sequences 1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.confirmation import confirmation_test  # noqa: E402


def pairs(rng, n: int, ratio: float, spread: float):
    drift = 1.0 + 0.05 * np.sin(np.arange(n) / 3.0 + rng.uniform(0, 6.3))
    b = 100.0 * drift * np.exp(rng.normal(0, spread, n))
    c = 100.0 * ratio * drift * np.exp(rng.normal(0, spread, n))
    return list(zip(b, c))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequences", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    screen = acc.SequentialPlan(futility=True)  # the loop's rules (bench_acceptance.py says which)
    confirm = confirmation_test(screen.min_gain, screen.alpha, screen.min_rounds, screen.max_rounds).with_alpha(
        acc.confirmation_alpha(screen.alpha, 1))
    print(f"# synthetic pairs, {args.sequences} sequences per cell; min_gain 2 %, looks {screen.looks()}; "
          f"accepted = screening then a fresh confirmation at alpha {confirm.alpha}\n")
    print("| per-round spread s | true gain | passed screening | accepted | mean rounds (screening) | peers (mean of 3, > 2 %) |")
    print("|---|---|---|---|---|---|")
    for spread in (0.02, 0.05, 0.10):
        for gain in (0.0, 0.03, 0.05, 0.10):
            screened = accepted = peer = 0
            rounds = []
            for _ in range(args.sequences):
                p = pairs(rng, screen.max_rounds, 1.0 - gain, spread)
                d = acc.run_sequential(p, screen)
                rounds.append(d.rounds)
                b3 = np.mean([x for x, _ in p[:3]])
                c3 = np.mean([y for _, y in p[:3]])
                peer += c3 < 0.98 * b3
                if d.verdict == acc.ACCEPT:
                    screened += 1
                    accepted += acc.run_sequential(pairs(rng, confirm.max_rounds, 1.0 - gain, spread), confirm).verdict == acc.ACCEPT
            n = args.sequences
            print(f"| {spread:.2f} | {gain:.0%} | {screened / n:.1%} | {accepted / n:.1%} | {np.mean(rounds):.1f} | {peer / n:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
