"""`rocm-perf hotspots PROFILE`: hot loops, hot lines (with their source text and a bar of their
stall reasons) and findings on the terminal; hotspots.json with `--out`; JSON with `--json`.

The numbers come from analysis/hotspots.py; source mapping and loops from
source/profile_sources.py; this module reads the profile, renders and writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.text import Text

from rocm_perf.analysis.hotspots import Hotspots, KernelHotspots, hotspots_json
from rocm_perf.analysis.instruction_mix import CLASS_LABELS
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.source.profile_sources import SourcedHotspots, source_hotspots
from rocm_perf.trace.instruction_load import load_instruction_profile
from rocm_perf.trace.instruction_profile import STALL_REASON_LABELS

EVIDENCE_LABELS = {"pc-sampling": "PC sampling", "att": "thread trace (ATT)", "host-sampler": "host sampler"}
# One character and colour per stall reason for the bars; issued samples are `=`.
BAR_GLYPHS = {"issued": ("=", "green"), "stalled": ("~", "red"), "waitcnt": ("W", "red"), "barrier": ("B", "magenta"),
              "alu_dependency": ("D", "yellow"), "instruction_fetch": ("F", "cyan"), "pipe_stall": ("P", "blue"),
              "arbiter_loss": ("A", "bright_blue"), "internal": ("I", "white"), "other_wait": ("O", "bright_black"),
              "sleeping": ("S", "bright_black"), "none": ("-", "bright_black")}
BAR_WIDTH = 20


def build_hotspots(profile_path: Path, *, source: Path | None = None, cflags: str = "",
                   kernel: str | None = None) -> SourcedHotspots:
    """Read the profile at `profile_path` and join the user's sources and loops (see source_hotspots)."""
    profile = load_instruction_profile(Path(profile_path))
    return source_hotspots(profile, source=source, cflags=cflags, kernel_pattern=kernel)


def run_hotspots(profile_path: Path, *, source: Path | None = None, kernel: str | None = None, top: int = 20,
                 as_json: bool = False, out: Path | None = None, cflags: str = "") -> int:
    if top < 1:
        raise RocmPerfError(f"--top must be at least 1, got {top}")
    sourced = build_hotspots(profile_path, source=source, cflags=cflags, kernel=kernel)
    data = hotspots_document(sourced, top=None)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "hotspots.json", json.dumps(data, indent=2) + "\n")
    if as_json:
        print(json.dumps(hotspots_document(sourced, top=top), indent=2))
    else:
        print_hotspots(sourced, top=top, console=Console())
        if out is not None:
            Console().print(f"wrote {out / 'hotspots.json'}", highlight=False, soft_wrap=True)
    return 0


def hotspots_document(sourced: SourcedHotspots, top: int | None) -> dict:
    """hotspots.json: the analysis' JSON plus how sources were mapped and what could not be."""
    data = hotspots_json(sourced.result, top=top)
    r = sourced.resolution
    data["sources"] = {
        "mapped": [{"recorded": k, "file": v, "how": r.how.get(k, "")} for k, v in sorted(r.mapped.items())],
        "unmapped": sorted(r.unmapped),
        "system_headers": sorted(r.system),
    }
    data["warnings"] = list(sourced.warnings)
    return data


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def stall_bar(heat, reasons: tuple[str, ...], width: int = BAR_WIDTH) -> Text:
    """Issued then each stall reason, as a bar of `width` characters proportional to the samples."""
    parts = [("issued", heat.issued)] + [(r, heat.stalls.get(r, 0.0)) for r in reasons if r != "none"]
    # Stalls the evidence gives no reason for (thread trace, or the `none` reason) show as `~`.
    parts.append(("stalled", max(0.0, heat.stalled - sum(v for _, v in parts[1:]))))
    total = sum(v for _, v in parts)
    text = Text()
    if total <= 0:
        return text
    # Largest-remainder rounding so that the bar is always exactly `width` wide.
    exact = [(name, width * v / total) for name, v in parts]
    cells = {name: int(x) for name, x in exact}
    left = width - sum(cells.values())
    for name, x in sorted(exact, key=lambda e: -(e[1] - int(e[1])))[:left]:
        cells[name] += 1
    for name, _ in parts:
        glyph, colour = BAR_GLYPHS.get(name, ("?", "white"))
        if cells[name]:
            text.append(glyph * cells[name], style=colour)
    return text


