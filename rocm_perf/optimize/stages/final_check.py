"""State `final-check`: the original program against the final one, interleaved, for the report's
overall speedup (it decides nothing: every change was accepted on its own confirmation). A final
program that fails or changes its outputs here stops the run: its changes must not be applied.
Commits the check's interval."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.interleaved import pair_order, record_round, run_pair
from rocm_perf.optimize.ledger import BASELINE_TRIAL
from rocm_perf.optimize.measure import metric_value, outputs_differ
from rocm_perf.optimize.states import WHOLE_PROGRAM

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

# The final check's pairs: --aa-rounds, then as many again while its interval still holds 1, up to
# this many times --aa-rounds. Ten pairs on a program at 13 % spread (kernels/pipeline.cu) read
# +1.0 % [-9 %, +12 %] for a change confirmed at +20 %, which 30 interleaved rounds measured at +14 %.
FINAL_CHECK_MAX_BLOCKS = 3


def run(ctx: "RunContext") -> str:
    """--aa-rounds pairs, and as many again while the interval still holds 1 (a gain the run
    accepted, not yet visible in the pairs of a noisy program), up to FINAL_CHECK_MAX_BLOCKS
    times and within the time budget."""
    ctx.ledger.forget_rounds(BASELINE_TRIAL, "final")
    bases = ctx.ledger.baselines()
    if len(bases) < 2:
        return WHOLE_PROGRAM
    b: list[float] = []
    c: list[float] = []
    tail = (1 - ctx.opt.confidence) / 2
    _final_pairs(ctx, bases[0].executable, bases[-1].executable, b, c)
    iv = acc.median_ratio_interval(b, c, tail_alpha=tail)
    for _ in range(FINAL_CHECK_MAX_BLOCKS - 1):
        if iv.high < 1.0 or iv.low > 1.0 or ctx.elapsed() >= ctx.opt.time_budget_s:
            break
        _final_pairs(ctx, bases[0].executable, bases[-1].executable, b, c)
        iv = acc.median_ratio_interval(b, c, tail_alpha=tail)
    ctx.ledger.set("final_check", iv.to_json())
    return WHOLE_PROGRAM


def _final_pairs(ctx: "RunContext", original: str, final: str, b: list[float], c: list[float]) -> None:
    """--aa-rounds more pairs of the final check after the len(b) measured, their values appended to b and c."""
    start = len(b)
    for i in range(start, start + ctx.opt.aa_rounds):
        ctx.check_stop()
        order = pair_order(i, original, final)
        for (role, _), (r, secs) in zip(order, run_pair(ctx, [(exe, BASELINE_TRIAL, "final", i, role) for role, exe in order])):
            record_round(ctx, BASELINE_TRIAL, "final", i, role, r)
            if not r.ok or outputs_differ(ctx.ledger.get("reference_outputs"), r.outputs, ctx.run_outputs):
                raise RocmPerfError(f"{ctx.run_dir}: the final program failed or changed its outputs in the "
                                    f"final check (round {i}); its accepted changes must not be applied")
            (b if role == "B" else c).append(metric_value(r, ctx.opt.metric))
        ctx.report.round(i + 1, "", secs)
