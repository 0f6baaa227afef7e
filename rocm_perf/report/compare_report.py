"""`rocm-perf compare A B`: the comparability check, then the per-kernel comparison, on the terminal,
as compare.json and as compare.md (ready for a pull request). Numbers from analysis/compare.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.analysis.compare import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_CHANGE,
    FASTER,
    MISSING,
    NEW,
    SLOWER,
    Comparison,
    KernelComparison,
    MetadataDifference,
    comparability,
    compare_traces,
    regressions,
)
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.metadata import USER_KEYS, build_metadata
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name
from rocm_perf.report.json_text import json_text

REGRESSION_EXIT = 1  # errors exit 2 (RocmPerfError); a regression found by --fail-on-regression exits 1


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def _pct(a: float | None, b: float | None) -> str:
    if not a or b is None:
        return "-"
    return f"{100 * (b - a) / a:+.1f} %"


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.3f}"


def _p(k: KernelComparison) -> str:
    return "-" if k.p_holm is None else f"{k.p_holm:.2g}"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def difference_lines(diffs: list[MetadataDifference]) -> list[str]:
    out = []
    for d in diffs:
        kind = "DIFFERS" if d.blocking else ("recorded in one profile only" if d.key != "format" else "formats")
        out.append(f"{d.key}: A {d.a!r}, B {d.b!r} ({kind})")
    return out


def headline(c: Comparison) -> list[str]:
    slower, faster = c.by_status(SLOWER), c.by_status(FASTER)
    new, missing = c.by_status(NEW), c.by_status(MISSING)
    lines = [
        f"GPU time (SUM end-start): A {_us(c.a_total_ns)} us, B {_us(c.b_total_ns)} us, "
        f"delta {_us(c.b_total_ns - c.a_total_ns)} us ({_pct(c.a_total_ns, c.b_total_ns)})",
        f"{len(c.kernels) - len(new) - len(missing)} kernels in both: {len(slower)} slower, {len(faster)} faster "
        f"(Mann-Whitney per dispatch, Holm at alpha {c.alpha:g}, median moved >= {c.min_change:.0%}); "
        f"{len(new)} new in B, {len(missing)} missing from B",
    ]
    if c.critical_path is not None:
        cp = c.critical_path
        lines.append(f"critical path: A {_us(cp.a_ns)} us, B {_us(cp.b_ns)} us ({_pct(cp.a_ns, cp.b_ns)})")
    return lines + [f"note: {n}" for n in c.notes]


def _kernel_table(kernels: list[KernelComparison], width: int, title: str) -> Table:
    """Wide terminals get every column; narrow ones calls as A/B, the delta, the median change and p."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    wide = width >= 150
    if wide:
        cols = ["kernel", "status", "A calls", "B calls", "A total us", "B total us", "delta us", "ratio",
                "A median us", "B median us", "median", "p (Holm)"]
        fixed = 128
    else:
        cols = ["kernel", "status", "calls A/B", "delta us", "median", "p (Holm)"]
        fixed = 62
    for col in cols:
        if col == "kernel":
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=max(16, width - fixed))
        else:
            table.add_column(col, justify="left" if col == "status" else "right", no_wrap=True)
    for k in kernels:
        change = _pct(k.a_median_ns, k.b_median_ns)
        if wide:
            cells = [f"{k.a_calls:,}", f"{k.b_calls:,}", _us(k.a_total_ns), _us(k.b_total_ns), _us(k.delta_ns),
                     _ratio(k.ratio), _us(k.a_median_ns), _us(k.b_median_ns), change, _p(k)]
        else:
            cells = [f"{k.a_calls:,}/{k.b_calls:,}", _us(k.delta_ns), change, _p(k)]
        table.add_row(short_name(k.name, width=max(16, width - fixed)), k.status, *cells)
    return table


