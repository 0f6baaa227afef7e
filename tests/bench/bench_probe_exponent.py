"""Benchmark: what fitting adjusted-path's exponent does to the paired noise (prints tables).

Per kernels/ program: the same source built twice (A/A), measured in interleaved pairs as the
loop measures them (one warm-up run, then pairs in the loop's order), each round reduced by the
real code to its clock paths (cpu-path, probed-path and the adjusted path at b = 0.1 ... 0.9).
Then, over random halvings of the pairs (seeded): on one half, what --metric auto chose before the
exponent (cpu-path unless probed-path's A/A spread is below 0.75 x cpu-path's:
acceptance.steadier_metric) and what it chooses now (the adjusted path at the exponent the half's
rounds fit: probe_exponent.fit_exponent); on the other half, the
paired spread of each choice (1.4826 x MAD of the log ratios, about the CV of one pair's ratio).
The mean over halvings is what a run's decisions would meet after its A/A pairs chose.

Usage:
    .venv/bin/python tests/bench/bench_probe_exponent.py [--pairs 20] [--only stencil1d,scan] [--save FILE]
    .venv/bin/python tests/bench/bench_probe_exponent.py --from FILE [--halvings 300]
`--save` writes the rounds' reductions (JSON: per program, per round its pair, role and clock
paths), `--from` tables a saved file without running anything
(tests/data/measured/probe_exponent_aa.json is one). Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.measure import METRIC_CPU_PATH, METRIC_PROBED_PATH, adjusted_metric  # noqa: E402
from rocm_perf.optimize.probe_exponent import fit_exponent  # noqa: E402


def collect(programs: list[Path], pairs: int) -> dict:
    """Each program's A/A rounds, reduced: {"machine", "pairs", "programs": {name: [round, ...]}}."""
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.optimize.interleaved import pair_order
    from rocm_perf.optimize.measure import ProfiledRounds

    backend = HostBackend()
    work = Path(tempfile.mkdtemp(prefix="bench_probe_exponent-"))
    out = {"machine": backend.describe(), "date": time.strftime("%Y-%m-%d"), "pairs": pairs, "programs": {}}
    for source in programs:
        t0 = time.time()
        a = backend.build(source, work / source.stem / "a", []).executable
        a2 = backend.build(source, work / source.stem / "a2", []).executable
        runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=300, cwd=work,
                                timing_lines=r"(?!)", keep_profiles=lambda key: False, warmup=1)
        rounds = []
        for i in range(pairs):
            for role, exe in pair_order(i, str(a), str(a2)):
                r = runner(Path(exe), work / source.stem / f"{i}-{role}", f"0-aa-{i}-{role}")
                if not r.ok:
                    raise SystemExit(f"{source.name}: a round failed ({r.failure}): {r.outputs.get('stderr_tail', '')}")
                rounds.append({"pair": i, "role": role,  # path lengths are whole ns (or counts)
                               "metrics": {m: int(round(v)) for m, v in r.outputs.get("metrics", {}).items()}})
        out["programs"][source.stem] = rounds
        print(f"# {source.stem}: {pairs} A/A pairs in {time.time() - t0:.0f} s", file=sys.stderr)
    return out


def paired_values(rounds: list[dict], metric: str, pairs: list[int]) -> tuple[list[float], list[float]] | None:
    """(baseline values, twin values) of `metric` over `pairs`; None where a round lacks it."""
    by_pair: dict[int, dict[str, float]] = {}
    for r in rounds:
        by_pair.setdefault(r["pair"], {})[r["role"]] = (r["metrics"] or {}).get(metric)
    b = [by_pair[i].get("B") for i in pairs]
    c = [by_pair[i].get("C") for i in pairs]
    if any(v is None or not v > 0 for v in b + c):
        return None
    return b, c


def spread_of(rounds: list[dict], metric: str, pairs: list[int]) -> float:
    values = paired_values(rounds, metric, pairs)
    return float("nan") if values is None else acc.paired_spread(*values)


def previous_choice(rounds: list[dict], pairs: list[int]) -> str:
    """--metric auto before the exponent: cpu-path unless probed-path is clearly steadier."""
    spreads = {m: spread_of(rounds, m, pairs) for m in (METRIC_CPU_PATH, METRIC_PROBED_PATH)}
    return acc.steadier_metric({m: s for m, s in spreads.items() if np.isfinite(s)}, [METRIC_CPU_PATH, METRIC_PROBED_PATH])