def _legend(reasons: tuple[str, ...]) -> str:
    items = ["= issued", "~ stalled, no reason given"] + [f"{BAR_GLYPHS.get(r, ('?', ''))[0]} {STALL_REASON_LABELS.get(r, r)}" for r in reasons
                            if r != "none"]
    return "bar: " + ", ".join(items)


def _mix_text(mix: dict[str, float], samples: float, limit: int = 3) -> str:
    if not mix or samples <= 0:
        return "-"
    ranked = sorted(((k, v) for k, v in mix.items() if v > 0), key=lambda kv: -kv[1])[:limit]
    return " ".join(f"{CLASS_LABELS.get(k, k)} {100 * v / samples:.0f}%" for k, v in ranked) or "-"


def _source_line(cache: dict[str, list[str]], file: str, line: int, width: int = 60) -> str:
    if file not in cache:
        try:
            cache[file] = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[file] = []
    lines = cache[file]
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return text if len(text) <= width else text[: width - 3] + "..."


def _short_loop(loop_id: str | None) -> str:
    if not loop_id:
        return "-"
    parts = loop_id.split(":")
    return ":".join(parts[-2:]) if len(parts) >= 4 else loop_id


def print_hotspots(sourced: SourcedHotspots, *, top: int, console: Console) -> None:
    result: Hotspots = sourced.result
    split = result.has_issue_split
    label = EVIDENCE_LABELS.get(result.evidence, result.evidence)
    console.print(f"hotspots of {result.origin} ({label}; {result.total:,.0f} {result.unit} in "
                  f"{len(result.kernels)} kernel{'s' if len(result.kernels) != 1 else ''})", highlight=False,
                  markup=False, soft_wrap=True)
    r = sourced.resolution
    for recorded, file in sorted(r.mapped.items()):
        how = r.how.get(recorded, "")
        shown = recorded if recorded == file else f"{recorded} -> {file}"
        console.print(f"source: {shown} ({how})", highlight=False, markup=False, soft_wrap=True)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    for warning in sourced.warnings:
        console.print(Text("warning: ", style="yellow") + Text(warning), highlight=False, soft_wrap=True)
    cache: dict[str, list[str]] = {}
    for k in result.kernels:
        _print_kernel(k, result, split, top, console, cache)
    if split:
        reasons = result.stall_reasons if any(k.heat.stalls for k in result.kernels) else ()
        console.print(_legend(reasons), highlight=False, markup=False, soft_wrap=True)


def print_table(console: Console, title: str, header: list[str], rows: list[list], right: set[int],
                last_width: int | None = None) -> None:
    """A plain table: columns as wide as their widest cell (cells may be rich Text, never markup),
    the last column cut to what the terminal has left (at least 20 characters)."""
    def plain(cell) -> str:
        return cell.plain if isinstance(cell, Text) else str(cell)

    widths = [max(len(plain(r[i])) for r in rows + [header]) for i in range(len(header))]
    if last_width is None:
        used = sum(widths[:-1]) + 2 * len(widths)
        last_width = max(20, console.width - used)
    widths[-1] = min(widths[-1], last_width)
    console.print(Text(title, style="bold"))
    for n, row in enumerate([header] + rows):
        line = Text("  ")
        for i, cell in enumerate(row):
            text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            if len(text.plain) > widths[i]:
                text = Text(text.plain[: max(0, widths[i] - 3)] + "...")
            pad = " " * (widths[i] - len(text.plain))
            if i in right:
                line.append(pad)
                line.append_text(text)
            else:
                line.append_text(text)
                if i < len(row) - 1:
                    line.append(pad)
            if i < len(row) - 1:
                line.append("  ")
        console.print(line, style="dim" if n == 0 else None, soft_wrap=True, no_wrap=True, overflow="ignore")


