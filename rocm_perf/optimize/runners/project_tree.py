"""The whole program of a project: a tree copied into the run, built by the project's own build
command and run by its run command from the top of the built tree (`rocm-perf optimize --project
DIR --build CMD --run CMD`). A candidate is the baseline's tree with one file changed,
`trials/<id>/tree`; each build works in a copy of it, with what the build reads outside the project
laid out around it read-only (optimize/outside.py)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from rocm_perf.backends.base import Backend
from rocm_perf.optimize.measure import RoundResult, RoundRunner
from rocm_perf.optimize.project import (DEFAULT_MAX_FILES, build_environment, build_run_tree, copy_tree, file_digests,
                                        include_flags, tree_digest)
from rocm_perf.optimize.runners.base import BuiltCandidate, ProgramRunner


class ProjectTree(ProgramRunner):
    """A project's tree; `project` is the ledger's record of it (root, build, run, sources)."""

    name = "project tree"
    baseline_dirs = ("work", "twin")
    drops_rejected = True  # a whole tree each, and a built one: the diff and verdict say what it was
    keys_by_digest = True  # a candidate is its tree: the digest of its sources (the rest is the baseline's copy)

    def __init__(self, backend: Backend, rounds: RoundRunner, project: dict, *, flags: list[str], build_timeout_s: float,
                 run_dir: Path, max_files: int = DEFAULT_MAX_FILES):
        self.backend = backend
        self.rounds = rounds
        self.project = project
        self.flags = list(flags)
        self.build_timeout_s = build_timeout_s
        self.run_dir = Path(run_dir)
        self.bin_dir = self.run_dir / "bin"
        self.max_files = max_files  # also the most outside files a failed baseline build may add
        self._env: dict[str, str] | None = None
        self._tree_flags: dict[Path, list[str]] = {}

    def env(self) -> dict[str, str]:
        """What a project's build sees (on the host backend: the hipcc-compatible wrapper)."""
        if self._env is None:
            self._env = build_environment(self.backend, self.bin_dir)
        return self._env

    def build(self, source: Path, out_dir: Path) -> Path:
        """Copy the pristine tree `source` to `out_dir` and run the project's build command there,
        with the run's outside files around it; the baseline's builds (`baseline/work`, `baseline/twin`)
        may find more, from the failed build's complaints."""
        return build_run_tree(self.run_dir, self.project, source, out_dir, self.env(), self.build_timeout_s,
                              discover=Path(out_dir).parent == self.run_dir / "baseline", limit=self.max_files)

    def build_candidate(self, build_dir: Path, data: bytes, trial_dir: Path, rel: str) -> BuiltCandidate:
        # Its identity is its content key (the code of a tree's programs is not compared).
        tree = trial_dir / "tree"
        work = self.build(tree, build_dir / "work")
        return BuiltCandidate(work, f"tree:{build_dir.name}", tree / rel)

    def place(self, trial_dir: Path, base_source: Path, rel: str, data: bytes) -> str:
        tree = trial_dir / "tree"
        copy_tree(base_source, tree)
        (tree / rel).write_bytes(data)
        return self.digest(tree)

    def digest(self, source: Path) -> str:
        return tree_digest(file_digests(source, list(self.project["sources"])))

    def source_of(self, source: Path, rel: str) -> Path:
        return Path(source) / rel

    def parse_flags(self, path: Path) -> list[str]:
        """The run's flags, and for a file of a tree -I for the tree's root and its header directories
        and for the run's outside copies' header directories (the build's own flags are unknown)."""
        tree = next((p for p in Path(path).parents if p.name == "tree"), None)
        if tree is None:
            return list(self.flags)
        if tree not in self._tree_flags:
            files = [str(f.relative_to(tree)) for f in tree.rglob("*") if f.is_file()]
            self._tree_flags[tree] = self.flags + include_flags(tree, files, self.run_dir)
        return self._tree_flags[tree]

    def round(self, executable: Path, round_dir: Path, key: str) -> RoundResult:
        return self.rounds(executable, round_dir, key)

    def together(self, rounds: list[tuple[Path, Path, str]]) -> list[RoundResult]:
        return self.rounds.together(rounds)

    def argv(self, executable: Path) -> list[str]:
        """The run command, from the top of the built tree."""
        return ["/bin/sh", "-c", f"cd {shlex.quote(str(Path(executable).resolve()))} && {self.project['run']}"]

    def discard(self, trial_dir: Path) -> None:
        for name in ("tree", "work"):
            shutil.rmtree(trial_dir / name, ignore_errors=True)