def fitted_choice(rounds: list[dict], pairs: list[int]) -> tuple[str, float | None]:
    """--metric auto now: the adjusted path at the exponent the pairs' rounds fit, each build's
    rounds a group as the loop's (the previous choice where there is no fit, or a round lacks that
    path). Also returns the slope (None without a fit)."""
    cpu, probed = paired_values(rounds, METRIC_CPU_PATH, pairs), paired_values(rounds, METRIC_PROBED_PATH, pairs)
    fit = None if cpu is None or probed is None else fit_exponent([(cpu[0], probed[0]), (cpu[1], probed[1])])
    if fit is None or paired_values(rounds, adjusted_metric(fit.exponent), pairs) is None:
        return previous_choice(rounds, pairs), None
    return adjusted_metric(fit.exponent), fit.slope


def halving_rows(data: dict, halvings: int, seed: int = 0) -> list[dict]:
    """Per program: its pairs, the slope over all of them, what auto chose over all of them before
    and now, and the mean spread each choice met on the other half over `halvings` random halvings."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, rounds in data["programs"].items():
        pairs = sorted({r["pair"] for r in rounds})
        n = len(pairs)
        now_all, slope = fitted_choice(rounds, pairs)
        before, now = [], []
        for _ in range(halvings):
            order = rng.permutation(n)
            fit_half, judge_half = [pairs[i] for i in order[: n // 2]], [pairs[i] for i in order[n // 2:]]
            before.append(spread_of(rounds, previous_choice(rounds, fit_half), judge_half))
            now.append(spread_of(rounds, fitted_choice(rounds, fit_half)[0], judge_half))
        rows.append({"program": name, "pairs": n, "slope": slope, "chosen_before": previous_choice(rounds, pairs),
                     "chosen_now": now_all, "before": float(np.nanmean(before)), "now": float(np.nanmean(now))})
    return rows


def table(data: dict, halvings: int, seed: int = 0) -> None:
    print(f"# A/A pairs on {data.get('machine', '?')}, {data.get('date', '?')}; {halvings} random halvings each: "
          "choose on one half, judge on the other\n")
    print("| program | pairs | slope (all pairs) | chosen (all pairs): before / now | spread on the other half: before | now | change |")
    print("|---|---:|---:|---|---:|---:|---:|")
    rows = halving_rows(data, halvings, seed)
    changes = [r["now"] / r["before"] - 1 for r in rows]
    for r, change in zip(rows, changes):
        slope = "-" if r["slope"] is None else f"{r['slope']:.2f}"
        print(f"| {r['program']} | {r['pairs']} | {slope} | {r['chosen_before']} / {r['chosen_now']} | "
              f"{r['before'] * 100:.2f} % | {r['now'] * 100:.2f} % | {change * 100:+.0f} % |")
    print(f"\nmedian change {np.median(changes) * 100:+.0f} %; lower on {sum(c < -0.05 for c in changes)}, within 5 % on "
          f"{sum(abs(c) <= 0.05 for c in changes)}, higher on {sum(c > 0.05 for c in changes)} of {len(changes)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20, help="A/A pairs per program (default 20)")
    ap.add_argument("--only", default="", help="comma list of kernels/ programs (default: all)")
    ap.add_argument("--save", type=Path, help="write the rounds' reductions here (JSON)")
    ap.add_argument("--from", dest="source", type=Path, help="table a saved file instead of measuring")
    ap.add_argument("--halvings", type=int, default=300, help="random halvings per program (default 300)")
    args = ap.parse_args()
    if args.source:
        try:
            data = json.loads(args.source.read_text())
        except (OSError, ValueError) as e:
            print(f"bench_probe_exponent: {args.source}: {e}", file=sys.stderr)
            return 2
    else:
        names = [n for n in args.only.split(",") if n]
        programs = sorted(p for p in (ROOT / "kernels").glob("*.cu") if not names or p.stem in names)
        if not programs:
            print(f"bench_probe_exponent: no kernels/ program named {args.only}", file=sys.stderr)
            return 2
        data = collect(programs, args.pairs)
        if args.save:
            args.save.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    table(data, args.halvings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
