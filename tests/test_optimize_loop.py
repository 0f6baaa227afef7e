"""The closed loop's state machine with injected measurements: real source analysis and rewrites
(libclang, the shipped rules), a build double and a measurement double, so that runs are exactly
repeatable and can be killed at chosen points.

Doubles, and why: the properties here (resume equals an uninterrupted run; decided trials are never
measured again; gains compose) need identical measurements across runs, which real timing cannot
give. The real backends are exercised end-to-end in test_optimize_e2e.py.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import sqlite3
from pathlib import Path

import pytest

from rocm_perf.backends.base import Backend, Program
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop, Services, SourceTools, Stopped
from rocm_perf.optimize.measure import RoundResult, output_fingerprint
from rocm_perf.optimize.options import OptimizeOptions
from rocm_perf.report.html import write_run_reports
from conftest import DATA

PROGRAMS = DATA / "programs"
XOR = "row_xor_sum(unsigned char const*, unsigned int*, int, int)"
WEIGHTED = "row_weighted_sum(unsigned char const*, unsigned int*, int, int)"


class CopyBuildDouble(Backend):
    """Build double: the 'executable' is a copy of the source (measurements are injected)."""

    name = "copy-double"

    def __init__(self, kill_at_build: int | None = None):
        self.builds = 0
        self.kill_at_build = kill_at_build

    def available(self):
        return True, ""

    def describe(self):
        return "build double"

    def build(self, source, out_dir, flags=None, timeout=600):
        self.builds += 1
        if self.kill_at_build is not None and self.builds == self.kill_at_build:
            raise SimulatedKill(f"build {self.builds}")
        exe = Path(out_dir) / "program.cu"
        exe.write_bytes(Path(source).read_bytes())
        return Program(exe, Path(source), self.name)

    def profile(self, *args, **kwargs):
        raise AssertionError("measurements are injected")


class SimulatedKill(BaseException):
    """Stands for kill -9: nothing after it runs, nothing is cleaned up."""


def loop_time(text: str, body: str, base_ms: float, gain_per_doubling: float) -> float:
    """A loop unrolled by hand k times holds its body k + 1 times (k copies plus the remainder)."""
    copies = text.count(body)
    if copies <= 1:
        return base_ms
    return base_ms * (1.0 - gain_per_doubling * math.log2(copies - 1))


class InjectedRounds:
    """Measurement double: round values are a function of the program text and the round's key
    (so a redone round gets the very same value); can simulate a kill at the n-th call."""

    def __init__(self, kill_at: int | None = None, cv: float = 0.01, wrong_output_if: str | None = None):
        self.calls: list[str] = []
        self.kill_at = kill_at
        self.cv = cv
        self.wrong_output_if = wrong_output_if

    def __call__(self, exe: Path, round_dir: Path, key: str) -> RoundResult:
        self.calls.append(key)
        if self.kill_at is not None and len(self.calls) == self.kill_at:
            raise SimulatedKill(key)
        text = Path(exe).read_text()
        xor = loop_time(text, "acc += values[c] ^ static_cast<unsigned>(c);", 60.0, 0.06)
        weighted = loop_time(text, "acc += values[c] * (static_cast<unsigned>(c) | 1u);", 40.0, 0.04)
        seed = hashlib.sha256((key + hashlib.sha256(text.encode()).hexdigest()).encode()).hexdigest()
        rng = random.Random(int(seed[:16], 16))
        noise = math.exp(rng.gauss(0.0, self.cv))
        xor, weighted = xor * noise * 1e6, weighted * noise * 1e6
        digest = "wrong" if self.wrong_output_if and self.wrong_output_if in text else "right"
        return RoundResult(
            True, "", xor + weighted, xor + weighted, {XOR: xor, WEIGHTED: weighted},
            {XOR: xor / (xor + weighted), WEIGHTED: weighted / (xor + weighted)},
            output_fingerprint(0, [digest], "checksum 42\nelapsed 3 ms\n", r"elapsed"),
        )


def _cached_tools() -> SourceTools:
    """The real source tools, memoized on file content across the runs of this module (a libclang
    parse takes seconds; the analysis is a pure function of the bytes)."""
    real = SourceTools.default()
    analyses: dict = {}
    guards: dict = {}

    def analyze(path, flags=()):
        key = (Path(path).name, Path(path).read_bytes(), tuple(flags))
        if key not in analyses:
            analyses[key] = real.analyze_source(path, flags)
        return analyses[key]

    def guard(candidate, flags=()):
        key = (candidate.original, candidate.rewritten, tuple(flags))
        if key not in guards:
            guards[key] = real.guard_candidate(candidate, flags)
        return guards[key]

    return SourceTools(analyze, real.match_kernel, real.load_rules, real.applicable_rules, real.make_candidate, guard)


TOOLS = _cached_tools()


def options(tmp_path: Path, **kw) -> OptimizeOptions:
    base = dict(source=PROGRAMS / "two_loops.cu", out=tmp_path / "runs", backend="host", compile_check="off",
                rules=["unroll_manual"], factors=[2, 4], max_rounds=20, aa_rounds=6, jobs=1)
    base.update(kw)
    return OptimizeOptions(**base)


def start(tmp_path, runner, backend=None, **kw):
    opt = options(tmp_path, **kw)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    return run_dir, OptimizeLoop(run_dir, ledger, opt, Services(backend or CopyBuildDouble(), runner, TOOLS, None,
                                                               write_report=write_run_reports))


def resume(run_dir, runner, backend=None, **kw):
    ledger = open_ledger(run_dir)
    return OptimizeLoop(run_dir, ledger, options(run_dir.parent.parent, **kw),
                        Services(backend or CopyBuildDouble(), runner, TOOLS, None, write_report=write_run_reports))


def outcome(run_dir: Path) -> list[tuple]:
    ledger = open_ledger(run_dir)
    return [(t.loop_key, t.rule, t.factor, t.status, t.reason) for t in ledger.trials()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("uninterrupted")
    runner = InjectedRounds()
    run_dir, loop = start(tmp, runner)
    assert loop.run() == DONE
    return run_dir, runner


def test_gains_compose_across_kernels_and_the_original_is_untouched(uninterrupted):
    run_dir, _ = uninterrupted
    before = (PROGRAMS / "two_loops.cu").read_bytes()
    ledger = open_ledger(run_dir)
    accepted = ledger.trials(status="accepted")
    assert sorted(t.kernel for t in accepted) == ["row_weighted_sum", "row_xor_sum"]
    # The second accepted change was proposed against the first one's result.
    assert accepted[1].generation == 1
    bases = ledger.baselines()
    assert [b.trial_id for b in bases] == [None, accepted[0].id, accepted[1].id]
    final = (run_dir / "final.cu").read_text()
    assert final.count("#pragma unroll 1") == 4  # both loops unrolled by hand (main + remainder each)
    diff = (run_dir / "accepted.diff").read_text()
    assert diff.startswith("--- a/two_loops.cu") and diff.count("@@") >= 2
    assert (PROGRAMS / "two_loops.cu").read_bytes() == before
    # Each accept came after a fresh confirmation at the alpha-spending level.
    levels = [ledger.decision(t.id, "confirm")["confirmation"] for t in accepted]
    assert [lv["k"] for lv in levels] == [1, 2]
    assert levels[0]["alpha"] == pytest.approx(0.025) and levels[1]["alpha"] == pytest.approx(0.05 / 6)
    report = (run_dir / "report.md").read_text()
    assert "## Accepted changes" in report and "row_weighted_sum" in report
    assert "row_weighted_sum" in (run_dir / "report.html").read_text()
    assert [s for _, s, _ in ledger.transitions()][:4] == ["baseline", "noise-floor", "rank", "propose"]


def test_larger_real_gain_wins_the_loop_and_others_are_named(uninterrupted):
    run_dir, _ = uninterrupted
    ledger = open_ledger(run_dir)
    xor = [t for t in ledger.trials() if t.kernel == "row_xor_sum"]
    accepted = [t for t in xor if t.status == "accepted"]
    assert len(accepted) == 1 and accepted[0].factor == 4  # 4 copies beat 2 in the injected model
    others = [t for t in xor if t.status != "accepted"]
    assert others and all(t.status == "rejected" and t.reason for t in others)


@pytest.mark.parametrize("kill_at", [9, 60, 110])
def test_resume_after_a_kill_gives_the_uninterrupted_result(tmp_path, uninterrupted, kill_at):
    reference_dir, reference_runner = uninterrupted
    assert kill_at < len(reference_runner.calls)
    killed = InjectedRounds(kill_at=kill_at)
    run_dir, loop = start(tmp_path, killed)
    with pytest.raises(SimulatedKill):
        loop.run()
    loop.ledger.close()
    decided_before = {(t.id, t.status) for t in open_ledger(run_dir).trials() if t.status in ("accepted", "rejected")}
    again = InjectedRounds()
    assert resume(run_dir, again).run() == DONE
    assert outcome(run_dir) == outcome(reference_dir)
    # No decided trial is measured again; a half-done one is redone from its first round.
    for trial_id, _ in decided_before:
        assert not any(k.startswith(f"{trial_id}-screen-") or k.startswith(f"{trial_id}-confirm-") for k in again.calls)
    assert killed.calls[-1] in again.calls  # the round in flight at the kill is measured again
    assert (run_dir / "final.cu").read_bytes() == (reference_dir / "final.cu").read_bytes()


def test_resume_after_a_kill_during_a_build(tmp_path, uninterrupted):
    reference_dir, _ = uninterrupted
    run_dir, loop = start(tmp_path, InjectedRounds(), backend=CopyBuildDouble(kill_at_build=4))
    with pytest.raises(SimulatedKill):
        loop.run()
    assert resume(run_dir, InjectedRounds()).run() == DONE
    assert outcome(run_dir) == outcome(reference_dir)


def test_stop_request_stops_after_recording_and_resumes(tmp_path, uninterrupted):
    reference_dir, _ = uninterrupted
    runner = InjectedRounds()
    run_dir, loop = start(tmp_path, runner)
    original_call = runner.__call__

    class StopAfter(InjectedRounds):
        def __call__(self, exe, round_dir, key):
            result = original_call(exe, round_dir, key)
            if len(runner.calls) == 30:
                loop.request_stop()  # what the SIGINT handler does
            return result

    loop.svc.runner = StopAfter()
    with pytest.raises(Stopped):
        loop.run()
    # The pair in flight finished and was recorded; no further pair started.
    assert len(runner.calls) in (30, 31)
    con = sqlite3.connect(str(run_dir / "ledger.db"))
    assert con.execute("SELECT count(*) FROM rounds").fetchone()[0] == len(runner.calls)
    assert resume(run_dir, InjectedRounds()).run() == DONE
    assert outcome(run_dir) == outcome(reference_dir)


def test_wrong_output_is_rejected_whatever_its_speed(tmp_path):
    # The injected measurement says every 4-copy unroll of the xor loop changes the outputs.
    runner = InjectedRounds(wrong_output_if="++c;\n            {\n                acc += values[c] ^ static_cast<unsigned>(c);\n            }\n            ++c;\n            {\n                acc += values[c] ^ static_cast<unsigned>(c);\n            }\n            ++c;")
    run_dir, loop = start(tmp_path, runner, kernels=["row_xor_sum"])
    assert loop.run() == DONE
    trials = {t.factor: t for t in open_ledger(run_dir).trials()}
    assert trials[4].status == "rejected" and trials[4].reason == "wrong output"
    assert "digests differ" in trials[4].detail
    assert trials[2].status == "accepted"


def test_max_trials_and_restriction_options_are_obeyed(tmp_path):
    run_dir, loop = start(tmp_path, InjectedRounds(), max_trials=1, kernels=["row_weighted_sum"], factors=[4])
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = ledger.trials()
    assert [(t.kernel, t.rule, t.factor) for t in trials] == [("row_weighted_sum", "unroll_manual", 4)]
    assert "max-trials" in ledger.get("stop_reason")
    assert re.search(r"trials: 1, accepted: 1", (run_dir / "report.md").read_text())
