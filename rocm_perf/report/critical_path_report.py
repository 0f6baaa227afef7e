"""`rocm-perf critical-path`, and the critical-path section of `rocm-perf summary`.

Renders analysis/critical_path.py's result: kernels ranked by their time on the dispatch DAG's
critical path, next to their share of total kernel time, and the path's length against the span.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.analysis.critical_path import CriticalPathResult, analyze_critical_path
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.summary_section import SummarySection
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import Trace
from rocm_perf.trace.needs import TIMELINE
from rocm_perf.trace.names import short_name
from rocm_perf.report.json_text import json_text

SUMMARY_TOP = 10


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def headline(result: CriticalPathResult) -> list[str]:
    """The path against the span and the summed kernel time, and what the DAG knew."""
    lines = [
        f"critical path: {_us(result.critical_path_ns)} us = {_share(result.critical_path_ns, result.span_ns):.1%} "
        f"of the span ({_us(result.span_ns)} us, first start to last end); "
        f"summed kernel time {_us(result.sum_dispatch_ns)} us",
        f"{len(result.slack):,} dispatches on {result.n_chains} stream{'' if result.n_chains == 1 else 's'}, "
        f"{len(result.path):,} on the path; "
        f"cross-stream dependencies {'known from the HIP API trace' if result.cross_stream_known else 'NOT known'}",
    ]
    return lines + [f"note: {n}" for n in result.notes]


def ranking_table(result: CriticalPathResult, *, top: int | None, width: int = 120) -> Table:
    """Kernel symbols by critical-path time (rich table). Narrow terminals drop the off-path and total columns."""
    shown = result.symbols if top is None else result.symbols[:top]
    wide = width >= 110
    table = Table(title="Kernels by critical-path time", title_justify="left", box=box.SIMPLE_HEAD)
    numeric = ["path us", "path %", "time %", "on path"] + (["off path", "total us"] if wide else []) + ["slack us"]
    # numbers never wrap or get cut: the kernel name gets the width that is left
    number_width = {"path %": 6, "time %": 6, "on path": 7, "off path": 8}
    fixed = sum(number_width.get(col, 11) + 3 for col in numeric) + 8
    name_width = max(16, width - fixed)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("kernel", no_wrap=True, overflow="ellipsis", min_width=16, max_width=name_width)
    for col in numeric:
        table.add_column(col, justify="right", no_wrap=True, min_width=number_width.get(col, 11))
    for i, s in enumerate(shown, 1):
        cells = [_us(s.cp_ns), f"{s.cp_share:.1%}", f"{_share(s.total_ns, result.sum_dispatch_ns):.1%}", f"{s.calls_on_path:,}"]
        cells += [f"{s.calls_off_path:,}", _us(s.total_ns)] if wide else []
        table.add_row(str(i), short_name(s.name, width=name_width), *cells, _us(s.total_slack_ns))
    return table


def print_result(result: CriticalPathResult, *, top: int | None, console: Console) -> None:
    for line in headline(result):
        console.print(line, highlight=False, markup=False)
    console.print(ranking_table(result, top=top, width=console.width))
    hidden = len(result.symbols) - (len(result.symbols) if top is None else min(top, len(result.symbols)))
    if hidden > 0:
        console.print(f"... {hidden} more kernels; drop --top to see them all", highlight=False, markup=False)
    console.print(
        "path %: share of the critical path; time %: share of summed kernel time; slack us: summed over the "
        "kernel's dispatches (how long they could be delayed without lengthening the path)",
        highlight=False,
        markup=False,
    )


def result_json(result: CriticalPathResult, trace: Trace) -> dict:
    return {
        "source_trace_path": str(trace.metadata.get("source_path", "")),
        "format": trace.metadata.get("format", ""),
        **result.to_json(),
    }


def run_critical_path(
    profile: Path,
    *,
    top: int | None = None,
    as_json: bool = False,
    null_stream: str = "legacy",
    gap_heuristic_us: float | None = None,
) -> int:
    """Load `profile`, analyze its dispatch DAG and print the ranking (or JSON). Returns the exit code."""
    if top is not None and top < 1:
        raise RocmPerfError(f"--top {top}: expected a positive number of kernels")
    gap_ns = None if gap_heuristic_us is None else int(round(gap_heuristic_us * 1000))
    trace = load_trace(profile, TIMELINE)
    if not len(trace):
        raise RocmPerfError(f"{profile}: the profile holds no kernel dispatches")
    result = analyze_critical_path(trace, null_stream=null_stream, gap_heuristic_ns=gap_ns, with_edges=False)
    if as_json:
        sys.stdout.write(json_text(result_json(result, trace), default=None) + "\n")
    else:
        print_result(result, top=top, console=Console())
    return 0


# ---- the summary's section ----------------------------------------------------------------------


def critical_path_section(trace: Trace, *, null_stream: str = "legacy", top: int = SUMMARY_TOP) -> SummarySection | None:
    """The summary's critical-path part: top kernels by path share next to time share; critical_path.json."""
    if not len(trace):
        return None
    title = "Critical path"
    try:
        result = analyze_critical_path(trace, null_stream=null_stream, with_edges=False)
    except RocmPerfError as e:
        # The kernel table is still worth having when the DAG cannot be built; say why it is missing.
        reason = f"not computed: {e}"
        return SummarySection(key="critical_path", title=title, data={"error": str(e)}, markdown=reason, text=reason)
    # Pre-rendered for any terminal: 80 columns keep path % next to time %, and nothing wraps.
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, color_system=None, force_terminal=False)
    console.print(ranking_table(result, top=top, width=80))
    table_text = "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())
    text = "\n".join(headline(result)) + "\n" + table_text
    doc = result_json(result, trace)
    summary_data = {k: v for k, v in doc.items() if k != "path"}
    summary_data["path_dispatches"] = len(result.path)
    return SummarySection(
        key="critical_path",
        title=title,
        data=summary_data,
        markdown=_markdown(result, top),
        text=text,
        files={"critical_path.json": doc},
    )


def _markdown(result: CriticalPathResult, top: int) -> str:
    lines = [f"- {line.replace('|', chr(92) + '|')}" for line in headline(result)]
    lines += [
        "",
        "| # | kernel | path us | path % | time % | on path | off path | total us | slack us |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i, s in enumerate(result.symbols[:top], 1):
        lines.append(
            f"| {i} | `{short_name(s.name).replace('|', chr(92) + '|')}` | {_us(s.cp_ns)} | {s.cp_share:.1%} | "
            f"{_share(s.total_ns, result.sum_dispatch_ns):.1%} | {s.calls_on_path} | {s.calls_off_path} | "
            f"{_us(s.total_ns)} | {_us(s.total_slack_ns)} |"
        )
    return "\n".join(lines)
