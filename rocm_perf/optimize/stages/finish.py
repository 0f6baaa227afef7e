"""State `finish`: the accepted result's roofline (when the baseline had a counter round), every
trial's verdict.json written again from the ledger, this run's outcomes added to the search prior
of the machine, and the run's artifacts: summary.json, report.md, accepted.diff, final source and
report.html. Everything here is derived from the ledger, so a kill here is redone in full."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.artifacts import write_artifacts
from rocm_perf.optimize.roofline_round import record_roofline
from rocm_perf.optimize.search_prior import LOST_REASONS, open_prior, prior_root
from rocm_perf.optimize.states import CARRIED, DONE, FINISH, OPEN_STATUSES
from rocm_perf.optimize.verdicts import estimate, write_verdict

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    bases = ctx.ledger.baselines()
    if len(bases) > 1 and (ctx.ledger.get("roofline") or {}).get("how") == "counter round":
        record_roofline(ctx, "final", ctx.abs(bases[-1].executable), FINISH)  # the accepted result's roofline
    for t in ctx.ledger.trials():
        if t.status not in OPEN_STATUSES:
            write_verdict(ctx, t.id)
    _record_prior(ctx)
    write_artifacts(ctx.run_dir, ctx.ledger, state=DONE)
    _write_report(ctx)
    return DONE


def _record_prior(ctx: "RunContext") -> None:
    """What this run measured, for the order of later runs on this machine (search_prior.py)."""
    prior = open_prior(prior_root(ctx.run_dir))
    if prior is None:
        return
    machine = ctx.machine()
    rows = []
    for t in ctx.ledger.trials():
        shape = t.ordering.get("shape")
        if t.components or not shape:
            continue
        if t.status in ("accepted", CARRIED):
            rows.append((t.id, machine, t.rule, t.factor, shape, True, 1 / estimate(t) - 1))
        elif t.status == "rejected" and t.reason in LOST_REASONS:
            rows.append((t.id, machine, t.rule, t.factor, shape, False, 1 / estimate(t) - 1))
    try:
        prior.record(ctx.run_dir.name, rows)
    except RocmPerfError as e:
        ctx.report.message(f"search prior not updated: {e}")
    finally:
        prior.close()


def _write_report(ctx: "RunContext") -> None:
    """Hand the finished run directory to the report writer (report.html beside report.md)."""
    if ctx.svc.write_report is None:
        return
    try:
        ctx.svc.write_report(ctx.run_dir)
    except RocmPerfError as e:
        ctx.ledger.set("report_html_error", str(e))
        ctx.report.message(f"report.html not written: {e}")
