"""The Proposer interface: turn the baseline into candidates, and a candidate into its changed file.

A proposer plans in two steps, because the ledger records a plan before anything is built (a killed
run resumes with the same candidates): `plan` says what each candidate is (its kind, a short
description, the kernel and loop it touches, why it comes where it does, its provenance), and
`render` makes it (the changed file, its diff, and the verdict of each source guard of its kind).
What judges a candidate never depends on who proposed it: every candidate is built once per content,
compile-checked, guarded by its kind's GuardSet, checked for correctness on its timed rounds and
measured by the same acceptance protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.optimize.ledger import Baseline, Trial
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.optimize.plan import Proposal

# `ctx` below is the run's optimize/run_context.RunContext (not imported: the context builds the
# run's proposers, so the annotation stays a name).


@dataclass(frozen=True)
class GuardSet:
    """The guards a kind of candidate passes, as data: the loop applies what is named here and
    nothing else, so a patch can carry other guards than a loop unroll without a special case.

    `source`: the source guards its proposer's `render` checks before anything is built (their
    names, for reports); `resources`: no new spills and occupancy not lower (the AMD compile check);
    `duplicate`: a built program that is the baseline's or another candidate's code is not measured;
    `outputs`: how its timed rounds' outputs must match the baseline's."""

    source: tuple[str, ...]
    resources: bool = True
    duplicate: bool = True
    outputs: str = BIT_IDENTICAL  # or a tolerance, `rtol=R,atol=A` (optimize/output_tolerance.py)

    def to_json(self) -> dict:
        return {"source": list(self.source), "resources": self.resources, "duplicate": self.duplicate,
                "outputs": self.outputs}


@dataclass(frozen=True)
class Planned:
    """One candidate a proposer plans for a generation: the file it changes (relative to a
    project's root; '' for a lone source), what it is (`proposal`: its alternatives' group key, the
    kernel and place it touches, its kind and factor, its expected value and named factors) and
    what the ledger keeps of where it came from (`provenance`)."""

    file: str
    proposal: Proposal
    provenance: dict = field(default_factory=dict)


@dataclass
class Rendered:
    """A candidate made: its changed file's bytes and diff, or why it could not be made
    (`error`: the rewrite is impossible), and the verdicts of its kind's source guards
    (`failed`: the reason of each that said no; `notes`: what a guard that passed wants said, such
    as a host change --allow-host-changes let through)."""

    data: bytes = b""
    diff: str = ""
    error: str = ""
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Proposer(ABC):
    """What every source of candidates implements."""

    name: str = "abstract"
    guards: GuardSet = GuardSet(source=())
    # Whether its plan reads the baseline's loop heat (the rank stage samples the baseline only then).
    uses_loop_heat: bool = False
    # Whether screened winners of its different groups can be applied together, and carried onto a
    # newer baseline (optimize/combine.py); when not, a screened winner left behind by another
    # group's accept is planned again on the new baseline.
    combines: bool = False

    @classmethod
    def for_run(cls, options, ledger) -> "Proposer":
        """The proposer of a run with these options (OptimizeOptions) and ledger (what it recorded
        at the run's start: patches, variants); the same on a resume."""
        return cls()

    @abstractmethod
    def plan(self, ctx: "RunContext", base: Baseline, tried: set[str]) -> list[Planned]:
        """Every candidate worth trying on baseline `base`, skipping the groups (loop keys) in
        `tried`; nothing is written. The caller orders them all by expected value and keeps as many
        as the run's budget plans."""

    @abstractmethod
    def render(self, ctx: "RunContext", trial: Trial, base_path: Path) -> Rendered:
        """The planned `trial` made on the file `base_path` of the current baseline, with the
        verdicts of this kind's source guards; nothing is written."""
