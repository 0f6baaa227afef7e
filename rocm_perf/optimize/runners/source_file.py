"""The whole program of one source file: built by the backend, run as the program (or the user's
harness, `--run`) with its arguments, one round a profiled run (`rocm-perf optimize prog.cu`)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from rocm_perf.backends.base import Backend
from rocm_perf.optimize.build_cache import code_identity, location_flags
from rocm_perf.optimize.measure import RoundResult, RoundRunner, program_argv
from rocm_perf.optimize.runners.base import BuiltCandidate, ProgramRunner


class SourceFile(ProgramRunner):
    """A lone `.cu` file: a candidate is its rewritten copy, `trials/<id>/source.cu`."""

    name = "source file"

    def __init__(self, backend: Backend, rounds: RoundRunner, *, flags: list[str], build_timeout_s: float,
                 program_args: list[str], run_template: str | None):
        self.backend = backend
        self.rounds = rounds
        self.flags = list(flags)
        self.build_timeout_s = build_timeout_s
        self.program_args = list(program_args)
        self.run_template = run_template

    def build(self, source: Path, out_dir: Path) -> Path:
        """Build `source` into `out_dir`, independent of the directory (build_cache.location_flags)."""
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a build a killed run left half-done
        out_dir.mkdir(parents=True)
        return self.backend.build(source, out_dir, self.flags + location_flags(source), timeout=self.build_timeout_s).executable

    def build_candidate(self, build_dir: Path, data: bytes, trial_dir: Path, rel: str) -> BuiltCandidate:
        src = build_dir / "source.cu"
        src.write_bytes(data)
        executable = self.build(src, build_dir / "build")
        return BuiltCandidate(executable, code_identity(executable), src)

    def place(self, trial_dir: Path, base_source: Path, rel: str, data: bytes) -> str:
        (trial_dir / "source.cu").write_bytes(data)
        return hashlib.sha256(data).hexdigest()

    def digest(self, source: Path) -> str:
        return hashlib.sha256(Path(source).read_bytes()).hexdigest()

    def source_of(self, source: Path, rel: str) -> Path:
        return Path(source)

    def parse_flags(self, path: Path) -> list[str]:
        return list(self.flags)

    def round(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        return self.rounds(executable, round_dir, key)

    def together(self, rounds: list[tuple[Path, Path, str]]) -> list[RoundResult]:
        return self.rounds.together(rounds)

    def argv(self, executable: Path) -> list[str]:
        return program_argv(Path(executable), self.program_args, self.run_template)
