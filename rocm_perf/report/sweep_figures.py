"""The figures of a sweep's report, drawn from its SweepView:

- per target its gain (with the interval of the original-vs-final check) and the time spent on it,
  coloured by state, its trials beside it;
- the budget over the night: when each target was worked on, and the budget used against the
  budget given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from rocm_perf.report import figure as fg
from rocm_perf.report.run_headline import metric_label
from rocm_perf.optimize.run_view import interval_open
from rocm_perf.sweep.view import SweepRow, SweepView

STATE_COLORS = {"done": fg.ACCEPTED, "running": fg.INCONCLUSIVE, "pending": "#bbbbbb", "failed": fg.SLOWER,
                "quarantined": fg.SLOWER}
SPAN_COLORS = {"done": fg.ACCEPTED, "failed": fg.SLOWER, "quarantined": fg.SLOWER, "retry": fg.INCONCLUSIVE,
               "stopped": fg.NOT_SIGNIFICANT, "cancelled": fg.NOT_SIGNIFICANT, "killed": fg.NOT_SIGNIFICANT,
               "running": fg.BASELINE, "submitted": "#b9c7de", "submitting": "#b9c7de"}
QUEUED = "#dde3ec"
NO_GAIN = "#9fb4d3"


@dataclass
class SweepFigures:
    targets: fg.Figure | None = None
    budget: fg.Figure | None = None

    def all(self) -> list[fg.Figure]:
        return [f for f in (self.targets, self.budget) if f is not None]


def _gain(row: SweepRow) -> tuple[float, float, float] | None:
    """(gain %, low %, high %) of the target's critical path, original -> final; None if unknown."""
    run = row.run
    if run is None or not run.speedup:
        return None
    gain = (run.speedup - 1) * 100
    interval = run.speedup_interval
    if not interval:
        return gain, gain, gain
    return gain, (interval[0] - 1) * 100, (interval[1] - 1) * 100


def _trials_text(row: SweepRow) -> str:
    run = row.run
    accepted = len(run.accepted) if run else row.accepted
    tried = len(run.trials) if run else row.accepted + row.rejected
    text = f"{accepted} of {tried} accepted" if tried else "no trials"
    if row.status in ("quarantined", "failed"):
        reason = (row.reason or "").splitlines()[0] if row.reason else ""
        text = f"{row.status}: {reason[:60]}" if reason else row.status
    return text


@fg.styled
def targets_figure(view: SweepView, stem: str) -> fg.Figure | None:
    """Per target: gain with its interval (left), time spent (right), state as colour."""
    rows = view.rows
    if not rows:
        return None
    n = len(rows)
    fig, (left, right) = fg.new_figure(9.5, 1.4 + 0.34 * n, ncols=2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    y = np.arange(n)
    for i, row in enumerate(rows):
        g = _gain(row)
        color = STATE_COLORS.get(row.status, fg.OTHER_REJECTION)
        if g is None:
            continue
        gain, low, high = g
        if not (row.run and row.run.accepted) or not row.run.speedup_interval or interval_open(row.run.speedup_interval):
            # nothing accepted (the source is unchanged), or the original-vs-final check has not run
            # or had too few rounds to bound the gain
            if not (row.run and row.run.accepted):
                words = " no change"
            elif row.run.speedup_interval:
                words = f" accepted, {gain:+.1f} % by the estimate, interval open"
            else:
                words = " accepted, not yet re-measured"
            left.plot([0], [i], marker="D", ms=5, color=NO_GAIN)
            left.annotate(words, xy=(0, i), va="center", fontsize=7.5, color="#555")
            continue
        left.barh(i, gain, height=0.55, color=color if low > 0 else NO_GAIN)
        if high != low:
            left.plot([low, high], [i, i], color="#333", lw=1.2)
    left.axvline(0, color="#444", lw=0.8)
    lo, hi = left.get_xlim()
    left.set_xlim(min(lo, 0) - 0.04 * (hi - lo), hi)  # room for a "no change" mark at 0
    left.set_yticks(y, [r.target[:36] for r in rows])
    left.invert_yaxis()
    metrics = {metric_label(r.run) for r in rows if r.run is not None}
    what = metrics.pop() if len(metrics) == 1 else "the metric each run decided on"
    left.set_xlabel(f"speed-up of {what}, original -> final (%, with its interval)")
    left.set_ylabel("target")
    left.grid(axis="x", color="#eee", lw=0.5)
    minutes = [r.used_s / 60 for r in rows]
    right.barh(y, minutes, height=0.55, color=[STATE_COLORS.get(r.status, fg.OTHER_REJECTION) for r in rows])
    for i, row in enumerate(rows):
        right.text(minutes[i], i, f"  {_trials_text(row)}", va="center", fontsize=7.5)
    right.set_xlim(0, max(minutes + [1.0]) * 1.9)
    right.set_xlabel("time spent (min)")
    right.set_ylabel("target")
    right.tick_params(labelleft=False)
    title = f"Targets: {sum(r.status == 'done' for r in rows)} of {n} done"
    fig.suptitle(title, x=0.01, ha="left", fontweight="bold", fontsize=10)
    states = [s for s in STATE_COLORS if any(r.status == s for r in rows)]
    handles = [Patch(color=STATE_COLORS[s], label=s) for s in states]
    if any(r.status == "done" and _gain(r) and (_gain(r)[1] <= 0 or not r.run.accepted) for r in rows):
        handles.append(Patch(color=NO_GAIN, label="done, no proven gain"))
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=7.5, frameon=False)
    fig.tight_layout()
    return fg.svg_figure(fig, stem, title)


