"""Tunable constants as candidates: each value of a named integer constant (block size, items per
thread, tile size), and each combination of values for several, is one candidate of one group
(at most one is accepted). The race searches them, ordered by the evidence that exists before
anything is measured: the critical-path share of the kernels that use them, and, between those,
the combinations that move fewer constants, nearer their values in ratio, first; --max-trials
bounds how many are measured, as for any candidate.

The constants are those `--tune NAME=V1,V2` names and those the source declares with
`// rocm-perf: tune NAME V1 V2` (source/tunables.py says what a tunable can be). The guard: only the
constant's value tokens change (a template argument at each of its launch sites); what the program
computes from it is judged by its build (a static_assert names its line) and its outputs.
"""

from __future__ import annotations

from pathlib import Path

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.ledger import Baseline, Trial
from rocm_perf.tolerance import BIT_IDENTICAL
from rocm_perf.optimize.plan import Proposal
from rocm_perf.optimize.proposers.base import GuardSet, Planned, Proposer, Rendered
from rocm_perf.source.rewrite import unified_diff
from rocm_perf.source.tunables import (TUNABLE_GUARD_NAMES, Tunable, check_only_values, combinations, declared_tunables,
                                       find_tunables, render_values)

# `ctx` below is the run's optimize/run_context.RunContext (not imported: the context builds the
# run's proposers, so the annotation stays a name).

GROUP = "tunables"
# Combinations planned at most (the propose stage keeps a few times --max-trials of them, best first).
MAX_COMBINATIONS = 10_000
_FLOOR = 1e-3


def tunables_of(path: Path, data: bytes, given: dict[str, list[int]], flags=(), *, strict: bool = True) -> list[Tunable]:
    """The tunables of the file `path` (its bytes `data`): those it declares, with `given`
    (--tune) replacing their values or adding more. `strict`: a given name the file lacks is a
    RocmPerfError; else it is skipped (a project's other files may have it)."""
    wanted = {name: values for name, (values, _line) in declared_tunables(data, path).items()}
    found = find_tunables(path, data, wanted, flags) if wanted else []
    for name, values in given.items():
        try:
            extra = find_tunables(path, data, {name: values}, flags)
        except RocmPerfError:
            if strict:
                raise
            continue
        found = [t for t in found if t.name != name] + extra
    return [t for t in found if t.values]


def label_of(values: dict[str, int]) -> str:
    return ",".join(f"{name}={value}" for name, value in values.items())


class Tunables(Proposer):
    """The run's tunables: `given` ({name: values} from --tune) and the sources' declarations."""

    name = "tunables"
    guards = GuardSet(source=TUNABLE_GUARD_NAMES)

    def __init__(self, given: dict[str, list[int]] | None = None, *, outputs: str = BIT_IDENTICAL):
        self.given = dict(given or {})
        self.guards = GuardSet(source=TUNABLE_GUARD_NAMES, outputs=outputs)

    @classmethod
    def for_run(cls, options, ledger) -> "Tunables":
        return cls({k: list(v) for k, v in (options.tune or {}).items()}, outputs=options.tolerance or BIT_IDENTICAL)

    def plan(self, ctx: "RunContext", base: Baseline, tried: set[str]) -> list[Planned]:
        shares = {r["kernel"]: float(r["cp_share"]) for r in ctx.ledger.get("ranking", []) if r.get("kernel")}
        planned = []
        for rel in ctx.sources:
            group = f"{rel}::{GROUP}" if ctx.project else GROUP
            if group in tried:
                continue
            path = ctx.source_of(base, rel)
            tunables = tunables_of(path, path.read_bytes(), self.given, ctx.flags_of(path), strict=not ctx.project)
            if not tunables:
                continue
            by_name = {t.name: t for t in tunables}
            combos = combinations(tunables)[:MAX_COMBINATIONS]
            for rank, moved in enumerate(combos):
                kernels = list(dict.fromkeys(k for name in moved for k in by_name[name].kernels))
                share = max(_FLOOR, min(1.0, sum(shares.get(k, 0.0) for k in kernels)))
                factors = {"critical-path share of its kernels": share, "fewer and nearer moves first": 1.0 / (1 + rank)}
                label = label_of(moved)
                proposal = Proposal(group, ",".join(kernels), label, "tune", 0, share / (1 + rank), factors=factors)
                provenance = {"values": moved, "was": {n: by_name[n].current for n in moved}, "label": f"tune {label}"}
                planned.append(Planned(rel, proposal, provenance))
        return planned

    def render(self, ctx: "RunContext", trial: Trial, base_path: Path) -> Rendered:
        values = {str(k): int(v) for k, v in (trial.provenance.get("values") or {}).items()}
        before = base_path.read_bytes()
        flags = ctx.flags_of(base_path)
        try:
            tunables = find_tunables(base_path, before, {name: [v] for name, v in values.items()}, flags)
        except RocmPerfError as e:
            return Rendered(error=str(e))
        after = render_values(before, tunables, values)
        shown = trial.file or Path(ctx.ledger.get("source_path") or "source.cu").name
        diff = unified_diff(Path(shown), before, after)
        failed = [v.reason for v in check_only_values(base_path, before, after, tunables, values, flags) if not v.ok]
        return Rendered(after, diff, failed=failed)
