"""The unroll rules (rewrites/*.j2) as a proposer: every rule x factor that applies to every untried
loop of the top kernels, valued by the named factors of plan.py (critical-path share, roofline
headroom, loop heat or its guess, register pressure, the factor's prior), made by libclang and
guarded so that only the loop's own bytes change (source/guards.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.ledger import Baseline, Trial
from rocm_perf.optimize.plan import RankedKernel, propose, resources_by_kernel
from rocm_perf.optimize.proposers.base import GuardSet, Planned, Proposer, Rendered
from rocm_perf.source.guards import GUARD_NAMES

# `ctx` below is the run's optimize/run_context.RunContext (not imported: the context builds the
# run's proposers, so the annotation stays a name).


class UnrollRules(Proposer):
    """Loop unrolling by the shipped (or --rules-dir) rules, limited by --rules and --factors."""

    name = "rules"
    guards = GuardSet(source=GUARD_NAMES)  # an unroll never changes a result's bits: outputs stay bit-identical
    uses_loop_heat = True
    combines = True

    def plan(self, ctx: "RunContext", base: Baseline, tried: set[str]) -> list[Planned]:
        top = [RankedKernel(**r) for r in ctx.ledger.get("top_kernels", [])]
        first = ctx.ledger.baselines()[0]
        planned: list[Planned] = []
        for rel in ctx.sources:
            ranked_here = [r for r in top if r.file == rel]
            if not ranked_here:
                continue
            current_path = ctx.source_of(base, rel)
            # A project's loop keys carry their file: the same kernel and line may exist in two files.
            prefix = f"{rel}::" if ctx.project else ""
            for group in propose(
                ranking=ranked_here, analysis=ctx.analysis(current_path), rules=ctx.rules(),
                applicable_rules=ctx.svc.tools.applicable_rules,
                original_text=ctx.source_of(first, rel).read_text(errors="replace"),
                current_text=current_path.read_text(errors="replace"),
                tried_loop_keys={k[len(prefix):] for k in tried if k.startswith(prefix)}, only_rules=ctx.opt.rules,
                only_factors=ctx.opt.factors, resources=resources_by_kernel(base.resources, ranked_here),
                heat=ctx.ledger.get("loop_heat"),
            ):
                planned.extend(Planned(rel, replace(p, loop_key=prefix + p.loop_key)) for p in group)
        return planned

    def render(self, ctx: "RunContext", trial: Trial, base_path: Path) -> Rendered:
        tools = ctx.svc.tools
        try:
            cand = tools.make_candidate(base_path, ctx.analysis(base_path), trial.loop_id, trial.rule, trial.factor,
                                        rules=ctx.rules())
        except RocmPerfError as e:
            return Rendered(error=str(e))
        failed = [f"{v.name}: {v.reason}" for v in tools.guard_candidate(cand, ctx.flags_of(base_path)) if not v.ok]
        return Rendered(cand.rewritten, cand.diff, failed=failed)