def _print_kernel(k: KernelHotspots, result: Hotspots, split: bool, top: int, console: Console,
                  cache: dict[str, list[str]]) -> None:
    unit = result.unit
    console.print("")
    console.print(Text(f"kernel {k.kernel}", style="bold"), soft_wrap=True)
    head = f"  {k.heat.samples:,.0f} {unit} ({_pct(k.share_of_profile)} of the profile)"
    if split and k.heat.samples:
        head += f"; issued {_pct(k.heat.issued / k.heat.samples)}, stalled {_pct(k.heat.stalled / k.heat.samples)}"
        stalled = sum(v for r, v in k.heat.stalls.items() if r != "none")
        if stalled:
            ranked = sorted(((r, v) for r, v in k.heat.stalls.items() if r != "none" and v), key=lambda kv: -kv[1])
            head += "; stalls: " + ", ".join(f"{STALL_REASON_LABELS.get(r, r)} {100 * v / stalled:.0f} %"
                                             for r, v in ranked[:4])
    console.print(head, highlight=False, markup=False, soft_wrap=True)

    has_isa = any(k.heat.mix.values())
    if k.loops_known and k.loops:
        hot = [l for l in k.loops if l.samples > 0][:top]
        header = ["share", unit] + (["stalled", "stalls", "top stall"] if split else ["mix"] if has_isa else []) + ["lines", "loop"]
        rows = []
        for loop in hot:
            row = [_pct(loop.share), f"{loop.samples:,.0f}"]
            if split:
                row += [_pct(loop.stalled / loop.samples) if loop.samples else "-", stall_bar(loop, result.stall_reasons),
                        STALL_REASON_LABELS.get(loop.top_stall or "", "-")]
            elif has_isa:
                row += [_mix_text(loop.mix, loop.samples)]
            rows.append(row + [f"{loop.line}-{loop.end_line}", loop.id])
        if rows:
            print_table(console, "hot loops (a line counts for its innermost loop; inlined code for the loop it is inlined into)",
                    header, rows, right={0, 1, 2} if split else {0, 1},
                        last_width=max(60, console.width))
        cold = [l for l in k.loops if l.samples <= 0]
        if cold:
            console.print(f"  loops with no {unit}: {', '.join(l.id for l in cold[:8])}"
                          f"{' ...' if len(cold) > 8 else ''}", highlight=False, markup=False, soft_wrap=True)
        if k.outside_loops:
            console.print(f"  outside every loop: {k.outside_loops:,.0f} {unit} ({_pct(k.outside_loops / k.heat.samples)})",
                          highlight=False, markup=False)
    elif not k.loops_known:
        console.print("  loops: unknown (no source file of this kernel was found or parsed; see --source, --cflags)",
                      highlight=False, markup=False, soft_wrap=True)

    if k.lines:
        header = ["line", "share", unit, "loop"] + (["stalls"] if split else []) + (["mix"] if has_isa else []) + ["source"]
        rows = []
        for line in k.lines[:top]:
            row = [f"{Path(line.file).name}:{line.line}", _pct(line.share), f"{line.samples:,.0f}", _short_loop(line.loop)]
            if split:
                row.append(stall_bar(line, result.stall_reasons))
            row += ([_mix_text(line.mix, line.samples)] if has_isa else []) + [_source_line(cache, line.file, line.line, width=200)]
            rows.append(row)
        print_table(console, "hot lines", header, rows, right={1, 2})
    _print_unmapped(k, unit, console)
    if k.findings:
        console.print("  findings:", highlight=False)
        for f in k.findings:
            where = "kernel" if f.scope == "kernel" else f"loop {f.where}"
            text = Text(f"  - {where}: ")
            text.append(f.title, style="bold")
            text.append(f" ({f.evidence}); unrolling {f.unrolling}. {f.advice}")
            console.print(text, soft_wrap=True)


def _print_unmapped(k: KernelHotspots, unit: str, console: Console) -> None:
    if k.system:
        total = sum(k.system.values())
        names = ", ".join(f"{Path(p).name} {v:,.0f}" for p, v in list(k.system.items())[:5])
        console.print(f"  system headers: {total:,.0f} {unit} ({_pct(total / k.heat.samples)}): {names}"
                      + ("; counted toward the loops they are inlined into" if any(l.inlined for l in k.loops) else ""),
                      highlight=False, markup=False, soft_wrap=True)
    if k.unmapped:
        files: dict[str, float] = {}
        for line in k.unmapped:
            files[line.profile_file] = files.get(line.profile_file, 0.0) + line.samples
        listed = "; ".join(f"{p} ({v:,.0f} {unit}, {sum(1 for l in k.unmapped if l.profile_file == p)} lines)"
                           for p, v in sorted(files.items(), key=lambda kv: -kv[1]))
        console.print(f"  not mapped to a file here (pass --source DIR): {listed}", highlight=False, markup=False,
                      soft_wrap=True)
    if k.no_line:
        console.print(f"  no source line: {k.no_line:,.0f} {unit} ({_pct(k.no_line / k.heat.samples)}: code without line "
                      f"information, such as a build without -g or library code)", highlight=False, markup=False,
                      soft_wrap=True)
