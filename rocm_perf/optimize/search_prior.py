"""What won on similar loops in earlier runs: a small prior kept beside the runs (`search_prior.db`
under the runs root, so a sweep's runs share one, and so do the runs of one machine under one
--out). It orders candidates and splits the budget; it never decides: every candidate is
measured as if it did not exist.

A loop's shape is what the source analysis says about it that matters to unrolling: kind, nesting
depth, the trip count (unknown, at most 4, 16, or more), whether an unroll pragma is on it
already, and its barriers. An outcome is recorded per measured candidate when a run finishes:
won (accepted, alone or carried into a combination) or lost (slower, not significant,
inconclusive, outraced), keyed by the machine (backend and device), so that one machine's
experience orders only its own runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.racing import OUTRACED
from rocm_perf.sqlite_db import LedgerDB, Schema

PRIOR_NAME = "search_prior.db"
_TABLES = """
CREATE TABLE IF NOT EXISTS outcomes (
    run TEXT NOT NULL, trial INTEGER NOT NULL, machine TEXT NOT NULL, rule TEXT NOT NULL, factor INTEGER NOT NULL,
    shape TEXT NOT NULL, won INTEGER NOT NULL, gain REAL NOT NULL, at REAL NOT NULL, PRIMARY KEY (run, trial));
"""
SCHEMA = Schema("search prior", _TABLES)
# A candidate that passed screening but lost its loop to a rival accepted instead (loop.R_SUPERSEDED).
SUPERSEDED = "superseded"
# Reasons that measured a candidate and found no gain, or a smaller one than a rival for its loop (a
# guard, build or duplicate measured nothing).
LOST_REASONS = (acc.REASON_SLOWER, acc.REASON_NOT_SIGNIFICANT, acc.REASON_INCONCLUSIVE, acc.REASON_OUT_OF_REACH, OUTRACED,
                SUPERSEDED)
# How far the prior may move a candidate's expected value, each way.
PRIOR_RANGE = (0.5, 2.0)


def loop_shape(loop) -> str:
    """kind/depth/trip/pragma/barrier of a source loop (source.LoopInfo), e.g. `for/d1/t<=4/-/-`."""
    trip = getattr(loop, "trip_count", None)
    trips = "t?" if trip is None else "t<=4" if trip <= 4 else "t<=16" if trip <= 16 else "t>16"
    flags = getattr(loop, "flags", None)
    return "/".join([getattr(loop, "kind", "?"), f"d{min(int(getattr(loop, 'depth', 0) or 0), 2)}", trips,
                     "pragma" if getattr(loop, "pragma", None) else "-",
                     "barrier" if flags is not None and getattr(flags, "has_barrier", False) else "-"])


@dataclass(frozen=True)
class PriorFactor:
    """The prior's weight for one candidate and the record it comes from."""

    factor: float
    won: int
    tried: int

    def to_json(self) -> dict:
        return {"factor": self.factor, "won": self.won, "tried": self.tried}


def prior_factor(won: int, tried: int) -> PriorFactor:
    """2 x the Laplace-smoothed win rate (1.0 with no record), kept within PRIOR_RANGE."""
    rate = (won + 1) / (tried + 2)
    return PriorFactor(min(PRIOR_RANGE[1], max(PRIOR_RANGE[0], 2 * rate)), won, tried)


class SearchPrior(LedgerDB):
    """search_prior.db (opened per use: runs of a sweep may share it)."""

    def __init__(self, path: Path):
        super().__init__(path, SCHEMA, create=True)

    def factor(self, machine: str, rule: str, factor: int, shape: str) -> PriorFactor:
        won, tried = self.db.execute(
            "SELECT COALESCE(SUM(won), 0), COUNT(*) FROM outcomes WHERE machine = ? AND rule = ? AND factor = ? AND shape = ?",
            (machine, rule, int(factor), shape)).fetchone()
        return prior_factor(int(won), int(tried))

    def record(self, run: str, rows: list[tuple[int, str, str, int, str, bool, float]]) -> None:
        """(trial, machine, rule, factor, shape, won, gain) of one run's measured candidates; a run
        recorded again replaces its rows."""
        with self.transaction():
            for trial, machine, rule, factor, shape, won, gain in rows:
                self._write("INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (run, trial, machine, rule, int(factor), shape, int(won), float(gain), time.time()))


def open_prior(runs_root: Path) -> SearchPrior | None:
    """The prior under `runs_root`, or None when it cannot be opened (the run goes on without it)."""
    from rocm_perf.errors import RocmPerfError

    try:
        Path(runs_root).mkdir(parents=True, exist_ok=True)
        return SearchPrior(Path(runs_root) / PRIOR_NAME)
    except (RocmPerfError, OSError):
        return None


def prior_root(run_dir: Path) -> Path:
    """Where the search prior of a run lives: the sweep directory it belongs to, else the runs root."""
    for parent in list(Path(run_dir).parents)[:4]:
        if (parent / "sweep.db").exists():
            return parent
    return Path(run_dir).parent
