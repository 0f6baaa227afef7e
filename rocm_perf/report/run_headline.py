"""A run's result in one line: the speed-up of its decision metric with its interval, or "no
change" with the main reason, or why it stopped."""

from __future__ import annotations

from dataclasses import dataclass

from rocm_perf.optimize.measure import metric_exponent, metric_kind
from rocm_perf.optimize.run_view import RunView, interval_open

GOOD, NEUTRAL, BAD = "good", "neutral", "bad"

# A metric in the fewest words (headline, axis labels); its meaning is in the run's facts.
METRIC_LABELS = {
    "critical-path": "critical-path time",
    "median-path": "median-path time",
    "cpu-path": "CPU-time critical path",
    "probed-path": "probe-scaled CPU-time critical path",
    "adjusted-path": "probe-adjusted CPU-time critical path",
    "instructions": "instructions on the critical path",
    "cycles": "cycles on the critical path",
}


def metric_label(run: RunView) -> str:
    label = METRIC_LABELS.get(metric_kind(run.metric), run.metric)
    exponent = metric_exponent(run.metric)
    return f"{label} (exponent {exponent})" if exponent else label


@dataclass
class Headline:
    text: str
    tone: str  # good, neutral, bad: the page's colour for it


def _times(speedup: float) -> str:
    return f"{speedup:.2f}x"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _no_change_reason(run: RunView) -> str:
    """Why a finished run changed nothing, in a few words."""
    if not run.trials:
        for note in run.notes:
            if "nothing to optimize" in note or "no unroll candidates" in note:
                return note
        return run.stop_reason or "no candidate could be proposed for the top kernels"
    measured = run.measured
    counts = run.reason_counts().most_common()
    if not measured:
        reason, n = counts[0] if counts else ("not measured", len(run.trials))
        return f"none of the {_plural(len(run.trials), 'candidate')} got as far as a measurement (most: {reason}, {n})"
    gain = f"the {run.effective_min_gain * 100:.1f} % minimum gain" if run.effective_min_gain is not None else "the minimum gain"
    main = f"; most common verdict: {counts[0][0]} ({counts[0][1]} of {len(run.rejected)})" if counts else ""
    return f"none of the {_plural(len(measured), 'measured candidate')} was proven faster than {gain}{main}"


def headline(run: RunView) -> Headline:
    """The one line a reviewer reads first."""
    metric = metric_label(run)
    level = f", {run.confidence * 100:g} % interval" if run.confidence else ""
    if run.confidence and run.final_rounds:
        level += f" over {_plural(run.final_rounds, 'pair')}"
    if run.failure:
        return Headline(f"Stopped: {run.failure}", BAD)
    accepted = run.accepted
    if accepted and run.ratio and run.speedup_interval:
        low, high = run.speedup_interval
        changes = _plural(len(accepted), "accepted change")
        if low > 1:
            return Headline(f"{metric[0].upper()}{metric[1:]} {_times(run.speedup)} faster "
                            f"[{_times(low)}, {_times(high)}{level}] with {changes}", GOOD)
        if interval_open(run.speedup_interval):
            return Headline(f"{metric[0].upper()}{metric[1:]} {_times(run.speedup)} faster by the estimate, not "
                            f"proven: the final check's interval is still open after {_plural(run.final_rounds, 'round')} "
                            f"(--aa-rounds), with {changes}", NEUTRAL)
        return Headline(f"No measurable change overall: {metric} {_times(run.speedup)} "
                        f"[{_times(low)}, {_times(high)}{level}] with {changes}; the final check "
                        "does not exclude no change", NEUTRAL)
    if accepted:
        return Headline(f"{_plural(len(accepted), 'accepted change')}; the original-vs-final check has not run "
                        f"(state: {run.state or 'unknown'})", NEUTRAL)
    if not run.finished:
        return Headline(f"Not finished (state: {run.state or 'unknown'}): {_plural(len(run.measured), 'candidate')} "
                        "measured so far, none accepted", NEUTRAL)
    return Headline(f"No change: {_no_change_reason(run)}", NEUTRAL)
