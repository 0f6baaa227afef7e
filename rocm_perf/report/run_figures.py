"""The figures of a run's report, drawn from its RunView (and the baseline's profile database):

- per kernel, original against final (the first screen);
- the candidates as a forest plot: each measured candidate's ratio with its interval, coloured by
  verdict, the minimum gain and the A/A noise drawn, the reason beside every row;
- where the baseline's time goes: kernels by critical-path and by total time; its dispatches per
  stream over time with the critical path drawn over them;
- per accepted change, its interleaved rounds;
- the rooflines of the baseline and the accepted result (report/roofline_chart.py).

A figure whose data the run does not have is left out with a note saying why.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.run_view import RoundPoint, RunView, TrialView
from rocm_perf.report import figure as fg
from rocm_perf.report.run_headline import metric_label
from rocm_perf.trace.names import short_name

# Kernel colours of the timeline and the bars (the verdict colours stay for verdicts).
KERNEL_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#ccb974", "#64b5cd")
OTHER_KERNELS = "#c8c8c8"
MAX_KERNEL_ROWS = 10


@dataclass
class RunFigures:
    """The figures of one run, each None where the run lacks its data (`notes` say why)."""

    kernels: fg.Figure | None = None
    forest: fg.Figure | None = None
    time_bars: fg.Figure | None = None
    timeline: fg.Figure | None = None
    rounds: dict[str, fg.Figure] = field(default_factory=dict)  # by trial id, accepted changes
    rooflines: list[fg.Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timeline_notes: list[str] = field(default_factory=list)

    def all(self) -> list[fg.Figure]:
        singles = [self.kernels, self.forest, self.time_bars, self.timeline]
        return [f for f in singles if f is not None] + list(self.rounds.values()) + self.rooflines


def time_unit(ns_values) -> tuple[float, str]:
    """(divisor, unit) that shows the largest of these durations in 1..1000 of a unit."""
    top = max([v for v in ns_values if v is not None and math.isfinite(v)] or [0.0])
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if top >= div:
            return div, unit
    return 1.0, "ns"


def value_unit(values, unit: str) -> tuple[float, str]:
    """(divisor, unit) for values of a metric: times in ns/us/ms/s, counts in thousands, millions..."""
    if unit == "ns":
        return time_unit(values)
    top = max([v for v in values if v is not None and math.isfinite(v)] or [0.0])
    for div, words in ((1e9, "billion"), (1e6, "million"), (1e3, "thousand")):
        if top >= div:
            return div, f"{words} {unit}"
    return 1.0, unit


def kernel_label(name: str, width: int = 34) -> str:
    return short_name(name, width) or name[:width]


def candidate_label(t: TrialView) -> str:
    """Trial, loop, rule and factor in one short line (a combination names its parts; a patch or a
    tunable's values go by their proposer's name)."""
    if t.name:
        return f"#{t.id} {t.name}"[:60]
    if not t.loop_id and not t.factor:
        return f"#{t.id} {t.rule or t.label}"[:60]
    line = t.loop_id.rsplit(":", 1)[-1] if t.loop_id else ""
    where = kernel_label(t.kernel, 22) + (f" line {line}" if line.isdigit() else (f" {t.loop_id}" if t.loop_id else ""))
    what = f"{t.rule} x{t.factor}" if t.factor else t.rule
    return f"#{t.id} {where}: {what}"


# ---- the first screen ------------------------------------------------------------------------------

@fg.styled
def kernels_figure(run: RunView, stem: str) -> fg.Figure | None:
    """Per kernel, the median dispatch time of the original and of the final program."""
    rows = [k for k in run.kernel_times if k.baseline_ns][:8]
    if not rows:
        return None
    have_final = any(k.final_ns for k in rows)
    div, unit = time_unit([v for k in rows for v in (k.baseline_ns, k.final_ns)])
    fig, ax = fg.new_figure(6.4, 0.9 + 0.42 * len(rows))
    y = np.arange(len(rows))
    h = 0.38 if have_final else 0.6
    base = [k.baseline_ns / div for k in rows]
    ax.barh(y - (h / 2 if have_final else 0), base, height=h, color=fg.BASELINE, label="original")
    if have_final:
        final = [(k.final_ns or 0) / div for k in rows]
        ax.barh(y + h / 2, final, height=h, color=fg.CANDIDATE, label="final")
        for i, k in enumerate(rows):
            if k.final_ns and k.baseline_ns:
                change = k.final_ns / k.baseline_ns - 1
                ax.text(max(base[i], final[i]), i, f"  {change * 100:+.1f} %", va="center", fontsize=8,
                        color=fg.ACCEPTED if change < -0.005 else ("#c0392b" if change > 0.005 else "#555"))
    ax.set_yticks(y, [kernel_label(k.name) for k in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, max(base + ([(k.final_ns or 0) / div for k in rows] if have_final else [])) * 1.25)
    ax.set_xlabel(f"median dispatch time ({unit})")
    ax.set_ylabel("kernel")
    title = "Per kernel: original and final program" if have_final else "Per kernel: the original program (nothing accepted)"
    ax.set_title(title, loc="left")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    return fg.svg_figure(fig, stem, title)


# ---- the candidates ----------------------------------------------------------------------------------

def _reason_text(t: TrialView) -> str:
    text = "accepted" if t.accepted else (t.reason or t.decision or "open")
    detail = (t.detail or "").strip().splitlines()
    if detail and not t.accepted and not detail[0].startswith("ratio "):  # the interval is drawn already
        text += f": {detail[0]}"
    return text if len(text) <= 70 else text[:69] + "\u2026"


@fg.styled
def forest_figure(run: RunView, stem: str) -> fg.Figure | None:
    """One row per measured candidate: its ratio (candidate / baseline) with its interval."""
    rows = run.measured
    if not rows:
        return None
    n = len(rows)
    fig, ax = fg.new_figure(7.0, 1.5 + 0.3 * n)
    finite = [v for t in rows for v in (t.ratio_low, t.ratio, t.ratio_high) if v is not None and math.isfinite(v)]
    accept = 1 - run.effective_min_gain if run.effective_min_gain is not None else None
    marks = [1.0] + ([accept] if accept else []) + ([1 - run.noise_floor, 1 + run.noise_floor] if run.noise_floor else [])
    lo = max(0.2, min(finite + marks))
    hi = min(5.0, max(finite + marks))
    pad = (hi - lo) * 0.08 or 0.02
    lo, hi = lo - pad, hi + pad
    if run.noise_floor:
        ax.axvspan(1 - run.noise_floor, 1 + run.noise_floor, color="#000000", alpha=0.07, lw=0)
    ax.axvline(1.0, color="#444", lw=0.8)
    if accept:
        ax.axvline(accept, color=fg.ACCEPTED, lw=1.2, ls="--")
    for i, t in enumerate(rows):
        color = fg.verdict_color(t.decision, t.reason)
        low = t.ratio_low if t.ratio_low is not None else t.ratio
        high = t.ratio_high if t.ratio_high is not None and math.isfinite(t.ratio_high) else hi
        ax.plot([max(low, lo), min(high, hi)], [i, i], color=color, lw=2.2, solid_capstyle="butt")
        if t.ratio_high is None or not math.isfinite(t.ratio_high) or t.ratio_high > hi:
            ax.plot([hi], [i], marker=">", color=color, ms=5)  # the interval runs on: too few rounds
        if low < lo:
            ax.plot([lo], [i], marker="<", color=color, ms=5)
        ax.plot([min(max(t.ratio, lo), hi)], [i], marker="o" if t.accepted else "s", ms=6 if t.accepted else 4.5,
                color=color, mec="white", mew=0.6)
        ax.annotate(_reason_text(t), xy=(1.0, i), xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=7.5, color=color, annotation_clip=False)
    ax.set_yticks(range(n), [candidate_label(t) for t in rows], fontsize=8)
    ax.set_ylim(n - 0.5, -0.5 - (0.9 if n < 4 else 0.6))
    ax.set_xlim(lo, hi)
    metric = metric_label(run)
    confidence = f"{run.confidence * 100:g} %" if run.confidence else "confidence"
    xlabel = f"candidate / baseline {metric} ({confidence} interval; left of 1 is faster)"
    # The candidates with no row (never measured: duplicates, outraced, left for the budget) are
    # counted under the axis by reason, so the figure accounts for every candidate of the run.
    unmeasured = Counter(t.reason or t.decision or "open" for t in run.trials if not t.measured)
    if unmeasured:
        xlabel += (f"\nnot measured ({sum(unmeasured.values())}, listed in the table): "
                   + ", ".join(f"{reason} {count}" for reason, count in unmeasured.most_common()))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("candidate (trial, loop, rule x factor)")
    title = f"Candidates: {n} measured, {sum(t.accepted for t in rows)} accepted"
    handles = [Line2D([], [], color="#444", lw=0.8, label="no change")]
    if accept:
        min_gain = run.min_gain if run.min_gain is not None else run.effective_min_gain
        raised = (f", raised from --min-gain {min_gain * 100:.1f} % to the A/A floor"
                  if min_gain is not None and run.effective_min_gain > min_gain + 1e-12 else f" (--min-gain {run.effective_min_gain * 100:.1f} %)")
        handles.append(Line2D([], [], color=fg.ACCEPTED, lw=1.2, ls="--", label=f"accept below {accept:.3f}{raised}"))
    if run.noise_floor:
        handles.append(Patch(color="#000000", alpha=0.12, label=f"A/A noise floor \u00b1{run.noise_floor * 100:.1f} %"))
    seen = []
    for t in rows:
        key = ("accepted" if t.accepted else (t.reason or "rejected"), fg.verdict_color(t.decision, t.reason))
        if key[1] not in [c for _, c in seen]:
            seen.append(key)
    handles += [Line2D([], [], color=c, marker="o", lw=2, label=label) for label, c in seen]
    # The legend sits between the axes and the title (read before the rows, after the title).
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, fontsize=7, frameon=False,
              borderaxespad=0.2)
    ax.set_title(title, loc="left", pad=8 + 10.5 * math.ceil(len(handles) / 3))
    ax.grid(axis="x", color="#e5e5e5", lw=0.5)
    return fg.svg_figure(fig, stem, title)


# ---- where the time goes -----------------------------------------------------------------------------

@dataclass
class BaselinePicture:
    """What the baseline's profile says: kernels' critical-path and total time, and the timeline."""

    weights: list  # analysis.critical_path.SymbolWeight
    critical_path_ns: int
    sum_ns: int
    cross_stream_known: bool
    timeline: object  # analysis.timeline.Timeline


def load_baseline_picture(run: RunView) -> BaselinePicture | str:
    """The baseline's reference profile through trace/ and analysis/; a note when there is none."""
    from rocm_perf.analysis.critical_path import analyze_critical_path
    from rocm_perf.analysis.timeline import build_timeline
    from rocm_perf.trace.load import load_trace

    if not run.baseline_profiles:
        return "no profile of the baseline was kept in this run directory (runs before this version kept none)"
    db = run.baseline_profiles[0]
    try:
        trace = load_trace(db)
        cp = analyze_critical_path(trace)
    except RocmPerfError as e:
        return f"the baseline's profile could not be read: {e}"
    more = f" (the first of {len(run.baseline_profiles)} processes)" if len(run.baseline_profiles) > 1 else ""
    timeline = build_timeline(trace, cp)
    timeline.notes.insert(0, f"from {db.relative_to(run.path) if db.is_relative_to(run.path) else db}{more}")
    return BaselinePicture(cp.symbols, cp.critical_path_ns, cp.sum_dispatch_ns, cp.cross_stream_known, timeline)


