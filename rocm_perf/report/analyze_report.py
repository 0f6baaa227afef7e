"""`rocm-perf analyze PROFILE`: where each kernel sits on the roofline, what bounds it, how much is left.

The numbers come from analysis/analyze.py; this module reads the inputs (profile, --peaks file,
--source compile check), prints the table, and writes analysis.json, analysis.md and the roofline
chart (roofline.svg, roofline.png).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
try:
    import tomllib  # novermin: Python 3.11+; tomli below is the same parser for 3.10
except ModuleNotFoundError:
    import tomli as tomllib

from rich import box
from rich.console import Console
from rich.table import Table

from rocm_perf.analysis.analyze import Analysis, analyze_trace
from rocm_perf.analysis.gpu_arch import parse_peaks
from rocm_perf.analysis.roofline import KernelRoofline
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.names import short_name
from rocm_perf.trace.rocprof_compute_read import is_roofline_csv, peaks_for, read_roofline_csv

ANALYSIS_JSON = "analysis.json"
ANALYSIS_MD = "analysis.md"


# ---- inputs -----------------------------------------------------------------------------------------


def read_peaks(path: Path) -> tuple[dict[str, float], str]:
    """--peaks FILE: a rocprof-compute roofline.csv (median over its devices) or a JSON/TOML object of
    peaks with units in their names ({"hbm_gbs": 5300}); the peaks and how to name their source."""
    path = Path(path)
    if not path.is_file():
        raise RocmPerfError(f"{path}: no such peaks file")
    if is_roofline_csv(path):
        peaks, how = peaks_for(read_roofline_csv(path), -1)
        return peaks, f"{path} ({how.removeprefix('roofline.csv, ')})" if "median" in how else str(path)
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as e:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise RocmPerfError(f"{path}: not a {kind} peaks file ({e})") from e
    return parse_peaks(data, str(path)), str(path)


def compile_resources(source: Path, arch: str, cflags: str = "") -> dict[str, dict]:
    """The compile check's figures per kernel (by demangled and mangled name) for --source."""
    import shlex

    from rocm_perf.backends.compile_check import compile_check

    report = compile_check(Path(source), arch=arch, flags=shlex.split(cflags))
    if not report.available:
        raise RocmPerfError(f"--source {source}: no hipcc for AMD targets here ({report.errors or 'install hipcc'})")
    if not report.ok:
        raise RocmPerfError(f"--source {source}: does not compile for {report.arch}:\n{report.errors}")
    out = {}
    for k in report.kernels:
        figures = {"vgpr": k.vgpr, "agpr": k.agpr, "sgpr": k.sgpr, "scratch_bytes": k.scratch_bytes,
                   "occupancy": k.occupancy, "vgpr_spill": k.vgpr_spill, "sgpr_spill": k.sgpr_spill,
                   "lds_bytes": k.lds_bytes}
        for name in {k.demangled, k.mangled, k.demangled.split("(", 1)[0]}:
            out[name] = figures
    return out


# ---- the command --------------------------------------------------------------------------------------


def run_analyze(
    profile: Path,
    *,
    kernel: str | None = None,
    peaks: Path | None = None,
    out: Path | None = None,
    as_json: bool = False,
    arch: str | None = None,
    source: Path | None = None,
    cflags: str = "",
    top: int | None = 20,
) -> int:
    """Analyze `profile`; print the table (or JSON); with `out`, write the files. Returns 0."""
    trace = load_trace(Path(profile))
    user_peaks, user_from = read_peaks(peaks) if peaks else (None, "")
    resources = None
    if source:
        check_arch = arch or next((a.name for a in trace.gpu_agents() if a.name), None) or "gfx90a"
        resources = compile_resources(source, check_arch, cflags)
    analysis = analyze_trace(trace, arch=arch, kernel_regex=kernel, user_peaks=user_peaks,
                             user_peaks_from=user_from, resources=resources)
    written = write_analysis(analysis, Path(out)) if out else []
    if as_json:
        print(json.dumps(analysis.to_json(), indent=2))
        return 0
    console = Console()
    print_analysis(analysis, console=console, top=top)
    for path in written:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    return 0


def missing_line(analysis: Analysis) -> str | None:
    """The one line that names the counters the roofline lacks and the command that collects them."""
    if not analysis.missing_counters:
        return None
    names = analysis.missing_counters
    listed = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
    what = "the roofline needs counters this profile lacks" if analysis.has_roofline else "no roofline: the profile lacks its counters"
    return (f"{what}: {listed}; collect them with `rocm-perf profile SOURCE --counters roofline`, or: "
            f"{analysis.collect_command}")


# ---- formatting -----------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:.0f} %" if value >= 0.1 else f"{value * 100:.1f} %"


def _intensity(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}"


def _headroom(k: KernelRoofline) -> str:
    h = k.headroom()
    if h is None:
        return "-"
    return f"{_pct(h['fraction'])} ({h['speedup']:.2f}x)"


def _top_finding(k: KernelRoofline) -> str:
    problems = [f for f in k.findings if f["severity"] != "info"]
    chosen = (problems or k.findings or [None])[0]
    return chosen["title"] if chosen else ""


def _columns(table: Table, columns: tuple[tuple[str, str], ...]) -> None:
    """Numbers never wrap; the kernel name and the finding take what width is left, folded."""
    for column, justify in columns:
        if column in ("kernel", "top finding"):
            table.add_column(column, justify=justify, overflow="fold", ratio=1)
        else:
            table.add_column(column, justify=justify, no_wrap=True)


