"""`rocm-perf summary`: the kernel table of a profile, on the terminal, as JSON, and as files.

The numbers come from analysis/kernel_table.py; this module only assembles and renders them.
Other analyses add their own sections through `extra_sections` (see the marked spot below).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.atomic_file import write_atomic
from rocm_perf.analysis.kernel_table import AgentRow, CategoryRow, KernelRow, agent_rows, category_rows, kernel_rows
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.metadata import build_metadata
from rocm_perf.report.summary_section import SummarySection
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import MARK, Trace
from rocm_perf.trace.needs import SUMMARY, SUMMARY_BY_PHASE
from rocm_perf.report.json_text import json_text


@dataclass
class Summary:
    metadata: dict[str, Any]
    kernels: list[KernelRow]
    categories: list[CategoryRow]
    agents: list[AgentRow]
    sections: list[SummarySection]

    @property
    def runtime_ns(self) -> int:
        return sum(k.total_ns for k in self.kernels)

    def kernel_table_json(self) -> dict[str, Any]:
        return {
            "source_trace_path": self.metadata["source_trace_path"],
            "format": self.metadata["format"],
            "runtime_ns": self.runtime_ns,
            "runtime_definition": "SUM(end - start) over kernel dispatches",
            "dispatches": self.metadata["dispatches"],
            "kernels": [k.to_json() for k in self.kernels],
            "categories": [asdict(c) for c in self.categories],
            "agents": [asdict(a) for a in self.agents],
        }


def extra_sections(trace: Trace) -> list[SummarySection]:
    """Sections other analyses append to the summary, in order. Each returns None when it has nothing to say."""
    sections: list[SummarySection] = []
    # ---- extra sections: add one call per analysis here (critical path: worker B) ----------
    from rocm_perf.report.critical_path_report import critical_path_section

    sections.append(critical_path_section(trace))  # also writes critical_path.json into --out
    # ---- end of extra sections ------------------------------------------------------------
    return [s for s in sections if s is not None]


def build_summary(
    trace: Trace,
    *,
    expect_arch: str | None = None,
    meta: dict[str, str] | None = None,
    by_phase: bool = False,
    top: int | None = 20,
    fold_range_numbers: bool = True,
) -> Summary:
    kernels = kernel_rows(trace)
    sections = extra_sections(trace)
    if by_phase:
        from rocm_perf.report.phases_report import phases_section_fields

        width = max(80, min(Console().width, 160))
        sections.insert(0, SummarySection(**phases_section_fields(trace, top=top, width=width,
                                                                  fold_numbers=fold_range_numbers)))
    return Summary(
        metadata=build_metadata(trace, expect_arch=expect_arch, user=meta),
        kernels=kernels,
        categories=category_rows(kernels),
        agents=agent_rows(trace),
        sections=sections,
    )


def run_summary(
    profile: Path,
    *,
    out: Path | None = None,
    as_json: bool = False,
    expect_arch: str | None = None,
    top: int | None = 20,
    meta: dict[str, str] | None = None,
    by_phase: bool = False,
    fold_range_numbers: bool = True,
) -> int:
    """Load `profile`, print its summary (table or JSON), write the artifacts into `out`. Returns the exit code."""
    trace = load_trace(profile, SUMMARY_BY_PHASE if by_phase else SUMMARY)
    if len(trace) == 0:
        raise RocmPerfError(f"{profile}: the profile holds no kernel dispatches ({no_dispatch_hint(trace)})")
    summary = build_summary(trace, expect_arch=expect_arch, meta=meta, by_phase=by_phase, top=top,
                            fold_range_numbers=fold_range_numbers)
    if out is not None:
        write_artifacts(summary, out)
    if as_json:
        sys.stdout.write(json_text(summary_json(summary)) + "\n")
    else:
        print_summary(summary, top=top, console=Console())
        ranges = 0 if trace.markers is None else int((trace.markers.kind != MARK).sum())
        if ranges and not by_phase:
            print(f"the profile holds {ranges:,} ranges (roctx or PyTorch annotations): --by-phase splits the kernel "
                  "table by them")
        if out is not None:
            print(f"wrote {out / 'kernel_table.json'}, {out / 'profile_summary.md'}, {out / 'profile_metadata.json'}")
    return 0


def summary_json(summary: Summary) -> dict[str, Any]:
    """What `summary --json` prints: the metadata, the kernel table and each section's data (the
    Python API's `rp.summary(...).to_dict()` and the MCP `summary` tool)."""
    doc = {"metadata": summary.metadata, **summary.kernel_table_json()}
    doc.update({s.key: s.data for s in summary.sections})
    return doc


def no_dispatch_hint(trace: Trace) -> str:
    """What to check when a profile holds no kernel dispatches, by format."""
    fmt = trace.metadata.get("format")
    if fmt == "rpd-legacy":
        return "no KernelExecution ops"
    if fmt == "kineto-json":
        return "the PyTorch profiler recorded copies but no kernels"
    return "was rocprofv3 run with --kernel-trace?"


# ---- files ------------------------------------------------------------------------------------


