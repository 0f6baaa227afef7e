"""`rocm-perf triage PROFILE`: one compact answer to "where is the time, what overlaps, what could be fused".

The kernel table with ROCm-native categories, the overlap opportunities (exposed vs hidden time per
category and kernel, communication not overlapped with compute, idle gaps per GPU and their causes)
and the fuse opportunities. Numbers from analysis/ (kernel_table, overlap, idle_gaps, fusion,
critical_path); this module prints and writes them.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.analysis.fusion import DEFAULT_MAX_GAP_NS, DEFAULT_SHORT_NS, FusePattern, fuse_opportunities
from rocm_perf.analysis.idle_gaps import CAUSES, COPY_PREFIX, AgentIdle, idle_gaps
from rocm_perf.analysis.overlap import OverlapTable, overlap_table
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.analysis.kernel_table import agent_rows, category_rows, kernel_rows
from rocm_perf.report.metadata import build_metadata
from rocm_perf.report.summary import Summary, no_dispatch_hint
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import Trace
from rocm_perf.trace.names import short_name


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _label(name: str, width: int = 72) -> str:
    """A kernel's short name; a copy's name as it is (it is not a C++ signature)."""
    if name.startswith(COPY_PREFIX):
        return name if len(name) <= width else name[: width - 1] + "…"
    return short_name(name, width)


class Triage:
    """Everything triage found, for printing and for the artifacts."""

    def __init__(self, trace: Trace, summary: Summary, overlap: OverlapTable, idle: list[AgentIdle],
                 fuse: list[FusePattern], cp_ns: int | None, cp_note: str | None, settings: dict[str, Any]):
        self.trace = trace
        self.summary = summary
        self.overlap = overlap
        self.idle = idle
        self.fuse = fuse
        self.cp_ns = cp_ns
        self.cp_note = cp_note
        self.settings = settings

    def overlap_json(self) -> dict[str, Any]:
        return {
            "source_trace_path": self.summary.metadata["source_trace_path"],
            "definitions": {
                "exposed_ns": "time the kernel ran with nothing else running on its GPU",
                "hidden_ns": "time other streams' kernels or copies ran alongside it",
                "critical_path_ns": "its time on the dispatch DAG's critical path",
                "communication.exposed_ns": "collective time with no compute kernel running on the same GPU",
            },
            "critical_path_ns": self.cp_ns,
            "critical_path_note": self.cp_note,
            "categories": [r.to_json() for r in self.overlap.categories],
            "kernels": [r.to_json() for r in self.overlap.kernels],
            "communication": [r.to_json() for r in self.overlap.communication],
            "idle_gaps": [a.to_json() for a in self.idle],
        }

    def fuse_json(self) -> dict[str, Any]:
        return {"source_trace_path": self.summary.metadata["source_trace_path"], "settings": self.settings,
                "patterns": [p.to_json() for p in self.fuse]}


def triage(trace: Trace, *, expect_arch: str | None = None, meta: dict[str, str] | None = None,
           short_ns: int = DEFAULT_SHORT_NS, max_gap_ns: int = DEFAULT_MAX_GAP_NS, top: int = 10) -> Triage:
    """Run every triage analysis on one trace."""
    kernels = kernel_rows(trace)
    summary = Summary(metadata=build_metadata(trace, expect_arch=expect_arch, user=meta), kernels=kernels,
                      categories=category_rows(kernels), agents=agent_rows(trace), sections=[])
    cp_by_kernel = None
    cp_ns = None
    cp_note = None
    try:
        cp = analyze_critical_path(trace)
        cp_by_kernel = {s.name: s.cp_ns for s in cp.symbols}
        cp_ns = cp.critical_path_ns
        if not cp.cross_stream_known:
            cp_note = "cross-stream dependencies not known: the critical path is a lower bound"
    except RocmPerfError as e:
        cp_note = f"critical path not computed: {e}"
    overlap = overlap_table(trace, cp_by_kernel)
    idle = idle_gaps(trace, longest=top)
    fuse = fuse_opportunities(trace, short_ns=short_ns, max_gap_ns=max_gap_ns, top=top)
    settings = {"short_ns": short_ns, "max_gap_ns": max_gap_ns, "max_len": 8, "min_count": 2}
    return Triage(trace, summary, overlap, idle, fuse, cp_ns, cp_note, settings)


# ---- rendering ----------------------------------------------------------------------------------


def _headline(t: Triage) -> list[str]:
    m = t.summary.metadata
    total = t.summary.runtime_ns
    gpu = m["observed_arch"] or ", ".join(m.get("gpu_products") or []) or "unknown GPU"
    lines = [f"profile: {m['source_trace_path']} ({m['format']}); GPU: {gpu}" +
             ("; CPU timings (host backend)" if m["timings"] != "GPU" else ""),
             f"kernel time {_us(total)} us over {m['dispatches']:,} dispatches and {len(t.summary.kernels)} kernels"
             + (f"; critical path {_us(t.cp_ns)} us" if t.cp_ns is not None else "")]
    exposed = sum(r.exposed_ns for r in t.overlap.categories)
    lines.append(f"exposed (nothing else running on the GPU): {_us(exposed)} us = {_pct(exposed, total)} of kernel "
                 "time; the rest ran alongside other streams")
    for a in t.idle:
        causes = ", ".join(f"{c} {_us(a.by_cause[c]['ns'])} us" for c in CAUSES if c in a.by_cause)
        lines.append(f"GPU agent {a.agent}: idle {_us(a.idle_ns)} us = {_pct(a.idle_ns, a.span_ns)} of its span in "
                     f"{a.gaps:,} gaps" + (f" ({causes})" if causes else ""))
    for c in t.overlap.communication:
        lines.append(f"GPU agent {c.agent}: communication {_us(c.total_ns)} us, {_us(c.exposed_ns)} us "
                     f"({_pct(c.exposed_ns, c.total_ns)}) not overlapped with compute")
    if t.cp_note:
        lines.append(f"note: {t.cp_note}")
    return lines


def _table(title: str, columns: list[str], rows: list[list[str]], name_width: int) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        if i == 0:
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=name_width)
        else:
            table.add_column(col, justify="left" if col in ("category", "cause") else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r)
    return table


def print_triage(t: Triage, *, top: int, console: Console) -> None:
    for line in _headline(t):
        console.print(line, highlight=False, markup=False)
    width = console.width
    name_width = max(16, width - 52)
    console.print(_table("Kernels by total time", ["kernel", "category", "calls", "total us", "share"],
                         [[short_name(k.name, name_width), k.category, f"{k.calls:,}", _us(k.total_ns), f"{k.share:.1%}"]
                          for k in t.summary.kernels[:top]], name_width))
    overlap_width = max(16, width - (58 if t.cp_ns is not None else 44))
    cp_col = t.cp_ns is not None
    cols = ["category", "total us", "exposed us", "hidden us", "exposed"] + (["on path us"] if cp_col else [])
    console.print(_table("Overlap by category", cols,
                         [[r.name, _us(r.total_ns), _us(r.exposed_ns), _us(r.hidden_ns), f"{r.exposed_share:.0%}"]
                          + ([_us(r.critical_path_ns)] if cp_col else []) for r in t.overlap.categories], 20))
    console.print(_table("Overlap by kernel (most exposed first)",
                         ["kernel", "total us", "exposed us", "hidden us"] + (["on path us"] if cp_col else []),
                         [[short_name(r.name, overlap_width), _us(r.total_ns), _us(r.exposed_ns), _us(r.hidden_ns)]
                          + ([_us(r.critical_path_ns)] if cp_col else []) for r in t.overlap.kernels[:top]],
                         overlap_width))
    gap_width = max(14, (width - 48) // 2)
    for a in t.idle:
        if a.longest:
            table = _table(f"Longest idle gaps, GPU agent {a.agent}", ["last before", "gap us", "cause", "first after"],
                           [[_label(g.before, gap_width), _us(g.length_ns), g.cause, _label(g.after, gap_width)]
                            for g in a.longest[: max(3, top // 2)]], gap_width)
            table.columns[3].max_width = gap_width
            table.columns[3].overflow = "ellipsis"
            console.print(table)
    if t.fuse:
        console.print(_table("Fuse opportunities (short kernels back to back, repeated)",
                             ["sequence", "length", "times", "kernel us", "gaps us", "launch us"],
                             [[" > ".join(short_name(k, 18) for k in p.kernels), str(p.length), f"{p.occurrences:,}",
                               _us(p.kernel_ns), _us(p.gap_ns), _us(p.launch_call_ns)] for p in t.fuse],
                             max(24, width - 60)))
    else:
        console.print(f"Fuse opportunities: none (no sequence of short kernels, < {_us(t.settings['short_ns'])} us, "
                      "repeats back to back on a stream)", highlight=False, markup=False)


def triage_markdown(t: Triage) -> str:
    lines = ["# Profile triage", ""] + [f"- {_md(line)}" for line in _headline(t)]
    lines += ["", "## Kernels", "", "| # | kernel | category | calls | total us | share |", "|---:|---|---|---:|---:|---:|"]
    for i, k in enumerate(t.summary.kernels[:30], 1):
        lines.append(f"| {i} | `{_md(k.short_name)}` | {k.category} | {k.calls} | {_us(k.total_ns)} | {k.share:.1%} |")
    lines += ["", "## By category", "", "| category | kernels | calls | total us | share |", "|---|---:|---:|---:|---:|"]
    for c in t.summary.categories:
        lines.append(f"| {c.category} | {c.kernels} | {c.calls} | {_us(c.total_ns)} | {c.share:.1%} |")
    lines += ["", "## Overlap opportunities", "",
              "Exposed: the kernel ran with nothing else on its GPU. Hidden: other streams' work ran alongside. "
              "On path: its time on the dispatch DAG's critical path.", "",
              "| category | total us | exposed us | hidden us | exposed | on path us |", "|---|---:|---:|---:|---:|---:|"]
    for r in t.overlap.categories:
        lines.append(f"| {r.name} | {_us(r.total_ns)} | {_us(r.exposed_ns)} | {_us(r.hidden_ns)} | "
                     f"{r.exposed_share:.0%} | {_us(r.critical_path_ns)} |")
    lines += ["", "| kernel | total us | exposed us | hidden us | on path us |", "|---|---:|---:|---:|---:|"]
    for r in t.overlap.kernels[:20]:
        lines.append(f"| `{_md(short_name(r.name))}` | {_us(r.total_ns)} | {_us(r.exposed_ns)} | {_us(r.hidden_ns)} | "
                     f"{_us(r.critical_path_ns)} |")
    if t.overlap.communication:
        lines += ["", "### Communication not overlapped with compute", "",
                  "| GPU agent | communication us | overlapped us | exposed us |", "|---:|---:|---:|---:|"]
        for c in t.overlap.communication:
            lines.append(f"| {c.agent} | {_us(c.total_ns)} | {_us(c.overlapped_ns)} | {_us(c.exposed_ns)} |")
    lines += ["", "### Idle gaps", "", "| GPU agent | span us | idle us | gaps | " + " | ".join(CAUSES) + " |",
              "|---:|---:|---:|---:|" + "---:|" * len(CAUSES)]
    for a in t.idle:
        lines.append(f"| {a.agent} | {_us(a.span_ns)} | {_us(a.idle_ns)} | {a.gaps} | "
                     + " | ".join(_us(a.by_cause.get(c, {}).get("ns", 0)) for c in CAUSES) + " |")
    for a in t.idle:
        if a.longest:
            lines += ["", f"Longest gaps on GPU agent {a.agent}:", "", "| gap us | cause | last before | first after |",
                      "|---:|---|---|---|"]
            for g in a.longest:
                lines.append(f"| {_us(g.length_ns)} | {g.cause} | `{_md(_label(g.before))}` | `{_md(_label(g.after))}` |")
    lines += ["", "## Fuse opportunities", "",
              f"Sequences of short kernels (< {_us(t.settings['short_ns'])} us, or shorter than their launch call) "
              f"launched back to back (gaps <= {_us(t.settings['max_gap_ns'])} us) on one stream, repeated.", ""]
    if t.fuse:
        lines += ["| sequence | times | kernel us | gaps us | launch calls us | dispatches saved |",
                  "|---|---:|---:|---:|---:|---:|"]
        for p in t.fuse:
            seq = " → ".join(f"`{_md(short_name(k, 40))}`" for k in p.kernels)
            lines.append(f"| {seq} | {p.occurrences} | {_us(p.kernel_ns)} | {_us(p.gap_ns)} | {_us(p.launch_call_ns)} | "
                         f"{(p.length - 1) * p.occurrences} |")
    else:
        lines.append("None found.")
    return "\n".join(lines) + "\n"


def write_triage(t: Triage, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "kernel_table.json": json.dumps(t.summary.kernel_table_json(), indent=2) + "\n",
        "profile_metadata.json": json.dumps(t.summary.metadata, indent=2, default=str) + "\n",
        "overlap_opportunities.json": json.dumps(t.overlap_json(), indent=2) + "\n",
        "fuse_opportunities.json": json.dumps(t.fuse_json(), indent=2) + "\n",
        "profile_summary.md": triage_markdown(t),
    }
    for name, text in files.items():
        write_atomic(out / name, text)
    return [out / n for n in files]


def triage_profile(profile: Path, *, expect_arch: str | None = None, meta: dict[str, str] | None = None,
                   top: int = 10, short_us: float = DEFAULT_SHORT_NS / 1000,
                   max_gap_us: float = DEFAULT_MAX_GAP_NS / 1000) -> Triage:
    """Load `profile` and triage it (RocmPerfError, one line, on bad settings or a profile without dispatches)."""
    if top < 1:
        raise RocmPerfError(f"--top {top}: expected a positive number")
    if short_us <= 0 or max_gap_us < 0:
        raise RocmPerfError("--short-us must be positive and --max-gap-us not negative")
    trace = load_trace(profile)
    if not len(trace):
        raise RocmPerfError(f"{profile}: the profile holds no kernel dispatches ({no_dispatch_hint(trace)})")
    return triage(trace, expect_arch=expect_arch, meta=meta, short_ns=int(short_us * 1000),
                  max_gap_ns=int(max_gap_us * 1000), top=top)


def triage_document(t: Triage) -> dict[str, Any]:
    """`rocm-perf triage --json`: the metadata, the kernel table and the overlap and fuse opportunities
    (the Python API's `rp.triage(...).to_dict()` and the MCP `triage` tool)."""
    return {"metadata": t.summary.metadata, "kernel_table": t.summary.kernel_table_json(),
            "overlap_opportunities": t.overlap_json(), "fuse_opportunities": t.fuse_json()}


def run_triage(profile: Path, *, out: Path | None = None, expect_arch: str | None = None,
               meta: dict[str, str] | None = None, top: int = 10, short_us: float = DEFAULT_SHORT_NS / 1000,
               max_gap_us: float = DEFAULT_MAX_GAP_NS / 1000, as_json: bool = False) -> int:
    """Load `profile`, triage it, print the compact answer and write the artifacts. Returns the exit code."""
    t = triage_profile(profile, expect_arch=expect_arch, meta=meta, top=top, short_us=short_us, max_gap_us=max_gap_us)
    written = write_triage(t, out) if out is not None else []
    if as_json:
        json.dump(triage_document(t), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print_triage(t, top=top, console=Console())
        if written:
            print("wrote " + ", ".join(str(p) for p in written))
    return 0


def render_text(t: Triage, *, top: int = 10, width: int = 100) -> str:
    """The terminal output as plain text (for tests and logs)."""
    buffer = io.StringIO()
    print_triage(t, top=top, console=Console(file=buffer, width=width, color_system=None, force_terminal=False))
    return buffer.getvalue()