@fg.styled
def time_bars_figure(run: RunView, picture: BaselinePicture, stem: str) -> fg.Figure | None:
    """Kernels by critical-path time and by total time (two panels, one kernel order)."""
    weights = sorted(picture.weights, key=lambda w: (-w.cp_ns, -w.total_ns))[:MAX_KERNEL_ROWS]
    if not weights:
        return None
    chosen = {k.get("symbol") for k in run.top_kernels}
    div, unit = time_unit([w.total_ns for w in weights])
    fig, (left, right) = fg.new_figure(9.0, 1.2 + 0.36 * len(weights), ncols=2, sharey=True)
    y = np.arange(len(weights))
    colors = [fg.CANDIDATE if w.name in chosen else fg.BASELINE for w in weights]
    for ax, values, total, what in ((left, [w.cp_ns for w in weights], picture.critical_path_ns, "on the critical path"),
                                    (right, [w.total_ns for w in weights], picture.sum_ns, "of all its dispatches")):
        ax.barh(y, [v / div for v in values], color=colors, height=0.6)
        for i, v in enumerate(values):
            share = f"{v / total * 100:.1f} %" if total else ""
            ax.text(v / div, i, f" {share}", va="center", fontsize=7.5)
        ax.set_xlim(0, max(values) / div * 1.3 or 1)
        ax.set_xlabel(f"time {what} ({unit})")
        ax.grid(axis="x", color="#eee", lw=0.5)
    left.set_yticks(y, [kernel_label(w.name) for w in weights])
    left.invert_yaxis()
    left.set_ylabel("kernel")
    right.set_ylabel("kernel")
    right.tick_params(labelleft=False)
    path = "critical path" if picture.cross_stream_known else "critical path (a lower bound: no API trace)"
    left.set_title(f"{path} {picture.critical_path_ns / div:.4g} {unit}", loc="left", fontsize=9, fontweight="normal")
    right.set_title(f"all dispatches {picture.sum_ns / div:.4g} {unit}", loc="left", fontsize=9, fontweight="normal")
    title = "Where the baseline's time goes"
    fig.suptitle(title, x=0.01, ha="left", fontweight="bold", fontsize=10)
    handles = [Patch(color=fg.CANDIDATE, label="chosen for rewriting")] if fg.CANDIDATE in colors else []
    handles += [Patch(color=fg.BASELINE, label="not chosen")] if fg.BASELINE in colors else []
    fig.legend(handles=handles, loc="upper right", ncol=2, fontsize=7.5, frameon=False)
    fig.tight_layout()
    return fg.svg_figure(fig, stem, title)


