"""load_instruction_profile: open any instruction-level evidence, chosen by what it holds.

A file: a decoded `code.json` (PC sampling or thread trace), a host sample file, an ATT
`stats_*.csv` or a rocprofv3 PC-sampling CSV. A folder: one holding a `code.json`, or any folder
with such outputs below it (a `rocm-perf profile` run directory, a rocprofv3 `-d` directory).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.att_read import dispatch_folders, read_att_output, read_att_stats, stats_files
from rocm_perf.trace.host_samples_read import host_sample_files, looks_like_host_samples, read_host_sample_files, read_host_samples
from rocm_perf.trace.instruction_profile import InstructionProfile
from rocm_perf.trace.pc_sampling_csv_read import (
    looks_like_pc_sampling_csv,
    pc_sampling_csv_files,
    read_pc_sampling_csv,
    read_pc_sampling_csvs,
)
from rocm_perf.trace.viewer_code_read import read_viewer_code

WHAT = ("a decoded PC-sampling or thread-trace folder (code.json + filenames.json), a host sample file "
        "(host_samples_*.json), an ATT stats_*.csv or a rocprofv3 pc_sampling_*.csv")


def load_instruction_profile(path: Path) -> InstructionProfile:
    """The instruction-level profile at `path`; RocmPerfError (one line naming it) for anything else."""
    path = Path(path)
    if not path.exists():
        raise RocmPerfError(f"{path}: no such file or directory")
    if path.is_dir():
        return _load_folder(path)
    return _load_file(path)


def _load_folder(path: Path) -> InstructionProfile:
    if (path / "code.json").is_file():
        return read_viewer_code(path)
    if dispatch_folders(path):
        return read_att_output(path)
    if host_sample_files(path):
        return read_host_sample_files(path)
    codes = sorted(p.parent for p in path.rglob("code.json") if (p.parent / "filenames.json").is_file())
    if len(codes) == 1:
        return read_viewer_code(codes[0])
    if len(codes) > 1:
        listed = ", ".join(str(c.relative_to(path)) for c in codes[:4])
        raise RocmPerfError(f"{path}: holds several decoded profiles ({listed}{', ...' if len(codes) > 4 else ''}); pass one")
    if pc_sampling_csv_files(path):
        return read_pc_sampling_csvs(path)
    if stats_files(path):
        return read_att_output(path)
    raise RocmPerfError(f"{path}: no instruction-level profile found; expected {WHAT}")


def _load_file(path: Path) -> InstructionProfile:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from None
    if not head.strip():
        raise RocmPerfError(f"{path}: empty file")
    text = head.lstrip()
    if text.startswith(b"{"):
        if path.name == "code.json" or b'"code"' in head:
            return read_viewer_code(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RocmPerfError(f"{path}: not valid JSON ({e})") from None
        if looks_like_host_samples(data):
            return read_host_samples(path)
        if isinstance(data, dict) and "code" in data:
            return read_viewer_code(path)
        raise RocmPerfError(f"{path}: JSON, but not {WHAT}")
    try:
        first_line = head.decode("utf-8", errors="replace").splitlines()[0]
        header = [h.strip() for h in next(csv.reader([first_line]))]
    except (IndexError, csv.Error, StopIteration):
        header = []
    if looks_like_pc_sampling_csv(header):
        return read_pc_sampling_csv(path)
    if "Instruction" in header and ("Hitcount" in header or "Latency" in header):
        return read_att_stats(path)
    raise RocmPerfError(f"{path}: not an instruction-level profile; expected {WHAT}")
