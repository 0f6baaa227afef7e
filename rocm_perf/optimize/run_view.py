"""A run as its readers see it: plain records filled from the run directory, read-only.

The reports (rocm_perf.report) and the sweep read a run only through `load_run`, the one place
outside the loop that knows the run directory's layout (ARCHITECTURE.md "Run directory"); it
opens the ledger, reads, and closes it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.artifacts import (decision_metric, metric_choice_text, outside_line, outside_summary, replay_words,
                                         retake_text)
from rocm_perf.optimize.alternatives import alternatives
from rocm_perf.optimize.change_summary import diff_size, trial_hunks
from rocm_perf.optimize.close_calls import resettled_words
from rocm_perf.optimize.ledger import BASELINE_TRIAL, LEDGER_NAME, Ledger
from rocm_perf.optimize.measure import metric_of
from rocm_perf.optimize.yardstick import plain_pairs_interval, shift_words

def speedup_interval(ratio_low: float | None, ratio_high: float | None) -> tuple[float, float] | None:
    """The speed-up interval [1/high, 1/low] of a ratio interval (candidate / baseline); 0 and inf
    where the ratio's interval is still open (too few rounds); None when there is none."""
    if ratio_low is None or ratio_high is None:
        return None
    low = 1 / ratio_high if ratio_high > 0 and math.isfinite(ratio_high) else 0.0
    high = 1 / ratio_low if ratio_low > 0 else math.inf
    return low, high


def speedup_text(speedup: float | None, interval: tuple[float, float] | None) -> str:
    """A run's or a trial's speed-up as the reports and `rocm-perf status` print it: `1.024x [1.015, 1.030]`."""
    if not speedup:
        return "n/a"
    text = f"{speedup:.3f}x"
    if interval:
        low, high = interval
        low_text = f"{low:.3f}" if low > 0 else "open"  # too few rounds to bound that side
        high_text = f"{high:.3f}" if math.isfinite(high) else "open"
        text += f" [{low_text}, {high_text}]"
    return text


def interval_open(interval: tuple[float, float] | None) -> bool:
    """Whether a speed-up interval is unbounded on a side (its rounds were too few to bound it)."""
    return interval is not None and (interval[0] <= 0 or not math.isfinite(interval[1]))


@dataclass
class Resources:
    """Compiler-reported resource usage of one kernel (AMD compile check), any field may be unknown."""

    vgpr: int | None = None
    agpr: int | None = None
    sgpr: int | None = None
    occupancy: int | None = None
    vgpr_spill: int | None = None
    sgpr_spill: int | None = None
    scratch_bytes: int | None = None
    lds_bytes: int | None = None

    @property
    def spills(self) -> int | None:
        if self.vgpr_spill is None and self.sgpr_spill is None:
            return None
        return (self.vgpr_spill or 0) + (self.sgpr_spill or 0)


@dataclass
class RoundPoint:
    """One measured round of a trial: the decision metric's value of the baseline (B) or the
    candidate (C) in pair `idx` of `phase` (screen, confirm), in measurement order."""

    phase: str
    idx: int
    role: str
    value_ns: float


@dataclass
class KernelTime:
    """One kernel's median dispatch time in the original program and in the final one (None where
    it was not measured: nothing accepted, or the kernel is gone)."""

    name: str
    baseline_ns: float | None
    final_ns: float | None


