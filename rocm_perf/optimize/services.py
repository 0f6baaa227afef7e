"""Everything the optimize loop does to the outside world, handed in by its caller (the command, a
sweep's worker, a test with doubles): the backend, the rounds, the source tools, the AMD compile
check, the progress reporter, the clock and the report writer."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rocm_perf.backends.base import Backend
from rocm_perf.optimize.measure import RoundRunner
from rocm_perf.optimize.progress import Reporter

if TYPE_CHECKING:
    from rocm_perf.optimize.proposers.base import Proposer
    from rocm_perf.optimize.runners.base import ProgramRunner


@dataclass
class SourceTools:
    """The source-analysis entry points (rocm_perf.source), injectable for tests."""

    analyze_source: Callable
    match_kernel: Callable
    load_rules: Callable
    applicable_rules: Callable
    make_candidate: Callable
    guard_candidate: Callable

    @classmethod
    def default(cls) -> "SourceTools":
        from rocm_perf import source

        return cls(source.analyze_source, source.match_kernel, source.load_rules, source.applicable_rules,
                   source.make_candidate, source.guard_candidate)


@dataclass
class Services:
    """Everything the loop does to the outside world."""

    backend: Backend
    runner: RoundRunner
    tools: SourceTools
    compile_check: Callable | None  # compile_check(source, arch=, flags=) -> CompileReport, or None
    reporter: Reporter = field(default_factory=Reporter)
    clock: Callable[[], float] = time.monotonic
    # Writes the finished run's report.html (the report layer's; the CLI hands it in). None: no page.
    write_report: Callable[[Path], None] | None = None
    heat: Callable | None = None  # heat.HeatRounds-like; None: derived from `runner` when it profiles for real
    # What builds and runs a candidate (runners/): None is the whole program, of a source or a project's
    # tree, built by `backend` and measured by `runner`.
    program: "ProgramRunner | None" = None
    # Where candidates come from (proposers/), by name: None is every proposer the run's options ask for.
    proposers: "dict[str, Proposer] | None" = None
