"""Benchmark: what choosing the decision metric on the A/A pairs does to the noise floor (prints a
table; no timing).

Under `--metric auto` on the host backend, the loop's A/A pairs (10 by default) both choose the
metric (`probed-path` when its robust spread is below STEADIER_MARGIN times `cpu-path`'s) and set
the noise floor on the metric chosen. A metric chosen because its 10 pairs happened to spread little
then has a floor that reads low. This simulates it with the loop's own functions
(`steadier_metric`, `noise_floor`, `effective_min_gain`) on lognormal pairs of known spreads, the two
metrics' log ratios correlated by rho (they time the same runs), and prints per cell: how often
`probed-path` is chosen, its A/A spread over the true one (median, when chosen and over all runs),
and the min gain used when it is chosen against the one the true spread gives. Seeded.

The floor only raises the bar (`--min-gain`) that a candidate's whole interval must clear; a bar
set too low lets a race spend pairs on a gain 100 pairs cannot resolve, it does not widen what a
null candidate can pass (its own interval must still lie below 1 - bar).

Usage: .venv/bin/python tests/bench/bench_metric_choice.py [--runs 4000] [--pairs 10] [--margin 0.75]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rocm_perf.optimize import acceptance as acc  # noqa: E402

CHOICES = ["cpu-path", "probed-path"]  # options.auto_alternatives' order on the host backend
CELLS = [(0.05, 0.05), (0.10, 0.10), (0.20, 0.20), (0.10, 0.14), (0.14, 0.10), (0.20, 0.10), (0.20, 0.07)]


def one_run(rng, pairs: int, spreads: tuple[float, float], rho: float, min_gain: float, margin: float):
    """One run's A/A pairs: the metric chosen, its spread and the min gain its floor sets."""
    z = rng.standard_normal((2, pairs))
    shocks = [z[0], rho * z[0] + math.sqrt(1 - rho * rho) * z[1]]
    ones = np.ones(pairs)
    values = {m: (ones, np.exp(s * shock)) for m, s, shock in zip(CHOICES, spreads, shocks)}
    measured = {m: acc.paired_spread(b, c) for m, (b, c) in values.items()}
    chosen = acc.steadier_metric(measured, CHOICES, margin)
    b, c = values[chosen]
    floor = acc.noise_floor(b, c)
    return chosen, measured, acc.effective_min_gain(min_gain, floor)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4000, help="simulated runs per cell")
    ap.add_argument("--pairs", type=int, default=10, help="A/A pairs per run (the loop's --aa-rounds)")
    ap.add_argument("--min-gain", type=float, default=0.02)
    ap.add_argument("--margin", type=float, default=acc.STEADIER_MARGIN, help="steadier_metric's margin")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    tail = 0.025
    print(f"# {args.runs} simulated runs per cell, {args.pairs} A/A pairs each; margin {args.margin}; "
          f"min gain {args.min_gain:.0%}; spread = robust sd of one pair's log ratio")
    print()
    print("| true spread cpu / probed | rho | probed chosen | its A/A spread / true: chosen, all (sd over all) "
          "| min gain used when chosen (median) | min gain at the true spread |")
    print("|---|---:|---:|---|---:|---:|")
    for spreads in CELLS:
        for rho in (0.0, 0.5):
            chosen_ratio, all_ratio, gains = [], [], []
            for _ in range(args.runs):
                chosen, measured, gain = one_run(rng, args.pairs, spreads, rho, args.min_gain, args.margin)
                all_ratio.append(measured["probed-path"] / spreads[1])
                if chosen == "probed-path":
                    chosen_ratio.append(measured["probed-path"] / spreads[1])
                    gains.append(gain)
            true_gain = max(args.min_gain, math.expm1(acc.log_half_width(spreads[1], 100, tail)))
            share = len(chosen_ratio) / args.runs
            sel = f"{np.median(chosen_ratio):.2f}" if chosen_ratio else "-"
            used = f"{np.median(gains):.2%}" if gains else "-"
            print(f"| {spreads[0]:.0%} / {spreads[1]:.0%} | {rho:.1f} | {share:.0%} | {sel}, {np.median(all_ratio):.2f} ({np.std(all_ratio):.2f}) "
                  f"| {used} | {true_gain:.2%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