@dataclass
class TrialView:
    """One candidate: what was rewritten, how it was measured, and what was decided."""

    id: str
    kernel: str = ""
    name: str = ""  # what its proposer calls it (`patch fast.diff`, `tune BLOCK=128`); "" for the unroll rules
    loop_id: str = ""
    rule: str = ""
    factor: int | None = None
    decision: str = ""  # "accepted" or "rejected" (or the loop's state for unfinished trials)
    reason: str = ""
    detail: str = ""  # the loop's words on the decision (compiler error, output mismatch, ...)
    diff: str = ""
    hunks: list = field(default_factory=list)  # accepted: change_summary.Hunk, each with what it does
    diff_size: dict | None = None  # accepted: {"added", "removed", "hunks"}
    ratio: float | None = None  # candidate / baseline of the run's decision metric (RunView.metric)
    ratio_low: float | None = None
    ratio_high: float | None = None
    accept_below: float | None = None  # 1 - min_gain
    kernel_ratio: float | None = None
    baseline_rounds: list[float] = field(default_factory=list)  # decision-metric values, in measurement order
    candidate_rounds: list[float] = field(default_factory=list)
    resources_before: Resources | None = None
    resources_after: Resources | None = None
    cp_share_before: float | None = None
    cp_share_after: float | None = None
    phase: str = ""  # the phase whose interval decided: screen, or confirm (the fresh re-measure)
    rounds: list[RoundPoint] = field(default_factory=list)  # every phase's rounds, in order
    # What else the ledger says about this candidate, shown as it is: the screening interval of a
    # confirmed candidate, kernel and sum ratios, outputs checked, the ordering's named factors...
    evidence: list[tuple[str, str]] = field(default_factory=list)
    # Its place in the search's order (optimize/stages/build.py): the score and its named factors, when recorded.
    score: float | None = None
    factors: str = ""

    @property
    def measured(self) -> bool:
        return self.ratio is not None

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"

    @property
    def speedup(self) -> float | None:
        return 1 / self.ratio if self.ratio else None

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        return speedup_interval(self.ratio_low, self.ratio_high)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        what = f"{self.rule} x{self.factor}" if self.factor else self.rule
        where = f"{self.kernel} loop {self.loop_id}" if self.loop_id else self.kernel
        return f"{where}: {what}" if where else what


