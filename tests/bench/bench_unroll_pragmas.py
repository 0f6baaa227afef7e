"""Benchmark: where `#pragma unroll 1` on the manual unroll's generated loops changes the AMD
code (issue 61: keep it only where it does). Prints one table.

For every loop of the corpus the manual rule applies to, at every factor: the candidate as the
rule writes it, and the same candidate with the pragma turned the other way on its main loop
(and on its remainder loop, when it has one), each compiled for gfx90a at -O3 through the compile
check; per generated loop, whether the kernel's machine code (instructions, operands, block
labels) is the same either way. A pragma the rule leaves out must change nothing; one it keeps
should change the code.

Usage: .venv/bin/python tests/bench/bench_unroll_pragmas.py [--files kernels/stencil2d.cu ...] [--jobs 2]
Not collected by pytest (no test_ functions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.compile_check import compile_check_many, hipcc_available  # noqa: E402
from rocm_perf.backends.isa import kernel_instructions  # noqa: E402
from rocm_perf.source import analyze_source, load_rules, make_candidate  # noqa: E402
from rocm_perf.source.unroll_plan import unroll_plan  # noqa: E402

PRAGMA = "#pragma unroll 1"


def toggle(region: str, which: int, at: str) -> str:
    """The region with `#pragma unroll 1` added before (or removed from) its `which`-th generated
    loop (0: the main loop, 1: the remainder loop): the lines `for (; ` at indentation `at`."""
    lines = region.split("\n")
    found = [i for i, line in enumerate(lines) if line.lstrip().startswith("for (; ") and
             (line.startswith(at + "for (; ") or i == 0)]  # fmt: skip
    i = found[which]
    if i > 0 and lines[i - 1].strip() == PRAGMA:
        del lines[i - 1]
    elif i == 0:
        lines[0:1] = [PRAGMA, at + lines[0]]
    else:
        lines.insert(i, at + PRAGMA)
    return "\n".join(lines)


def variants(path: Path):
    """(label, plan, source bytes by name) for every manual candidate of the file."""
    analysis = analyze_source(path)
    manual = next(r for r in load_rules() if r.name == "unroll_manual")
    for loop in analysis.loops:
        for factor in manual.factors_for(loop):
            plan = unroll_plan(loop, factor)
            cand = make_candidate(path, analysis, loop.id, manual.name, factor, rules=[manual])
            start, end = cand.new_region
            region = cand.rewritten[start:end].decode()
            at = loop.indent + ("\t" if loop.indent.startswith("\t") else "    ") if plan.wrap else loop.indent
            if plan.wrap:
                region_lines = region.split("\n")
                body = "\n".join(region_lines[1:-1])
                wrap = lambda r: "\n".join([region_lines[0], r, region_lines[-1]])  # noqa: E731
                first = body.split("\n")[0]
                body = first[len(at):] + "\n" + "\n".join(body.split("\n")[1:]) if first.startswith(at) else body
            else:
                body, wrap = region, (lambda r: r)
            sources = {"as written": cand.rewritten}
            loops = ["main"] + (["remainder"] if plan.remainder == "loop" else [])
            for which, name in enumerate(loops):
                toggled = toggle(body, which, at)
                if plan.wrap:
                    toggled = at + toggled
                sources[name] = cand.rewritten[:start] + wrap(toggled).encode() + cand.rewritten[end:]
            yield f"{path.stem} {loop.kernel} line {loop.line} x{factor}", loop, plan, sources


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", type=Path, default=sorted((ROOT / "kernels").glob("*.cu")))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    ok, why = hipcc_available()
    if not ok:
        print(f"skipped: {why}")
        return 0
    rows, to_compile = [], []
    with tempfile.TemporaryDirectory(prefix="unroll-pragmas-") as tmp:
        for path in args.files:
            for label, loop, plan, sources in variants(path):
                entry = {"label": label, "loop": loop, "plan": plan, "paths": {}}
                for name, data in sources.items():
                    out = Path(tmp) / f"{len(to_compile):04d}" / path.name
                    out.parent.mkdir()
                    out.write_bytes(data)
                    entry["paths"][name] = len(to_compile)
                    to_compile.append(out)
                rows.append(entry)
        print(f"compiling {len(to_compile)} variants for gfx90a, {args.jobs} at a time", file=sys.stderr)
        reports = compile_check_many(to_compile, jobs=args.jobs, keep_isa=True)
    print("| candidate | trip count | main loop runs | remainder | pragma on main | main: code changes with it | "
          "pragma on remainder loop | remainder: code changes with it |")
    print("|---|---:|---:|---|---|---|---|---|")
    tally = {"dropped, same code": 0, "dropped, code differs": 0, "kept, code differs": 0, "kept, same code": 0}
    for row in rows:
        plan, loop = row["plan"], row["loop"]
        codes = {}
        for name, index in row["paths"].items():
            report = reports[index]
            if not report.ok:
                codes[name] = None
                continue
            mangled = next((k.mangled for k in report.kernels if loop.kernel in k.mangled), None)
            codes[name] = kernel_instructions(report.isa or "").get(mangled)
        cells = []
        for name, kept in (("main", plan.pragma_main), ("remainder", plan.pragma_remainder)):
            if name not in codes:
                cells += ["-", "-"]
                continue
            if codes[name] is None or codes["as written"] is None:
                cells += ["kept" if kept else "left out", "not compiled"]
                continue
            differs = codes[name] != codes["as written"]
            tally[f"{'kept' if kept else 'dropped'}, {'code differs' if differs else 'same code'}"] += 1
            cells += ["kept" if kept else "left out", "yes" if differs else "no"]
        trips = "-" if loop.trip_count is None else str(loop.trip_count)
        runs = "-" if plan.main_trips is None else str(plan.main_trips)
        print(f"| {row['label']} | {trips} | {runs} | {plan.remainder} | " + " | ".join(cells) + " |")
    print()
    print("| pragma | generated loops |")
    print("|---|---:|")
    for key, n in tally.items():
        print(f"| {key} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
