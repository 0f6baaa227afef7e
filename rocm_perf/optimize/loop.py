"""The closed loop, as its callers hold it: one run of the optimize loop in a run directory.

`OptimizeLoop(run_dir, ledger, options, services).run()` drives the run from the state its ledger
records to `done` (optimize/driver.py: the state machine, a stage module per state), and
`request_stop()` (from a signal handler) ends it after the step in flight, everything recorded.
Where candidates come from is optimize/proposers/; what builds and measures them is
optimize/runners/; what each stage takes is optimize/run_context.py.
"""

from __future__ import annotations

from pathlib import Path

from rocm_perf.optimize.driver import drive
from rocm_perf.optimize.ledger import Ledger
from rocm_perf.optimize.options import OptimizeOptions
from rocm_perf.optimize.run_context import RunContext
from rocm_perf.optimize.services import Services
from rocm_perf.optimize.states import DONE, Stopped

__all__ = ["DONE", "OptimizeLoop", "Stopped"]


class OptimizeLoop:
    """One run of the loop in `run_dir`, driven by (and recorded in) `ledger`."""

    def __init__(self, run_dir: Path, ledger: Ledger, options: OptimizeOptions, services: Services):
        self.ctx = RunContext(run_dir, ledger, options, services)

    @property
    def run_dir(self) -> Path:
        return self.ctx.run_dir

    @property
    def ledger(self) -> Ledger:
        return self.ctx.ledger

    @property
    def opt(self) -> OptimizeOptions:
        """The run's options, with the decision metric as settled so far."""
        return self.ctx.opt

    @property
    def stop_requested(self) -> bool:
        return self.ctx.stop_requested

    def run(self) -> str:
        """Run from the ledger's state to `done` (or raise Stopped after a stop request)."""
        return drive(self.ctx)

    def request_stop(self) -> None:
        self.ctx.request_stop()
