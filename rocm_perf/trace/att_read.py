"""Thread trace (ATT) output of `rocprofv3 --att -d OUT`, decoded by rocprof-trace-decoder
(FORMATS.md "Thread trace (ATT) decoded output"):

- `OUT/ui_output_agent_<a>_dispatch_<d>/code.json` (+ `filenames.json`, `occupancy.json`, wave files):
  read by viewer_code_read with Hit/Latency/Stall/Idle per instruction;
- `OUT/stats_ui_output_agent_<a>_dispatch_<d>.csv`: `CodeObj, Vaddr, Instruction, Hitcount,
  Latency, Stall, Idle, ..., Source`, read by column name, used where no code.json was decoded.

Times are shader-clock cycles summed over the traced waves. No real ATT output was available to
test with; the tests build small files from the documented columns.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.foreign import integer
from rocm_perf.trace.instruction_profile import (
    InstructionProfile,
    concatenate,
    parse_count,
    profile_from_rows,
    split_source,
)
from rocm_perf.trace.viewer_code_read import read_viewer_code

_DISPATCH_DIR = re.compile(r"ui_output_agent_(?P<agent>\d+)_dispatch_(?P<dispatch>\d+)$")
_STATS = re.compile(r"stats_ui_output_agent_(?P<agent>\d+)_dispatch_(?P<dispatch>\d+)\.csv$")
STATS_REQUIRED = ("Instruction", "Latency", "Source")


def dispatch_folders(root: Path) -> list[Path]:
    """Decoded per-dispatch folders below `root` (or `root` itself), in dispatch order."""
    root = Path(root)
    found = [p for p in root.rglob("ui_output_agent_*_dispatch_*") if p.is_dir() and (p / "code.json").is_file()]
    if _DISPATCH_DIR.search(root.name) and (root / "code.json").is_file():
        found.append(root)
    return sorted(set(found), key=lambda p: (int(_DISPATCH_DIR.search(p.name)["dispatch"]), str(p)))


def stats_files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("stats_*.csv") if p.is_file())


def _kernel_name(folder: Path, dispatch: str) -> str:
    """The dispatch's kernel as occupancy.json names it, else `dispatch <d>`."""
    occupancy = folder / "occupancy.json"
    if occupancy.is_file():
        try:
            names = json.loads(occupancy.read_text(encoding="utf-8")).get("dispatches", {})
            if isinstance(names, dict) and names.get(dispatch):
                return str(names[dispatch])
        except (OSError, ValueError, AttributeError):
            pass
    return f"dispatch {dispatch}"


def read_att_output(root: Path) -> InstructionProfile:
    """Every decoded dispatch below `root` as one profile (evidence `att`, weights in cycles)."""
    root = Path(root)
    folders = dispatch_folders(root)
    if folders:
        parts = []
        for folder in folders:
            dispatch = _DISPATCH_DIR.search(folder.name)["dispatch"]
            part = read_viewer_code(folder, kernel_hint=_kernel_name(folder, dispatch))
            if part.evidence != "att":
                raise RocmPerfError(f"{folder / 'code.json'}: a thread-trace folder whose code.json holds PC samples")
            parts.append(part)
        return concatenate(parts, str(root))
    stats = stats_files(root)
    if stats:
        return concatenate([read_att_stats(p) for p in stats], str(root))
    raise RocmPerfError(f"{root}: no decoded thread trace (ui_output_agent_*_dispatch_*/code.json or stats_*.csv)")


def read_att_stats(path: Path) -> InstructionProfile:
    """One `stats_*.csv`: an instruction per row, columns found by name."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = [h.strip() for h in (reader.fieldnames or [])]
            rows = [{(k or "").strip(): v for k, v in r.items()} for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise RocmPerfError(f"{path}: cannot read ({e})") from None
    for name in STATS_REQUIRED:
        if name not in header:
            raise RocmPerfError(f"{path}: the header has no `{name}` column (columns: {', '.join(header) or 'none'})")
    if not rows:
        raise RocmPerfError(f"{path}: no instruction rows")
    m = _STATS.search(path.name)
    kernel = f"dispatch {m['dispatch']}" if m else path.stem
    out = []
    for i, r in enumerate(rows, start=2):  # line numbers as an editor shows them
        def num(name: str) -> float:
            return parse_count(r.get(name) or 0, f"{path}: line {i}: `{name}`") if name in header else 0.0

        file, line = split_source((r.get("Source") or "").strip())
        latency, stall = num("Latency"), num("Stall")
        def whole(name: str) -> int:
            return integer(num(name), f"{path}: line {i}: `{name}`") if name in header else -1

        out.append({"kernel": kernel, "code_object": whole("CodeObj"), "vaddr": whole("Vaddr"), "isa": (r.get("Instruction") or "").strip(),
                    "file": file, "line": line, "weight": latency, "issued": max(latency - stall, 0.0), "stalled": stall,
                    "hits": num("Hitcount"), "idle": num("Idle")})
    return profile_from_rows(out, origin=str(path), evidence="att", metadata={"format": "att-stats"},
                             with_att_columns=True)
