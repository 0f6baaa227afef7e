"""The ProgramRunner interface: build this candidate, run it N times, give its rounds.

A runner owns what differs between kinds of program: where a candidate's source lives in its trial
directory, how it is built, what its built program's identity is (two candidates whose programs are
the same code are duplicates), and how one round of it runs. The loop's stages decide everything
else (what to build, in which order, what the rounds mean), whatever the runner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.backends.base import Backend, Program
from rocm_perf.optimize.measure import RoundResult


@dataclass(frozen=True)
class BuiltCandidate:
    """A candidate's built program: what `round` runs, its identity, and the source the AMD compile
    check reads (the changed file itself, in the build's own copy)."""

    executable: Path
    identity: str
    checked_source: Path


class ProgramRunner(ABC):
    """What every kind of measured program implements."""

    name: str = "abstract"
    # The baseline's two builds (the program and its A/A twin), as directories of baseline/.
    baseline_dirs: tuple[str, str] = ("build", "twin")
    # Whether a rejected candidate's copies are deleted once its verdict is written (a whole tree each).
    drops_rejected: bool = False
    # Whether a build's content key is the candidate's digest (a whole tree) rather than the bytes of
    # its changed file.
    keys_by_digest: bool = False

    @abstractmethod
    def build(self, source: Path, out_dir: Path) -> Path:
        """Build the program whose source is `source` (the baseline's copy) into a fresh `out_dir`,
        and return what `round` runs; raise RocmPerfError with the build's first error."""

    @abstractmethod
    def build_candidate(self, build_dir: Path, data: bytes, trial_dir: Path, rel: str) -> BuiltCandidate:
        """Build the candidate whose changed file `rel` holds `data` (placed in `trial_dir` by `place`)
        into the fresh content-addressed `build_dir` (builds/<key>/); raise RocmPerfError when it
        does not build."""

    @abstractmethod
    def place(self, trial_dir: Path, base_source: Path, rel: str, data: bytes) -> str:
        """Write the candidate (the baseline's source `base_source` with file `rel` now `data`) into
        `trial_dir`, and return its digest (what the ledger records as the trial's source_sha256)."""

    @abstractmethod
    def digest(self, source: Path) -> str:
        """The digest of a baseline's source as `place` computes it (a changed copy is refused)."""

    @abstractmethod
    def source_of(self, source: Path, rel: str) -> Path:
        """The file `rel` of the source at `source` (a tree's file; a lone source is itself)."""

    @abstractmethod
    def parse_flags(self, path: Path) -> list[str]:
        """The flags libclang and the AMD compile check read the file at `path` with."""

    @abstractmethod
    def round(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        """One timed round of the built program, its files under `round_dir`, named `key`."""

    @abstractmethod
    def together(self, rounds: list[tuple[Path, Path, str]]) -> list[RoundResult]:
        """The rounds (executable, round_dir, key) of one pair, run at the same time."""

    @abstractmethod
    def argv(self, executable: Path) -> list[str]:
        """The command that runs the built program once, outside a round (the counter round)."""

    def discard(self, trial_dir: Path) -> None:
        """Delete a rejected candidate's copies (`drops_rejected`); its diff and verdict stay."""

    def build_with(self, backend: Backend, source: Path, out_dir: Path, flags: list[str], timeout: float) -> Program:
        """The program of the source file `source` built by `backend` (another than the run's, e.g. its
        sampling twin for loop heat) into `out_dir`: by default the backend's own build of the file."""
        return backend.build(source, out_dir, flags, timeout=timeout)

    def origin(self):
        """What the measured program was cut out of (runners/replay.py's Origin: an accepted change is
        confirmed on the whole original, stages/whole_program.py), or None: it is the whole program."""
        return None