def _clock_unit(seconds: float) -> tuple[float, str]:
    """(divisor, unit) of the budget chart's axes: hours for a night, minutes or seconds for less."""
    if seconds >= 2 * 3600:
        return 3600.0, "h"
    return (60.0, "min") if seconds >= 120 else (1.0, "s")


@fg.styled
def budget_figure(view: SweepView, stem: str) -> fg.Figure | None:
    """When each target was worked on (top) and the budget used over wall-clock time (bottom)."""
    if not view.sessions:
        return None
    t0 = view.started
    now = max([s.end for s in view.sessions] + [sp.end for sp in view.spans if sp.end is not None])
    # Wall time in the unit of how long the sweep ran; the budget in the unit of what it was given.
    div, unit = _clock_unit(now - t0)
    spent = sum(s.end - s.start for s in view.sessions)
    ydiv, yunit = _clock_unit(max(spent, view.budget_s or 0))
    targets = list(dict.fromkeys([sp.target for sp in view.spans] + [r.target for r in view.rows]))
    lane = {t: i for i, t in enumerate(targets)}
    n = max(1, len(targets))
    fig, (top, bottom) = fg.new_figure(9.5, 2.4 + 0.28 * n, nrows=2, sharex=True,
                                       gridspec_kw={"height_ratios": [max(1.0, 0.28 * n), 1.6]})
    for sp in view.spans:
        end = sp.end if sp.end is not None else now
        if sp.queued is not None and sp.queued < sp.start:  # waiting in the executor's queue
            top.barh(lane[sp.target], (sp.start - sp.queued) / div, left=(sp.queued - t0) / div, height=0.3,
                     color=QUEUED, lw=0)
        # A triage is the thinner bar before its target's optimize run.
        top.barh(lane[sp.target], (end - sp.start) / div, left=(sp.start - t0) / div,
                 height=0.3 if sp.kind == "triage" else 0.6, color=SPAN_COLORS.get(sp.how, fg.OTHER_REJECTION), lw=0)
    top.set_yticks(range(len(targets)), [t[:36] for t in targets])
    top.set_ylim(len(targets) - 0.5, -0.5)
    top.set_xlabel(f"time since the sweep started ({unit})")
    top.set_ylabel("target")
    top.xaxis.set_tick_params(labelbottom=True)
    hows = [h for h in SPAN_COLORS if any(sp.how == h for sp in view.spans)]
    span_handles = [Patch(color=SPAN_COLORS[h], label=h if h in ("running", "submitted", "submitting") else f"ended: {h}")
                    for h in hows]
    if any(sp.queued is not None and sp.queued < sp.start for sp in view.spans):
        span_handles.append(Patch(color=QUEUED, label="queued"))
    if any(sp.kind == "triage" for sp in view.spans):
        span_handles.append(Patch(color="#ffffff", label="thin: triage, thick: optimize"))
    if span_handles:
        top.legend(handles=span_handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7.5, frameon=False)
    # Budget used: the sum of session time, growing while a session runs, flat between sessions.
    xs, ys, used = [0.0], [0.0], 0.0
    for s in view.sessions:
        xs += [(s.start - t0) / div, (s.end - t0) / div]
        ys += [used / ydiv, (used + s.end - s.start) / ydiv]
        used += s.end - s.start
    handles = bottom.plot(xs, ys, color=fg.BASELINE, lw=1.8, label=f"used {used / ydiv:.3g} {yunit}")
    if view.budget_s:
        handles.append(bottom.axhline(view.budget_s / ydiv, color=fg.SLOWER, lw=1.0, ls="--",
                                      label=f"budget {view.budget_s / ydiv:.3g} {yunit}"))
    for before, s in zip(view.sessions, view.sessions[1:]):
        for ax in (top, bottom):  # the sweep was not running in between
            ax.axvspan((before.end - t0) / div, (s.start - t0) / div, color="#000", alpha=0.06, lw=0)
        bottom.axvline((s.start - t0) / div, color="#999", lw=0.7, ls=":")
    if len(view.sessions) > 1:
        handles.append(Line2D([], [], color="#999", lw=0.7, ls=":", label="resumed"))
        handles.append(Patch(color="#000", alpha=0.06, label="not running"))
    bottom.set_xlabel(f"time since the sweep started ({unit})")
    bottom.set_ylabel(f"budget used ({yunit})")
    bottom.set_ylim(0, max(ys + [(view.budget_s or 0) / ydiv]) * 1.15 or 1)
    bottom.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7.5, frameon=False)
    bottom.grid(color="#eee", lw=0.5)
    title = "Budget over the night"
    fig.suptitle(title, x=0.01, ha="left", fontweight="bold", fontsize=10)
    fig.tight_layout()
    return fg.svg_figure(fig, stem, title)


def sweep_figures(view: SweepView) -> SweepFigures:
    return SweepFigures(targets=targets_figure(view, "sweep-targets"), budget=budget_figure(view, "sweep-budget"))
