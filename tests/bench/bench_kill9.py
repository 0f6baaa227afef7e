"""Benchmark (faults): kill -9 at N random moments of a real `optimize` run and of a `sweep`, and
of `apply`; the tables say, per moment, where the kill came (the ledger's state, and whether a
build, the program or rocm-perf's own work was running), whether the one resume completed, whether
any process outlived the kill, and whether the decisions and the final source are the
uninterrupted run's (tests/kill_moments.py says how each is judged).

Moments: the loop's states taken in turn (baseline ... finish; for the sweep also its start and
its closing work after the run is done), each with a random delay of 0-3 s after the state began.

Run: nice -n 10 .venv/bin/python tests/bench/bench_kill9.py [--moments 20] [--what optimize sweep apply]
     [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import kill_moments as km  # noqa: E402


def _moments(names: tuple[str, ...], n: int, rng: random.Random) -> list[tuple[str, float]]:
    return [(names[i % len(names)], round(rng.uniform(0, 3), 2)) for i in range(n)]


def _table(kills: list[km.Kill], reference: km.Outcome, title: str) -> bool:
    print(f"\n{title}\n")
    print("| # | moment | delay (s) | state at kill | running | outlived | resumes | trials as uninterrupted "
          "| decisions and final source as uninterrupted | problems |")
    print("|---:|---|---:|---|---|---:|---:|---|---|---|")
    for i, k in enumerate(kills, 1):
        k.judge(reference)
        state = "(finished first)" if k.missed else (k.state or "(no ledger yet)")
        print(f"| {i} | {k.moment} | {k.delay_s:.2f} | {state} | {k.busy or '-'} | {len(k.leftovers)} | {k.resumes} | "
              f"{'yes' if k.outcome and k.outcome.keys == reference.keys else 'NO'} | "
              f"{'yes' if k.same_decisions(reference) else 'no' + (f' ({_differs(k.outcome, reference)})' if k.outcome else '')} | "
              f"{'; '.join(k.problems) or '-'} |")
    same = sum(k.same_decisions(reference) for k in kills)
    print(f"\n{len(kills)} kills ({sum(not k.missed for k in kills)} before the end), "
          f"{sum(k.resumes == 1 and not k.resume_error for k in kills)} completed on one resume, "
          f"{sum(len(k.leftovers) for k in kills)} processes outlived a kill, {same} identical decisions, "
          f"{sum(bool(k.problems) for k in kills)} with a problem")
    return not any(k.problems for k in kills)


def _differs(got: km.Outcome, reference: km.Outcome) -> str:
    if got.trials != reference.trials:
        return f"{got.trials} vs {reference.trials}"
    return "final source differs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moments", type=int, default=20)
    ap.add_argument("--what", nargs="*", default=["optimize", "sweep", "apply"])
    ap.add_argument("--seed", type=int, default=58)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ok = True
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rocm-perf-kill9-") as tmp:
        tmp = Path(tmp)
        ref_dir, reference = km.reference_run(tmp / "reference")
        print(f"uninterrupted run: trials {reference.trials}, final sha256 {reference.final_sha[:12]} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        for what, names, kill in (("optimize", km.STATES, km.kill_optimize), ("sweep", km.SWEEP_MOMENTS, km.kill_sweep)):
            if what not in args.what:
                continue
            kills = []
            for i, (moment, delay) in enumerate(_moments(names, args.moments, rng), 1):
                k = kill(tmp / f"{what}-{i}", moment, delay)
                kills.append(k)
                print(f"  {what} {i}/{args.moments}: {moment} +{delay:.2f} s -> {k.state} ({k.busy}), "
                      f"resumes {k.resumes} {k.resume_error}", file=sys.stderr, flush=True)
            ok &= _table(kills, reference, f"kill -9 of `rocm-perf {what}` at {args.moments} moments (seed {args.seed})")
        if "apply" in args.what:
            # a run that accepted its win (the moments' reference, decided in few rounds, may not have)
            ref_dir, applied = km.reference_run(tmp / "apply-reference", km.APPLY_OPTIONS)
            print(f"apply's run: trials {applied.trials}", file=sys.stderr, flush=True)
            user_file = tmp / "apply-reference" / "src" / km.PROGRAM.name  # the file that run was of
            original = km.PROGRAM.read_bytes()
            final = (ref_dir / "final.cu").read_bytes()
            start = time.perf_counter()
            km.run("apply", str(ref_dir))
            span = time.perf_counter() - start
            rows = [km.kill_apply(ref_dir, user_file, original, final, round(rng.uniform(0, span), 3))
                    for _ in range(args.moments)]
            print(f"\nkill -9 of `rocm-perf apply` at {args.moments} moments in 0-{span:.2f} s (one apply's time)\n")
            print("| # | delay (s) | file after the kill | after the next apply | stray temporary files |")
            print("|---:|---:|---|---|---:|")
            for i, r in enumerate(rows, 1):
                print(f"| {i} | {r.delay_s:.3f} | {r.after_kill}{'' if r.exit_code is None else ' (apply had ended)'} "
                      f"| {r.after_apply} | {r.strays} |")
            ok &= all(r.after_kill in ("original", "final") and r.after_apply == "final" for r in rows)
    print(f"\n{time.perf_counter() - t0:.0f} s in all")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