@dataclass
class RunView:
    """One `rocm-perf optimize` run, as the report shows it."""

    name: str
    path: Path
    source: str = ""
    backend: str = ""
    state: str = ""
    baseline_ns: float | None = None  # wall-clock critical-path time of the original source
    final_ns: float | None = None  # of the final source (all accepted rewrites)
    ratio: float | None = None  # final / baseline, in the decision metric
    metric: str = "critical-path"  # what decided (optimize --metric, as resolved for the backend)
    metric_meaning: str = "wall-clock critical-path time"
    metric_choice: str = ""  # how --metric auto chose it (artifacts.metric_choice_text); "" when set before the run
    ratio_low: float | None = None
    ratio_high: float | None = None
    final_rounds: int = 0  # pairs of the original-vs-final check (0: it has not run)
    # On a probe-divided metric: the same final-check pairs on the plain metric, (metric, ratio,
    # low, high), so that a probe the final program moved shows beside the headline (yardstick.py)
    final_plain: tuple[str, float, float, float] | None = None
    trials: list[TrialView] = field(default_factory=list)
    accepted_diff: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failure: str = ""  # why the run stopped early (does not build, crashed, ...)
    rooflines: list[dict] = field(default_factory=list)  # {"title", "analysis" (run-relative analysis.json), "how"}
    roofline_how: str = ""  # how the baseline's counters came: counter round, given: PATH, none, off, failed
    roofline_note: str = ""  # why the baseline has no roofline, when it has none
    roofline_skipped: list[dict] = field(default_factory=list)  # {"kernel", "reason"}: at their roof, not tried
    hot_source: dict | None = None  # the hot kernel's annotated source (report/hotspots_report.py)
    cold_loops: list[str] = field(default_factory=list)  # measured, never sampled: tried last
    min_gain: float | None = None  # --min-gain as asked
    confidence: float | None = None  # --confidence: of the intervals shown
    effective_min_gain: float | None = None  # as used: raised to the A/A noise floor
    noise_floor: float | None = None  # the A/A noise floor (a fraction)
    noise_retake: str = ""  # the floor's last re-take from the race's pairs, in words (stages/screen.py _retake_floor)
    noise_interval: tuple[float, float] | None = None  # the A/A ratio's interval (twin / baseline)
    stop_reason: str = ""
    elapsed_s: float | None = None
    top_kernels: list[dict] = field(default_factory=list)  # the kernels chosen, with why (plan.RankedKernel)
    ranking: list[dict] = field(default_factory=list)  # every profiled kernel the ranking saw
    kernel_times: list[KernelTime] = field(default_factory=list)  # per kernel, original vs final
    kernel_times_from: str = ""  # which rounds kernel_times come from
    baseline_profiles: list[Path] = field(default_factory=list)  # the reference round's profile databases
    before_after: dict | None = None  # original vs final per kernel (`rocm-perf compare`'s JSON), when kept
    search: str = ""  # how the candidates were searched (compile first, race), one line; "" before that search
    # A reproducer's run: what the replay measured, and what the whole program said (stages/whole_program.py).
    replay: list[str] = field(default_factory=list)
    close_calls: list[dict] = field(default_factory=list)  # unproven, read faster than the bar (optimize/close_calls.py)
    alternatives: list[dict] = field(default_factory=list)  # screened winners that added nothing (optimize/alternatives.py)

    @property
    def finished(self) -> bool:
        """Every trial is decided: the run is done, or writing its files (the report hook runs then)."""
        return self.state in ("finish", "done")

    @property
    def metric_unit(self) -> str:
        """"ns" for the time metrics, else what the metric counts (instructions, cycles)."""
        return self.metric if self.metric in ("instructions", "cycles") else "ns"

    @property
    def measured(self) -> list[TrialView]:
        return [t for t in self.trials if t.measured]

    @property
    def accepted(self) -> list[TrialView]:
        return [t for t in self.trials if t.accepted]

    @property
    def rejected(self) -> list[TrialView]:
        return [t for t in self.trials if t.decision == "rejected"]

    @property
    def speedup(self) -> float | None:
        if self.ratio:
            return 1 / self.ratio
        if self.baseline_ns and self.final_ns:
            return self.baseline_ns / self.final_ns
        return None

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        return speedup_interval(self.ratio_low, self.ratio_high)

    @property
    def plain_speedup(self) -> tuple[str, float, tuple[float, float] | None] | None:
        """(metric, speed-up, its interval) of the final check's pairs on the plain metric, where the
        decision metric divides by the speed probe; None elsewhere."""
        if not self.final_plain:
            return None
        metric, ratio, low, high = self.final_plain
        return metric, 1 / ratio, speedup_interval(low, high)

    @property
    def cpu_timings(self) -> bool:
        return self.backend == "host"

    def rejected_by_reason(self) -> list[tuple[str, list[TrialView]]]:
        groups: dict[str, list[TrialView]] = {}
        for t in self.rejected:
            groups.setdefault(t.reason or "no reason recorded", []).append(t)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def reason_counts(self) -> Counter:
        return Counter(t.reason or "no reason recorded" for t in self.rejected)


# ---- reading a run directory ---------------------------------------------------------------------

def _median(values: list[float]) -> float | None:
    values = sorted(v for v in values if v and v > 0)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _resources_of(resources: dict | None, kernel: str) -> Resources | None:
    """The compile check's record of `kernel` (keyed by demangled name, as the loop stores it)."""
    if not resources or not kernel:
        return None
    for name, r in resources.items():
        if not isinstance(r, dict) or name.startswith("__"):
            continue
        if name == kernel or name.startswith(kernel + "("):
            return Resources(**{k: r.get(k) for k in Resources.__dataclass_fields__})
    return None


def _share_of(rounds: list, role: str, symbols: set[str], kernel: str) -> float | None:
    """Mean critical-path share of the kernel's symbols over the given role's good rounds."""
    shares = []
    for r in rounds:
        if r.role != role or not r.ok:
            continue
        per_symbol = r.outputs.get("cp_share", {}) or {}
        matched = [v for s, v in per_symbol.items() if s in symbols or s == kernel or s.startswith(kernel + "(")]
        if matched:
            shares.append(sum(matched))
    return sum(shares) / len(shares) if shares else None


