"""Benchmark: the loop's search simulated on the 12 programs' measured candidate spaces (prints a
table; seeded, no timing). A pass of `bench_search.py` takes about 50 minutes and is one draw of
the noise; this takes a minute and gives the rates a change of the race or confirmation rules
would have, before a pass is spent on it.

Each program's space is its exhaustive record in a reference file (`bench_search.py
--save-reference`): its candidates, each candidate's loop, and their measured ratios taken as the
truth (the best candidate's: its re-measure on fresh pairs); its noise is the paired spread that each candidate's 95 % interval over its 20 pairs
implies (`acceptance.log_half_width` inverted), the median over the candidates. One search is the
loop's in one generation (`search_simulation.simulate_search`: the race, the close calls it
settles, the confirmations), after an A/A of the loop's 10 pairs that sets the bar (the noise floor)
and the spread the futility rule goes by, on seeded log-normal pairs at that spread. Not
simulated: the combination of loops' winners, the time budget, the build order by evidence (every
candidate scores alike), the noise of the real machine changing within a run.

The goal as `bench_search.py` judges it: the search's runs (1 reference, 2 per A/A and confirming
pair, 1.5 per racing pair where two racers share a baseline run as the loop's do; the final check
not counted) at most half of exhaustive search's, and, where a 60-round head
to head at the space's spread would show the best truth clearing the bar (upper end below 1 -
--min-gain), an accepted candidate with at least 95 % of its gain; where it would not, nothing to
find. A false accept is an accepted candidate whose truth is not below 1.

The rates are for comparing rules with each other, not a forecast of a pass: the simulated loop
races the first --max-trials candidates exhaustive search measured in the planned order (the real
one drops duplicate builds first and orders by evidence), has no time budget, and meets the whole space's spread as the exhaustive search's intervals imply it,
where the real loop's A/A pairs may choose a steadier metric (`probed-path`). On the reference of
2026-11-29 it spends more runs than the passes did on most programs (softmax 49 % of exhaustive
search's against 31-36 % in the passes; before its racing pairs were counted at 1.5 runs, 58 %).

Two options bring it nearer a pass. `--spreads-from RESULTS` takes each program's spread from a
pass's loop records (its A/A pairs on the metric it decided on) instead of the reference's
intervals, which on a noisy machine imply 12-25 % for scan, stencil1d, stencil2d and transpose
where the passes' A/A pairs spread 4-13 %. `--truth shrunk` removes the winner's curse from the
candidates' true ratios (`shrunk_log_ratios`). The table's last line multiplies the programs'
goal-met rates: the chance that one pass meets the goal on all of them, if those rates held. At the
A/A spreads of the pass at bdb88e7 (`tests/bench/reference/pass_bdb88e7.jsonl`) with shrunk truths
the rates sum to 8.5 programs, where that pass met 8, and the product is 0.6 %.

Usage:
    .venv/bin/python tests/bench/bench_search_sim.py [--reference tests/bench/reference/exhaustive.jsonl]
        [--searches 200] [--programs stencil1d,pipeline] [--truth measured|shrunk] [--spreads-from RESULTS]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize import search_simulation as sim  # noqa: E402
from rocm_perf.optimize.confirmation import confirmation_test  # noqa: E402
from rocm_perf.optimize.interleaved import SHARED_BASELINE  # noqa: E402
from rocm_perf.optimize.options import OptimizeOptions  # noqa: E402
from rocm_perf.optimize.racing import RacePlan  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import records_by_program  # noqa: E402

EXHAUSTIVE_PAIRS = 20  # bench_search.py's --rounds for the reference (its settings line says)
TAIL = 0.025  # the exhaustive intervals are 95 % ones
H2H_ROUNDS = 60  # the head to head's rounds in the passes (--h2h-rounds)


@dataclass(frozen=True)
class Space:
    program: str
    candidates: list[sim.Synthetic]
    spread: float  # paired spread of one log ratio
    exhaustive_runs: int


def space_of(rec: dict, pairs: int = EXHAUSTIVE_PAIRS, truth: str = "measured") -> Space:
    """A program's exhaustive record as a simulated space. Truth ("measured"): each candidate's
    measured ratio; ("shrunk") each pulled toward the space's mean by how noisy it was
    (`shrunk_log_ratios`). Either way the best candidate's truth is its re-measure on fresh pairs
    where the record has one: its own 20 pairs were the best of many estimates."""
    measured = [c for c in rec["candidates"] if "ratio" in c]
    per_unit = acc.log_half_width(1.0, pairs, TAIL)  # an interval's half-width at spread 1
    spreads = [math.log(c["high"] / c["low"]) / 2 / per_unit for c in measured if c["high"] > c["low"]]
    ratios = [c["ratio"] for c in measured]
    if truth == "shrunk":
        ratios = [math.exp(x) for x in shrunk_log_ratios(measured)]
    fresh = rec.get("fresh") or {}
    candidates = [sim.Synthetic(i, c["candidate"].split()[-1], 1.0,
                                fresh["ratio"] if fresh.get("candidate") == c["candidate"] else ratio)
                  for i, (c, ratio) in enumerate(zip(measured, ratios))]
    return Space(rec["program"], candidates, statistics.median(spreads), rec["runs"])


def shrunk_log_ratios(measured: list[dict]) -> list[float]:
    """The candidates' log ratios pulled toward their mean by normal empirical Bayes: the true log
    ratios are taken to spread by tau around the mean, each estimate's standard error is its 95 %
    interval's half-width / 1.96, tau^2 is the estimates' variance less the mean squared error (method
    of moments, at least 0), and each estimate keeps the share tau^2 / (tau^2 + se^2) of its distance
    from the mean. The best of many noisy estimates reads faster than it is (winner's curse): on the
    reference of 2026-11-29, stencil1d's best single 0.944 shrinks to 0.999 and scan's 0.942 to 0.998,
    where the head to heads of the passes found nothing above the bar on either."""
    x = [math.log(c["ratio"]) for c in measured]
    se = [math.log(c["high"] / c["low"]) / 2 / 1.96 for c in measured]
    if len(x) < 3:
        return x
    mean = statistics.mean(x)
    tau2 = max(0.0, statistics.pvariance(x) - statistics.mean(s * s for s in se))
    return [mean + (tau2 / (tau2 + s * s) if tau2 + s * s > 0 else 0.0) * (xi - mean) for xi, s in zip(x, se)]


def one_search(space: Space, seed: int, opt: OptimizeOptions) -> dict:
    """One seeded search of the space, as the loop runs it after its A/A pairs."""
    alpha = 1.0 - opt.confidence
    draw = sim.lognormal_pairs(space.spread / math.sqrt(2), seed)
    b, c = draw(1.0, opt.aa_rounds)
    floor = acc.noise_floor(b, c, max_rounds=opt.max_rounds)
    bar = acc.effective_min_gain(opt.min_gain, floor)
    plan = RacePlan.doubling(bar, alpha, opt.rounds, opt.max_rounds, known_spread=acc.paired_spread(b, c))
    confirm = confirmation_test(bar, alpha, opt.rounds, opt.max_rounds, opt.round_step)
    # The loop measures at most --max-trials candidates; the reference lists them in the planned order.
    result = sim.simulate_search(space.candidates[:opt.max_trials], plan, confirm, draw=draw)
    truth = {s.id: s.ratio for s in space.candidates}
    reached = [call.n for call in result.calls.values()]
    confirm_pairs = result.pairs - sum(reached)
    return {"runs": 1 + 2 * opt.aa_rounds + screening_runs(reached, plan.rungs) + 2 * confirm_pairs,
            "accepted": [truth[i] for i in result.accepted]}


def screening_runs(reached: list[int], rungs: tuple[int, ...]) -> int:
    """The runs a race costs whose racers stopped after `reached` pairs each: at every rung the racers
    still in it go SHARED_BASELINE to one baseline run (loop.py: 3 runs a round for two, 2 for one
    left over)."""
    runs, before = 0, 0
    for rung in rungs:
        k = sum(1 for n in reached if n >= rung)
        groups, alone = divmod(k, SHARED_BASELINE)
        runs += (rung - before) * (groups * (SHARED_BASELINE + 1) + (alone + 1 if alone else 0))
        before = rung
    return runs


def shown_to_reach_bar(ratio: float, spread: float, min_gain: float, rounds: int = H2H_ROUNDS) -> bool:
    """Whether a head to head of `rounds` pairs at `spread` would typically show `ratio` clearing the
    bar (its 95 % interval's upper end below 1 - min_gain): bench_search.py counts no other gain."""
    return ratio * math.exp(acc.log_half_width(spread, rounds, TAIL)) < 1.0 - min_gain


def simulate(space: Space, searches: int, opt: OptimizeOptions) -> dict:
    best = min(s.ratio for s in space.candidates)
    to_find = shown_to_reach_bar(best, space.spread, opt.min_gain)
    target = 1 / best - 1
    met = found = false = 0
    runs = []
    for seed in range(searches):
        r = one_search(space, seed, opt)
        gain = max((1 / t - 1 for t in r["accepted"]), default=0.0)
        hit = gain >= 0.95 * target if to_find else True
        within = r["runs"] <= 0.5 * space.exhaustive_runs
        found += hit
        met += hit and within
        false += any(t >= 1.0 for t in r["accepted"])
        runs.append(r["runs"])
    return {"to_find": to_find, "best": best, "met": met / searches, "found": found / searches,
            "runs": statistics.mean(runs) / space.exhaustive_runs, "false": false}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", default=str(ROOT / "tests/bench/reference/exhaustive.jsonl"))
    ap.add_argument("--searches", type=int, default=200, help="seeded searches per program")
    ap.add_argument("--max-trials", type=int, default=24, help="candidates the loop may measure (the passes' 24)")
    ap.add_argument("--programs", default="", help="comma list (default: every program of the reference)")
    ap.add_argument("--truth", choices=("measured", "shrunk"), default="measured",
                    help="each candidate's true ratio: its measured ratio in the reference (default), or that "
                         "ratio pulled toward the space's mean by how noisy it was (empirical Bayes; the winner's "
                         "curse of the best of many noisy estimates removed)")
    ap.add_argument("--spreads-from", default="", metavar="RESULTS",
                    help="a pass's results file (bench_search.py --results): each program's spread is its loop's "
                         "A/A spread there, on the metric the loop decided on, instead of the one the reference's "
                         "intervals imply")
    args = ap.parse_args()
    names = [n for n in args.programs.split(",") if n]
    spaces = [space_of(parts["exhaustive"], truth=args.truth) for program, parts in records_by_program(Path(args.reference)).items()
              if parts.get("exhaustive") and (not names or program in names)]
    spread_source = "the reference's intervals"
    if args.spreads_from:
        if not Path(args.spreads_from).is_file():
            print(f"bench_search_sim: {args.spreads_from}: no such results file", file=sys.stderr)
            return 2
        try:
            passed = records_by_program(Path(args.spreads_from))
        except (OSError, ValueError) as e:
            print(f"bench_search_sim: {args.spreads_from}: not a results file ({e})", file=sys.stderr)
            return 2
        aa = {p: (parts.get("loop") or {}).get("aa_spread") for p, parts in passed.items()}
        spaces = [Space(s.program, s.candidates, aa[s.program], s.exhaustive_runs) for s in spaces if aa.get(s.program)]
        if not spaces:
            print(f"bench_search_sim: {args.spreads_from}: no loop record with an A/A spread for these programs",
                  file=sys.stderr)
            return 2
        spread_source = f"the A/A spreads of the pass in {args.spreads_from}"
    opt = OptimizeOptions(source=Path("x.cu"), max_trials=args.max_trials)
    print(f"# the loop's search simulated on {args.reference}'s spaces, {args.searches} seeded searches each; "
          f"bar {opt.min_gain:.0%} (raised to the A/A floor), rungs from {opt.rounds} to {opt.max_rounds} pairs; "
          f"spreads from {spread_source}; truth: {args.truth} ratios\n")
    print("| program | candidates (loops) | spread | best truth | goal met | found | runs (% of exhaustive's) | false accepts |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    every = 1.0
    for space in spaces:
        s = simulate(space, args.searches, opt)
        every *= s["met"]
        loops = len({c.group for c in space.candidates})
        print(f"| {space.program} | {len(space.candidates)} ({loops}) | {space.spread:.1%} | {s['best']:.3f}"
              f"{'' if s['to_find'] else ' (nothing to find)'} | {s['met']:.0%} | {s['found']:.0%} | {s['runs']:.0%} | {s['false']} |")
    # The programs' searches are independent draws of the noise: one pass meets the goal on all of
    # them with the product of their rates.
    print(f"\nthe goal met on all {len(spaces)} in one pass: {every:.1%} of passes, if the rates above held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
