"""Close calls: candidates that read faster than the bar but were stopped unproven, and what
settling one would take.

A run that accepts nothing says "no candidate was proven faster", which is true and not enough:
the user reviewing it also needs to know that a candidate read, say, 2.4 % faster against the
2 % bar and was stopped because at its spread a few hundred pairs would be needed to tell
(kernels/matmul_tiled.cu: `unroll_manual x2`, 0.976 after 20 pairs, a 2.6 % gain that exhaustive
search's 20 pairs a candidate could not show to reach the bar either). The report names it, with
the pairs a decision would need if its ratio held. When those are few (`to_settle`), the loop
re-measures it itself, as a confirmation; otherwise the user decides whether to spend them
(`--max-rounds`, `--time-budget`) or lower the bar.

Pure: the report (artifacts.py) and the loop pass each trial's recorded pairs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.racing import BUDGET, OUTRACED

# Reasons that stop a candidate before its gain was shown or ruled out. Slower and not significant
# are decided (their interval lies above the bar), and a guard, build, crash, wrong output or
# duplicate measured nothing worth spending pairs on.
UNPROVEN_REASONS = (acc.REASON_INCONCLUSIVE, acc.REASON_OUT_OF_REACH, OUTRACED, BUDGET)
# Beyond this many pairs a decision is out of reach on this machine (at 2 s a pair, over an hour).
MAX_PAIRS_TO_SETTLE = 1000
# A candidate stopped before this many pairs is not named: its estimate is the best of a few noisy
# readings (halving after the race's first rung of 5 pairs dropped pipeline's `#pragma unroll 1` at
# 0.944, where that program's pairs spread 10 %). The race's last racer passes from here (racing.last_from).
MIN_PAIRS = 10
# The loop re-measures a loop's cheapest close call on fresh pairs when a decision would take at most this
# many (if its ratio held) and no rival of its loop passed screening (--settle-close-calls; 0: never).
# Its confirmation is like any other: fresh pairs, at the run's next level of alpha (acceptance.
# confirmation_alpha), with the futility rule; so it can cost pairs, not a false accept.
SETTLE_MAX_PAIRS = 40
# ... and its confirmation ends at this many times that (its last look), inconclusive if it has not
# passed, instead of the confirmations' usual 200 pairs. As the run's 2nd confirmation (300 seeded
# re-measures each): a 2.4 % gain at 0.7 % spread passes in 97 % of them by 80 pairs (39 on average),
# in 78 % by 40 (28); a 1.5 % one (below the bar) stops after 18-21 pairs either way (futility). On
# matmul_tiled's real close call (x4 at 0.976 after 20 pairs; about 1-2 % in truth), five re-measures
# stopped after 15, 15, 20 and 30 pairs and one ran to 80, inconclusive at 0.980.
SETTLE_REACH = 2


@dataclass(frozen=True)
class CloseCall:
    """One unproven candidate that read faster than the bar, on the pairs it was stopped after."""

    trial: int
    label: str
    reason: str
    detail: str  # why it was stopped (the trial's recorded detail)
    phase: str  # "screen" or "confirm": the measurement it was stopped in
    estimate: float  # its median ratio candidate / baseline there
    low: float
    high: float
    pairs: int
    spread: float  # the paired spread of those pairs
    threshold: float  # 1 - the min gain the run used
    pairs_to_settle: float  # pairs for an interval around `estimate` to clear the threshold

    def to_json(self) -> dict:
        return asdict(self)


def unproven(status: str, reason: str) -> bool:
    """Whether a trial was stopped before its gain was shown or ruled out (a close call if it read faster)."""
    return status == "rejected" and reason in UNPROVEN_REASONS


def measured_phase(evidence: dict) -> str:
    """The measurement a trial was stopped in: "confirm" once it was re-measured, else "screen"."""
    return "confirm" if "critical_path" in (evidence.get("confirm") or {}) else "screen"


def close_call(trial_id: int, label: str, status: str, reason: str, detail: str, evidence: dict, threshold: float,
               pairs: tuple[list[float], list[float]], tail_alpha: float) -> CloseCall | None:
    """The close call of one trial, or None: it must be `unproven` with its last measurement's
    estimate below `threshold`. `evidence`: the trial's recorded evidence by phase; `pairs`: the
    (baseline, candidate) decision values of its `measured_phase`; `tail_alpha`: the level the
    decision would be taken at (the run's first confirmation, per look)."""
    if not unproven(status, reason):
        return None
    phase = measured_phase(evidence)
    iv = (evidence.get(phase) or {}).get("critical_path")
    if not iv or not iv.get("estimate") or float(iv["estimate"]) >= threshold:
        return None
    b, c = pairs
    n = min(int(iv.get("n") or len(b)), len(b), len(c))
    if n < MIN_PAIRS:
        return None
    spread = acc.paired_spread(b[:n], c[:n])
    needed = acc.pairs_to_clear(max(spread, 1e-6), float(iv["estimate"]), threshold, tail_alpha)
    return CloseCall(trial_id, label, reason, detail, phase, float(iv["estimate"]), float(iv["low"]), float(iv["high"]),
                     n, spread, threshold, needed)


def settle_limit(max_pairs: float) -> int:
    """The last look of a settled close call's confirmation, for --settle-close-calls `max_pairs`."""
    return int(math.ceil(SETTLE_REACH * max_pairs))


def to_settle(calls: list[CloseCall], loop_of: dict[int, str], decided_loops: set[str],
              max_pairs: float = SETTLE_MAX_PAIRS, pairs_left: float = float("inf")) -> list[int]:
    """The close calls to re-measure: per loop not in `decided_loops` (a rival passed screening or
    was accepted), the one a decision would need the fewest pairs for, if at most `max_pairs`;
    cheapest first, while their pairs fit in `pairs_left`."""
    best: dict[str, CloseCall] = {}
    for call in calls:
        loop = loop_of[call.trial]
        if loop in decided_loops or not call.pairs_to_settle <= max_pairs:
            continue
        if loop not in best or (call.pairs_to_settle, call.trial) < (best[loop].pairs_to_settle, best[loop].trial):
            best[loop] = call
    chosen = []
    for call in sorted(best.values(), key=lambda c: (c.pairs_to_settle, c.trial)):
        need = max(math.ceil(call.pairs_to_settle), MIN_PAIRS)
        if need <= pairs_left:
            chosen.append(call.trial)
            pairs_left -= need
    return chosen


def settle_words(call: dict, pair_seconds: float | None, max_rounds: int) -> str:
    """What settling a close call (CloseCall.to_json) would take, in words for the report; the
    `--max-rounds` that would let a run measure that far when the run's own (`max_rounds`) would not."""
    needed, spread = float(call["pairs_to_settle"]), float(call["spread"])
    at = f"at its spread {spread * 100:.1f} %"
    if not needed <= MAX_PAIRS_TO_SETTLE:
        return f"over {MAX_PAIRS_TO_SETTLE:,} pairs {at}: out of reach on this machine"
    pairs = max(int(math.ceil(needed)), call["pairs"])
    seconds = pairs * (pair_seconds or 0.0)
    time = f" (about {_duration(seconds)} of measuring)" if seconds >= 1 else ""
    further = f": run with --max-rounds {int(math.ceil(pairs / 50.0) * 50)}" if pairs > max_rounds else ""
    return f"about {pairs:,} pairs {at}{time}, if its ratio holds{further}"


def resettled_words(call: dict) -> str:
    """How a close call sent to a confirmation (CloseCall.to_json, stages/screen.py settle_close_calls) got there, in words."""
    return (f"stopped {call['reason']} after {call['pairs']} pairs at {float(call['estimate']):.3f} "
            f"(spread {float(call['spread']) * 100:.1f} %) and re-measured as a close call: about "
            f"{math.ceil(float(call['pairs_to_settle']))} pairs would settle it if its ratio held")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
