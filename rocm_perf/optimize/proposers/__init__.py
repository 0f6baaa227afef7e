"""Where candidates come from: one module per proposer, each behind the Proposer interface.

    base.py           the interface (plan, render) and what a proposer hands over: Planned
                      candidates and the GuardSet of its kind
    unroll_rules.py   the unroll rules of rewrites/ (`#pragma unroll N`, manual unroll with a
                      remainder) on the loops of the top kernels
    patch.py          the user's own changes: unified diffs (`try --patch`) and whole second
                      versions of the file (`try --variant`), alternatives of one group
    tunables.py       named integer constants (`--tune NAME=V1,V2`, `// rocm-perf: tune NAME V1 V2`):
                      each value, or combination of values, a candidate

The loop's stages know only the interface: `propose` asks every proposer of the run for its
candidates, `build` asks the trial's proposer to render it (its changed file and guard verdicts)
and applies the guards its kind names. A new source of candidates is one more module here and one
entry in PROPOSERS.
"""

from __future__ import annotations

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.proposers.base import GuardSet, Planned, Proposer, Rendered
from rocm_perf.optimize.proposers.patch import Patches
from rocm_perf.optimize.proposers.tunables import Tunables
from rocm_perf.optimize.proposers.unroll_rules import UnrollRules

# name -> the proposer's class, as `--proposers` and the ledger's `proposer` column name them.
PROPOSERS: dict[str, type[Proposer]] = {UnrollRules.name: UnrollRules, Tunables.name: Tunables, Patches.name: Patches}


def check_proposer_names(names: list[str]) -> list[str]:
    """`--proposers A,B` checked against PROPOSERS (RocmPerfError naming an unknown one)."""
    for name in names:
        if name not in PROPOSERS:
            raise RocmPerfError(f"--proposers {','.join(names)}: no proposer {name!r} (choose among {', '.join(PROPOSERS)})")
    return list(dict.fromkeys(names))


def make_proposers(options, ledger) -> dict[str, Proposer]:
    """The run's proposers: those `options.proposers` names, else every one (each plans nothing
    when it has no candidates: tunables without any declared or given, patches without any)."""
    names = check_proposer_names(list(options.proposers)) if options.proposers else list(PROPOSERS)
    return {name: PROPOSERS[name].for_run(options, ledger) for name in names}


__all__ = ["GuardSet", "PROPOSERS", "Patches", "Planned", "Proposer", "Rendered", "Tunables", "UnrollRules",
           "check_proposer_names", "make_proposers"]
