"""What the daemon notices between polls: new targets, and finished targets whose source changed.

A changed source is optimized again as a new generation of its target (a new run); the hash of
each source is re-read only when its size or mtime moved, so an idle daemon stays cheap.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.ledger import FINISHED, PENDING, SweepLedger
from rocm_perf.sweep.targets import discover_targets, source_hash

log = logging.getLogger("rocm_perf.sweep")


class SourceHashes:
    """sha256 of sources, cached by (mtime, size)."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[tuple[int, int], str]] = {}

    def __call__(self, path: Path, sources: list[str] | None = None) -> str:
        if path.is_dir():  # a project: its directory's mtime does not follow its files' contents
            return source_hash(path, sources)
        try:
            st = path.stat()
        except OSError as e:
            raise RocmPerfError(f"{path}: cannot read the target source ({e.strerror or e})") from e
        key = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(path)
        if cached is None or cached[0] != key:
            cached = (key, source_hash(path))
            self._cache[path] = cached
        return cached[1]


def scan_targets(ledger: SweepLedger, target_args: list[str], hashes: SourceHashes) -> None:
    """Add new targets; put finished targets whose source changed back in the queue (a new run)."""
    for t in discover_targets([Path(a) for a in target_args]):
        try:
            sha = hashes(t.source, t.options.get("sources") if t.options.get("project") else None)
        except RocmPerfError as e:  # deleted or unreadable since it was listed: skip it this time
            log.warning("target %s: %s", t.name, e)
            continue
        row = ledger.target_by_identity(t.identity())
        if row is None:
            row = ledger.add_target(t.identity(), t.name, t.spec(), sha)
            log.info("target %s: added (%s)", row.name, t.source)
        elif row.source_sha256 != sha and row.status in FINISHED:
            ledger.update_target(row.name, status=PENDING, source_sha256=sha, attempts=0, reason="",
                                 run_dir="", generation=row.generation + 1, expected_value=0.0,
                                 baseline_ns=None, final_ns=None, accepted=0, rejected=0)
            ledger.event(row.name, "changed", f"source sha256 {sha[:12]}: optimizing again")
            log.info("target %s: source changed, optimizing again", row.name)
