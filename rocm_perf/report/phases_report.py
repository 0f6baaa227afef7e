"""`rocm-perf summary --by-phase`: a kernel table per roctx range (analysis/phases.py renders here)."""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.analysis.phases import NO_RANGE, PhaseTable, phase_table
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name


def _us(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1000:,.1f}"


def _headline(table: PhaseTable, total_ns: int) -> list[str]:
    named = [p for p in table.phases if p.name != NO_RANGE]
    outside = next((p for p in table.phases if p.name == NO_RANGE), None)
    lines = [f"{len(named)} phases; kernels placed by {table.placement}"]
    if outside is not None and total_ns:
        lines.append(f"{outside.dispatches:,} dispatches ({outside.gpu_ns / total_ns:.1%} of kernel time) ran outside "
                     "every range")
    return lines + [f"note: {n}" for n in table.notes]


def _phase_line(p) -> str:
    if p.name == NO_RANGE:
        return f"{p.name}: GPU {_us(p.gpu_ns)} us, {p.dispatches:,} dispatches launched outside every range"
    entered = f", entered {p.instances}x" if p.instances > 1 else ""
    return f"{p.name}: wall {_us(p.wall_ns)} us, GPU {_us(p.gpu_ns)} us, {p.dispatches:,} dispatches{entered}"


def render_text(table: PhaseTable, *, top: int | None, width: int, total_ns: int) -> str:
    """The phases as plain text tables (one per phase, its top kernels), ready for any terminal."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    for line in _headline(table, total_ns):
        console.print(line, highlight=False, markup=False)
    name_width = max(20, width - 45)
    for p in table.phases:
        console.print("")
        console.print(_phase_line(p), highlight=False, markup=False)
        if not p.kernels:
            continue
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        t.add_column("kernel", no_wrap=True, overflow="ellipsis", max_width=name_width)
        for col in ("calls", "total us", "share"):
            t.add_column(col, justify="right", no_wrap=True)
        shown = p.kernels if top is None else p.kernels[:top]
        for k in shown:
            t.add_row(short_name(k.name, width=name_width), f"{k.calls:,}", _us(k.total_ns),
                      f"{k.total_ns / p.gpu_ns:.1%}" if p.gpu_ns else "")
        console.print(t)
        if len(p.kernels) > len(shown):
            console.print(f"  ... {len(p.kernels) - len(shown)} more kernels; --all shows every kernel",
                          highlight=False, markup=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").splitlines())


def render_markdown(table: PhaseTable, total_ns: int) -> str:
    lines = [f"- {line.replace('|', chr(92) + '|')}" for line in _headline(table, total_ns)]
    lines += ["", "| phase | wall us | GPU us | dispatches | entered |", "|---|---:|---:|---:|---:|"]
    for p in table.phases:
        lines.append(f"| `{p.name.replace('|', chr(92) + '|')}` | {_us(p.wall_ns)} | {_us(p.gpu_ns)} | "
                     f"{p.dispatches} | {p.instances} |")
    for p in table.phases:
        if not p.kernels:
            continue
        lines += ["", f"### {p.name}", "", "| kernel | calls | total us |", "|---|---:|---:|"]
        for k in p.kernels:
            lines.append(f"| `{short_name(k.name).replace('|', chr(92) + '|')}` | {k.calls} | {_us(k.total_ns)} |")
    return "\n".join(lines)


def phases_section_fields(trace: Trace, *, top: int | None = 10, width: int = 100,
                          fold_numbers: bool = True) -> dict[str, Any]:
    """The fields of the summary's per-phase section (`--by-phase`): JSON key `phases` (a list of phases),
    a table per phase, and phases.json."""
    table = phase_table(trace, fold_numbers=fold_numbers)
    total = trace.runtime_ns
    data = [p.to_json() for p in table.phases]
    return {
        "key": "phases",
        "title": "Phases (roctx ranges)",
        "data": data,
        "markdown": render_markdown(table, total),
        "text": render_text(table, top=top, width=width, total_ns=total),
        "files": {"phases.json": {"placement": table.placement, "notes": table.notes, "phases": data}},
    }
