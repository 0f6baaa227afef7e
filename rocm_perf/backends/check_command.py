"""`rocm-perf check SOURCE.cu`: compile for an AMD target and print per-kernel resource usage."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from rocm_perf.backends.compile_check import CompileReport, compile_check, hipcc_available
from rocm_perf.errors import RocmPerfError

_COLUMNS = [
    ("SGPR", "sgpr"),
    ("VGPR", "vgpr"),
    ("AGPR", "agpr"),
    ("scratch B", "scratch_bytes"),
    ("waves/SIMD", "occupancy"),
    ("SGPR spill", "sgpr_spill"),
    ("VGPR spill", "vgpr_spill"),
    ("LDS B", "lds_bytes"),
]


def run_check(source: Path, *, arch: str = "gfx90a", cflags: str = "", as_json: bool = False, keep_isa: bool = False) -> int:
    """Print the per-kernel table (or JSON); 0 when it compiles, 1 with the compiler's first errors when not."""
    source = Path(source)
    if not source.is_file():
        raise RocmPerfError(f"{source}: no such file")
    ok, why = hipcc_available()
    if not ok:
        raise RocmPerfError(f"cannot check {source}: {why}")
    try:
        flags = shlex.split(cflags)
    except ValueError as e:
        raise RocmPerfError(f"--cflags {cflags!r}: {e}") from e
    report = compile_check(source, arch=arch, flags=flags, keep_isa=keep_isa)
    isa_file = _save_isa(report, source) if keep_isa else None
    if as_json:
        data = report.to_json()
        data["isa_path"] = str(isa_file) if isa_file else report.isa_path
        print(json.dumps(data, indent=2))
    else:
        print(format_report(report, isa_file))
    if not report.ok:
        print(f"rocm-perf: {source} does not compile for {report.arch}:\n{report.errors}", file=sys.stderr)
        return 1
    return 0


def format_report(report: CompileReport, isa_file: Path | None = None) -> str:
    """The target line and the kernel table, as plain text."""
    lines = [f"{report.source}: compiled for {report.arch}" if report.ok else f"{report.source}: does not compile for {report.arch}"]
    if report.arch_match != "exact":
        lines.append(f"  arch_match: {report.arch_match} (requested {report.requested_arch}): {report.arch_reason}")
    if not report.ok:
        return "\n".join(lines)
    columns = list(_COLUMNS) + ([("ISA instrs", "isa_instructions")] if isa_file else [])
    header = ["kernel"] + [title for title, _ in columns]
    rows = [[k.demangled] + [_cell(getattr(k, attr)) for _, attr in columns] for k in report.kernels]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    widths[0] = min(widths[0], 60)
    table = [_row(header, widths)] + [_row(r, widths) for r in rows]
    lines += table if rows else ["  (no kernels)"]
    spilling = [k.demangled for k in report.kernels if (k.vgpr_spill or 0) + (k.sgpr_spill or 0) > 0]
    if spilling:
        lines.append(f"spills registers: {', '.join(spilling)}")
    if isa_file:
        lines.append(f"ISA written to {isa_file}")
    return "\n".join(lines)


def _save_isa(report: CompileReport, source: Path) -> Path | None:
    """The ISA goes to the working directory as <stem>.<arch>.s (never next to the user's source)."""
    if report.isa is None:
        return None
    out = Path.cwd() / f"{source.stem}.{report.arch}.s"
    out.write_text(report.isa)
    return out


def _cell(value: int | None) -> str:
    return "-" if value is None else str(value)


def _row(cells: list[str], widths: list[int]) -> str:
    name = cells[0] if len(cells[0]) <= widths[0] else cells[0][: widths[0] - 3] + "..."
    rest = [str(c).rjust(w) for c, w in zip(cells[1:], widths[1:])]
    return "  ".join([name.ljust(widths[0])] + rest)
