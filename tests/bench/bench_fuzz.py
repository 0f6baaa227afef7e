"""Benchmark (deep fuzz profile): thousands of mutants per fixture format through the commands
that read them; the table says, per format, how many cases gave a normal answer, a clean one-line
error, or a failure (traceback, warning, crash, hang, an error naming no file, an insane answer).

The cases are those of the suite's fast profile (tests/test_fuzz_readers.py, tests/fuzz_cases.py),
drawn at random instead of from a fixed seed, many more of them, and with the PC-sampling
folder's saved source kept (its libclang parse costs a second a case). Failures are listed
grouped by what failed, each with its command; --keep DIR keeps the failing mutants.

Run: nice -n 10 .venv/bin/python tests/bench/bench_fuzz.py [--cases 2000] [--formats NAME ...]
     [--seed N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_cases import CLEAN, FAILURE, NORMAL, draw_case, formats, run_case  # noqa: E402


def campaign(fmt, cases: int, scratch: Path, keep: Path | None, rng_seed: int | None):
    counts: Counter = Counter()
    failures: dict[str, list] = defaultdict(list)
    slowest = [0.0, ""]
    n = [0]

    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        n[0] += 1
        folder = scratch / f"{fmt.name.replace(' ', '_').replace('/', '_')}-{n[0]}"
        try:
            case = draw_case(data.draw, fmt, folder)
            verdict = run_case(case)
        except Exception as e:  # the harness itself: count it, never hide it
            counts[FAILURE] += 1
            failures[f"harness: {e!r}"[:300]].append(("?", None))
            shutil.rmtree(folder, ignore_errors=True)
            return
        counts[verdict.kind] += 1
        if verdict.seconds > slowest[0]:
            slowest[:] = [verdict.seconds, " ".join(verdict.extra["argv"])]
        if verdict.kind == FAILURE:
            kept = None
            if keep is not None:
                kept = keep / folder.name
                shutil.copytree(folder, kept, dirs_exist_ok=True)
            failures[verdict.detail].append((" ".join(verdict.extra["argv"]), kept))
        shutil.rmtree(folder, ignore_errors=True)

    if rng_seed is not None:
        one = seed(rng_seed)(one)
    one()
    return counts, failures, slowest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000, help="cases per format (default: 2000)")
    ap.add_argument("--formats", nargs="*", help="only these formats (names as in the table)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    ap.add_argument("--keep", type=Path, help="copy failing cases here")
    ap.add_argument("--no-source", action="store_true", help="PC-sampling folder without its source (faster)")
    args = ap.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    chosen = [f for f in formats(with_source=not args.no_source) if not args.formats or f.name in args.formats]
    rows, all_failures, slow_cases = [], {}, []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rocm-perf-fuzz-") as tmp:
        for fmt in chosen:
            t0 = time.perf_counter()
            counts, failures, slowest = campaign(fmt, args.cases, Path(tmp), args.keep, args.seed)
            elapsed = time.perf_counter() - t0
            total = sum(counts.values())
            rows.append((fmt.name, total, counts[NORMAL], counts[CLEAN], counts[FAILURE], slowest[0], elapsed))
            slow_cases.append((fmt.name, *slowest))
            all_failures[fmt.name] = failures
            print(f"  {fmt.name}: {total} cases, {counts[FAILURE]} failures ({elapsed:.0f} s)", file=sys.stderr,
                  flush=True)
    print(f"\nfuzz campaign: {args.cases} cases per format, seed {args.seed if args.seed is not None else 'random'}, "
          f"{time.perf_counter() - t_all:.0f} s\n")
    print("| format | cases | normal answers | clean errors | failures | slowest case (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, total, normal, clean, failed, slowest, _ in rows:
        print(f"| {name} | {total} | {normal} | {clean} | {failed} | {slowest:.2f} |")
    totals = [sum(r[i] for r in rows) for i in range(1, 5)]
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | |")
    print("\nslowest case of each format:")
    for name, seconds, argv in slow_cases:
        print(f"  {name}: {seconds:.2f} s  rocm-perf {argv}")
    failed_any = False
    for name, failures in all_failures.items():
        for detail, examples in sorted(failures.items(), key=lambda kv: -len(kv[1])):
            failed_any = True
            argv, kept = examples[0]
            print(f"\nFAILURE [{name}] x{len(examples)}: {detail}\n    e.g. rocm-perf {argv}"
                  + (f"\n    kept: {kept}" if kept else ""))
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
