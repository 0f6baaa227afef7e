"""The device-to-host copies the host runtime kept (rocm_perf_host/kept_copies.h), read back.

A profiled run with copies kept leaves, per process, `host_copies_<tag>_<pid>.bin` (the bytes, in
the order the copies ran) beside its trace log, whose `copy` records say where each copy's bytes
are and how many were kept (the runtime stops keeping at its limit), and whose `copies` record
says how many bytes the limit cut. Copies come out in call order (their correlation ids), the
processes in the order of their logs. Taking the copies (HostBackend.take_kept_copies) removes their
bytes' files: a log whose file is gone belongs to copies taken before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.errors import RocmPerfError

# What a profiled run keeps at most, per process (the runtime's default too).
DEFAULT_COPIES_LIMIT = 256 << 20


@dataclass
class KeptCopy:
    """One device-to-host copy: its size, the bytes kept of it (all, or the first `len(data)` where
    the limit cut it) and its element type ('' where the destination's type was not known)."""

    bytes: int
    data: bytes
    element: str

    @property
    def cut(self) -> int:
        return self.bytes - len(self.data)


def read_kept_copies(out_dir: Path, tag_glob: str = "host_trace_*.jsonl") -> list[KeptCopy]:
    """The copies of every process of one run in `out_dir` (RocmPerfError on a torn file)."""
    copies: list[KeptCopy] = []
    for log in sorted(Path(out_dir).glob(tag_glob)):
        records, where = [], None
        with open(log, encoding="utf-8") as f:
            for line in f:
                if '"type":"cop' not in line:
                    continue
                record = json.loads(line)
                if record.get("type") == "copy":
                    records.append(record)
                elif record.get("type") == "copies":
                    where = Path(record["path"])
        if where is None or not where.exists():
            continue  # no copies kept, or a log of an earlier run here whose copies were taken already
        try:
            data = where.read_bytes()
        except OSError as e:
            raise RocmPerfError(f"{where}: the kept copies cannot be read ({e.strerror or e})") from e
        for r in sorted(records, key=lambda r: int(r["corr"])):
            start, kept = int(r["offset"]), int(r["kept"])
            if start + kept > len(data):
                raise RocmPerfError(f"{where}: the kept copies are cut short (a copy at {start} of {kept} bytes)")
            copies.append(KeptCopy(int(r["bytes"]), data[start: start + kept], str(r.get("element") or "")))
    return copies
