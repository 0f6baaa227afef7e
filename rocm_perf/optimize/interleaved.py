"""Interleaved pairs of rounds against the baseline: running them, recording them, reading them back.

A pair is one round of the baseline and one of a candidate, run back to back in alternating order
(or at once, where the run's pairs run together), each recorded in the ledger as it ends. Two
candidates of a race share one baseline run (C1 B C2). A candidate's pairs are read back from the
ledger, never from memory, so that a resumed run sees exactly what an uninterrupted one would have.
Correctness is checked on these timed rounds themselves: a failed round or a changed output ends
the candidate there (MEASUREMENT.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import yardstick
from rocm_perf.optimize.ledger import BASELINE_TRIAL, Baseline, RoundRow, Trial
from rocm_perf.optimize.measure import METRIC_UNDIVIDED, RoundResult, metric_kind, metric_of, metric_value, outputs_differ
from rocm_perf.optimize.options import PAIRING_TOGETHER
from rocm_perf.optimize.output_tolerance import worst_errors
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.optimize.states import R_CRASH, R_TIMEOUT, R_WRONG_OUTPUT

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext

# Candidates a race runs against one baseline run (C1 B C2, then C2 B C1): 1.5 runs a pair instead of 2.
# The baseline run sits between them: each candidate is next to it. (Ordered B C1 C2, the candidate two
# runs away spread 11.3 % against its partner's 9.6 % over 590 pairs each of 15 bench_search races,
# more in 13 of them: about 40 % more pairs for the same interval.)
SHARED_BASELINE = 2


def pair_order(i: int, baseline: str, candidate: str) -> list[tuple[str, str]]:
    """Pair i runs B then C when i is even, C then B when odd: a position effect (a warm cache
    for the second run) then cancels out in the median instead of favouring the candidate."""
    pair = [("B", baseline), ("C", candidate)]
    return pair if i % 2 == 0 else pair[::-1]


def _round(ctx: "RunContext", exe: str, trial_id: int, phase: str, idx: int, role: str) -> tuple[Path, Path, str]:
    """What the runner takes for one round: (executable, the round's directory, its key)."""
    where = ctx.run_dir / ("baseline" if trial_id == BASELINE_TRIAL else f"trials/{trial_id}") / "profiles" / f"{phase}-{idx}-{role}"
    return ctx.abs(exe), where, f"{trial_id}-{phase}-{idx}-{role}"


def run_round(ctx: "RunContext", exe: str, trial_id: int, phase: str, idx: int, role: str) -> tuple[RoundResult, float]:
    """One round of `exe` (relative to the run) and the seconds it took."""
    t0 = ctx.svc.clock()
    result = ctx.program.round(*_round(ctx, exe, trial_id, phase, idx, role))
    return result, ctx.svc.clock() - t0


def run_pair(ctx: "RunContext", runs: list[tuple[str, int, str, int, str]]) -> list[tuple[RoundResult, float]]:
    """The rounds (exe, trial_id, phase, idx, role) of one pair, in this order when they run apart,
    all at once when the run's pairs run together (options.run_pairing; measure.ProfiledRounds.
    together); each with its share of the pair's seconds."""
    if ctx.pairing != PAIRING_TOGETHER:
        return [run_round(ctx, *r) for r in runs]
    t0 = ctx.svc.clock()
    results = ctx.program.together([_round(ctx, *r) for r in runs])
    share = (ctx.svc.clock() - t0) / len(runs)
    return [(r, share) for r in results]


def record_round(ctx: "RunContext", trial_id: int, phase: str, idx: int, role: str, r: RoundResult) -> None:
    ctx.ledger.add_round(RoundRow(trial_id, phase, idx, role, r.ok, r.failure, r.cp_ns, r.sum_ns, r.kernel_ns,
                                  {**r.outputs, "cp_share": r.cp_share}))


def require_baseline_ok(ctx: "RunContext", r: RoundResult, where: str) -> None:
    """A baseline round must run and give the reference's outputs: else nothing can be measured."""
    if not r.ok:
        raise RocmPerfError(f"{ctx.opt.source}: the baseline failed in {where} ({r.failure}); "
                            "the program must run reliably to be measured")
    differ = outputs_differ(ctx.ledger.get("reference_outputs"), r.outputs, ctx.run_outputs)
    if differ:
        raise RocmPerfError(f"{ctx.opt.source}: the baseline's outputs change from run to run ({where}: {differ}); "
                            "mark timing lines with --timing-lines or make the program deterministic")


def measure_pair(ctx: "RunContext", t: Trial, phase: str, i: int, base: Baseline) -> tuple[str, str, float]:
    """Interleaved pair i of `t` against `base`, recorded; (reject reason or '', detail, seconds)."""
    return shared_pairs(ctx, [t], {t.id: i}, phase, base)[t.id]


def shared_pairs(ctx: "RunContext", ts: list[Trial], idx: dict[int, int], phase: str, base: Baseline,
                 name: tuple[int, int] | None = None) -> dict[int, tuple[str, str, float]]:
    """Pair idx[t] of every candidate in `ts` against one run of `base`, all recorded (the
    baseline run under each of them): the baseline run in the middle (B C alone, C1 B C2 for
    two) when the pair index is even, reversed when odd, so that each candidate has the
    baseline on either side equally often and two are both next to it (all at once when the
    run's pairs run together: run_pair). `name`: the (trial, index) the baseline run is filed
    under (default: the first candidate's)."""
    owner, i0 = name or (ts[0].id, idx[ts[0].id])
    order: list[tuple[str, Trial | None]] = [("C", t) for t in ts]
    order.insert(len(ts) // 2, ("B", None))
    if i0 % 2:
        order.reverse()
    results: dict[int, RoundResult] = {}
    rb, seconds = None, 0.0
    ran = run_pair(ctx, [(base.executable, owner, phase, i0, "B") if t is None else (t.executable, t.id, phase, idx[t.id], "C")
                         for _, t in order])
    for (role, t), (r, secs) in zip(order, ran):
        if t is None:
            rb = r
            if len(ts) > 1:  # one run, filed under each candidate it is paired with
                rb.outputs = {**rb.outputs, "baseline_run": f"{owner}-{phase}-{i0}-B"}
            for x in ts:
                record_round(ctx, x.id, phase, idx[x.id], "B", rb)
        else:
            results[t.id] = r
            record_round(ctx, t.id, phase, idx[t.id], "C", results[t.id])
        seconds += secs
    require_baseline_ok(ctx, rb, f"round {i0} against candidate{'s' if len(ts) > 1 else ''} "
                                 f"{', '.join(str(t.id) for t in ts)}")
    reference = ctx.ledger.get("reference_outputs")
    out = {}
    share = seconds / len(ts)
    for t in ts:
        rc, i = results[t.id], idx[t.id]
        if not rc.ok and rc.outputs.get("wrong_output"):  # a runner that checks outputs itself (runners/replay.py)
            out[t.id] = (R_WRONG_OUTPUT, f"round {i}: {rc.outputs['wrong_output']}", share)
            continue
        if not rc.ok:
            reason = R_TIMEOUT if rc.failure == "timeout" else R_CRASH
            tail = rc.outputs.get("stderr_tail", "")
            out[t.id] = (reason, f"round {i}: {rc.failure}, exit {rc.outputs.get('returncode')}" + (f": {tail}" if tail else ""), share)
            continue
        differ = outputs_differ(reference, rc.outputs, ctx.proposer_of(t).guards.outputs)
        out[t.id] = (R_WRONG_OUTPUT, f"round {i}: {differ}", share) if differ else ("", "", share)
    return out


def complete_pairs(ctx: "RunContext", trial_id: int, phase: str, n: int | None = None) -> list[tuple[RoundRow, RoundRow]]:
    """The (baseline, candidate) rounds of a trial's complete pairs in `phase` (the first n), up
    to the first pair with a failed round."""
    rows = {(r.idx, r.role): r for r in ctx.ledger.rounds(trial_id, phase)}
    out = []
    while (len(out), "B") in rows and (len(out), "C") in rows and (n is None or len(out) < n):
        rb, rc = rows[(len(out), "B")], rows[(len(out), "C")]
        if not (rb.ok and rc.ok):
            break
        out.append((rb, rc))
    return out


def pair_values(ctx: "RunContext", t: Trial, phase: str, n: int | None = None,
                metric: str | None = None) -> tuple[list[float], list[float]]:
    """The decision values (or `metric`'s) of `t`'s complete pairs in `phase` (the first n); a
    pair with a failed round (crash, timeout) ends them: it has no value, and it ended the trial."""
    metric = metric or ctx.opt.metric
    b, c = [], []
    for rb, rc in complete_pairs(ctx, t.id, phase, n):
        b.append(metric_value(as_result(rb), metric))
        c.append(metric_value(as_result(rc), metric))
    return b, c


def recorded_pairs(ctx: "RunContext", trial_id: int, phase: str, metric: str,
                   n: int | None = None) -> tuple[list[float], list[float]] | None:
    """`metric`'s values of a trial's complete pairs (as pair_values), or None when a round of them has
    no positive value (where pair_values raises: the decision metric must be there)."""
    b, c = [], []
    for rb, rc in complete_pairs(ctx, trial_id, phase, n):
        vb, vc = metric_of(rb.cp_ns, rb.outputs, metric), metric_of(rc.cp_ns, rc.outputs, metric)
        if not (vb and vb > 0 and vc and vc > 0):
            return None
        b.append(vb)
        c.append(vc)
    return b, c


def evidence(ctx: "RunContext", t: Trial, phase: str, n: int, tail: float) -> dict:
    """The intervals of `t`'s first n pairs in `phase`: decision metric, kernel, plain sum."""
    rows = {(r.idx, r.role): r for r in ctx.ledger.rounds(t.id, phase)}
    b, c = pair_values(ctx, t, phase, n)
    symbols = [r["symbol"] for r in ctx.ledger.get("top_kernels", []) if r["kernel"] in t.kernel.split(",")]
    kb, kc = [], []
    for i in range(len(b)):
        kernel_b = [rows[(i, "B")].kernel_ns[s] for s in symbols if s in rows[(i, "B")].kernel_ns]
        kernel_c = [rows[(i, "C")].kernel_ns[s] for s in symbols if s in rows[(i, "C")].kernel_ns]
        if kernel_b and kernel_c:
            kb.append(sum(kernel_b))
            kc.append(sum(kernel_c))
    found: dict[str, Any] = {"rounds": len(b), "metric": ctx.opt.metric,
                             "critical_path": acc.median_ratio_interval(b, c, tail_alpha=tail).to_json()}
    if len(kb) == len(b) and kb:
        found["kernel"] = acc.median_ratio_interval(kb, kc, tail_alpha=tail).to_json()
    plain = METRIC_UNDIVIDED.get(metric_kind(ctx.opt.metric))
    if plain and len(b) >= 2:  # a probe-divided metric: did the candidate move the probe? (yardstick.py)
        pb, pc = pair_values(ctx, t, phase, n, metric=plain)
        found["probe_shift"] = yardstick.probe_shift(pb, pc, b, c, yardstick.SHIFT_TAIL).to_json()
        found["plain"] = {"metric": plain, **acc.median_ratio_interval(pb, pc, tail_alpha=tail).to_json()}
    found["sum"] = acc.median_ratio_interval([rows[(i, "B")].sum_ns for i in range(len(b))],
                                             [rows[(i, "C")].sum_ns for i in range(len(b))], tail_alpha=tail).to_json()
    reference = ctx.ledger.get("reference_outputs") or {}
    criterion = ctx.proposer_of(t).guards.outputs
    found["outputs"] = {"digests": reference.get("digests"), "stdout_matched": True, "rounds_checked": len(c),
                        "criterion": criterion}
    if criterion != BIT_IDENTICAL:  # within a tolerance: the worst errors over the rounds checked
        found["outputs"].update(worst_errors([rows[(k, "C")].outputs.get("tolerance") or {} for k in range(len(c))]))
    notes = (ctx.ledger.trial(t.id).provenance or {}).get("guard_notes")
    if notes:
        found["outputs"]["guard_notes"] = notes
    return found


def as_result(row: RoundRow) -> RoundResult:
    """A recorded round as measure.metric_value reads it."""
    return RoundResult(row.ok, row.failure, row.cp_ns, row.sum_ns, row.kernel_ns, row.outputs.get("cp_share", {}),
                       row.outputs)


def ratio_text(found: dict) -> str:
    """A decision's interval in words: `ratio 0.951 [0.940, 0.962] after 10 rounds`."""
    cp = found.get("critical_path")
    if not cp or not cp.get("n"):
        return found.get("detail", "")
    high = "inf" if math.isinf(cp["high"]) else f"{cp['high']:.3f}"
    return f"ratio {cp['estimate']:.3f} [{cp['low']:.3f}, {high}] after {cp['n']} rounds"
