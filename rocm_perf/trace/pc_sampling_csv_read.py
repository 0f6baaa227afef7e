"""rocprofv3's own PC-sampling CSV (`--pc-sampling-* --output-format csv`): one row per sample in
`<pid>_pc_sampling_host_trap.csv` or `<pid>_pc_sampling_stochastic.csv` (rocprofiler-sdk docs,
"Using PC sampling"): `Sample_Timestamp, Exec_Mask, Dispatch_Id, Instruction,
Instruction_Comment, Correlation_Id`, and for stochastic sampling also `Wave_Issued_Instruction,
Instruction_Type, Stall_Reason, Wave_Count`. `Instruction_Comment` holds the source line when the
program was built with `-g`. Columns are found by name.

Samples are summed per (kernel, instruction text, source line): the CSV carries no program
counter, so identical instructions of one line count together. Kernel names come from a
`kernel_trace.csv` of the same run (by `Dispatch_Id`) when there is one.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.foreign import integer
from rocm_perf.trace.instruction_profile import STALL_REASONS, InstructionProfile, concatenate, profile_from_rows

REQUIRED = ("Dispatch_Id", "Instruction")
_REASON_PREFIX = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_"
# rocprofiler-sdk's enum names (rocprofiler_pc_sampling_instruction_not_issued_reason_t) -> ours.
_REASONS = {
    "NONE": "none", "NO_INSTRUCTION_AVAILABLE": "instruction_fetch", "ALU_DEPENDENCY": "alu_dependency",
    "WAITCNT": "waitcnt", "INTERNAL_INSTRUCTION": "internal", "BARRIER_WAIT": "barrier",
    "ARBITER_NOT_WIN": "arbiter_loss", "ARBITER_WIN_EX_STALL": "pipe_stall", "OTHER_WAIT": "other_wait",
    "SLEEP_WAIT": "sleeping",
}  # fmt: skip
_LOCATION = re.compile(r"(?P<path>[^\s;]+):(?P<line>\d+)(?::\d+)?\s*$")
_TRUE = {"1", "true", "yes"}


def looks_like_pc_sampling_csv(header: list[str]) -> bool:
    return "Instruction" in header and "Dispatch_Id" in header and "Sample_Timestamp" in header


def pc_sampling_csv_files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*pc_sampling_*.csv") if p.is_file())


def _kernel_names(folder: Path) -> dict[str, str]:
    names: dict[str, str] = {}
    for trace in sorted(folder.glob("*kernel_trace.csv")):
        try:
            with open(trace, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    if row.get("Dispatch_Id") and row.get("Kernel_Name"):
                        names[row["Dispatch_Id"].strip()] = row["Kernel_Name"].strip()
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
    return names


def read_pc_sampling_csv(path: Path) -> InstructionProfile:
    """Per-instruction sample counts (and, for stochastic sampling, issued/stalled and reasons)."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = [h.strip() for h in (reader.fieldnames or [])]
            samples = []
            for r in reader:
                if None in r:  # DictReader keeps the fields past the header under None
                    raise RocmPerfError(f"{path}: line {reader.line_num}: more fields than the header has "
                                        f"({len(header)}; truncated or damaged CSV)")
                samples.append({(k or "").strip(): (v or "").strip() for k, v in r.items()})
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise RocmPerfError(f"{path}: cannot read ({e})") from None
    for name in REQUIRED:
        if name not in header:
            raise RocmPerfError(f"{path}: the header has no `{name}` column (columns: {', '.join(header) or 'none'})")
    if not samples:
        raise RocmPerfError(f"{path}: no samples")
    stochastic = "Wave_Issued_Instruction" in header
    kernels = _kernel_names(path.parent)
    reason_index = {name: k for k, name in enumerate(STALL_REASONS)}
    unknown_reasons: set[str] = set()
    groups: dict[tuple, dict] = {}
    for i, s in enumerate(samples, start=2):
        dispatch = s.get("Dispatch_Id", "")
        kernel = kernels.get(dispatch, f"dispatch {dispatch}")
        comment = s.get("Instruction_Comment", "")
        m = _LOCATION.search(comment)
        file, line = (m["path"], integer(m["line"], f"{path}: line {i}: Instruction_Comment line")) if m else ("", 0)
        key = (kernel, s["Instruction"], file, line)
        g = groups.setdefault(key, {"kernel": kernel, "isa": s["Instruction"], "file": file, "line": line,
                                    "weight": 0.0, "issued": 0.0, "stalled": 0.0,
                                    "stalls": [0.0] * len(STALL_REASONS)})
        g["weight"] += 1
        if not stochastic:
            continue
        if s.get("Wave_Issued_Instruction", "").lower() in _TRUE:
            g["issued"] += 1
            continue
        g["stalled"] += 1
        raw = s.get("Stall_Reason", "")
        name = _REASONS.get(raw.removeprefix(_REASON_PREFIX))
        if name is None:
            unknown_reasons.add(raw or "(empty)")
            name = "other_wait"
        g["stalls"][reason_index[name]] += 1
    notes = ["per-sample CSV without program counters: identical instructions of one source line are counted together"]
    if unknown_reasons:
        notes.append(f"unknown stall reasons counted as other wait: {', '.join(sorted(unknown_reasons))}")
    return profile_from_rows(list(groups.values()), origin=str(path), evidence="pc-sampling", notes=notes,
                             metadata={"format": "rocprofv3-pc-sampling-csv",
                                       "method": "stochastic" if stochastic else "host_trap"})


def read_pc_sampling_csvs(root: Path) -> InstructionProfile:
    files = pc_sampling_csv_files(root)
    if not files:
        raise RocmPerfError(f"{root}: no rocprofv3 PC-sampling CSV (*pc_sampling_*.csv)")
    return concatenate([read_pc_sampling_csv(p) for p in files], str(root))
