"""Benchmark: the loop's search against exhaustive search of the same candidate space (prints a table).

For each kernels/ program (host backend):
- loop: `rocm-perf optimize` as shipped (default options unless given here), then the speedup of
  its final program over the original (the run's own final check: interleaved rounds) and the
  trials it needed;
- exhaustive: every candidate of the same space (loops of the same top kernels x applicable rules
  x factors, against the original) measured with --rounds interleaved pairs, no early stopping;
  the best candidate's median speedup, how many candidates were measurably faster (their 95 %
  interval entirely below 1) and the trials that took.

Usage: .venv/bin/python tests/bench/bench_search.py [--programs row_reduce,runtime_trip] [--rounds 20]
       [--time-budget 30m] [--max-trials 24]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.errors import RocmPerfError  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.artifacts import build_summary  # noqa: E402
from rocm_perf.optimize.command import create_run  # noqa: E402
from rocm_perf.optimize.loop import OptimizeLoop, Services, SourceTools, pair_order  # noqa: E402
from rocm_perf.optimize.measure import ProfiledRounds, metric_value  # noqa: E402
from rocm_perf.optimize.options import OptimizeOptions, parse_duration  # noqa: E402
from rocm_perf.optimize.plan import RankedKernel, propose  # noqa: E402


def services(backend, opt) -> Services:
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s, cwd=ROOT,
                            timing_lines=opt.timing_lines)
    return Services(backend, runner, SourceTools.default(), None)


def run_loop(backend, source: Path, out: Path, args) -> dict:
    opt = OptimizeOptions(source=source, out=out, backend="host", compile_check="off", quiet=True, metric=args.metric,
                          time_budget_s=parse_duration(args.time_budget), max_trials=args.max_trials)
    run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["bench_search"])
    t0 = time.time()
    OptimizeLoop(run_dir, ledger, opt, services(backend, opt)).run()
    s = build_summary(run_dir, ledger)
    fc = s.get("final_check")
    return {"speedup": (1 / fc["estimate"] - 1) if fc else 0.0, "accepted": len(s["accepted"]), "trials": s["trials"],
            "seconds": time.time() - t0, "run": run_dir}


def run_exhaustive(backend, source: Path, out: Path, args) -> dict:
    """Every candidate against the original, --rounds pairs each."""
    opt = OptimizeOptions(source=source, out=out, backend="host", compile_check="off", quiet=True, aa_rounds=2,
                          metric=args.metric)
    run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["bench_search exhaustive"])
    svc = services(backend, opt)
    loop = OptimizeLoop(run_dir, ledger, opt, svc)
    t0 = time.time()
    loop.baseline()
    loop.noise_floor()
    loop.rank()
    top = [RankedKernel(**r) for r in ledger.get("top_kernels", [])]
    base = ledger.current_baseline()
    src = run_dir / base.source_path
    analysis = loop._analysis(src)
    groups = propose(ranking=top, analysis=analysis, rules=loop._rules_list(), applicable_rules=svc.tools.applicable_rules,
                     original_text=src.read_text(), current_text=src.read_text(), tried_loop_keys=set(), only_rules=[],
                     only_factors=[], resources={})
    best = (1.0, "")
    faster = 0
    trials = 0
    for p in (p for g in groups for p in g):
        trials += 1
        cand = svc.tools.make_candidate(src, analysis, p.loop_id, p.rule, p.factor, rules=loop._rules_list())
        if any(not v.ok for v in svc.tools.guard_candidate(cand, [])):
            continue
        d = run_dir / "exhaustive" / str(trials)
        d.mkdir(parents=True)
        (d / "source.cu").write_bytes(cand.rewritten)
        try:
            prog = backend.build(d / "source.cu", d / "build", [])
        except RocmPerfError as e:  # a candidate that does not build is simply not a result
            print(f"  {p.rule} x{p.factor} {p.loop_id}: build failed: {str(e)[:100]}", file=sys.stderr)
            continue
        b, c = [], []
        ok = True
        for i in range(args.rounds):
            vals = {}
            for role, exe in pair_order(i, str(run_dir / base.executable), str(prog.executable)):
                r = svc.runner(Path(exe), d / f"r{i}{role}", f"{i}-{role}")
                ok = ok and r.ok
                vals[role] = metric_value(r, args.metric)
            if not ok:
                break
            b.append(vals["B"])
            c.append(vals["C"])
        if not ok:
            continue
        iv = acc.median_ratio_interval(b, c, tail_alpha=0.025)
        faster += iv.high < 1.0
        if iv.estimate < best[0]:
            best = (iv.estimate, f"{p.rule} x{p.factor} {p.loop_id}")
        print(f"  {source.stem}: {p.rule} x{p.factor} {p.loop_id}: ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]", file=sys.stderr)
    return {"speedup": 1 / best[0] - 1, "best": best[1], "faster": faster, "trials": trials, "seconds": time.time() - t0}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", default="", help="comma list of kernels/ program stems (default: all)")
    ap.add_argument("--rounds", type=int, default=20, help="pairs per candidate in the exhaustive search")
    ap.add_argument("--time-budget", default="1h", help="the loop's budget per program (default: its own, 1h)")
    ap.add_argument("--max-trials", type=int, default=24)
    ap.add_argument("--metric", default="critical-path", choices=["critical-path", "median-path"])
    args = ap.parse_args()
    names = [n for n in args.programs.split(",") if n]
    programs = [ROOT / "kernels" / f"{n}.cu" for n in names] or sorted((ROOT / "kernels").glob("*.cu"))
    backend = HostBackend()
    work = Path(tempfile.mkdtemp(prefix="bench_search-"))
    print(f"# loop vs exhaustive search on {backend.describe()}; exhaustive: {args.rounds} pairs per candidate; "
          f"loop budget {args.time_budget}, max trials {args.max_trials}, metric {args.metric}\n")
    print("| program | loop: speedup (final check) | loop: accepted / trials | loop: s | exhaustive: best single speedup | best candidate | measurably faster | exhaustive: trials | exhaustive: s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for src in programs:
        loop = run_loop(backend, src, work / "loop", args)
        ex = run_exhaustive(backend, src, work / "exhaustive", args)
        print(f"| {src.stem} | {loop['speedup']:+.1%} | {loop['accepted']} / {loop['trials']} | {loop['seconds']:.0f} "
              f"| {ex['speedup']:+.1%} | {ex['best']} | {ex['faster']} | {ex['trials']} | {ex['seconds']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
