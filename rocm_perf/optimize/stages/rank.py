"""State `rank`: the profiled kernels by what they are worth optimizing (their critical-path share
over the baseline's rounds, times their roofline headroom when counters were read), mapped to the
source's kernels; the top ones (90 % of the critical path, at most four, or those --kernel names);
and, where the backend can sample, each loop's heat. Commits the ranking, the top kernels, the
kernels the roofline rules out and the loop heat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.optimize.heat import HeatRounds
from rocm_perf.optimize.ledger import BASELINE_TRIAL, Baseline
from rocm_perf.optimize.plan import RankedKernel
from rocm_perf.optimize.roofline_round import roofline_verdict
from rocm_perf.optimize.states import PROPOSE, RANK

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    shares: dict[str, list[float]] = {}
    medians: dict[str, list[float]] = {}
    for phase in ("reference", "aa"):
        for row in ctx.ledger.rounds(BASELINE_TRIAL, phase):
            if row.role != "B" or not row.ok:
                continue
            for sym, share in row.outputs.get("cp_share", {}).items():
                shares.setdefault(sym, []).append(share)
            for sym, ns in row.kernel_ns.items():
                medians.setdefault(sym, []).append(ns)
    base = ctx.ledger.baselines()[0]
    analyses = [(rel, ctx.analysis(ctx.source_of(base, rel))) for rel in ctx.sources]
    ranking, skipped = [], []
    for sym in sorted(shares, key=lambda s: -sum(shares[s]) / len(shares[s])):
        kernel, file = "", ""
        for rel, analysis in analyses:  # a project: the file that defines the kernel
            info = ctx.svc.tools.match_kernel(sym, analysis)
            if info is not None:
                kernel, file = getattr(info, "name", ""), rel
                break
        if ctx.opt.kernels and not any(k in (kernel or sym) for k in ctx.opt.kernels):
            continue
        share = sum(shares[sym]) / len(shares[sym])
        median = sorted(medians.get(sym, [0.0]))[len(medians.get(sym, [0.0])) // 2]
        verdict = roofline_verdict(ctx, sym, kernel)
        if verdict and verdict["blocked"] and kernel:
            skipped.append({"kernel": kernel, "symbol": sym, "reason": verdict["blocked"]})
            continue  # at its memory roof: no unroll candidate can help
        ranking.append(RankedKernel(sym, kernel, share, median, verdict["headroom"] if verdict else None,
                                    verdict["bound"] if verdict else "", file=file))
    ranking.sort(key=lambda r: -r.value)  # critical-path share x headroom (the share alone without counters)
    ctx.ledger.set("roofline_skipped", skipped)
    for entry in skipped:
        ctx.report.message(f"{entry['kernel']}: no unroll candidates: {entry['reason']}")
    # The top kernels: those making up 90 % of the critical path, at most four (all named ones).
    top, covered = [], 0.0
    for r in ranking:
        if not r.kernel or r.cp_share <= 0:
            continue
        if not ctx.opt.kernels and (covered >= 0.9 or len(top) >= 4):
            break
        top.append(r)
        covered += r.cp_share
    ctx.ledger.set("ranking", [r.__dict__ for r in ranking])
    ctx.ledger.set("top_kernels", [r.__dict__ for r in top])
    if not top:
        ctx.report.message("no profiled kernel maps to a kernel of the source; nothing to optimize")
    measure_heat(ctx, base)
    return PROPOSE


def measure_heat(ctx: "RunContext", base: Baseline) -> None:
    """Loop heat from untimed sampled rounds of the baseline (optimize/heat.py), when the backend
    can sample; the ledger records it (or why there is none) and the candidates' order uses it."""
    if ctx.project:
        ctx.ledger.set("loop_heat", None)
        ctx.ledger.set("loop_heat_note", "no loop heat for a project run: the sampled build takes one source")
        return
    if not any(p.uses_loop_heat for p in ctx.proposers.values()):
        ctx.ledger.set("loop_heat", None)  # no proposer of the run orders its candidates by it
        return
    probe = ctx.svc.heat if ctx.svc.heat is not None else HeatRounds.like(ctx.svc.runner, build=ctx.program.build_with)
    top = {r["kernel"] for r in ctx.ledger.get("top_kernels", [])}
    loops = [l for l in ctx.analysis(ctx.abs(base.source_path)).loops if l.kernel in top]
    if probe is None or len(loops) < 2:  # one loop or none: there is no order to decide
        ctx.ledger.set("loop_heat", None)
        return
    ctx.report.stage(RANK, "sampling the baseline for loop heat")
    heat, why = probe(ctx.abs(base.source_path), ctx.run_dir / "baseline" / "heat", ctx.flags_of(ctx.abs(base.source_path)),
                      build_timeout_s=ctx.opt.build_timeout_s, write_to=ctx.run_dir / "hotspots.json")
    with ctx.ledger.transaction():
        ctx.ledger.set("loop_heat", heat)
        ctx.ledger.set("loop_heat_note", why)
    if why:
        ctx.report.message(why)
    if heat:
        hottest = max(heat["loops"].items(), key=lambda kv: kv[1], default=None)
        where = f"; hottest loop {hottest[0]} ({hottest[1]:.0%} of its kernel)" if hottest else ""
        ctx.report.message(f"loop heat from {heat['samples']:,.0f} {heat['unit']} ({heat['evidence']}){where}")