def _flatten(prefix: str, value, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out[prefix] = ", ".join(str(v) for v in value)
    elif value is not None:
        out[prefix] = str(value)


def _environment(run_dir: Path) -> dict[str, str]:
    import json

    path = run_dir / "metadata.json"
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return {"metadata.json": f"unreadable ({e})"}
    out: dict[str, str] = {}
    _flatten("", doc, out)
    return out


def _interval(evidence: dict | None) -> dict | None:
    if not evidence:
        return None
    cp = evidence.get("critical_path")
    return cp if cp and cp.get("n") else None


def _interval_words(iv: dict | None) -> str:
    if not iv or not iv.get("n"):
        return ""
    high = iv.get("high")
    high_text = "open" if high is None or high == float("inf") else f"{high:.4f}"
    return f"{iv['estimate']:.4f} [{iv['low']:.4f}, {high_text}] over {iv['n']} rounds"


# Evidence keys drawn elsewhere on the page (the interval, the rounds) or too internal to show.
_SHOWN_ELSEWHERE = {"critical_path", "decision", "plan", "detail"}


def _evidence_lines(t, phase: str) -> list[tuple[str, str]]:
    """What the ledger holds about a trial besides its deciding interval, as (name, text) pairs:
    the known kinds in words, any other plain value as it is (fields later issues add show up)."""
    lines: list[tuple[str, str]] = []
    if isinstance(t.evidence.get("close_call"), dict):
        lines.append(("close call", resettled_words(t.evidence["close_call"])))
    for ph in ("screen", "confirm"):
        ev = t.evidence.get(ph) or {}
        if not isinstance(ev, dict) or not ev:
            continue
        if ph != phase and _interval(ev):
            lines.append((f"{ph} ratio", _interval_words(_interval(ev))))
        if ph != phase:
            continue
        for key, value in ev.items():
            if key in _SHOWN_ELSEWHERE:
                continue
            if key in ("kernel", "sum") and isinstance(value, dict):
                words = _interval_words(value)
                if words:
                    what = "kernel time ratio (median dispatch, " if key == "kernel" else "sum of dispatch times ratio ("
                    lines.append((f"{what}wall clock)", words))
            elif key == "outputs" and isinstance(value, dict):
                digests = value.get("digests")
                lines.append(("outputs", f"{value.get('rounds_checked')} timed rounds matched the baseline (exit status, "
                                         f"{digests} copy digest{'' if digests == 1 else 's'}, standard output)"))
            elif key == "probe_shift" and isinstance(value, dict) and value.get("n"):
                lines.append(("speed probe, candidate's readings over the baseline's",
                              f"{_interval_words(value)}: {shift_words(value)} (optimize/yardstick.py)"))
            elif key == "plain" and isinstance(value, dict) and value.get("n"):
                lines.append((f"{value.get('metric')} ratio over the same pairs", _interval_words(value)))
            elif key == "confirmation" and isinstance(value, dict):
                lines.append(("confirmation", f"#{value.get('k')} of the run, at level {float(value.get('alpha', 0)):.4g}"))
            elif isinstance(value, (str, int, float, bool)) and value != "":
                lines.append((key.replace("_", " "), str(value)))
            elif isinstance(value, dict) and value and all(isinstance(v, (str, int, float, bool)) for v in value.values()):
                lines.append((key.replace("_", " "), ", ".join(f"{k} {_plain(v)}" for k, v in value.items())))
    for attr in ("ordering",):  # named factors of its place in the order, where the loop records them
        value = getattr(t, attr, None)
        if isinstance(value, dict) and value:
            lines.append((attr, ", ".join(f"{k} {_plain(v)}" for k, v in value.items())))
    components = getattr(t, "components", None)
    if components:
        lines.append(("applies trials", ", ".join(str(c) for c in components)))
    return lines


def _plain(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _kernel_times(ledger) -> tuple[list[KernelTime], str]:
    """Per kernel, the median over rounds of its median dispatch time: the original (the final
    check's baseline rounds, else the reference and A/A rounds) against the final program (the
    final check's candidate rounds)."""
    final = ledger.rounds(BASELINE_TRIAL, "final")
    original = [r for r in final if r.role == "B" and r.ok]
    after = [r for r in final if r.role == "C" and r.ok]
    source = "the final check's interleaved rounds"
    if not original or not after:
        original = [r for p in ("reference", "aa") for r in ledger.rounds(BASELINE_TRIAL, p) if r.role == "B" and r.ok]
        after = []
        source = "the baseline's reference and A/A rounds (nothing accepted)"
    names: dict[str, None] = {}
    for r in original + after:
        names.update(dict.fromkeys(r.kernel_ns))

    def median_of(rounds, name):
        return _median([r.kernel_ns[name] for r in rounds if name in r.kernel_ns])

    times = [KernelTime(name, median_of(original, name), median_of(after, name) if after else None) for name in names]
    times.sort(key=lambda k: -(k.baseline_ns or k.final_ns or 0))
    return times, source


def _ranked(entry: dict) -> dict:
    """A ranking entry (plan.RankedKernel's fields) with every field present (None where absent)."""
    return {"symbol": "", "kernel": "", "cp_share": 0.0, "median_ns": None, "headroom": None, "bound": "", **entry}


def _before_after(run_dir: Path) -> dict | None:
    """The original-vs-final comparison summary.json holds (artifacts.before_after), if any."""
    import json

    try:
        doc = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("before_after")
    except (OSError, ValueError, AttributeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("kernels") else None


def _baseline_profiles(run_dir: Path) -> list[Path]:
    """The profile databases the baseline's reference round left (measure.keep_baseline_profiles)."""
    folder = run_dir / "baseline" / "profiles" / "reference-0-B"
    return sorted(folder.rglob("*.db")) if folder.is_dir() else []


def _add_rooflines(view: RunView, ledger) -> None:
    """Where the baseline's and the accepted result's analysis.json are (the report draws them),
    and why kernels got no unroll candidates."""
    for key, title in (("roofline", "Roofline of the baseline"), ("roofline_final", "Roofline of the accepted result")):
        record = ledger.get(key) or {}
        if key == "roofline" and record:
            view.roofline_how = str(record.get("how") or "")
            view.roofline_note = "" if record.get("analysis") else str(record.get("note") or "none")
        if record.get("how") == "failed":
            view.notes.append(record.get("note", "no roofline"))
        if record.get("analysis"):
            view.rooflines.append({"title": title, "analysis": record["analysis"], "how": record.get("how", "")})
    view.roofline_skipped = list(ledger.get("roofline_skipped") or [])
    for entry in view.roofline_skipped:
        view.notes.append(f"{entry['kernel']}: no unroll candidates: {entry['reason']}")


def _hot_source(run_dir: Path) -> dict | None:
    """The annotated source of the run's hot kernel, from the hotspots.json the loop wrote."""
    import json

    from rocm_perf.source.profile_sources import annotated_source

    path = run_dir / "hotspots.json"
    try:
        return annotated_source(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _order_of(t) -> dict:
    """The trial's score and named factors in the search's order, where the loop recorded them."""
    ordering = getattr(t, "ordering", None) or {}
    factors = ordering.get("factors") if isinstance(ordering, dict) else None
    if not isinstance(factors, dict) or not factors:
        return {}
    notes = "; ".join(str(v) for v in (ordering.get("notes") or {}).values())
    text = ", ".join(f"{k} {_plain(v)}" for k, v in factors.items()) + (f" ({notes})" if notes else "")
    try:
        score = float(ordering.get("score"))
    except (TypeError, ValueError):
        score = None
    return {"score": score, "factors": text}


def _close_calls(ledger) -> list[dict]:
    """The finished run's close calls (artifacts.close_calls_of); none while candidates are still open."""
    from rocm_perf.optimize.artifacts import close_calls_of

    if ledger.state not in ("finish", "done"):
        return []
    return close_calls_of(ledger, ledger.trials())


def _search_note(ledger) -> str:
    """One line on how the candidates were searched (optimize/stages/: compile first, race, carry)."""
    from rocm_perf.optimize.artifacts import search_summary

    trials = ledger.trials()
    if not any(t.build_key for t in trials):
        return ""
    s = search_summary(ledger, trials)
    rungs = (s.get("race_plan") or {}).get("rungs")
    return (f"search: {s['planned']} candidates built before any was measured ({s['builds']} builds), "
            f"{s['duplicates']} duplicate(s) dropped, {s['raced']} raced"
            + (f" in rungs of {', '.join(map(str, rungs))} pairs" if rungs else "")
            + (f", {s['carries']} combination(s) or carries of screened winners" if s["carries"] else ""))


def load_run(run_dir: Path) -> RunView:
    """A run directory's report record, from its ledger (the source of truth) and metadata.json.

    Works on a finished run, on one still running and on one that was killed: whatever the
    ledger holds is shown.
    """
    run_dir = Path(run_dir)
    if not (run_dir / LEDGER_NAME).exists():
        raise RocmPerfError(f"{run_dir}: not a rocm-perf run directory (no {LEDGER_NAME})")
    ledger = Ledger(run_dir / LEDGER_NAME)
    try:
        view = RunView(name=run_dir.name, path=run_dir, source=str(ledger.get("source_path") or ""),
                       backend=str(ledger.get("backend") or ""), state=str(ledger.state or ""))
        device = ledger.get("device")
        metric = decision_metric(ledger)
        view.metric, view.metric_meaning = metric["name"], metric.get("meaning", metric["name"])
        view.metric_choice = metric_choice_text(metric)
        reference = [r.cp_ns for p in ("reference", "aa") for r in ledger.rounds(BASELINE_TRIAL, p) if r.role == "B" and r.ok]
        view.baseline_ns = _median(reference)
        final_rounds = ledger.rounds(BASELINE_TRIAL, "final")
        final_check = ledger.get("final_check")
        if final_rounds:
            view.baseline_ns = _median([r.cp_ns for r in final_rounds if r.role == "B" and r.ok]) or view.baseline_ns
            view.final_ns = _median([r.cp_ns for r in final_rounds if r.role == "C" and r.ok])
        if final_check and final_check.get("n"):
            view.ratio, view.ratio_low, view.ratio_high = final_check["estimate"], final_check["low"], final_check["high"]
            view.final_rounds = int(final_check["n"])
            plain = plain_pairs_interval(final_rounds, view.metric, final_check["tail_alpha"])
            view.final_plain = (plain[0], plain[1].estimate, plain[1].low, plain[1].high) if plain else None
        elif len(ledger.baselines()) <= 1 and view.finished:
            view.final_ns, view.ratio = view.baseline_ns, 1.0  # nothing accepted: final is the original
        min_gain = ledger.get("effective_min_gain")
        options = ledger.get("options") or {}
        view.min_gain = options.get("min_gain")
        view.confidence = options.get("confidence")
        view.effective_min_gain = float(min_gain) if min_gain is not None else None
        top = ledger.get("top_kernels", []) or []
        view.top_kernels = [_ranked(k) for k in top]
        view.ranking = [_ranked(k) for k in ledger.get("ranking") or []]
        baselines = ledger.baselines()
        trials = ledger.trials()
        for t in trials:
            phase = "confirm" if "confirm" in t.evidence else "screen"
            evidence = t.evidence.get(phase, {})
            metric = evidence.get("metric", view.metric) if isinstance(evidence, dict) else view.metric
            rounds = ledger.rounds(t.id, phase)
            points = [RoundPoint(p, r.idx, r.role, v) for p in ("screen", "confirm") for r in ledger.rounds(t.id, p)
                      if r.ok and (v := metric_of(r.cp_ns, r.outputs, metric)) is not None]
            iv = _interval(evidence)
            kernel_iv = evidence.get("kernel") if evidence else None
            decision = t.status if t.status in ("accepted", "rejected") else t.status
            before = baselines[t.generation].resources if t.generation < len(baselines) else {}
            symbols = {k["symbol"] for k in top if k.get("kernel") == t.kernel}
            view.trials.append(TrialView(
                id=str(t.id), kernel=t.kernel, name=t.label if t.proposer != "rules" else "", loop_id=t.loop_id, rule=t.rule, factor=t.factor, decision=decision,
                reason=t.reason, detail=t.detail, diff=t.diff,
                ratio=iv["estimate"] if iv else None, ratio_low=iv["low"] if iv else None, ratio_high=iv["high"] if iv else None,
                accept_below=1 - float(min_gain) if min_gain is not None else None,
                kernel_ratio=kernel_iv.get("estimate") if kernel_iv and kernel_iv.get("n") else None,
                baseline_rounds=[p.value_ns for p in points if p.phase == phase and p.role == "B"],
                candidate_rounds=[p.value_ns for p in points if p.phase == phase and p.role == "C"],
                resources_before=_resources_of(before, t.kernel), resources_after=_resources_of(t.resources, t.kernel),
                cp_share_before=_share_of(rounds, "B", symbols, t.kernel), cp_share_after=_share_of(rounds, "C", symbols, t.kernel),
                phase=phase if iv else "", rounds=points, evidence=_evidence_lines(t, phase),
                **_order_of(t),
            ))
            if t.status == "accepted":
                view.trials[-1].hunks = trial_hunks(run_dir, ledger, t)
                view.trials[-1].diff_size = diff_size(t.diff)
        diff_path = run_dir / "accepted.diff"
        view.accepted_diff = diff_path.read_text(encoding="utf-8", errors="replace") if diff_path.exists() else ""
        view.environment = _environment(run_dir)
        if device:
            view.environment.setdefault("device", str(device))
        nf = ledger.get("noise_floor")
        if nf and nf.get("floor") is not None:
            view.noise_floor = float(nf["floor"])
            aa = nf.get("interval") or {}
            if aa.get("n"):
                view.noise_interval = (float(aa["low"]), float(aa["high"]))
        view.noise_retake = retake_text(ledger.get("noise_floor_retakes"))
        view.stop_reason = str(ledger.get("stop_reason") or "")
        view.elapsed_s = ledger.get("elapsed_s")
        if ledger.get("compile_check_error"):
            view.notes.append("the AMD compile check failed on the baseline: candidates were checked without it")
        _add_rooflines(view, ledger)
        view.hot_source = _hot_source(run_dir)
        if ledger.get("loop_heat_note"):
            view.notes.append(f"{ledger.get('loop_heat_note')}: loops were ordered by their nesting depth")
        outside = outside_summary(run_dir)
        if outside:
            view.notes.append(outside_line(outside)[2:])
        view.cold_loops = list(ledger.get("cold_loops") or [])
        view.kernel_times, view.kernel_times_from = _kernel_times(ledger)
        view.baseline_profiles = _baseline_profiles(run_dir)
        view.before_after = _before_after(run_dir)
        view.search = _search_note(ledger)
        view.close_calls = _close_calls(ledger)
        view.alternatives = alternatives(trials, baselines)
        measured, said = replay_words({"replay": ledger.get("replay"), "whole_program": ledger.get("whole_program")})
        if measured:
            view.replay = [f"measured on the replay of {measured}: the speed-up above is the kernel's",
                           f"on the whole program: {said}"]
        return view
    finally:
        ledger.close()
