"""The one context every stage of the optimize loop takes: the run's directory, its ledger, its
options and its services, with the few things every stage asks of them (paths inside the run, the
clock and the stop request, the source analyses, the program runner and the proposers).

Everything a stage decides is in the ledger; what lives here is either handed in (options,
services) or a cache of something the ledger and the files already say (a libclang analysis of a
file's content, the loaded rules), so that a stage run again after a kill sees the same context.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocm_perf.optimize.build_cache import compiler_identity
from rocm_perf.optimize.confirmation import confirmation_test
from rocm_perf.optimize.ledger import Baseline, Ledger, Trial
from rocm_perf.optimize.options import OptimizeOptions, run_pairing, settle_metric
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.optimize.proposers import Proposer, make_proposers
from rocm_perf.optimize.runners.base import ProgramRunner
from rocm_perf.optimize.runners.project_tree import ProjectTree
from rocm_perf.optimize.runners.source_file import SourceFile
from rocm_perf.optimize.services import Services
from rocm_perf.optimize.states import Stopped


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RunContext:
    """One run of the loop in `run_dir`, driven by (and recorded in) `ledger`."""

    def __init__(self, run_dir: Path, ledger: Ledger, options: OptimizeOptions, services: Services):
        self.run_dir = Path(run_dir)
        self.ledger = ledger
        # The decision metric, resolved for this backend and recorded once (options.settle_metric); a
        # stage may settle it again from measured pairs (noise_floor, screen), replacing `opt`.
        self.opt = replace(options, metric=settle_metric(ledger, options, services.backend))
        self.pairing = run_pairing(ledger)  # how its pairs run, recorded with the metric
        self.svc = services
        self.report = services.reporter
        self.stop_requested = False
        self.session_start = services.clock()
        self.elapsed_before = float(ledger.get("elapsed_s", 0.0))
        self.alpha = 1.0 - options.confidence
        self.base_plan = confirmation_test(options.min_gain, self.alpha, options.rounds, options.max_rounds, options.round_step)
        # A project run (optimize --project): the tree, its build and run commands, the sources.
        self.project: dict | None = ledger.get("project")
        self.program: ProgramRunner = services.program or self._whole_program()
        self.proposers: dict[str, Proposer] = services.proposers or make_proposers(self.opt, ledger)
        # How the baseline's own rounds and the final check's are judged: the run's tolerance where it
        # has one (a program whose float results vary run to run is then measurable), else bit for bit.
        self.run_outputs: str = self.opt.tolerance or BIT_IDENTICAL
        self._rules = None
        self._analyses: dict[tuple[str, str], Any] = {}
        self._baseline_analysis: dict | None = None
        self._compiler: str | None = None

    def _whole_program(self) -> ProgramRunner:
        """The program the run measures: a project's tree, a replayed kernel (a reproducer), or the one source."""
        replay = self.ledger.get("replay")
        if replay:
            from rocm_perf.optimize.runners.replay import ReplayRunner
            from rocm_perf.reproducer import read_manifest

            return ReplayRunner(self.svc.backend, self.svc.runner, read_manifest(Path(replay["reproducer"])), flags=self.flags,
                                build_timeout_s=self.opt.build_timeout_s, passes=int(replay["passes"]),
                                tolerance=self.opt.tolerance, tolerance_type=self.opt.tolerance_type)
        if self.project:
            return ProjectTree(self.svc.backend, self.svc.runner, self.project, flags=self.flags,
                               build_timeout_s=self.opt.build_timeout_s, run_dir=self.run_dir,
                               max_files=self.opt.max_files)
        return SourceFile(self.svc.backend, self.svc.runner, flags=self.flags, build_timeout_s=self.opt.build_timeout_s,
                          program_args=self.opt.program_args, run_template=self.opt.run)

    # ---- the clock and the stop request ----------------------------------------------------

    def elapsed(self) -> float:
        """Seconds the run has taken, over all its sessions (what --time-budget counts)."""
        return self.elapsed_before + (self.svc.clock() - self.session_start)

    def request_stop(self) -> None:
        self.stop_requested = True

    def check_stop(self) -> None:
        if self.stop_requested:
            raise Stopped("stopped on request; everything so far is recorded")

    # ---- paths and sources -----------------------------------------------------------------

    @property
    def flags(self) -> list[str]:
        return list(self.opt.cflags)

    def rel(self, p: Path) -> str:
        return str(Path(p).relative_to(self.run_dir))

    def abs(self, rel: str) -> Path:
        return self.run_dir / rel

    @property
    def sources(self) -> list[str]:
        """The files rewrites may change: a project's sources (relative to its root), or the one source."""
        return list(self.project["sources"]) if self.project else [""]

    def source_of(self, base: Baseline, rel: str) -> Path:
        """A source of a baseline: its tree's file `rel` (project), or its one source."""
        return self.program.source_of(self.abs(base.source_path), rel)

    def flags_of(self, path: Path) -> list[str]:
        """Parse and compile-check flags for `path` (runners.ProgramRunner.parse_flags)."""
        return self.program.parse_flags(path)

    def analysis(self, path: Path):
        """The source analysis of `path`, once per content (libclang parses take seconds)."""
        key = (str(path), sha256_bytes(Path(path).read_bytes()))
        if key not in self._analyses:
            self._analyses[key] = self.svc.tools.analyze_source(path, self.flags_of(path))
        return self._analyses[key]

    def rules(self) -> list:
        if self._rules is None:
            self._rules = self.svc.tools.load_rules(self.opt.rules_dir)
        return self._rules

    def baseline_analysis(self) -> dict | None:
        """The baseline's roofline analysis (analysis.json of the counter round), once read; None without one."""
        record = self.ledger.get("roofline") or {}
        if not record.get("analysis"):
            return None
        if self._baseline_analysis is None:
            self._baseline_analysis = json.loads(self.abs(record["analysis"]).read_text())
        return self._baseline_analysis

    # ---- what builds and measures, and who proposes ----------------------------------------

    def compiler_id(self) -> str:
        if self._compiler is None:
            self._compiler = compiler_identity(self.svc.backend)
        return self._compiler

    @property
    def isa_measured(self) -> bool:
        """Whether the measured program runs the AMD ISA (the rocm backend), so that the ISA counts
        as the program's identity and its deltas as evidence of speed."""
        return bool(getattr(self.svc.backend, "gpu_timings", False))

    def proposer_of(self, trial: Trial) -> Proposer:
        """The proposer that planned `trial` (a combination or a carry: its components')."""
        return self.proposers[trial.proposer]

    def machine(self) -> str:
        """The search prior's name for this machine: backend and device (search_prior.py)."""
        return f"{self.ledger.get('backend')}|{self.ledger.get('device')}"
