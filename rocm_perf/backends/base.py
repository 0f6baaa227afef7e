"""The one Backend interface: turn a source into a program, run it so a rocpd database comes out.

The rest of the product never asks which backend it has; reports say `Backend.name`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.errors import RocmPerfError


@dataclass
class Program:
    """A built program and how it was built."""

    executable: Path
    source: Path
    backend: str
    flags: list[str] = field(default_factory=list)
    build_log: Path | None = None


@dataclass
class ProfileResult:
    """One profiled run: its databases (one per process that ran kernels) and its exit."""

    databases: list[Path]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False
    log: Path | None = None


class Backend(ABC):
    """What every backend implements."""

    name: str = "abstract"
    gpu_timings: bool = False  # True when dispatch times are GPU timestamps
    has_counters: bool = False  # True when collect_counters can read hardware counters

    def pairs_together_refusal(self) -> str:
        """"" when the two builds of a pair can run at the same time and each still be timed alone
        (the host backend, where its block workers may be pinned: measure.ProfiledRounds.together),
        else why not."""
        return "a GPU shared by two programs times neither alone"

    def for_pairs_together(self) -> "Backend":
        """This backend as the runs of a pair use it when they run together (pairs_together_refusal)."""
        raise NotImplementedError(f"the {self.name} backend runs the builds of a pair one after the other")

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether this backend can run here, and if not, what is missing (one line)."""

    @abstractmethod
    def describe(self) -> str:
        """The device that measures, for reports (e.g. 'AMD Instinct MI300X (gfx942)', 'CPU: 2 threads')."""

    @abstractmethod
    def build(self, source: Path, out_dir: Path, flags: list[str] | None = None, timeout: float = 600) -> Program:
        """Compile `source` into `out_dir`; raise BuildError with the compiler's first errors."""

    @abstractmethod
    def profile(
        self,
        argv: list[str],
        out_dir: Path,
        timeout: float = 600,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> ProfileResult:
        """Run `argv` (the program and its arguments, or a harness) under the profiler; databases land in `out_dir`."""

    def collect_counters(
        self,
        argv: list[str],
        counters: list[str],
        out_dir: Path,
        timeout: float = 600,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Path:
        """Run `argv` once per counter pass and return the folder holding the passes (load_trace reads
        and joins it). Backends without hardware counters raise RocmPerfError saying so."""
        raise RocmPerfError(self.no_counters_message())

    def dispatch_clocks(self) -> dict[str, str]:
        """The steady per-dispatch costs this backend's profiles carry beside start/end, as counters
        named in trace/host_clocks.py: name -> "" where recorded on this machine, else why not.
        Empty for a backend that records none (its rounds are decided on wall-clock paths)."""
        return {}

    def no_counters_message(self) -> str:
        """Why this backend cannot collect hardware counters (one line)."""
        return f"the {self.name} backend has no hardware counters: --counters needs the rocm backend (rocprofv3 on an AMD GPU)"

    def keeping_copies(self, limit_bytes: int) -> "Backend":
        """This backend as runs use it whose device-to-host copies are compared within a tolerance:
        the bytes of each copy kept (at most `limit_bytes` per process) for `take_kept_copies`. A backend
        that cannot keep them returns itself (its `take_kept_copies` says None)."""
        return self

    def take_kept_copies(self, out_dir: Path) -> "list | None":
        """The device-to-host copies a profiled run into `out_dir` kept (backends/host_copies.KeptCopy,
        in call order), their files removed from `out_dir` once read; None when this backend keeps
        none (rocprofv3 records no copy contents)."""
        return None

    def evidence_backend(self) -> "Backend | None":
        """A backend like this one whose builds and runs also record where in the kernels the time
        goes (program-counter samples), for a few rounds that locate time rather than measure it;
        None when this backend cannot (or must not by default) record it."""
        return None
