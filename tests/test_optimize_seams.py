"""The optimizer's seams (issue 53): candidates that come from a proposer other than the unroll
rules go through the same loop and judges, each with its kind's guards as data, and the trial
records where it came from. The proposer here is a real one of its kind: whole-file variants of
the program (what `try --variant` hands in); the build and the measurements are the doubles of
test_optimize_loop.py (repeatable rounds whose time follows the program text)."""

from __future__ import annotations

from pathlib import Path

from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop
from rocm_perf.optimize.plan import Proposal
from rocm_perf.optimize.proposers import GuardSet, Planned, Proposer, Rendered, UnrollRules
from rocm_perf.optimize.services import Services
from test_optimize_loop import PROGRAMS, TOOLS, CopyBuildDouble, InjectedRounds, options

SOURCE = PROGRAMS / "two_loops.cu"


class Variants(Proposer):
    """Whole-file versions of the program, each one candidate of one group (at most one is accepted)."""

    name = "variants"
    guards = GuardSet(source=())

    def __init__(self, files: dict[str, bytes]):
        self.files = files

    def plan(self, ctx, base, tried):
        if "variants" in tried:
            return []
        return [Planned("", Proposal("variants", "row_xor_sum", name, "variant", 0, 1.0 - i * 0.1), {"file": name})
                for i, name in enumerate(self.files)]

    def render(self, ctx, trial, base_path):
        return Rendered(self.files[trial.loop_id], f"--- a/{base_path.name}\n+++ b/{base_path.name}\n")


class VariantsWithoutDuplicateGuard(Variants):
    name = "variants"
    guards = GuardSet(source=(), duplicate=False)


def unrolled_x4() -> bytes:
    """The xor loop unrolled by hand x4, as the rules would write it (the double's rounds time it faster)."""
    analysis = TOOLS.analyze_source(SOURCE, [])
    loop = next(l for l in analysis.loops if l.kernel == "row_xor_sum")
    return TOOLS.make_candidate(SOURCE, analysis, loop.id, "unroll_manual", 4, rules=TOOLS.load_rules()).rewritten


def run_with(tmp_path: Path, proposer: Proposer) -> Path:
    opt = options(tmp_path)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    services = Services(CopyBuildDouble(), InjectedRounds(), TOOLS, None, proposers={proposer.name: proposer})
    assert OptimizeLoop(run_dir, ledger, opt, services).run() == DONE
    return run_dir


def test_a_proposer_other_than_the_rules_goes_through_the_same_loop(tmp_path):
    before = SOURCE.read_bytes()
    files = {"fast.cu": unrolled_x4(), "commented.cu": before + b"// the same program, one comment more\n"}
    run_dir = run_with(tmp_path, Variants(files))
    ledger = open_ledger(run_dir)
    trials = {t.loop_id: t for t in ledger.trials()}
    assert set(trials) == {"fast.cu", "commented.cu"}  # no rule was consulted: only the run's proposers plan
    assert all(t.proposer == "variants" and t.provenance == {"file": t.loop_id} for t in trials.values())
    assert trials["fast.cu"].status == "accepted"
    assert trials["commented.cu"].status == "rejected" and trials["commented.cu"].reason != "duplicate"
    assert (run_dir / "final.cu").read_bytes() == files["fast.cu"]
    assert SOURCE.read_bytes() == before  # the user's file is never written


def test_the_loop_applies_the_guards_a_proposer_names_and_no_others(tmp_path):
    same = {"same.cu": SOURCE.read_bytes()}  # the baseline itself: its build is the baseline's code
    guarded = open_ledger(run_with(tmp_path / "a", Variants(same))).trials()[0]
    assert (guarded.status, guarded.reason) == ("rejected", "duplicate")
    unguarded = open_ledger(run_with(tmp_path / "b", VariantsWithoutDuplicateGuard(same))).trials()[0]
    assert unguarded.reason != "duplicate" and unguarded.evidence.get("screen")  # measured: no guard said no


def test_the_unroll_rules_are_a_proposer_with_the_loop_guards():
    assert UnrollRules.name == "rules"
    assert "diff_inside_loop" in UnrollRules.guards.source and UnrollRules.guards.duplicate and UnrollRules.guards.resources