def print_comparison(c: Comparison, diffs: list[MetadataDifference], *, top: int | None, console: Console) -> None:
    if diffs:
        console.print("Comparability: the profiles differ in", style="bold", highlight=False)
        for line in difference_lines(diffs):
            console.print(f"  {line}", highlight=False, markup=False)
    else:
        console.print("Comparability: same GPU, software and command as far as both profiles record", highlight=False)
    for line in headline(c):
        console.print(line, highlight=False, markup=False)
    shown = c.kernels if top is None else c.kernels[:top]
    console.print(_kernel_table(shown, console.width, "Kernels by |delta|"))
    if len(c.kernels) > len(shown):
        console.print(f"... {len(c.kernels) - len(shown)} more kernels; --all shows every kernel (compare.json has them)",
                      highlight=False, markup=False)
    cats = Table(title="By category", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("category", "A us", "B us", "delta us", "change"):
        cats.add_column(col, justify="left" if col == "category" else "right")
    for r in c.categories:
        cats.add_row(r.name, _us(r.a_ns), _us(r.b_ns), _us(r.delta_ns), _pct(r.a_ns, r.b_ns))
    console.print(cats)
    if c.phases:
        phases = Table(title="By phase (GPU time, largest change first)", title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("phase", "A us", "B us", "delta us", "change"):
            phases.add_column(col, justify="left" if col == "phase" else "right", no_wrap=True,
                              overflow="ellipsis", max_width=max(20, console.width - 60) if col == "phase" else None)
        shown = c.phases if top is None else c.phases[:top]
        for r in shown:
            # the innermost names say most: keep the end of a long path
            name = r.name if len(r.name) <= max(20, console.width - 60) else "…" + r.name[-(max(20, console.width - 60) - 1):]
            phases.add_row(name, _us(r.a_ns), _us(r.b_ns), _us(r.delta_ns), _pct(r.a_ns, r.b_ns))
        console.print(phases)
        if len(c.phases) > len(shown):
            console.print(f"... {len(c.phases) - len(shown)} more phases in compare.json", highlight=False, markup=False)


def render_markdown(c: Comparison, diffs: list[MetadataDifference], a_path: str, b_path: str, *, top: int = 30) -> str:
    """compare.md: for a pull request."""
    lines = ["# Profile comparison", "", f"- A: `{_md(a_path)}`", f"- B: `{_md(b_path)}`"]
    lines += [f"- {_md(line)}" for line in headline(c)]
    if diffs:
        lines += ["", "**The profiles differ in:**", ""] + [f"- {_md(line)}" for line in difference_lines(diffs)]
    changed = [k for k in c.kernels if k.status in (SLOWER, FASTER)]
    changed.sort(key=lambda k: (k.status != SLOWER, -abs(k.delta_ns)))
    lines += ["", "## Significant changes", ""]
    if changed:
        lines += ["| kernel | status | A calls | B calls | A median us | B median us | median change | delta us | p (Holm) |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for k in changed[:top]:
            lines.append(f"| `{_md(short_name(k.name))}` | {k.status} | {k.a_calls} | {k.b_calls} | "
                         f"{_us(k.a_median_ns)} | {_us(k.b_median_ns)} | {_pct(k.a_median_ns, k.b_median_ns)} | "
                         f"{_us(k.delta_ns)} | {_p(k)} |")
        if len(changed) > top:
            lines.append(f"\n{len(changed) - top} more in compare.json.")
    else:
        lines.append("None: no kernel's per-dispatch time changed beyond noise.")
    for status, title in ((NEW, "New in B"), (MISSING, "Missing from B")):
        rows = c.by_status(status)
        if rows:
            lines += ["", f"## {title}", "", "| kernel | calls | total us |", "|---|---:|---:|"]
            for k in rows[:top]:
                calls, total = (k.b_calls, k.b_total_ns) if status == NEW else (k.a_calls, k.a_total_ns)
                lines.append(f"| `{_md(short_name(k.name))}` | {calls} | {_us(total)} |")
            if len(rows) > top:
                lines.append(f"\n{len(rows) - top} more in compare.json.")
    lines += ["", "## By category", "", "| category | A us | B us | delta us | change |", "|---|---:|---:|---:|---:|"]
    for r in c.categories:
        lines.append(f"| {r.name} | {_us(r.a_ns)} | {_us(r.b_ns)} | {_us(r.delta_ns)} | {_pct(r.a_ns, r.b_ns)} |")
    if c.phases:
        lines += ["", "## By phase (GPU time)", "", "| phase | A us | B us | delta us | change |",
                  "|---|---:|---:|---:|---:|"]
        for r in c.phases:
            lines.append(f"| `{_md(r.name)}` | {_us(r.a_ns)} | {_us(r.b_ns)} | {_us(r.delta_ns)} | {_pct(r.a_ns, r.b_ns)} |")
    if c.critical_path is not None:
        lines += ["", "## Critical path", "", f"A {_us(c.critical_path.a_ns)} us, B {_us(c.critical_path.b_ns)} us "
                  f"({_pct(c.critical_path.a_ns, c.critical_path.b_ns)}).", "",
                  "| kernel | A path us | B path us | delta us |", "|---|---:|---:|---:|"]
        for r in c.critical_path_kernels[:10]:
            lines.append(f"| `{_md(short_name(r.name))}` | {_us(r.a_ns)} | {_us(r.b_ns)} | {_us(r.delta_ns)} |")
    lines += ["", f"Per kernel: two-sided Mann-Whitney test on per-dispatch durations; family-wise error held at "
              f"{c.alpha:g} over {len(c.kernels) - len(c.by_status(NEW)) - len(c.by_status(MISSING))} kernels by Holm's "
              f"method; a kernel counts as faster/slower only when its median also moved by at least {c.min_change:.0%}."]
    return "\n".join(lines) + "\n"


def compare_document(
    trace_a: Trace,
    trace_b: Trace,
    a: str,
    b: str,
    *,
    strict: bool = False,
    meta_a: dict[str, str] | None = None,
    meta_b: dict[str, str] | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_change_pct: float = DEFAULT_MIN_CHANGE * 100,
) -> tuple[dict[str, Any], Comparison, list[MetadataDifference]]:
    """compare.json's document for two loaded profiles named `a` and `b`, with the comparison and
    the comparability differences it was made from (RocmPerfError for an empty profile, and under
    `strict` for profiles that are not comparable)."""
    for path, trace in ((a, trace_a), (b, trace_b)):
        if not len(trace):
            raise RocmPerfError(f"{path}: the profile holds no kernel dispatches: nothing to compare")
    md_a = build_metadata(trace_a, user=meta_a)
    md_b = build_metadata(trace_b, user=meta_b)
    user_keys = tuple(dict.fromkeys(list(USER_KEYS) + list(meta_a or {}) + list(meta_b or {})))
    diffs = comparability(md_a, md_b, extra_keys=user_keys)
    blocking = [d for d in diffs if d.blocking]
    if strict and blocking:
        raise RocmPerfError(
            f"{a} and {b} are not comparable (--strict): they differ in "
            + "; ".join(f"{d.key} ({d.a!r} vs {d.b!r})" for d in blocking)
        )
    comparison = compare_traces(trace_a, trace_b, alpha=alpha, min_change=min_change_pct / 100.0,
                                a_label=a, b_label=b)
    doc: dict[str, Any] = {"a": a, "b": b, **comparison.to_json(),
                           "comparability": [d.to_json() for d in diffs],
                           "metadata": {"a": md_a, "b": md_b}}
    return doc, comparison, diffs


def run_compare(
    a: Path,
    b: Path,
    *,
    out: Path | None = None,
    fail_on_regression: float | None = None,
    strict: bool = False,
    meta_a: dict[str, str] | None = None,
    meta_b: dict[str, str] | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_change_pct: float = DEFAULT_MIN_CHANGE * 100,
    top: int | None = 20,
    as_json: bool = False,
) -> int:
    """Load two profiles (any formats), check comparability, compare, print, write. Returns the exit code."""
    if fail_on_regression is not None and fail_on_regression < 0:
        raise RocmPerfError(f"--fail-on-regression {fail_on_regression}: expected a percentage >= 0")
    trace_a, trace_b = load_trace(a), load_trace(b)
    doc, comparison, diffs = compare_document(trace_a, trace_b, str(a), str(b), strict=strict, meta_a=meta_a,
                                              meta_b=meta_b, alpha=alpha, min_change_pct=min_change_pct)
    found = regressions(comparison, fail_on_regression) if fail_on_regression is not None else []
    if fail_on_regression is not None:
        doc["regression_check"] = {"percent": fail_on_regression, "regressions": found}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "compare.json", json_text(doc) + "\n")
        write_atomic(out / "compare.md", render_markdown(comparison, diffs, str(a), str(b)))
    if as_json:
        sys.stdout.write(json_text(doc) + "\n")
    else:
        print_comparison(comparison, diffs, top=top, console=Console())
        if out is not None:
            print(f"wrote {out / 'compare.json'}, {out / 'compare.md'}")
    if fail_on_regression is not None:
        stream = sys.stderr
        if found:
            listed = "; ".join(found[:5]) + (f"; and {len(found) - 5} more (compare.json)" if len(found) > 5 else "")
            print(f"rocm-perf: {len(found)} regressions beyond {fail_on_regression:g} %: {listed}", file=stream)
            return REGRESSION_EXIT
        print(f"rocm-perf: no regression beyond {fail_on_regression:g} %", file=stream)
    return 0
