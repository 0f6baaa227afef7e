"""The host backend's sampler output, symbolized: `host_samples_<pid>.json` beside the trace.

    {"format": "rocm-perf host samples", "version": 1, "hz": 2000, "samples": N, "dropped": D,
     "symbolizer": "llvm-symbolizer", "executable": "...",
     "rows": [{"kernel": "...", "object": "...", "offset": 4660, "function": "...",
               "file": "/abs/prog.cu", "line": 12, "context": [["/abs/prog.cu", 40]], "samples": 7,
               "system": false, "mangled": "_Z..."}, ...]}

One row per sampled program counter and kernel; `file`/`line` is the first frame of the
inlining chain in a user's file (see backends/host_sampler.py), `system` marks rows whose whole
chain lies in the runtime, the C++ library or another shared object.
"""

from __future__ import annotations

import json
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.foreign import integer
from rocm_perf.trace.instruction_profile import InstructionProfile, concatenate, parse_count, profile_from_rows

FORMAT = "rocm-perf host samples"
VERSION = 1


def looks_like_host_samples(data) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


def host_sample_files(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("host_samples_*.json") if p.is_file())


def read_host_samples(path: Path) -> InstructionProfile:
    """One symbolized sample file as a profile (evidence `host-sampler`, weights in samples)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise RocmPerfError(f"{path}: cannot read ({e})") from None
    except json.JSONDecodeError as e:
        raise RocmPerfError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    if not looks_like_host_samples(data):
        raise RocmPerfError(f"{path}: not a rocm-perf host sample file")
    notes = []
    if data.get("version") != VERSION:
        notes.append(f"host sample format version {data.get('version')} (this reader knows {VERSION})")
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise RocmPerfError(f"{path}: `rows` is not a list")
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise RocmPerfError(f"{path}: row {i} is not an object")
        where = f"{path}: row {i}"
        out.append({
            "kernel": str(r.get("kernel") or "(outside kernels)"),
            "vaddr": integer(parse_count(r.get("offset", -1), f"{where}: `offset`"), f"{where}: `offset`"),
            "isa": "",  # no instruction text: the rows are program counters of a CPU build
            "file": str(r.get("file") or ""),
            "line": integer(parse_count(r.get("line", 0), f"{where}: `line`"), f"{where}: `line`", low=0),
            "weight": parse_count(r.get("samples", 0), f"{path}: row {i}: `samples`"),
            "context": _context(r.get("context"), f"{where}: `context`"),
        })
    dropped = integer(data.get("dropped") or 0, f"{path}: `dropped`", low=0)
    if dropped:
        notes.append(f"{dropped} samples were dropped (the sample table was full)")
    meta = {k: data.get(k) for k in ("hz", "samples", "dropped", "symbolizer", "executable", "clock")}
    meta["format"] = "host-samples"
    meta["mangled"] = {str(r.get("kernel")): str(r.get("mangled")) for r in rows if isinstance(r, dict) and r.get("mangled")}
    meta["system_files"] = sorted({str(r.get("file")) for r in rows if isinstance(r, dict) and r.get("system")})
    return profile_from_rows(out, origin=str(path), evidence="host-sampler", version=str(data.get("version")),
                             notes=notes, metadata=meta)


def _context(frames, where: str) -> list[tuple[str, int]]:
    """The inlining chain of a row: [[file, line], ...] (files that are empty are skipped)."""
    if frames is None:
        return []
    if not isinstance(frames, list) or not all(isinstance(f, list) and len(f) == 2 for f in frames):
        raise RocmPerfError(f"{where} is not a list of [file, line] pairs")
    return [(str(f), integer(line, f"{where}: line", low=0)) for f, line in frames if f]


def read_host_sample_files(root: Path) -> InstructionProfile:
    files = host_sample_files(root)
    if not files:
        raise RocmPerfError(f"{root}: no host sample files (host_samples_*.json)")
    parts = [read_host_samples(p) for p in files]
    profile = concatenate(parts, str(root))
    if len(parts) > 1:
        profile.metadata["samples"] = sum(int(p.metadata.get("samples") or 0) for p in parts)
        profile.metadata["system_files"] = sorted({f for p in parts for f in p.metadata.get("system_files", [])})
    return profile
