"""Benchmark: source analysis and rewrites on the corpus (prints tables).

1. Per corpus program: kernels, loops, candidates (every loop x rule x factor), time of a fresh
   analysis, and the mean time of one candidate's guards (a re-parse with the precompiled preamble
   plus the analysis of the rewritten file).
2. With hipcc (Debian's, gfx90a): VGPRs and occupancy of each rule at each factor on chosen
   loops, against the original, through the AMD compile check.

Usage: .venv/bin/python tests/bench/bench_source.py [--no-compile] [--files kernels/stencil1d.cu ...]
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

from rocm_perf.source import analyze_source, applicable_rules, guard_candidate, load_rules, make_candidate  # noqa: E402
from rocm_perf.source.parse import parse_setup  # noqa: E402

# (program, loop id prefix without the line): loops whose variants the compile check compares.
COMPILE_LOOPS = [
    ("matmul_regblock.cu", "matmul_micro4x4:matmul_micro4x4:5"),
    ("row_reduce.cu", "row_sum:row_sum:1"),
    ("stencil1d.cu", "stencil_1d:stencil_1d:1"),
]


def analysis_table(files: list[Path]) -> None:
    rules = load_rules()
    print(f"## Analysis and guards ({parse_setup().mode} HIP headers)\n")
    print("| program | kernels | loops | candidates | analysis s | guards s/candidate |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in files:
        t0 = time.perf_counter()
        analysis = analyze_source(path)
        analysis_s = time.perf_counter() - t0
        candidates = [(l, r, f) for l in analysis.loops for r, fs in applicable_rules(l, rules) for f in fs]
        sample = candidates[:: max(1, len(candidates) // 6)][:6]
        t0 = time.perf_counter()
        for loop, rule, factor in sample:
            guard_candidate(make_candidate(path, analysis, loop.id, rule.name, factor, rules=rules))
        guard_s = (time.perf_counter() - t0) / max(1, len(sample))
        print(f"| {path.name} | {len(analysis.kernels)} | {len(analysis.loops)} | {len(candidates)} | "
              f"{analysis_s:.2f} | {guard_s:.2f} |")  # fmt: skip


def compile_table() -> None:
    from rocm_perf.backends.compile_check import compile_check_many, hipcc_available

    ok, why = hipcc_available()
    if not ok:
        print(f"\n(compile table skipped: {why})")
        return
    rules = load_rules()
    print("\n## What the AMD compiler makes of each variant (gfx90a, -O3)\n")
    print("| program | loop | variant | VGPR | SGPR | occupancy | spills |")
    print("|---|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, loop_prefix in COMPILE_LOOPS:
            path = ROOT / "kernels" / name
            analysis = analyze_source(path)
            loop = analysis.loop(loop_prefix)
            variants = [("original", path)]
            for rule, factors in applicable_rules(loop, rules):
                for factor in factors:
                    cand = make_candidate(path, analysis, loop.id, rule.name, factor, rules=rules)
                    out = Path(tmp) / f"{path.stem}_{rule.name}_{factor}.cu"
                    out.write_bytes(cand.rewritten)
                    variants.append((f"{rule.name} {factor}", out))
            reports = compile_check_many([v[1] for v in variants], arch="gfx90a", flags=["-O3"])
            for (label, _), report in zip(variants, reports):
                kernel = next((k for k in report.kernels if k.mangled == loop.kernel or loop.kernel in (k.demangled or "")), None)
                if not report.ok or kernel is None:
                    print(f"| {name} | {loop.id} | {label} | compile failed: {report.errors[:60]!r} | | | |")
                    continue
                spills = (kernel.sgpr_spill or 0) + (kernel.vgpr_spill or 0)
                print(f"| {name} | {loop.id} | {label} | {kernel.vgpr} | {kernel.sgpr} | {kernel.occupancy} | {spills} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="*", type=Path, default=sorted((ROOT / "kernels").glob("*.cu")))
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    analysis_table(args.files)
    if not args.no_compile:
        compile_table()


if __name__ == "__main__":
    main()