def write_artifacts(summary: Summary, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "kernel_table.json", json.dumps(summary.kernel_table_json(), indent=2) + "\n")
    write_atomic(out / "profile_metadata.json", json.dumps(summary.metadata, indent=2, default=str) + "\n")
    write_atomic(out / "profile_summary.md", summary_markdown(summary))
    for section in summary.sections:
        for name, obj in section.files.items():
            write_atomic(out / name, json.dumps(obj, indent=2, default=str) + "\n")


# ---- rendering --------------------------------------------------------------------------------


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def _headline(summary: Summary) -> list[str]:
    m = summary.metadata
    gpu = m["observed_arch"] or ("none: CPU timings from the host backend" if m["timings"] != "GPU" else "unknown GPU")
    if m.get("gpu_products"):
        gpu += f" ({', '.join(m['gpu_products'])})"
    return [
        f"profile: {m['source_trace_path']} ({m['format']})",
        f"GPU: {gpu}; arch match: {m['arch_match']} ({m['hardware_relevance_reason']})",
        f"kernel time (SUM end-start): {_us(summary.runtime_ns)} us over {m['dispatches']} dispatches, "
        f"{len(summary.kernels)} kernels; HIP API trace: {'yes' if m['api_trace'] else 'no'}",
    ]


def print_summary(summary: Summary, *, top: int | None, console: Console) -> None:
    for line in _headline(summary):
        console.print(line, highlight=False, markup=False)
    shown = summary.kernels if top is None else summary.kernels[:top]
    # narrow terminals drop min/max; numbers never wrap; the kernel name gets the width left over
    wide = console.width >= 120
    columns = ["#", "kernel", "category", "calls", "total us", "avg us"] + (["min us", "max us"] if wide else []) + ["share"]
    fixed = 66 + (20 if wide else 0)
    table = Table(title="Kernels by total time", title_justify="left", box=box.SIMPLE_HEAD)
    for col in columns:
        if col == "kernel":
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=max(14, console.width - fixed))
        else:
            table.add_column(col, justify="left" if col == "category" else "right", no_wrap=True)
    for i, k in enumerate(shown, 1):
        cells = [str(i), k.short_name, k.category, f"{k.calls:,}", _us(k.total_ns), _us(k.avg_ns)]
        cells += [_us(k.min_ns), _us(k.max_ns)] if wide else []
        table.add_row(*cells, f"{k.share:.1%}")
    console.print(table)
    hidden = len(summary.kernels) - len(shown)
    if hidden > 0:
        rest = sum(k.total_ns for k in summary.kernels[len(shown):])
        console.print(f"... {hidden} more kernels ({_us(rest)} us); --all shows every kernel", highlight=False)
    cats = Table(title="By category", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("category", "kernels", "calls", "total us", "share"):
        cats.add_column(col, justify="left" if col == "category" else "right")
    for c in summary.categories:
        cats.add_row(c.category, str(c.kernels), f"{c.calls:,}", _us(c.total_ns), f"{c.share:.1%}")
    console.print(cats)
    agents = Table(title="Agents", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("agent", "name", "dispatches", "kernel us", "busy us", "wall us", "busy"):
        agents.add_column(col, justify="left" if col in ("agent", "name") else "right")
    for a in summary.agents:
        agents.add_row(str(a.agent_id), a.name or "?", f"{a.dispatches:,}", _us(a.kernel_ns), _us(a.busy_ns),
                       _us(a.wall_ns), f"{a.busy_share:.1%}")
    console.print(agents)
    for section in summary.sections:
        console.print(f"\n{section.title}", style="bold", highlight=False)
        console.print(section.text, highlight=False, markup=False)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def summary_markdown(summary: Summary) -> str:
    lines = ["# Profile summary", ""]
    lines += [f"- {_md_escape(line)}" for line in _headline(summary)]
    lines += ["", "## Kernels", "", "| # | kernel | category | calls | total us | avg us | min us | max us | share |",
              "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for i, k in enumerate(summary.kernels, 1):
        lines.append(f"| {i} | `{_md_escape(k.short_name)}` | {k.category} | {k.calls} | {_us(k.total_ns)} | "
                     f"{_us(k.avg_ns)} | {_us(k.min_ns)} | {_us(k.max_ns)} | {k.share:.1%} |")
    lines += ["", "## By category", "", "| category | kernels | calls | total us | share |", "|---|---:|---:|---:|---:|"]
    for c in summary.categories:
        lines.append(f"| {c.category} | {c.kernels} | {c.calls} | {_us(c.total_ns)} | {c.share:.1%} |")
    lines += ["", "## Agents", "", "| agent | name | dispatches | kernel us | busy us | wall us | busy |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for a in summary.agents:
        lines.append(f"| {a.agent_id} | {a.name or '?'} | {a.dispatches} | {_us(a.kernel_ns)} | {_us(a.busy_ns)} | "
                     f"{_us(a.wall_ns)} | {a.busy_share:.1%} |")
    for section in summary.sections:
        lines += ["", f"## {section.title}", "", section.markdown]
    return "\n".join(lines) + "\n"
