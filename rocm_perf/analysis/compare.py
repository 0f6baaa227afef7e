"""Two profiles of the same workload, kernel by kernel: what changed, and whether it is more than noise.

Pure functions over two Traces (any formats). Per kernel (matched by full display name, else by its
short name when that is unique on both sides): calls, total and median per-dispatch time in A and
B, the delta and ratio of totals, and a Mann-Whitney test on the per-dispatch durations. The
family-wise error over all kernels compared is held at `alpha` by Holm's adjustment (the guarantee
the optimizer gives over a run's candidates). A kernel is `faster`/`slower` only when the test
rejects at that level AND its median moved by at least `min_change`; otherwise `same`. Kernels
only in B are `new`, only in A `missing`. Totals, categories, phases and the critical path are
compared as plain numbers (one value per profile: nothing to test).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rocm_perf.analysis.categories import categorize
from rocm_perf.analysis.rank_test import holm_adjusted, mann_whitney
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name

NEW, MISSING, FASTER, SLOWER, SAME = "new", "missing", "faster", "slower", "same"
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_CHANGE = 0.02


@dataclass
class KernelComparison:
    name: str  # the full name as in profile A (B's, for a kernel new in B)
    category: str
    a_calls: int
    b_calls: int
    a_total_ns: int
    b_total_ns: int
    a_median_ns: float | None
    b_median_ns: float | None
    p_value: float | None  # the rank test's raw two-sided p (None: new/missing)
    p_holm: float | None  # adjusted over every kernel compared
    significant: bool | None  # None for new/missing kernels: nothing to test
    status: str
    b_name: str | None = None  # B's spelling when it matched by short name only

    @property
    def delta_ns(self) -> int:
        return self.b_total_ns - self.a_total_ns

    @property
    def ratio(self) -> float | None:
        """B total / A total (None when A has none)."""
        return self.b_total_ns / self.a_total_ns if self.a_total_ns else None

    @property
    def median_ratio(self) -> float | None:
        if not self.a_median_ns or self.b_median_ns is None:
            return None
        return self.b_median_ns / self.a_median_ns

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name, "a_total_ns": self.a_total_ns, "b_total_ns": self.b_total_ns, "delta_ns": self.delta_ns,
            "a_calls": self.a_calls, "b_calls": self.b_calls, "significant": self.significant, "status": self.status,
            "category": self.category, "ratio": self.ratio, "a_median_ns": self.a_median_ns,
            "b_median_ns": self.b_median_ns, "median_ratio": self.median_ratio, "p_value": self.p_value,
            "p_holm": self.p_holm,
        }
        if self.b_name is not None:
            out["b_name"] = self.b_name
        return out


@dataclass
class TotalDelta:
    """One number per profile (a category, a phase, the critical path)."""

    name: str
    a_ns: int | None
    b_ns: int | None

    @property
    def delta_ns(self) -> int | None:
        return None if self.a_ns is None or self.b_ns is None else self.b_ns - self.a_ns

    @property
    def ratio(self) -> float | None:
        return self.b_ns / self.a_ns if self.a_ns and self.b_ns is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "a_ns": self.a_ns, "b_ns": self.b_ns, "delta_ns": self.delta_ns, "ratio": self.ratio}


@dataclass
class Comparison:
    a_total_ns: int
    b_total_ns: int
    kernels: list[KernelComparison]
    categories: list[TotalDelta]
    alpha: float
    min_change: float
    phases: list[TotalDelta] = field(default_factory=list)
    critical_path: TotalDelta | None = None
    critical_path_kernels: list[TotalDelta] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by_status(self, status: str) -> list[KernelComparison]:
        return [k for k in self.kernels if k.status == status]

    def to_json(self) -> dict[str, Any]:
        return {
            "total": {"a_ns": self.a_total_ns, "b_ns": self.b_total_ns, "delta_ns": self.b_total_ns - self.a_total_ns,
                      "ratio": self.b_total_ns / self.a_total_ns if self.a_total_ns else None},
            "kernels": [k.to_json() for k in self.kernels],
            "test": {"per_kernel": "two-sided Mann-Whitney U on per-dispatch durations",
                     "family_wise": "Holm over every kernel present in both", "alpha": self.alpha,
                     "min_change": self.min_change},
            "categories": [c.to_json() for c in self.categories],
            "phases": [p.to_json() for p in self.phases],
            "critical_path": self.critical_path.to_json() if self.critical_path else None,
            "critical_path_kernels": [c.to_json() for c in self.critical_path_kernels],
            "notes": list(self.notes),
        }


@dataclass
class _Side:
    """Per display name: the per-dispatch durations of one profile."""

    durations: dict[str, np.ndarray]
    mangled: dict[str, str]


def _side(trace: Trace) -> _Side:
    names = [s.display_name or s.name for s in trace.symbols]
    duration = trace.end - trace.start
    if not len(trace):
        return _Side({}, {})
    group_names, group_of_symbol = np.unique(np.asarray(names, dtype=object).astype(str), return_inverse=True)
    group = group_of_symbol.reshape(-1)[trace.kernel]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(group_names) + 1))
    durations = {}
    for g, name in enumerate(group_names.tolist()):
        part = duration[order[bounds[g]: bounds[g + 1]]]
        if len(part):
            durations[name] = part
    mangled = {}
    for s in trace.symbols:
        mangled.setdefault(s.display_name or s.name, s.name)
    return _Side(durations, mangled)


def pooled(traces: list[Trace]) -> Trace:
    """Several profiles of one program (rounds) as one Trace of all their dispatches, kernels by display name.

    Only what a comparison reads is kept (times, kernels, agents, streams); rounds keep their own times.
    """
    from rocm_perf.trace.model import KernelSymbol

    symbols: list[KernelSymbol] = []
    index: dict[str, int] = {}
    start, end, kernel, agent, stream = [], [], [], [], []
    for t in traces:
        mapping = []
        for sym in t.symbols:
            name = sym.display_name or sym.name
            if name not in index:
                index[name] = len(symbols)
                symbols.append(KernelSymbol(sym.name, name))
            mapping.append(index[name])
        start.append(t.start)
        end.append(t.end)
        kernel.append(np.asarray(mapping, dtype=np.int64)[t.kernel] if len(t) else np.zeros(0, np.int64))
        agent.append(t.agent)
        stream.append(t.stream)
    if not traces:
        return Trace.from_rows(start=[], end=[], kernel=[], symbols=[])
    merged = Trace.from_rows(start=np.concatenate(start), end=np.concatenate(end), kernel=np.concatenate(kernel),
                             symbols=symbols, agent=np.concatenate(agent), stream=np.concatenate(stream),
                             agents=list(traces[0].agents))
    merged.metadata.update(traces[0].metadata)
    return merged


def match_kernels(a: list[str], b: list[str]) -> list[tuple[str | None, str | None]]:
    """Pairs (name in A, name in B): equal full names first, then equal short names unique on both sides."""
    b_set = set(b)
    pairs: list[tuple[str | None, str | None]] = [(n, n) for n in a if n in b_set]
    a_left = [n for n in a if n not in b_set]
    a_set = set(a)
    b_left = [n for n in b if n not in a_set]

    def by_short(names: list[str]) -> dict[str, str]:
        seen: dict[str, list[str]] = {}
        for n in names:
            seen.setdefault(short_name(n, width=1 << 20), []).append(n)
        return {k: v[0] for k, v in seen.items() if len(v) == 1}

    short_a, short_b = by_short(a_left), by_short(b_left)
    matched_a, matched_b = set(), set()
    for key, name_a in short_a.items():
        if key in short_b:
            pairs.append((name_a, short_b[key]))
            matched_a.add(name_a)
            matched_b.add(short_b[key])
    pairs += [(n, None) for n in a_left if n not in matched_a]
    pairs += [(None, n) for n in b_left if n not in matched_b]
    return pairs


def compare_traces(
    a: Trace,
    b: Trace,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_change: float = DEFAULT_MIN_CHANGE,
    phases: bool = True,
    critical_path: bool = True,
    a_label: str = "A",
    b_label: str = "B",
) -> Comparison:
    """Compare two profiles (see the module docstring). Raises RocmPerfError when they share no kernel."""
    if not 0 < alpha < 1:
        raise RocmPerfError(f"alpha {alpha}: expected a level between 0 and 1")
    if not 0 <= min_change < 1:
        raise RocmPerfError(f"minimum change {min_change}: expected a fraction between 0 and 1")
    sa, sb = _side(a), _side(b)
    pairs = match_kernels(list(sa.durations), list(sb.durations))
    common = [(x, y) for x, y in pairs if x is not None and y is not None]
    if not common:
        raise RocmPerfError(
            f"{a_label} and {b_label} have no kernel in common ({len(sa.durations)} vs {len(sb.durations)} kernels): "
            "they are not profiles of the same workload"
        )
    p_raw = [mann_whitney(sa.durations[x], sb.durations[y]) for x, y in common]
    p_adj = dict(zip(common, holm_adjusted(p_raw)))
    p_of = dict(zip(common, p_raw))
    kernels = []
    for x, y in pairs:
        da = sa.durations.get(x) if x is not None else None
        db = sb.durations.get(y) if y is not None else None
        name = x if x is not None else y
        mangled = sa.mangled.get(x, "") if x is not None else sb.mangled.get(y, "")
        row = KernelComparison(
            name=name, category=categorize(name, mangled),
            a_calls=len(da) if da is not None else 0, b_calls=len(db) if db is not None else 0,
            a_total_ns=int(da.sum()) if da is not None else 0, b_total_ns=int(db.sum()) if db is not None else 0,
            a_median_ns=float(np.median(da)) if da is not None else None,
            b_median_ns=float(np.median(db)) if db is not None else None,
            p_value=None, p_holm=None, significant=None, status=NEW if da is None else MISSING if db is None else SAME,
            b_name=y if x is not None and y is not None and y != x else None,
        )
        if da is not None and db is not None:
            row.p_value = p_of[(x, y)]
            row.p_holm = p_adj[(x, y)]
            ratio = row.median_ratio
            moved = ratio is not None and abs(ratio - 1.0) >= min_change
            row.significant = bool(row.p_holm < alpha and moved)
            if row.significant:
                row.status = SLOWER if ratio > 1.0 else FASTER
        kernels.append(row)
    kernels.sort(key=lambda k: (-abs(k.delta_ns), k.name))
    comparison = Comparison(
        a_total_ns=a.runtime_ns, b_total_ns=b.runtime_ns, kernels=kernels,
        categories=_category_deltas(kernels), alpha=alpha, min_change=min_change,
    )
    matched_short = sum(1 for k in kernels if k.b_name is not None)
    if matched_short:
        comparison.notes.append(f"{matched_short} kernels matched by their short name (the full names differ)")
    if phases:
        comparison.phases = _phase_deltas(a, b)
    if critical_path:
        _critical_path_deltas(a, b, comparison)
    return comparison


def _category_deltas(kernels: list[KernelComparison]) -> list[TotalDelta]:
    acc: dict[str, list[int]] = {}
    for k in kernels:
        entry = acc.setdefault(k.category, [0, 0])
        entry[0] += k.a_total_ns
        entry[1] += k.b_total_ns
    rows = [TotalDelta(c, a, b) for c, (a, b) in acc.items()]
    return sorted(rows, key=lambda r: (-abs(r.delta_ns or 0), r.name))


def _phase_deltas(a: Trace, b: Trace) -> list[TotalDelta]:
    """GPU time per phase (roctx range path) in each profile, where either has ranges."""
    from rocm_perf.analysis.phases import phase_table

    if (a.markers is None or not len(a.markers)) and (b.markers is None or not len(b.markers)):
        return []
    ga = {p.name: p.gpu_ns for p in phase_table(a).phases}
    gb = {p.name: p.gpu_ns for p in phase_table(b).phases}
    names = list(ga) + [n for n in gb if n not in ga]
    rows = [TotalDelta(n, ga.get(n), gb.get(n)) for n in names if ga.get(n) or gb.get(n)]
    return sorted(rows, key=lambda r: (-abs((r.b_ns or 0) - (r.a_ns or 0)), r.name))


def _critical_path_deltas(a: Trace, b: Trace, out: Comparison) -> None:
    from rocm_perf.analysis.critical_path import analyze_critical_path

    try:
        ca, cb = analyze_critical_path(a), analyze_critical_path(b)
    except RocmPerfError as e:
        out.notes.append(f"critical path not compared: {e}")
        return
    out.critical_path = TotalDelta("critical path", ca.critical_path_ns, cb.critical_path_ns)
    wa = {s.name: s.cp_ns for s in ca.symbols}
    wb = {s.name: s.cp_ns for s in cb.symbols}
    rows = [TotalDelta(n, wa.get(n, 0), wb.get(n, 0)) for n in set(wa) | set(wb)]
    out.critical_path_kernels = sorted(rows, key=lambda r: (-abs(r.delta_ns or 0), r.name))
    if not (ca.cross_stream_known and cb.cross_stream_known):
        out.notes.append("cross-stream dependencies were not known in both profiles: the critical paths are lower bounds")


def regressions(comparison: Comparison, percent: float) -> list[str]:
    """What got slower by more than `percent` %: the total GPU time, then significantly slower kernels (median)."""
    limit = percent / 100.0
    found = []
    a, b = comparison.a_total_ns, comparison.b_total_ns
    if a and (b - a) / a > limit:
        found.append(f"total GPU time {100 * (b - a) / a:+.1f} %")
    for k in comparison.kernels:
        ratio = k.median_ratio
        if k.status == SLOWER and ratio is not None and ratio - 1.0 > limit:
            found.append(f"{short_name(k.name)} {100 * (ratio - 1):+.1f} % per dispatch (p {k.p_holm:.2g} after Holm)")
    return found


@dataclass
class MetadataDifference:
    key: str
    a: Any
    b: Any
    blocking: bool  # a known difference that makes timings incomparable (what --strict refuses)

    def to_json(self) -> dict:
        return asdict(self)


# What must agree for timings to compare: the hardware, the software stack, the host, the job.
COMPARABILITY_KEYS = ("observed_arch", "gpu_products", "gpu_clocks_mhz", "gpu_cu_counts", "timings", "rocm_version",
                      "hostname", "command", "world_size")
INFORMATIONAL_KEYS = ("format",)


def comparability(meta_a: dict[str, Any], meta_b: dict[str, Any], extra_keys: tuple[str, ...] = ()) -> list[MetadataDifference]:
    """Differences between two profiles' metadata: known on both sides and unequal (blocking), or known
    on one side only (not blocking), or informational (formats may differ: a rocpd baseline vs a
    PyTorch trace compares fine)."""
    out = []
    for key in COMPARABILITY_KEYS + tuple(k for k in extra_keys if k not in COMPARABILITY_KEYS):
        va, vb = meta_a.get(key), meta_b.get(key)
        if va is None and vb is None or va == vb:
            continue
        out.append(MetadataDifference(key, va, vb, blocking=va is not None and vb is not None))
    for key in INFORMATIONAL_KEYS:
        if meta_a.get(key) != meta_b.get(key):
            out.append(MetadataDifference(key, meta_a.get(key), meta_b.get(key), blocking=False))
    return out