def kernel_table(analysis: Analysis, top: int | None = None) -> Table:
    kernels = analysis.kernels[:top] if top else analysis.kernels
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    if analysis.has_roofline:
        _columns(table, (("kernel", "left"), ("time", "right"), ("bound", "left"), ("FLOP/B", "right"),
                         ("% of peak", "right"), ("headroom", "right"), ("top finding", "left")))
        for k in kernels:
            table.add_row(short_name(k.name, 48), _pct(k.share), k.bound.get("label", ""),
                          _intensity(k.intensity().get("hbm")), _pct(k.bound.get("pct_of_peak")), _headroom(k),
                          _top_finding(k))
    else:
        _columns(table, (("kernel", "left"), ("time", "right"), ("dispatches", "right"), ("waves/CU", "right"),
                         ("waves/SIMD", "right"), ("limited by", "left"), ("top finding", "left")))
        for k in kernels:
            occ = k.occupancy
            table.add_row(short_name(k.name, 48), _pct(k.share), str(k.dispatches),
                          f"{k.waves_per_cu:.3g}" if k.waves_per_cu is not None else "-",
                          str(occ.waves_per_simd) if occ else "-", occ.limiter if occ else "-", _top_finding(k))
    return table


def _device_line(analysis: Analysis) -> list[str]:
    lines = []
    for ctx in analysis.devices.values():
        d = ctx.device
        defaults = sorted({v for v in d.origin.values() if v != "profile"})
        note = f"; figures not in the profile from the {', '.join(defaults)}" if defaults else ""
        lines.append(f"GPU {ctx.agent_id}: {d.product or d.arch} ({d.arch}, {ctx.spec.family}), {d.cu_count} CUs, "
                     f"{d.sclk_mhz:g} MHz{note}")
    return lines


def print_analysis(analysis: Analysis, *, console: Console | None = None, top: int | None = 20) -> None:
    console = console or Console()
    if not console.is_terminal:
        console.width = max(console.width, 120)  # a pipe or a file: room for the table on one line per kernel
    console.print(f"profile: {analysis.profile} ({analysis.format})", highlight=False, soft_wrap=True)
    for line in _device_line(analysis):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(kernel_table(analysis, top), soft_wrap=True)
    if top and len(analysis.kernels) > top:
        console.print(f"({len(analysis.kernels) - top} more kernels; --all shows them)", highlight=False)
    for note in analysis.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
    line = missing_line(analysis)
    if line:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def analysis_markdown(analysis: Analysis, chart: str | None = "roofline.svg") -> str:
    """analysis.md: devices, peaks with sources, the kernel table, and every kernel's findings."""
    out = ["# Roofline analysis", "", f"Profile: `{analysis.profile}` ({analysis.format})", ""]
    out += [f"- {line}" for line in _device_line(analysis)] + [""]
    if chart:
        out += [f"![roofline]({chart})", ""]
    if analysis.has_roofline:
        out += ["| kernel | time | bound | FLOP/B (HBM) | % of peak | headroom | top finding |", "|---|---:|---|---:|---:|---:|---|"]
        for k in analysis.kernels:
            out.append(f"| `{short_name(k.name, 60)}` | {_pct(k.share)} | {k.bound.get('label', '')} | "
                       f"{_intensity(k.intensity().get('hbm'))} | {_pct(k.bound.get('pct_of_peak'))} | {_headroom(k)} | "
                       f"{_top_finding(k)} |")
    else:
        out += ["| kernel | time | dispatches | waves/CU | waves/SIMD allowed | limited by |", "|---|---:|---:|---:|---:|---|"]
        for k in analysis.kernels:
            occ = k.occupancy
            waves = f"{k.waves_per_cu:.3g}" if k.waves_per_cu is not None else "-"
            out.append(f"| `{short_name(k.name, 60)}` | {_pct(k.share)} | {k.dispatches} | {waves} | "
                       f"{occ.waves_per_simd if occ else '-'} | {occ.limiter if occ else '-'} |")
    out.append("")
    line = missing_line(analysis)
    if line:
        out += [f"**Missing counters.** {line}", ""]
    for note in analysis.notes:
        out += [f"Note: {note}", ""]
    for ctx in analysis.devices.values():
        out += [f"## Peaks of GPU {ctx.agent_id} ({ctx.device.arch})", "", "| peak | value | source |", "|---|---:|---|"]
        for key, peak in ctx.peaks.items():
            unit = "GB/s" if key in ("hbm", "l2", "vl1d", "lds") else ("TOP/s" if "int" in key or "i8" in key else "TFLOP/s")
            value = peak.value / 1e9 if unit == "GB/s" else peak.value / 1e12
            out.append(f"| {key} | {value:,.1f} {unit} | {peak.source} |")
        out.append("")
    out += ["## Findings", ""]
    for k in analysis.kernels:
        out += [f"### `{short_name(k.name, 80)}`", "", f"Bound: **{k.bound.get('label', '')}**: {k.bound.get('evidence', '')}", ""]
        for f in k.findings:
            out.append(f"- **{f['title']}** ({f['severity']}): measured {f['measured']}; threshold: {f['threshold']}."
                       + (f" What usually helps: {f['advice']}." if f["advice"] else ""))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def write_analysis(analysis: Analysis, out: Path, title: str = "") -> list[Path]:
    """analysis.json, analysis.md, roofline.svg and roofline.png in `out`; the paths written."""
    from rocm_perf.report.roofline_chart import write_roofline_chart

    out.mkdir(parents=True, exist_ok=True)
    data = analysis.to_json()
    charts = write_roofline_chart(data, out, title=title)
    write_atomic(out / ANALYSIS_JSON, json.dumps(data, indent=2) + "\n")
    write_atomic(out / ANALYSIS_MD, analysis_markdown(analysis, chart=charts[0].name))
    return [out / ANALYSIS_JSON, out / ANALYSIS_MD, *charts]
