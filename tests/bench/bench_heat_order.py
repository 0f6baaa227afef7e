"""Benchmark: the optimizer's candidate order with and without measured loop heat (prints tables).

For each program the loop's own machinery runs the baseline (build, reference round, A/A rounds,
all unsampled), ranks kernels by critical-path share and measures the loop heat in its untimed
sampled rounds (optimize/heat.py HeatRounds), then proposes candidates twice: as without sampling (the nesting-depth
guess) and with the measured heat. Printed: the first candidates of each order, each loop's
measured share, and where the loop an exhaustive search found best stands in each order.

The best loops come from exhaustive searches (tests/bench/bench_search.py: every candidate
against the original, interleaved pairs): matmul_regblock's best is manual x2 on the loop at
matmul_micro4x4 line 43; for runtime_trip pass `--exhaustive-pairs N` to measure every loop's
best candidate here (a few minutes).

    .venv/bin/python tests/bench/bench_heat_order.py [--programs matmul_regblock,runtime_trip] [--first 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocm_perf.backends.host import HostBackend  # noqa: E402
from rocm_perf.errors import RocmPerfError  # noqa: E402
from rocm_perf.optimize import acceptance as acc  # noqa: E402
from rocm_perf.optimize.command import create_run  # noqa: E402
from rocm_perf.optimize import driver  # noqa: E402
from rocm_perf.optimize.interleaved import pair_order  # noqa: E402
from rocm_perf.optimize.loop import OptimizeLoop  # noqa: E402
from rocm_perf.optimize.services import Services, SourceTools  # noqa: E402
from rocm_perf.optimize.measure import ProfiledRounds, metric_value  # noqa: E402
from rocm_perf.optimize.options import OptimizeOptions  # noqa: E402
from rocm_perf.optimize.plan import RankedKernel, propose  # noqa: E402

# The best single candidate bench_search's exhaustive search found (loop id prefix, rule, factor).
KNOWN_BEST = {"matmul_regblock": ("matmul_micro4x4:matmul_micro4x4:", 43, "unroll_manual", 2)}


def baseline_loop(source: Path, out: Path) -> tuple[OptimizeLoop, Services]:
    backend = HostBackend()
    opt = OptimizeOptions(source=source, out=out, backend="host", compile_check="off", quiet=True, aa_rounds=4)
    run_dir, ledger = create_run(opt, backend.name, backend.describe(), ["bench_heat_order"])
    runner = ProfiledRounds(backend, program_args=[], run_template=None, timeout_s=opt.timeout_s, cwd=ROOT,
                            timing_lines=opt.timing_lines)
    services = Services(backend, runner, SourceTools.default(), None)
    loop = OptimizeLoop(run_dir, ledger, opt, services)
    for state in ("baseline", "noise-floor", "rank"):  # rank: kernels ranked, then the baseline sampled for the loop heat
        driver.STAGES[state](loop.ctx)
    return loop, services


def orders(loop: OptimizeLoop, services: Services) -> tuple[list, list, dict]:
    ledger = loop.ledger
    top = [RankedKernel(**r) for r in ledger.get("top_kernels", [])]
    base = ledger.current_baseline()
    src = loop.run_dir / base.source_path
    analysis = loop.ctx.analysis(src)
    common = dict(ranking=top, analysis=analysis, rules=loop.ctx.rules(), applicable_rules=services.tools.applicable_rules,
                  original_text=src.read_text(), current_text=src.read_text(), tried_loop_keys=set(), only_rules=[],
                  only_factors=[], resources={})
    heat = ledger.get("loop_heat") or {}
    flat = lambda groups: [p for g in groups for p in g]  # noqa: E731
    return flat(propose(**common)), flat(propose(**common, heat=heat)), heat


def loop_position(candidates: list, loop_id: str) -> int | None:
    """1-based position of the first candidate on `loop_id`, in groups (one group per loop)."""
    seen = []
    for p in candidates:
        if p.loop_id not in seen:
            seen.append(p.loop_id)
        if p.loop_id == loop_id:
            return seen.index(loop_id) + 1
    return None


def exhaustive_best(loop: OptimizeLoop, services: Services, candidates: list, pairs: int) -> tuple[str, float, dict]:
    """Every candidate against the baseline, `pairs` interleaved pairs each: the best loop."""
    base = loop.ledger.current_baseline()
    src = loop.run_dir / base.source_path
    analysis = loop.ctx.analysis(src)
    plain = HostBackend(sample=False)
    best_per_loop: dict[str, float] = {}
    for n, p in enumerate(candidates):
        cand = services.tools.make_candidate(src, analysis, p.loop_id, p.rule, p.factor, rules=loop.ctx.rules())
        if any(not v.ok for v in services.tools.guard_candidate(cand, [])):
            continue
        d = loop.run_dir / "exhaustive" / str(n)
        d.mkdir(parents=True)
        (d / "source.cu").write_bytes(cand.rewritten)
        try:
            prog = plain.build(d / "source.cu", d / "build", [])
        except RocmPerfError:
            continue
        b, c = [], []
        for i in range(pairs):
            vals = {}
            for role, exe in pair_order(i, str(loop.run_dir / base.executable), str(prog.executable)):
                vals[role] = metric_value(services.runner(Path(exe), d / f"r{i}{role}", f"{i}-{role}"), "critical-path")
            b.append(vals["B"])
            c.append(vals["C"])
        ratio = acc.median_ratio_interval(b, c, tail_alpha=0.025).estimate
        best_per_loop[p.loop_id] = min(ratio, best_per_loop.get(p.loop_id, 9.0))
        print(f"    {p.rule} x{p.factor} {p.loop_id}: ratio {ratio:.3f}", file=sys.stderr, flush=True)
    best = min(best_per_loop, key=best_per_loop.get)
    return best, best_per_loop[best], best_per_loop


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="matmul_regblock,runtime_trip")
    ap.add_argument("--first", type=int, default=8, help="candidates to list per order")
    ap.add_argument("--exhaustive-pairs", type=int, default=0, help="measure every candidate (0: use KNOWN_BEST)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_heat-"))
    summary = []
    for name in args.programs.split(","):
        source = ROOT / "kernels" / f"{name}.cu"
        loop, services = baseline_loop(source, work / name)
        guess, measured, heat = orders(loop, services)
        print(f"\n## {name}: {heat.get('samples', 0):,.0f} samples ({heat.get('evidence', 'none')})\n")
        print("| # | without heat (depth guess) | with heat | loop's measured share |")
        print("|---:|---|---|---:|")
        share = {}
        for key, value in heat.get("loops", {}).items():
            share[key] = value
        for i in range(min(args.first, max(len(guess), len(measured)))):
            a = guess[i] if i < len(guess) else None
            b = measured[i] if i < len(measured) else None
            label = lambda p: f"{p.rule} x{p.factor} `{p.loop_id}`" if p else ""  # noqa: E731
            print(f"| {i + 1} | {label(a)} | {label(b)} | {share.get(b.loop_key, 0.0):.1%} |" if b else f"| {i + 1} | {label(a)} | | |")
        if args.exhaustive_pairs:
            best_loop, ratio, _ = exhaustive_best(loop, services, guess, args.exhaustive_pairs)
            how = f"measured here, {args.exhaustive_pairs} pairs: ratio {ratio:.3f}"
        elif name in KNOWN_BEST:
            prefix, line, rule, factor = KNOWN_BEST[name]
            best_loop = next(p.loop_id for p in guess if p.loop_id.startswith(prefix) and p.loop_id.endswith(f":{line}"))
            how = f"bench_search: {rule} x{factor}"
        else:
            continue
        summary.append((name, best_loop, how, loop_position(guess, best_loop), loop_position(measured, best_loop),
                        len({p.loop_id for p in guess})))
    print("\n## Where the best loop stands (loops in the order tried; 1 = first)\n")
    print("| program | best loop (exhaustive) | source | without heat | with heat | loops |")
    print("|---|---|---|---:|---:|---:|")
    for name, best_loop, how, a, b, n in summary:
        print(f"| {name} | `{best_loop}` | {how} | {a} | {b} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
