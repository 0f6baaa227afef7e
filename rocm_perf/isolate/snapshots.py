"""The captured memory in the reproducer: each raw file the runtime wrote, gzip-compressed into
snapshots/, with its size and the sha256 of its bytes (what the manifest lists)."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

from rocm_perf.reproducer import SNAPSHOT_DIR

# gzip's fastest level: captured floats hardly compress at any level, zeros do at every one.
COMPRESS_LEVEL = 1
_CHUNK = 1 << 22


def store(raw: Path, reproducer: Path, name: str) -> dict:
    """Compress the raw file `raw` into reproducer/snapshots/<name>.gz; its manifest entry."""
    target = Path(reproducer) / SNAPSHOT_DIR / f"{name}.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with open(raw, "rb") as src, gzip.open(target, "wb", compresslevel=COMPRESS_LEVEL) as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return {"file": f"{SNAPSHOT_DIR}/{name}.gz", "size": size, "sha256": digest.hexdigest(),
            "compressed": target.stat().st_size}


def unpack(reproducer: Path, entry: dict, to: Path) -> Path:
    """The raw bytes of a stored snapshot, written to `to` (the harness reads raw copies first)."""
    with gzip.open(Path(reproducer) / entry["file"], "rb") as src, open(to, "wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK)
    return to


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