@fg.styled
def ranking_figure(run: RunView, stem: str) -> fg.Figure | None:
    """Without the baseline's profile: the ranking's critical-path shares from the ledger."""
    rows = sorted(run.ranking, key=lambda r: -float(r.get("cp_share") or 0))[:MAX_KERNEL_ROWS]
    if not rows:
        return None
    chosen = {k.get("symbol") for k in run.top_kernels}
    fig, ax = fg.new_figure(7.0, 1.1 + 0.36 * len(rows))
    y = np.arange(len(rows))
    ax.barh(y, [100 * float(r.get("cp_share") or 0) for r in rows], height=0.6,
            color=[fg.CANDIDATE if r.get("symbol") in chosen else fg.BASELINE for r in rows])
    ax.set_yticks(y, [kernel_label(r.get("symbol") or r.get("kernel") or "?") for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("share of the critical path (%), mean over the baseline's rounds")
    ax.set_ylabel("kernel")
    title = "Where the baseline's time goes (critical-path share)"
    ax.set_title(title, loc="left")
    return fg.svg_figure(fig, stem, title)


@fg.styled
def timeline_figure(picture: BaselinePicture, stem: str) -> fg.Figure | None:
    """The baseline's dispatches per stream over time, the critical path drawn over them."""
    tl = picture.timeline
    if not len(tl.bars):
        return None
    n_lanes = len(tl.lanes)
    div, unit = time_unit([tl.span_ns])
    fig, ax = fg.new_figure(10.0, 1.5 + 0.5 * n_lanes)
    colors = [KERNEL_COLORS[k] if k < len(KERNEL_COLORS) else OTHER_KERNELS for k in range(len(tl.kernels))]
    bars = tl.bars
    for k in np.unique(bars.kernel):
        rows = np.flatnonzero(bars.kernel == k)
        height = 0.7 * bars.busy[rows]
        ax.bar((bars.start[rows] / div), height, width=np.maximum((bars.end[rows] - bars.start[rows]) / div, tl.span_ns / div / 2000),
               bottom=bars.lane[rows] - height / 2, align="edge", color=colors[int(k)], lw=0)
    path = tl.path
    if len(path):
        xs, ys = [], []
        for lane, s, e in zip(path.lane.tolist(), path.start.tolist(), path.end.tolist()):
            xs += [s / div, e / div]
            ys += [lane, lane]
        ax.plot(xs, ys, color=fg.CRITICAL_PATH, lw=1.6, alpha=0.85, solid_joinstyle="miter")
    ax.set_yticks(range(n_lanes), tl.lanes)
    ax.set_ylim(n_lanes - 0.5, -0.5)
    ax.set_xlim(0, tl.span_ns / div * 1.01)
    ax.set_xlabel(f"time since the baseline's first dispatch ({unit})")
    ax.set_ylabel("stream")
    what = "time bins" if tl.aggregated else "dispatches"
    title = f"Baseline timeline: {tl.dispatches:,} dispatches on {n_lanes} stream{'s' * (n_lanes != 1)} ({len(bars)} {what} drawn)"
    ax.set_title(title, loc="left")
    handles = [Patch(color=colors[k], label=kernel_label(name, 28)) for k, name in enumerate(tl.kernels[: len(KERNEL_COLORS)])]
    if len(tl.kernels) > len(KERNEL_COLORS):
        handles.append(Patch(color=OTHER_KERNELS, label=f"{len(tl.kernels) - len(KERNEL_COLORS)} other kernels"))
    path_words = "critical path" if picture.cross_stream_known else "critical path (lower bound)"
    handles.append(Line2D([], [], color=fg.CRITICAL_PATH, lw=1.6, label=path_words))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7.5, frameon=False)
    return fg.svg_figure(fig, stem, title)


# ---- an accepted change ----------------------------------------------------------------------------

PHASE_WORDS = {"screen": "screening", "confirm": "fresh re-measure (confirmation)"}


@fg.styled
def rounds_figure(run: RunView, t: TrialView, stem: str) -> fg.Figure | None:
    """The candidate's interleaved rounds: baseline and candidate of each pair, phase by phase."""
    points = [p for p in t.rounds if p.value_ns and math.isfinite(p.value_ns)]
    if not points:  # a record with only the deciding phase's timings
        phase = t.phase or "screen"
        points = [RoundPoint(phase, i, role, v) for role, values in (("B", t.baseline_rounds), ("C", t.candidate_rounds))
                  for i, v in enumerate(values) if v and math.isfinite(v)]
        points.sort(key=lambda p: p.idx)
    if not points:
        return None
    div, unit = value_unit([p.value_ns for p in points], run.metric_unit)
    fig, ax = fg.new_figure(7.0, 2.6)
    pairs: dict[tuple[str, int], dict[str, float]] = {}
    for p in points:
        pairs.setdefault((p.phase, p.idx), {})[p.role] = p.value_ns / div
    x = 0
    xs_b, ys_b, xs_c, ys_c = [], [], [], []
    phase_start: dict[str, int] = {}
    for (phase, _idx), roles in pairs.items():
        x += 1
        phase_start.setdefault(phase, x)
        if "B" in roles and "C" in roles:
            ax.plot([x - 0.12, x + 0.12], [roles["B"], roles["C"]], color="#bbb", lw=0.8)
        if "B" in roles:
            xs_b.append(x - 0.12)
            ys_b.append(roles["B"])
        if "C" in roles:
            xs_c.append(x + 0.12)
            ys_c.append(roles["C"])
    ax.scatter(xs_b, ys_b, s=18, color=fg.BASELINE, label="baseline", zorder=3)
    ax.scatter(xs_c, ys_c, s=18, color=fg.CANDIDATE, marker="s", label="candidate", zorder=3)
    for phase, start in phase_start.items():
        if start > 1:
            ax.axvline(start - 0.5, color="#999", lw=0.8, ls=":")
        ax.annotate(PHASE_WORDS.get(phase, phase), xy=(start - 0.4, 1.0), xycoords=("data", "axes fraction"),
                    va="bottom", fontsize=7.5, color="#555", annotation_clip=False)
    ax.set_xlim(0.4, x + 0.6)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("interleaved pair (baseline and candidate back to back, order alternating)")
    ax.set_ylabel(f"{metric_label(run)} ({unit})")
    title = f"Trial {t.id}: interleaved rounds"
    ax.set_title(title, loc="left", pad=14)
    ax.legend(loc="upper right", fontsize=7.5, frameon=False, ncol=2, bbox_to_anchor=(1.0, 1.18))
    ax.grid(axis="y", color="#eee", lw=0.5)
    return fg.svg_figure(fig, stem, title)


# ---- all of a run ------------------------------------------------------------------------------------

def roofline_figures(run: RunView, prefix: str, notes: list[str]) -> list[fg.Figure]:
    """The rooflines of the baseline and the accepted result, from their analysis.json."""
    from rocm_perf.report.roofline_chart import roofline_figure

    figures = []
    for i, entry in enumerate(run.rooflines):
        try:
            analysis = json.loads((run.path / entry["analysis"]).read_text(encoding="utf-8"))
            fig = fg.styled(roofline_figure)(analysis, entry["title"])
            for ax in fig.get_axes():  # the legend beside the roofs, not over them
                if ax.get_legend() is not None:
                    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
            figures.append(fg.svg_figure(fig, f"{prefix}roofline-{'baseline' if i == 0 else 'final'}", entry["title"]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            notes.append(f"{entry['title'].lower()}: not drawn ({e})")
    return figures


def run_figures(run: RunView, prefix: str = "") -> RunFigures:
    """Every figure of `run`; file stems start with `prefix` (a sweep's report holds many runs)."""
    out = RunFigures()
    out.kernels = kernels_figure(run, f"{prefix}kernels")
    out.forest = forest_figure(run, f"{prefix}candidates")
    if out.forest is None:
        out.notes.append("no candidate was measured: nothing to plot")
    picture = load_baseline_picture(run)
    if isinstance(picture, str):
        out.timeline_notes.append(picture)
        out.time_bars = ranking_figure(run, f"{prefix}time")
    else:
        out.time_bars = time_bars_figure(run, picture, f"{prefix}time")
        out.timeline = timeline_figure(picture, f"{prefix}timeline")
        out.timeline_notes += picture.timeline.notes
    for t in run.accepted:
        figure = rounds_figure(run, t, f"{prefix}trial-{t.id}-rounds")
        if figure is not None:
            out.rounds[t.id] = figure
    out.rooflines = roofline_figures(run, prefix, out.notes)
    return out
