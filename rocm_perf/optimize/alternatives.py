"""Alternatives: screened winners that added nothing on top of an accepted change.

After a loop's change is accepted, the other loops' screened winners are carried onto the new
program one at a time; when a carry measures no gain there, the two rewrites were alternatives,
not extras: each made the kernel faster alone, and together no faster than one (softmax: three of
its loops each screened 4-6 % faster, and in every pass the carries of the other two onto the
accepted one measured nothing, in all six such carries of four passes). The rejected-candidates
table says "not significant, when carried onto a newer baseline"; the user reviewing the run also
needs what that means: the accepted change was one of two ways to the same gain, the run kept the
one that screened faster, and the two were never measured against each other.

Pure: the report (artifacts.py, run_view.py) passes the ledger's trials and baselines.
"""

from __future__ import annotations

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.ledger import COMBINATION, Baseline, Trial

# A carry stopped for one of these measured the rewrite on the newer program and found no gain
# there; a crash, wrong output or failed build says nothing about how the gains add.
NO_GAIN_REASONS = (acc.REASON_NOT_SIGNIFICANT, acc.REASON_SLOWER, acc.REASON_INCONCLUSIVE, acc.REASON_OUT_OF_REACH)


# What the report's section says above its table (report.md, report.html).
INTRO = ("Screened faster alone, but carried onto the accepted changes they measured no gain: each was another "
         "way to about the same time, not an extra. Screening intervals are at the race's per-look level.")


def _interval(t: Trial, phase: str) -> dict | None:
    iv = (t.evidence.get(phase) or {}).get("critical_path")
    return iv if iv and iv.get("n") else None


def _screened(t: Trial, by_id: dict[int, Trial]) -> Trial:
    """The trial whose screening measured `t`'s rewrite alone: a carry's own rewrite's."""
    if t.components and t.rule != COMBINATION and t.components[0] in by_id:
        return by_id[t.components[0]]
    return t


def alternatives(trials: list[Trial], baselines: list[Baseline]) -> list[dict]:
    """One record per screened rewrite whose carry onto a newer baseline measured no gain: its
    screening alone, the accepted changes it was carried onto, what it measured on top of them,
    and how its screening compares with theirs on the same baseline (`words`)."""
    by_id = {t.id: t for t in trials}
    out = []
    for carry in trials:
        if carry.rule == COMBINATION or len(carry.components) != 1 or carry.status != "rejected":
            continue
        own = by_id.get(carry.components[0])
        measured = _interval(carry, "confirm") or _interval(carry, "screen")
        if own is None or carry.reason not in NO_GAIN_REASONS or measured is None:
            continue
        alone = _interval(own, "screen")
        onto = [b.trial_id for b in baselines[own.generation + 1: carry.generation + 1] if b.trial_id is not None]
        # The accepted changes screened on the same baseline as this rewrite: their screenings compare.
        rivals = []
        for a in onto:
            screened = _screened(by_id[a], by_id) if a in by_id else None
            if screened is not None and screened.generation == own.generation and (iv := _interval(screened, "screen")):
                rivals.append((a, screened, iv))
        out.append({"trial": own.id, "label": own.label, "loop": own.loop_id, "screen": alone,
                    "carry": carry.id, "onto": onto, "reason": carry.reason, "measured": measured,
                    "rivals": [{"trial": a, "screened_as": s.id, "screen": iv} for a, s, iv in rivals],
                    "words": _words(alone, carry, measured, onto, rivals)})
    return sorted(out, key=lambda r: r["trial"])


def _words(alone: dict | None, carry: Trial, measured: dict, onto: list[int],
           rivals: list[tuple[int, Trial, dict]]) -> str:
    names = ", ".join(f"trial {a}" for a in onto) or "the newer baseline"
    parts = []
    if alone:
        parts.append(f"alone it screened at {acc.interval_text(alone)}")
    for a, s, iv in rivals:
        who = f"trial {a}" + (f" (screened as trial {s.id})" if s.id != a else "")
        if alone and alone["low"] > iv["high"]:
            how = "slower than"
        elif alone and alone["high"] < iv["low"]:
            how = "faster than"  # kept second: the run confirms the better estimate first, and it may fail
        else:
            how = "within the interval of"
        parts.append(f"{how} {who}'s {acc.interval_text(iv)} on the same baseline")
    on_top = (f"on top of {names} it measured {acc.interval_text(measured)} ({carry.reason}, trial {carry.id}): "
              "the gains do not add")
    tail = ("; the run kept the change that was confirmed first, and the two were not measured against each other"
            if rivals else "")
    return (", ".join(parts) + "; " if parts else "") + on_top + tail
