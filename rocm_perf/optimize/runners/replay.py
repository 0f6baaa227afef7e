"""A replayed kernel: a reproducer (`rocm-perf isolate`, rocm_perf/reproducer.py) as the measured
program. A candidate is the reproducer's kernel file rewritten; it is built into the reproducer's
harness (backends/replay_build.py), and one round is one run of the harness, which replays the
captured dispatch --replay-passes times with the memory it changed restored between passes and
fails at the first pass whose after-state differs from the capture's. A round thus gives as many
dispatches of the kernel as passes, and nothing else of the program.

`origin()` says what the reproducer was captured from, so that an accepted change is confirmed on
the whole original program before it is reported (stages/whole_program.py)."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from rocm_perf.backends.base import Backend, Program
from rocm_perf.backends.replay_build import build_replay, replay_flags
from rocm_perf.optimize.measure import RoundResult, RoundRunner
from rocm_perf.optimize.runners.source_file import SourceFile
from rocm_perf.reproducer import Reproducer, carry_change, replay_args


@dataclass(frozen=True)
class Origin:
    """The whole program a measured part came from: how to put a change of the part's file into it."""

    kind: str  # "source" | "project"
    root: Path  # the source's folder, or the project's root
    rel: str  # the changed file, relative to root
    sha256: str  # what that file held when the part was cut out of it
    record: dict  # how the program is built and run (the reproducer's origin record)

    @property
    def path(self) -> Path:
        return self.root / self.rel

    def carry(self, part_before: bytes, part_after: bytes, original: bytes) -> bytes:
        """`original` (the file at `path`) with the change of the part's file from `part_before`
        to `part_after` (line for line: the part's file keeps the original's lines)."""
        return carry_change(part_before, part_after, original, what=str(self.path))


# What the harness says when a pass's memory is not the capture's, and (under a tolerance) what the
# tolerance let through (isolate/harness/replay_support.h).
MISMATCH = "differs from the captured after-state"
_WORST = re.compile(r"replay: worst relative error (\S+), worst absolute error (\S+)")


def classified(r: RoundResult, tolerance: str = "") -> RoundResult:
    """A failed round whose harness found a pass's memory not the capture's is a wrong output, not a
    crash: its outputs say so (`wrong_output`: the harness's line), for the stages' reasons. Under a
    tolerance (`rtol=R,atol=A`) a round that ran was compared within it by the harness, against the
    capture: its outputs carry the tolerance record the stages read (output_tolerance.tolerance_differ)."""
    tail = r.outputs.get("stderr_tail", "") if not r.ok else ""
    if MISMATCH in tail:
        r.outputs["wrong_output"] = next(line for line in tail.splitlines() if MISMATCH in line).strip()
    if tolerance and r.ok:
        worst = _WORST.search(r.outputs.get("stderr_tail", ""))
        r.outputs["tolerance"] = {
            "criterion": tolerance, "within": worst is not None, "worst_rel": float(worst.group(1)) if worst else 0.0,
            "worst_abs": float(worst.group(2)) if worst else 0.0,
            "first": "" if worst else "the harness printed no comparison within the tolerance",
            "notes": ["the replay harness compared the kernel's memory with the capture's after-state"]}
    return r


class ReplayRunner(SourceFile):
    """The reproducer `reproducer`'s harness around a candidate's kernel file."""

    name = "replay"

    def __init__(self, backend: Backend, rounds: RoundRunner, reproducer: Reproducer, *, flags: list[str],
                 build_timeout_s: float, passes: int, tolerance: str = "", tolerance_type: str = "float32"):
        super().__init__(backend, rounds, flags=flags, build_timeout_s=build_timeout_s,
                         program_args=replay_args(reproducer.root, passes, tolerance, tolerance_type), run_template=None)
        self.reproducer = reproducer
        self.passes = passes
        self.tolerance = tolerance

    def build(self, source: Path, out_dir: Path) -> Path:
        """The harness around the kernel file `source`, built into a fresh `out_dir`."""
        return self.build_with(self.backend, source, out_dir, self.flags, self.build_timeout_s).executable

    def build_with(self, backend: Backend, source: Path, out_dir: Path, flags: list[str], timeout: float) -> Program:
        if Path(out_dir).exists():
            shutil.rmtree(out_dir)  # a build a killed run left half-done
        return build_replay(backend, self.reproducer, Path(out_dir), kernel_file=Path(source), flags=flags, timeout=timeout)

    def round(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        return classified(super().round(executable, round_dir, key), self.tolerance)

    def together(self, rounds: list[tuple[Path, Path, str]]) -> list[RoundResult]:
        return [classified(r, self.tolerance) for r in super().together(rounds)]

    def parse_flags(self, path: Path) -> list[str]:
        """The run's flags and the reproducer's (the original's -D/-std, -I for the kernel's headers)."""
        return list(self.flags) + replay_flags(self.reproducer)

    def origin(self) -> Origin:
        o = self.reproducer.origin
        return Origin(o["kind"], Path(o["root"]), o["rel"], o["sha256"], dict(o))
