"""A candidate's verdict as the ledger and the run directory keep it: rejecting it with a named
reason, what becomes of a carry's components, and trials/<id>/verdict.json (derived from the
ledger, written again by `finish`). Also the two numbers the search orders candidates by."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rocm_perf.optimize.ledger import Trial
from rocm_perf.optimize.states import CARRIED

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def reject(ctx: "RunContext", t: Trial, reason: str, detail: str) -> None:
    """Reject `t` with a named reason (and its components, when it carried one alone), then say so."""
    with ctx.ledger.transaction():
        ctx.ledger.reject(t.id, reason, detail)
        settle_components(ctx, t, accepted=False, reason=reason, detail=detail)
    write_verdict(ctx, t.id)
    drop_copies(ctx, t.id)
    ctx.report.verdict(t.label, f"{reason}" + (f" ({detail.splitlines()[0][:120]})" if detail else ""), False)


def drop_copies(ctx: "RunContext", trial_id: int) -> None:
    """A rejected candidate's copies, where its runner does not keep them (a project's whole trees):
    its diff and verdict say what it was."""
    if ctx.program.drops_rejected:
        ctx.program.discard(ctx.run_dir / "trials" / str(trial_id))


def settle_components(ctx: "RunContext", t: Trial, *, accepted: bool, reason: str = "", detail: str = "") -> None:
    """A carry decided: its components are carried (accepted), or, for one carried alone,
    rejected with the carry's reason (a rejected combination's go on, each alone)."""
    if not t.components:
        return
    if accepted:
        for c in t.components:
            ctx.ledger.update_trial(c, status=CARRIED, detail=f"accepted through trial {t.id}")
    elif len(t.components) == 1:
        ctx.ledger.update_trial(t.components[0], status="rejected", reason=reason,
                                detail=f"when carried onto a newer baseline as trial {t.id}: {detail}".rstrip(": "))


def write_verdict(ctx: "RunContext", trial_id: int) -> None:
    """trials/<id>/verdict.json: derived from the ledger (rebuilt by `finish` as well)."""
    t = ctx.ledger.trial(trial_id)
    d = ctx.run_dir / "trials" / str(trial_id)
    d.mkdir(parents=True, exist_ok=True)
    verdict = {"id": t.id, "candidate": t.label, "status": t.status, "reason": t.reason, "detail": t.detail,
               "evidence": t.evidence, "resources": t.resources, "ordering": t.ordering, "components": t.components}
    tmp = d / "verdict.json.tmp"
    tmp.write_text(json.dumps(verdict, indent=2))
    tmp.replace(d / "verdict.json")


def score(t: Trial) -> float:
    """A built candidate's place in the race's order: the product of its named factors (plan.py)."""
    return float(t.ordering.get("score", t.expected_value))


def estimate(t: Trial) -> float:
    """A screened candidate's estimated ratio (candidate / baseline), 1 where it has none."""
    cp = (t.evidence.get("screen") or {}).get("critical_path") or {}
    return float(cp.get("estimate") or 1.0)
