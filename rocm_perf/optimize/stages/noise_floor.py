"""State `noise-floor`: --aa-rounds interleaved pairs of the baseline against its twin (the same
source built twice). Their paired spread is the floor a gain must clear (the run's effective
min-gain), they choose the decision metric where the run leaves it to them (--metric auto), and
their median time is what a pair costs the budget. Commits the floor, the bar, the metric and
the pair's seconds."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.interleaved import pair_order, record_round, require_baseline_ok, run_pair
from rocm_perf.optimize.ledger import BASELINE_TRIAL
from rocm_perf.optimize.measure import METRIC_CPU_PATH, RoundResult, adjusted_metric, metric_meaning, metric_of, metric_value
from rocm_perf.optimize.probe_exponent import fit_rounds
from rocm_perf.optimize.states import RANK

if TYPE_CHECKING:
    from rocm_perf.optimize.run_context import RunContext


def run(ctx: "RunContext") -> str:
    ctx.ledger.forget_rounds(BASELINE_TRIAL, "aa")
    base = ctx.ledger.baselines()[0]
    twin = ctx.ledger.get("twin_executable")
    rounds: dict[str, list[RoundResult]] = {"B": [], "C": []}
    pair_seconds = []
    for i in range(ctx.opt.aa_rounds):
        ctx.check_stop()
        secs_pair = 0.0
        order = pair_order(i, base.executable, twin)
        for (role, _), (r, secs) in zip(order, run_pair(ctx, [(exe, BASELINE_TRIAL, "aa", i, role) for role, exe in order])):
            record_round(ctx, BASELINE_TRIAL, "aa", i, role, r)
            require_baseline_ok(ctx, r, f"A/A round {i}")
            rounds[role].append(r)
            secs_pair += secs
        pair_seconds.append(secs_pair)
        ctx.report.round(i + 1, "", secs)
    metric_record = choose_metric(ctx, rounds["B"], rounds["C"])
    b = [metric_value(r, ctx.opt.metric) for r in rounds["B"]]
    c = [metric_value(r, ctx.opt.metric) for r in rounds["C"]]
    floor = acc.noise_floor(b, c, confidence=ctx.opt.confidence, max_rounds=ctx.opt.max_rounds)
    effective = acc.effective_min_gain(ctx.opt.min_gain, floor)
    with ctx.ledger.transaction():
        if metric_record is not None:
            ctx.ledger.set("metric", metric_record)
        ctx.ledger.set("noise_floor", floor.to_json())
        ctx.ledger.set("effective_min_gain", effective)
        # What one interleaved pair costs: the race turns the time budget into pairs with it.
        ctx.ledger.set("pair_seconds", sorted(pair_seconds)[len(pair_seconds) // 2])
    if effective > ctx.opt.min_gain:
        ctx.report.message(f"A/A noise floor {floor.floor:.1%}: asking for at least {effective:.1%} instead of {ctx.opt.min_gain:.1%}")
    return RANK


def choose_metric(ctx: "RunContext", base: list[RoundResult], twin: list[RoundResult]) -> dict | None:
    """Where the run fits adjusted-path's exponent (options.fits_exponent): the adjusted path
    at the exponent these A/A rounds fit (probe_exponent.py) becomes the run's metric
    (ctx.opt.metric), first of the `steadier_of` the race may still turn to. Else, with
    alternatives (options.auto_alternatives), the steadiest of them over these pairs. Returns
    the ledger's new `metric` record; None when the metric was settled before the run."""
    record = ctx.ledger.get("metric") or {}
    choices = list(record.get("steadier_of") or [])
    fitted, fit = None, None
    if record.get("fit_exponent"):
        fit = fit_rounds([base, twin])
        # No fit (a round without the probe, or its readings never moved): the alternatives as before.
        fitted = adjusted_metric(fit.exponent) if fit else None
        choices = list(dict.fromkeys([fitted, *choices] if fitted else choices or [METRIC_CPU_PATH]))
    if not choices:
        return None
    spreads = {}
    for m in choices:
        b = [metric_of(r.cp_ns, r.outputs, m) for r in base]
        c = [metric_of(r.cp_ns, r.outputs, m) for r in twin]
        if all(v is not None and v > 0 for v in b + c):
            spreads[m] = acc.paired_spread(b, c)
    if fitted in spreads:
        chosen = fitted
    else:  # no fit, or a round lacks the fitted path: as before, the steadier of what every round has
        choices = [m for m in choices if m != fitted] or [METRIC_CPU_PATH]
        fitted = None
        chosen = acc.steadier_metric(spreads, choices)
    ctx.opt = replace(ctx.opt, metric=chosen)
    said = ", ".join(f"{m} {s:.1%}" for m, s in spreads.items())
    how = (f"slope {fit.slope:.2f} of log cpu-path on the log of the probe over the {fit.rounds} A/A rounds; "
           if fit and chosen == fitted else "")
    ctx.report.message(f"decision metric: {chosen} ({how}A/A paired spread {said})")
    new = {**record, "name": chosen, "meaning": metric_meaning(chosen), "aa_spreads": spreads}
    if record.get("fit_exponent"):
        new["exponent_fit"] = fit.to_json() if fitted else None
    if fitted and record.get("steadier_of"):  # the race's check keeps the fitted metric unless an end is clearly steadier
        new["steadier_of"] = [chosen, *[m for m in choices if m != chosen]]
    return new
