"""The closed loop's state machine with injected measurements: real source analysis and rewrites
(libclang, the shipped rules), a build double and a measurement double, so that runs are exactly
repeatable and can be killed at chosen points.

Doubles, and why: the properties here (resume equals an uninterrupted run; decided trials are never
measured again; gains compose) need identical measurements across runs, which real timing cannot
give. The real backends are exercised end-to-end in test_optimize_e2e.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import signal
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rocm_perf.backends.base import Backend, Program
from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import driver
from rocm_perf.optimize import close_calls, racing
from rocm_perf.optimize.artifacts import render_markdown, terminal_summary
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import open_ledger
from rocm_perf.optimize.loop import DONE, OptimizeLoop, Stopped
from rocm_perf.optimize.services import Services, SourceTools
from rocm_perf.optimize.measure import RoundResult, output_fingerprint
from rocm_perf.optimize.options import OptimizeOptions
from rocm_perf.report.html import write_run_reports
from conftest import DATA

PROGRAMS = DATA / "programs"
XOR = "row_xor_sum(unsigned char const*, unsigned int*, int, int)"
WEIGHTED = "row_weighted_sum(unsigned char const*, unsigned int*, int, int)"
SHIFT = "row_shift_sum(unsigned char const*, unsigned int*, int, int)"
SHIFT_BODY = "acc += static_cast<unsigned>(values[c]) << (c & 3);"
XOR_BODY = "acc += values[c] ^ static_cast<unsigned>(c);"
WEIGHTED_BODY = "acc += values[c] * (static_cast<unsigned>(c) | 1u);"


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


def copies_in_a_row(body: str, n: int) -> str:
    """The text of n copies of a loop body in a row, as the manual unroll writes them: only a
    rewrite unrolled at least n times holds it."""
    return (body + "\n        ++c;\n        ") * (n - 1) + body


def program_identity(text: str) -> str:
    """What the measurement double's noise is drawn from: how many copies of each loop body the
    program holds and which pragmas it carries, so that a change in how a rewrite is spelled (its
    layout, its braces) does not redraw the noise every test's scenario was written against."""
    pragmas = sorted(line.strip() for line in text.splitlines() if line.strip().startswith("#pragma unroll"))
    return json.dumps([[text.count(b) for b in (XOR_BODY, WEIGHTED_BODY, SHIFT_BODY)], pragmas])


class InjectedRounds:
    """Measurement double: round values are a function of the program text and the round's key
    (so a redone round gets the very same value); can simulate a kill at the n-th call."""

    def __init__(self, kill_at: int | None = None, cv: float = 0.01, wrong_output_if: str | None = None,
                 interaction: float = 0.0, kill_at_key: str | None = None, crash_if: tuple[str, int] | None = None,
                 final_cv: float | None = None, aa_cv: float | None = None, confirm_cv: float | None = None,
                 draw: str = ""):
        self.calls: list[str] = []
        self.draw = draw  # names the noise draws a scenario was written against (see program_identity)
        self.final_cv = final_cv  # the final check's noise, when it differs (a noisy program's last minutes)
        self.aa_cv = aa_cv  # the A/A pairs' noise, when it differs (a machine in a noisy mode then)
        self.confirm_cv = confirm_cv  # the confirmations' noise, when it differs (a close call on fresh pairs)
        self.crash_if = crash_if  # (text, pair index): a program holding the text crashes from that pair on
        self.kill_at = kill_at
        self.kill_at_key = kill_at_key
        self.cv = cv
        self.wrong_output_if = wrong_output_if
        self.interaction = interaction  # the shift and weighted loops both unrolled: this much slower

    def __call__(self, exe: Path, round_dir: Path, key: str) -> RoundResult:
        self.calls.append(key)
        if (self.kill_at is not None and len(self.calls) == self.kill_at) or key == self.kill_at_key:
            raise SimulatedKill(key)
        text = Path(exe).read_text()
        if self.crash_if and self.crash_if[0] in text:
            _, phase, pair, _ = key.split("-")  # the loop's round key: trial-phase-pair-role
            if phase != "screen" or int(pair) >= self.crash_if[1]:
                return RoundResult(False, "crash", outputs={"returncode": -11, "stderr_tail": "Segmentation fault"})
        times = {XOR: loop_time(text, "acc += values[c] ^ static_cast<unsigned>(c);", 60.0, 0.06),
                 WEIGHTED: loop_time(text, WEIGHTED_BODY, 40.0, 0.04)}
        if SHIFT_BODY in text:  # three_loops.cu
            times[SHIFT] = loop_time(text, SHIFT_BODY, 30.0, 0.05)
            if self.interaction and text.count(SHIFT_BODY) > 1 and text.count(WEIGHTED_BODY) > 1:
                times = {k: v * (1 + self.interaction) for k, v in times.items()}
        seed = hashlib.sha256((self.draw + key + program_identity(text)).encode()).hexdigest()
        rng = random.Random(int(seed[:16], 16))
        phase = key.split("-")[1]
        cv = {"final": self.final_cv, "aa": self.aa_cv, "confirm": self.confirm_cv}.get(phase)
        noise = math.exp(rng.gauss(0.0, self.cv if cv is None else cv))
        times = {k: v * noise * 1e6 for k, v in times.items()}
        total = sum(times.values())
        digest = "wrong" if self.wrong_output_if and self.wrong_output_if in text else "right"
        return RoundResult(
            True, "", total, total, times, {k: v / total for k, v in times.items()},
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


class PairsTogetherDouble(CopyBuildDouble):
    """Build double of a backend whose pairs can run together (as the host backend's)."""

    def pairs_together_refusal(self) -> str:
        return ""


class InjectedTogether(InjectedRounds):
    """InjectedRounds with ProfiledRounds.together's signature: records which rounds ran at once."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.groups: list[list[str]] = []

    def together(self, rounds):
        self.groups.append([key for _, _, key in rounds])
        return [self(exe, round_dir, key) for exe, round_dir, key in rounds]


def test_pairs_run_together_as_whole_pairs_and_decide_as_apart(tmp_path, uninterrupted):
    reference_dir, reference_runner = uninterrupted
    runner = InjectedTogether()
    run_dir, loop = start(tmp_path, runner, PairsTogetherDouble())
    assert loop.run() == DONE
    assert open_ledger(run_dir).get("metric")["pairs"] == "together"
    # every timed round but the reference run ran inside a group: one pair's B and its C (or Cs)
    grouped = [k for g in runner.groups for k in g]
    assert sorted(grouped) == sorted(k for k in runner.calls if "-reference-" not in k)
    for g in runner.groups:
        assert len({k.split("-")[1] for k in g}) == 1 and sorted(k.split("-")[3] for k in g)[-1] == "C" and 2 <= len(g) <= 3
        assert sum(k.endswith("-B") for k in g) == 1
    assert {k.split("-")[1] for k in grouped} >= {"aa", "screen", "confirm", "final"}
    # the rounds carry the same values as when run apart (the double's values follow the key): same decisions
    assert outcome(run_dir) == outcome(reference_dir)
    assert sorted(runner.calls) == sorted(reference_runner.calls)


def test_gains_compose_across_kernels_and_the_original_is_untouched(uninterrupted):
    run_dir, _ = uninterrupted
    before = (PROGRAMS / "two_loops.cu").read_bytes()
    ledger = open_ledger(run_dir)
    accepted = ledger.trials(status="accepted")
    # Both loops had a screened winner: their rewrites were combined into one candidate on the
    # baseline they were screened on, and that one was confirmed, before either alone.
    assert len(accepted) == 1 and accepted[0].rule == "combination" and accepted[0].generation == 0
    parts = [ledger.trial(c) for c in accepted[0].components]
    assert sorted(p.kernel for p in parts) == ["row_weighted_sum", "row_xor_sum"]
    assert all(p.status == "carried" and p.factor == 4 for p in parts)
    # The other candidates of both loops were decided by the race (x2 outraced by x4).
    assert all(t.status == "rejected" for t in ledger.trials() if t.id not in accepted[0].components and t.id != accepted[0].id)
    bases = ledger.baselines()
    assert [b.trial_id for b in bases] == [None, accepted[0].id]
    final = (run_dir / "final.cu").read_text()
    # Both loops unrolled by hand, with no `#pragma unroll 1`: their trip counts are known only at
    # run time, and the compiler leaves such loops rolled (docs/reviewing-diffs.md).
    assert final.count("for (; cols - c >= 4; ++c) {") == 2 and "#pragma unroll" not in final
    diff = (run_dir / "accepted.diff").read_text()
    assert diff.startswith("--- a/two_loops.cu") and diff.count("@@") >= 2
    # The review shows each hunk under what it does, and the diff's size.
    (change,) = json.loads((run_dir / "summary.json").read_text())["accepted"]
    assert [h["summary"] for h in change["hunks"]] == [
        ["c loop, line 18: unrolled x4, trip count known only at run time: groups of four while 4 remain, then a remainder loop"],
        ["c loop, line 29: unrolled x4, trip count known only at run time: groups of four while 4 remain, then a remainder loop"]]
    assert change["diff_size"]["hunks"] == 2 and change["diff_size"]["added"] == sum(h["added"] for h in change["hunks"])
    assert (PROGRAMS / "two_loops.cu").read_bytes() == before
    # The accept came after a fresh confirmation at the alpha-spending level: the run's first.
    levels = [ledger.decision(t.id, "confirm")["confirmation"] for t in accepted]
    assert [lv["k"] for lv in levels] == [1] and levels[0]["alpha"] == pytest.approx(0.025)
    # ... whose test stops a re-measure that could not pass by its last look (recorded with the plan).
    plans = [ledger.decision(t.id, "confirm")["plan"] for t in accepted]
    assert all(p["futility"] and p["drop_alpha"] == 0.10 and p["futility_from"] == 20 for p in plans)
    report = (run_dir / "report.md").read_text()
    assert "## Accepted changes" in report and "row_weighted_sum" in report
    assert "row_weighted_sum" in (run_dir / "report.html").read_text()
    assert [s for _, s, _ in ledger.transitions()][:4] == ["baseline", "noise-floor", "rank", "propose"]


def test_larger_real_gain_wins_the_loop_and_others_are_named(uninterrupted):
    run_dir, _ = uninterrupted
    ledger = open_ledger(run_dir)
    xor = [t for t in ledger.trials() if t.kernel == "row_xor_sum"]
    won = [t for t in xor if t.status == "carried"]  # accepted as part of the combination
    assert len(won) == 1 and won[0].factor == 4  # 4 copies beat 2 in the injected model
    others = [t for t in xor if t.status != "carried"]
    assert others and all(t.status == "rejected" and t.reason for t in others)


def test_two_racers_sharing_a_baseline_run_are_both_next_to_it(uninterrupted):
    """C1 B C2 on even pairs, C2 B C1 on odd: a candidate two runs away from its baseline run
    spread 18 % more in real races (loop.SHARED_BASELINE)."""
    run_dir, runner = uninterrupted
    keys = [k.split("-") for k in runner.calls]  # trial, phase, pair, role
    shared = []
    for j in range(1, len(keys) - 1):
        before, b, after = keys[j - 1], keys[j], keys[j + 1]
        if b[1] == "screen" and b[3] == "B" and before[1:] == after[1:] == ["screen", b[2], "C"]:
            shared.append((int(b[2]), int(before[0]), int(after[0])))
    # The baseline runs the ledger files under two candidates; a lone racer's pair next to another
    # batch's can look the same in the run order (C2 B2, C4 B4 reversed), so the ledger says which.
    con = sqlite3.connect(str(run_dir / "ledger.db"))
    runs = {json.loads(o)["baseline_run"] for (o,) in con.execute("SELECT outputs FROM rounds WHERE phase = 'screen'")
            if "baseline_run" in json.loads(o)}
    filed = [(pair, a, b) for pair, a, b in shared if f"{min(a, b)}-screen-{pair}-B" in runs]
    assert len(filed) >= 5
    for pair, first, second in filed:
        assert (first < second) == (pair % 2 == 0)  # the lower id first on even pairs, last on odd
    # every one of them sits between its two candidates
    assert {f"{min(a, b)}-screen-{pair}-B" for pair, a, b in filed} == runs


def test_the_final_check_runs_on_while_its_interval_holds_1_and_stops_once_it_does_not(uninterrupted, tmp_path):
    """Quiet: the run's two accepted gains show in --aa-rounds pairs. At 40 % noise in the final
    check alone they do not, and it runs on in blocks of --aa-rounds, three blocks at most."""
    run_dir, runner = uninterrupted
    quiet = open_ledger(run_dir).get("final_check")
    assert quiet["n"] == 6 and quiet["high"] < 1.0
    assert sum(k.split("-")[1] == "final" for k in runner.calls) == 12
    noisy_runner = InjectedRounds(final_cv=0.4)
    noisy_dir, loop = start(tmp_path, noisy_runner)
    assert loop.run() == DONE
    ledger = open_ledger(noisy_dir)
    assert ledger.get("final_check")["n"] == 18
    assert sum(k.split("-")[1] == "final" for k in noisy_runner.calls) == 36
    rows = {(r.idx, r.role): r.cp_ns for r in ledger.rounds(0, "final")}
    for n in (6, 12):  # it went on because the interval still held 1 after each earlier block
        iv = acc.median_ratio_interval([rows[i, "B"] for i in range(n)], [rows[i, "C"] for i in range(n)], tail_alpha=0.025)
        assert iv.low < 1.0 < iv.high
    assert outcome(noisy_dir) == outcome(run_dir)  # the search itself saw the same rounds
    assert "95 % interval over 18 pairs" in (noisy_dir / "report.md").read_text()


def test_a_noisy_a_a_sets_a_high_bar_that_the_steadier_race_takes_down(tmp_path, uninterrupted, monkeypatch):
    """The machine in a noisy mode during the A/A pairs only (16 %, the race's 1 %): the floor they set
    would ask for about 7 %; the race's first rung re-takes it (its 20 pairs, at a spread below the
    A/A's by more than RETAKE_FACTOR), the bar falls back to --min-gain, and the run decides as a
    quiet one does. Without the re-take the same rounds lose the gains below 7 %."""
    reference_dir, _ = uninterrupted
    run_dir, loop = start(tmp_path / "retaken", InjectedRounds(aa_cv=0.16))
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    floor = ledger.get("noise_floor")
    assert floor["floor"] > 0.05  # what the A/A pairs alone ask for
    [retake] = ledger.get("noise_floor_retakes")
    assert retake["rung"] == 5 and retake["pairs"] == 20 and retake["from_spread"] == pytest.approx(floor["spread"])
    assert retake["spread"] < floor["spread"] / acc.RETAKE_FACTOR
    assert retake["from_min_gain"] == pytest.approx(floor["floor"]) and retake["min_gain"] == ledger.get("effective_min_gain") == 0.02
    assert outcome(run_dir) == outcome(reference_dir)
    assert [d["plan"]["min_gain"] for t in ledger.trials() if (d := ledger.decision(t.id, "screen"))] == [0.02] * 4
    assert "re-taken from the race's 20 pairs (4 candidates x 5" in (run_dir / "report.md").read_text()
    ledger.close()

    # killed after the re-take was recorded, before the rung's calls were: resumed, it judges the
    # rung at the lowered bar and does not take the floor again
    judge_rung = racing.judge_rung

    def killed(*args, **kwargs):
        raise SimulatedKill("between the re-take and the rung's calls")

    monkeypatch.setattr(racing, "judge_rung", killed)
    killed_dir, loop = start(tmp_path / "killed", InjectedRounds(aa_cv=0.16))
    with pytest.raises(SimulatedKill):
        loop.run()
    loop.ledger.close()
    assert len(open_ledger(killed_dir).get("noise_floor_retakes")) == 1
    monkeypatch.setattr(racing, "judge_rung", judge_rung)
    assert resume(killed_dir, InjectedRounds(aa_cv=0.16)).run() == DONE
    assert outcome(killed_dir) == outcome(run_dir) and len(open_ledger(killed_dir).get("noise_floor_retakes")) == 1

    monkeypatch.setattr(acc, "clearly_steadier", lambda in_force, observed: False)
    kept_dir, loop = start(tmp_path / "kept", InjectedRounds(aa_cv=0.16))
    assert loop.run() == DONE
    kept = open_ledger(kept_dir)
    bar = kept.get("effective_min_gain")
    assert not kept.get("noise_floor_retakes") and bar > 0.072
    # every candidate dropped at its first rung, the 7.2 % gain of xor x4 among them (runtime_trip's miss)
    assert not kept.trials(status="accepted")
    assert all(t.reason == "outraced" and t.detail.startswith(f"not plausibly {bar:.1%} faster") for t in kept.trials())


def test_an_unproven_gain_is_named_as_a_close_call_with_the_pairs_a_decision_would_need(tmp_path, uninterrupted):
    """row_xor_sum x2 is 3.6 % faster against a 3 % bar at 3 % noise a run: 20 pairs cannot show it,
    so nothing is accepted, and the report says so, names it, and says how far to measure."""
    run_dir, loop = start(tmp_path, InjectedRounds(draw="d9", cv=0.03), min_gain=0.03, factors=[2])
    assert loop.run() == DONE
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["accepted"] == []
    calls = {c["label"].split()[0]: c for c in summary["close_calls"]}
    xor = calls["row_xor_sum"]
    assert xor["reason"] in close_calls.UNPROVEN_REASONS and xor["estimate"] < xor["threshold"] == pytest.approx(0.97)
    assert xor["pairs"] == 20 and xor["pairs_to_settle"] > 20
    assert xor["pairs_to_settle"] > close_calls.SETTLE_MAX_PAIRS  # too far for the loop to settle it itself
    report = (run_dir / "report.md").read_text()
    assert f"None: no candidate was proven faster ({len(calls)} close call" in report and "## Close calls" in report
    row = next(line for line in report.splitlines() if line.startswith(f"| {xor['trial']} |") and "to settle" not in line
               and "if its ratio holds" in line)
    asked = int(re.search(r"--max-rounds (\d+)", row).group(1))
    assert asked >= xor["pairs_to_settle"] and asked % 50 == 0

    # A run whose loops both had a change accepted has nothing left unproven to name.
    done, _ = uninterrupted
    clean = json.loads((done / "summary.json").read_text())
    assert clean["accepted"] and clean["close_calls"] == [] and "## Close calls" not in (done / "report.md").read_text()


def test_a_close_call_within_reach_is_re_measured_fresh_and_accepted_and_a_killed_run_resumes_it(tmp_path):
    """The run above, allowed to settle close calls that far (--settle-close-calls), on a machine whose
    fresh pairs are steadier (0.5 %): row_xor_sum x2, stopped unproven in the race, goes to a
    confirmation of its own at the run's next level, passes it, and the report says how it got there.
    A run killed inside that confirmation resumes to the same result."""
    kw = dict(min_gain=0.03, factors=[2], settle_close_calls=5000, kernels=["row_xor_sum"])
    run_dir, loop = start(tmp_path / "settled", InjectedRounds(draw="d9", cv=0.03, confirm_cv=0.005), **kw)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    settled = ledger.get("settled_close_calls")
    assert len(settled) == 1
    t = ledger.trial(settled[0])
    assert t.kernel == "row_xor_sum" and t.rule == "unroll_manual" and t.status == "accepted"
    assert ledger.decision(t.id, "screen")["decision"]["verdict"] != acc.ACCEPT  # it did not pass screening
    record = t.evidence["close_call"]
    assert record["reason"] in close_calls.UNPROVEN_REASONS and record["estimate"] < 0.97 and record["pairs"] >= close_calls.MIN_PAIRS
    assert ledger.decision(t.id, "confirm")["confirmation"]["k"] == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [a["id"] for a in summary["accepted"]] == [t.id] and all(c["trial"] != t.id for c in summary["close_calls"])
    report = (run_dir / "report.md").read_text()
    assert "re-measured as a close call: about" in report
    assert "re-measured as a close call" in (run_dir / "report.html").read_text()
    ledger.close()

    killed_dir, loop = start(tmp_path / "killed", InjectedRounds(draw="d9", cv=0.03, confirm_cv=0.005,
                                                                 kill_at_key=f"{t.id}-confirm-3-C"), **kw)
    with pytest.raises(SimulatedKill):
        loop.run()
    loop.ledger.close()
    assert open_ledger(killed_dir).trial(t.id).status == "confirming"
    assert resume(killed_dir, InjectedRounds(draw="d9", cv=0.03, confirm_cv=0.005), **kw).run() == DONE
    assert outcome(killed_dir) == outcome(run_dir)
    assert open_ledger(killed_dir).get("settled_close_calls") == settled


def test_a_settled_close_call_that_its_re_measure_cannot_show_ends_at_its_limit_and_stays_named(tmp_path):
    """The same close call on a machine whose fresh pairs are noisier (6 %): its confirmation ends
    inconclusive at its limit (twice --settle-close-calls, capped by the confirmations' own), nothing
    is accepted, and the report names it as a close call of that confirmation."""
    run_dir, loop = start(tmp_path, InjectedRounds(draw="d9", cv=0.03, confirm_cv=0.06), min_gain=0.03, factors=[2],
                          settle_close_calls=5000, kernels=["row_xor_sum"])
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    [tid] = ledger.get("settled_close_calls")
    t = ledger.trial(tid)
    assert t.status == "rejected" and t.reason == acc.REASON_INCONCLUSIVE and "a close call's limit" in t.detail
    assert t.evidence["confirm"]["rounds"] == 40  # --max-rounds 20: the confirmations end at 40
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["accepted"] == []
    [named] = summary["close_calls"]
    assert named["trial"] == tid and named["phase"] == "confirm" and named["pairs"] == 40


def test_a_close_call_stopped_behind_a_winner_that_fails_its_re_measure_is_confirmed_after_it(tmp_path):
    """matmul_tiled's path (bench_search, 2026-11-28): x4 stopped at 10 pairs behind x8, which
    had passed screening; x8 then fails its re-measure (here it crashes there). The loop is left
    without a winner, so its close call goes to a confirmation of its own (the run's second), and
    is accepted. A run killed inside that confirmation resumes to the same result."""
    eight = copies_in_a_row("acc += values[c] ^ static_cast<unsigned>(c);", 8)  # only the x8 rewrite holds it
    kw = dict(min_gain=0.03, kernels=["row_xor_sum"], factors=[2, 4, 8])
    run_dir, loop = start(tmp_path / "run", InjectedRounds(draw="d21", cv=0.03, crash_if=(eight, 10**6)), **kw)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = {t.factor: t for t in ledger.trials()}
    assert trials[8].status == "rejected" and trials[8].reason == "crash"
    assert ledger.decision(trials[8].id, "screen")["decision"]["verdict"] == acc.ACCEPT  # it had passed screening
    x4 = trials[4]
    assert ledger.get("settled_close_calls") == [x4.id] and x4.status == "accepted"
    # stopped behind x8 pair by pair (racing.ratio_to_rival), before the rule for a rival that passed applied
    assert x4.evidence["close_call"]["detail"].startswith(f"behind trial {trials[8].id} of the same loop after 10 pairs")
    assert "paired, its ratio over" in x4.evidence["close_call"]["detail"]
    assert ledger.decision(x4.id, "confirm")["confirmation"]["k"] == 2
    ledger.close()

    killed_dir, loop = start(tmp_path / "killed", InjectedRounds(draw="d21", cv=0.03, crash_if=(eight, 10**6),
                                                                 kill_at_key=f"{x4.id}-confirm-2-B"), **kw)
    with pytest.raises(SimulatedKill):
        loop.run()
    loop.ledger.close()
    assert resume(killed_dir, InjectedRounds(draw="d21", cv=0.03, crash_if=(eight, 10**6)), **kw).run() == DONE
    assert outcome(killed_dir) == outcome(run_dir)

    # Without it (--settle-close-calls 0) the loop ends with nothing accepted and names x4 as a close call.
    off_dir, loop = start(tmp_path / "off", InjectedRounds(draw="d21", cv=0.03, crash_if=(eight, 10**6)), settle_close_calls=0, **kw)
    assert loop.run() == DONE
    summary = json.loads((off_dir / "summary.json").read_text())
    assert summary["accepted"] == [] and [c["trial"] for c in summary["close_calls"]][:1] == [x4.id]


def test_the_race_never_raises_the_bar_the_a_a_set(tmp_path):
    """The reverse: quiet A/A pairs (1 %), a noisier race (12 %). Its pairs' intervals carry their own
    noise; the bar stays what the A/A set (a bar set too high would lose real gains unseen)."""
    run_dir, loop = start(tmp_path, InjectedRounds(cv=0.12, aa_cv=0.01))
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    assert ledger.get("noise_floor")["spread"] < 0.03
    assert not ledger.get("noise_floor_retakes") and ledger.get("effective_min_gain") == 0.02
    assert "re-taken" not in (run_dir / "report.md").read_text()


@pytest.mark.parametrize("kill_at", [9, 40, 70])  # the A/A, the race, the combination's confirmation
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
    started = {}

    class StopAfter(InjectedRounds):
        def __call__(self, exe, round_dir, key):
            result = super().__call__(exe, round_dir, key)
            if len(self.calls) == 30:
                started["loop"].request_stop()  # what the SIGINT handler does
            return result

    runner = StopAfter()
    run_dir, loop = start(tmp_path, runner)
    started["loop"] = loop
    with pytest.raises(Stopped):
        loop.run()
    # The pair in flight finished and was recorded; no further pair started. (A race files one
    # baseline run under both candidates it is paired with: count runs, not rows.)
    assert len(runner.calls) in (30, 31, 32)
    con = sqlite3.connect(str(run_dir / "ledger.db"))
    runs = {json.loads(o).get("baseline_run") or f"{t}-{p}-{i}-{r}"
            for t, p, i, r, o in con.execute("SELECT trial_id, phase, idx, role, outputs FROM rounds")}
    assert len(runs) == len(runner.calls)
    assert resume(run_dir, InjectedRounds()).run() == DONE
    assert outcome(run_dir) == outcome(reference_dir)


def test_wrong_output_is_rejected_whatever_its_speed(tmp_path):
    # The injected measurement says every 4-copy unroll of the xor loop changes the outputs.
    runner = InjectedRounds(wrong_output_if=copies_in_a_row("acc += values[c] ^ static_cast<unsigned>(c);", 4))
    run_dir, loop = start(tmp_path, runner, kernels=["row_xor_sum"])
    assert loop.run() == DONE
    trials = {t.factor: t for t in open_ledger(run_dir).trials()}
    assert trials[4].status == "rejected" and trials[4].reason == "wrong output"
    assert "digests differ" in trials[4].detail
    assert trials[2].status == "accepted"


def test_a_candidate_that_crashes_mid_race_is_rejected_and_the_race_goes_on(tmp_path):
    """A crash on the third pair: its failed round has no value, so the evidence is the two
    complete pairs before it, and the other racer of the loop is still decided on its own pairs."""
    body = "acc += values[c] ^ static_cast<unsigned>(c);"
    crash = copies_in_a_row(body, 4)  # the x4 rewrite, not the x2
    runner = InjectedRounds(crash_if=(crash, 2))
    run_dir, loop = start(tmp_path, runner, kernels=["row_xor_sum"])
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = {t.factor: t for t in ledger.trials()}
    assert trials[4].status == "rejected" and trials[4].reason == "crash"
    assert "Segmentation fault" in trials[4].detail and "round 2" in trials[4].detail
    assert ledger.decision(trials[4].id, "screen")["rounds"] == 2
    assert trials[2].status == "accepted"


def test_max_trials_and_restriction_options_are_obeyed(tmp_path):
    run_dir, loop = start(tmp_path, InjectedRounds(), max_trials=1, kernels=["row_weighted_sum"], factors=[4])
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = ledger.trials()
    assert [(t.kernel, t.rule, t.factor) for t in trials] == [("row_weighted_sum", "unroll_manual", 4)]
    assert "max-trials" in ledger.get("stop_reason")
    assert re.search(r"trials: 1, accepted: 1", (run_dir / "report.md").read_text())


# ---- compile first, the race, carrying winners (issue 17) --------------------------------------

THREE = PROGRAMS / "three_loops.cu"
# The weighted and shift loops' x4 each save about 2.5 % of three_loops' time in the injected model.
THREE_OPTIONS = dict(source=THREE, min_gain=0.01)


@pytest.fixture(scope="module")
def three_loops(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("three")
    runner = InjectedRounds()
    run_dir, loop = start(tmp, runner, **THREE_OPTIONS)
    assert loop.run() == DONE
    return run_dir, runner


def test_the_loops_winners_are_confirmed_together_before_any_alone(three_loops):
    run_dir, runner = three_loops
    ledger = open_ledger(run_dir)
    accepted = ledger.trials(status="accepted")
    # One combination of the three loops' screened winners (x4 each), built on the baseline they
    # were screened on and confirmed fresh: the run's one confirmation, at its first level.
    assert len(accepted) == 1
    combo = accepted[0]
    assert combo.rule == "combination" and combo.generation == 0 and len(combo.components) == 3
    parts = [ledger.trial(c) for c in combo.components]
    assert {p.kernel for p in parts} == {"row_xor_sum", "row_weighted_sum", "row_shift_sum"} and all(p.factor == 4 for p in parts)
    assert all(p.status == "carried" and f"trial {combo.id}" in p.detail for p in parts)
    assert [ledger.decision(t.id, "confirm")["confirmation"]["k"] for t in accepted] == [1]
    assert sum(1 for _ in ledger.decisions("confirm")) == 1
    # A combination's test ends at 20 pairs (looks at 5, 10, 15, 20): a close call goes to the parts alone.
    assert ledger.decision(combo.id, "confirm")["plan"]["looks"] == [5, 10, 15, 20]
    assert (run_dir / "final.cu").read_text().count("for (; cols - c >= 4; ++c) {") == 3  # all three loops by hand
    # Every candidate was built before any was measured: the first screening round comes after the last build.
    states = [s for _, s, _ in ledger.transitions()]
    assert states[:6] == ["baseline", "noise-floor", "rank", "propose", "build", "screen"]
    assert "combine" in states
    # `review RUN` prints the run's summary as Markdown with the search section (report.md is now the
    # report package's page, which does not show it yet).
    from rocm_perf.optimize.artifacts import render_markdown

    summary = json.loads((run_dir / "summary.json").read_text())
    review = render_markdown(summary)
    assert f"combination of trials {', '.join(map(str, combo.components))}" in review
    from rocm_perf.optimize.artifacts import terminal_summary

    line = next(x for x in terminal_summary(summary).splitlines() if x.startswith(f"  + #{combo.id} "))
    assert " combination: +" in line and " x0" not in line  # a combination has no unroll factor to show
    assert "## Search" in review and "critical-path share" in review
    # The race's plan carries the A/A spread its futility rule went by before 20 pairs.
    known = summary["search"]["race_plan"]["known_spread"]
    assert known == ledger.get("noise_floor")["spread"] and f"went by the A/A spread, {known:.1%}" in review
    assert {t["id"] for t in summary["carried"]} == set(combo.components)


def test_a_combination_that_does_not_pay_is_followed_by_one_winner_at_a_time(tmp_path):
    # Unrolling both the weighted and the shift loop costs 15 % (say, registers): together they lose.
    run_dir, loop = start(tmp_path, InjectedRounds(interaction=0.15), **THREE_OPTIONS)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    combos = [t for t in ledger.trials() if t.rule == "combination"]
    assert len(combos) == 1 and combos[0].status == "rejected" and combos[0].reason == "slower"
    assert combos[0].generation == 0 and len(combos[0].components) == 3
    # Then the best loop's winner alone (xor x4), on the baseline it was screened on ...
    alone = [t for t in ledger.trials(status="accepted") if not t.components]
    assert [(t.kernel, t.factor, t.generation) for t in alone] == [("row_xor_sum", 4, 0)]
    # ... and the two others carried onto the newer baselines each alone, best first (they were tried together).
    carries = [t for t in ledger.trials() if t.components and t.rule != "combination"]
    assert len(carries) == 2
    # Four confirmations, each at the run's next alpha-spending level: alpha / (k (k + 1)).
    levels = [d["confirmation"] for d in (ledger.decision(t.id, "confirm") for t in [combos[0], *alone, *carries])]
    assert [lv["k"] for lv in levels] == [1, 2, 3, 4]
    assert [lv["alpha"] for lv in levels] == pytest.approx([0.05 / 2, 0.05 / 6, 0.05 / 12, 0.05 / 20])
    assert carries[0].status == "accepted" and carries[1].status == "rejected"
    first = ledger.trial(carries[0].components[0])
    second = ledger.trial(carries[1].components[0])
    assert first.status == "carried" and second.status == "rejected"
    assert f"when carried onto a newer baseline as trial {carries[1].id}" in second.detail
    # The report says the rejected carry's rewrite was an alternative to the accepted ones, not an extra.
    summary = json.loads((run_dir / "summary.json").read_text())
    (alt,) = summary["alternatives"]
    assert (alt["trial"], alt["carry"], alt["reason"]) == (second.id, carries[1].id, carries[1].reason)
    assert alt["onto"] == [alone[0].id, carries[0].id] and alt["measured"]["estimate"] > 1.0
    assert [r["trial"] for r in alt["rivals"]] == [alone[0].id, carries[0].id]  # both screened on the original
    assert f"on top of trial {alone[0].id}, trial {carries[0].id} it measured" in alt["words"]
    report = (run_dir / "report.md").read_text()
    assert "## Alternatives that did not add" in report and f"| {second.id} | " in report.split("## Alternatives")[1]
    assert "<h3>Alternatives that did not add</h3>" in (run_dir / "report.html").read_text()
    plain = render_markdown(summary)  # the report.md the loop writes without the HTML report's hook
    assert "## Alternatives that did not add" in plain and alt["words"] in plain
    assert "1 screened winner of other loops added nothing" in terminal_summary(summary)
    final = (run_dir / "final.cu").read_text()
    assert final.count(SHIFT_BODY) > 1 or final.count(WEIGHTED_BODY) > 1
    assert not (final.count(SHIFT_BODY) > 1 and final.count(WEIGHTED_BODY) > 1)


def test_a_combination_behind_its_best_part_alone_is_not_taken(tmp_path):
    """Unrolling the weighted and the shift loop together costs 8 %: the three loops' combination is
    still 3 % faster than the baseline (it passes the bar), but the xor loop's x4 alone is 5.5 %
    faster. Taking the combination would end the search with less: its parts go on alone."""
    run_dir, loop = start(tmp_path, InjectedRounds(interaction=0.08), **THREE_OPTIONS)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    (combo,) = [t for t in ledger.trials() if t.rule == "combination"]
    decision = ledger.decision(combo.id, "confirm")
    assert combo.status == "rejected" and combo.reason == "behind its best part"
    assert decision["critical_path"]["high"] < 0.99  # it did pass the test
    xor = next(ledger.trial(c) for c in combo.components if ledger.trial(c).kernel == "row_xor_sum")
    assert f"trial {xor.id}" in combo.detail and "confirmed alone" in combo.detail
    assert decision["critical_path"]["estimate"] >= xor.evidence["screen"]["critical_path"]["estimate"]
    # Then the xor loop's winner alone, and the weighted loop's carried onto it; the shift loop's,
    # carried onto both, pays the 8 % and is rejected.
    accepted = ledger.trials(status="accepted")
    assert [(t.kernel, t.generation) for t in accepted] == [("row_xor_sum", 0), ("row_weighted_sum", 1)]
    final = (run_dir / "final.cu").read_text()
    assert final.count(WEIGHTED_BODY) > 1 and final.count(SHIFT_BODY) == 1


def _first_call(calls: list[str], pattern: str) -> str:
    return next(c for c in calls if re.search(pattern, c))


@pytest.mark.parametrize("where", ["race start", "race middle", "combination confirm", "combination build"])
def test_resume_after_a_kill_in_the_new_states(tmp_path, three_loops, where):
    reference_dir, reference = three_loops
    combo = next(t for t in open_ledger(reference_dir).trials() if t.rule == "combination")
    backend = None
    if where == "race start":
        runner = InjectedRounds(kill_at_key=_first_call(reference.calls, r"-screen-0-C$"))
    elif where == "race middle":
        screen = [c for c in reference.calls if "-screen-" in c]
        runner = InjectedRounds(kill_at_key=screen[len(screen) // 2])
    elif where == "combination confirm":
        runner = InjectedRounds(kill_at_key=_first_call(reference.calls, rf"^{combo.id}-confirm-2-"))
    else:
        runner = InjectedRounds()
        backend = CopyBuildDouble(kill_at_build=2 + 6 + 1)  # baseline and twin, six candidates, the combination
    run_dir, loop = start(tmp_path, runner, backend=backend, **THREE_OPTIONS)
    with pytest.raises(SimulatedKill):
        loop.run()
    loop.ledger.close()
    decided = {t.id for t in open_ledger(run_dir).trials() if t.status in ("accepted", "rejected", "carried")}
    again = InjectedRounds()
    assert resume(run_dir, again, **THREE_OPTIONS).run() == DONE
    assert outcome(run_dir) == outcome(reference_dir)
    assert (run_dir / "final.cu").read_bytes() == (reference_dir / "final.cu").read_bytes()
    assert not any(int(k.split("-")[0]) in decided for k in again.calls if not k.startswith("0-"))
    if where != "combination build":
        assert runner.calls[-1] in again.calls  # the round in flight is measured again


class PragmaBlindBuild(CopyBuildDouble):
    """Build double whose 'compiler' ignores `#pragma unroll 1` and treats every larger factor as
    8, as a compiler that already unrolls by 8 would: pragma candidates build the baseline's
    program or each other's."""

    def build(self, source, out_dir, flags=None, timeout=600):
        program = super().build(source, out_dir, flags, timeout)
        text = program.executable.read_text()
        text = re.sub(r"\n[ \t]*#pragma unroll 1\n", "\n", text)
        program.executable.write_text(re.sub(r"#pragma unroll \d+", "#pragma unroll 8", text))
        return program


def test_duplicates_are_dropped_before_anything_is_measured(tmp_path):
    runner = InjectedRounds()
    run_dir, loop = start(tmp_path, runner, backend=PragmaBlindBuild(), rules=["unroll_pragma"], factors=[1, 2, 4],
                          kernels=["row_xor_sum"])
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = {t.factor: t for t in ledger.trials()}
    assert trials[1].reason == "duplicate"
    assert trials[1].detail.startswith("no change in machine code: duplicate of the baseline")
    kept, dropped = sorted((trials[2], trials[4]), key=lambda t: -t.expected_value)
    assert dropped.reason == "duplicate" and dropped.detail.startswith(f"no change in machine code: duplicate of trial {kept.id} ")
    measured = {int(k.split("-")[0]) for k in runner.calls if "-screen-" in k}
    assert measured == {kept.id}  # the duplicates were never run
    from rocm_perf.optimize.artifacts import render_markdown  # review's Markdown (report.md is the report package's)

    assert "| duplicate | no change in machine code: duplicate of the baseline" in render_markdown(json.loads((run_dir / "summary.json").read_text()))


class Clock:
    """A clock the injected measurement moves: each program run takes one second."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TimedRounds(InjectedRounds):
    """Injected rounds that each take one second of the injected clock."""

    def __init__(self, clock: "Clock", **kwargs):
        super().__init__(**kwargs)
        self.clock = clock

    def __call__(self, exe, round_dir, key):
        self.clock.now += 1.0
        return super().__call__(exe, round_dir, key)


class SlowBuild(CopyBuildDouble):
    """Build double whose every build takes `seconds` of the injected clock (a loaded machine)."""

    def __init__(self, clock: "Clock", seconds: float):
        super().__init__()
        self.clock = clock
        self.seconds = seconds

    def build(self, source, out_dir, flags=None, timeout=600):
        self.clock.now += self.seconds
        return super().build(source, out_dir, flags, timeout)


def test_the_budget_goes_to_candidates_by_expected_value_not_first_come(tmp_path):
    clock = Clock()

    opt = options(tmp_path, **THREE_OPTIONS, time_budget_s=90)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    runner = TimedRounds(clock)
    loop = OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), runner, TOOLS, None, clock=clock))
    assert loop.run() == DONE
    # Reference run and A/A: 13 s. Room for two confirmations and the final check would be 92 s, more
    # than the budget leaves: it is capped at half the budget (45 s), so 16 pairs are left, half of
    # them for first rungs: one candidate, the one of highest expected value.
    ledger = open_ledger(run_dir)
    # (After that one is accepted, the reserve it no longer needs for confirmations is lent to the
    # next generation's candidates: they come later and are not the point here.)
    first = [t for t in ledger.trials(generation=0) if not t.components]
    measured = {int(k.split("-")[0]) for k in runner.calls if "-screen-" in k} & {t.id for t in first}
    best = max(first, key=lambda t: (t.ordering.get("score", 0), -t.id))
    assert measured == {best.id} and best.kernel == "row_xor_sum"
    refused = [t for t in first if t.reason == "budget"]
    assert len(refused) == 5 and all("higher expected value" in t.detail for t in refused)


def test_what_won_in_an_earlier_run_orders_the_next_one_on_this_machine(tmp_path):
    first, loop = start(tmp_path, InjectedRounds())
    assert loop.run() == DONE
    assert (tmp_path / "runs" / "search_prior.db").exists()
    second, loop = start(tmp_path, InjectedRounds(), new=True)
    assert loop.run() == DONE
    ledger = open_ledger(second)
    for t in ledger.trials():
        if t.components:
            continue
        prior = t.ordering["prior"]
        assert prior["tried"] == 2  # the same rule and factor on both loops (one shape) in the first run
        weight = t.ordering["factors"]["prior of earlier runs"]
        assert (weight > 1.0) if t.factor == 4 else (weight < 1.0)  # x4 won on both loops, x2 lost
    assert "prior of earlier runs" in (second / "report.md").read_text()


@pytest.mark.parametrize("budget_s, build_s", [(100, 1), (300, 30), (360, 30), (420, 30), (1000, 200)])
def test_budget_aware_building_ends_and_spends_the_budget(tmp_path, budget_s, build_s):
    """Short budgets with slow builds, where an accept moves a screened winner onto a new baseline
    (a carry) and the race leaves candidates unbuilt: the run must end (an alarm turns a cycle of
    the states into a failure) and must not stop early with candidates still unbuilt unless it lent
    out its reserve for confirmations first."""
    clock = Clock()

    def cycle(signum, frame):
        raise AssertionError("the loop did not end within 120 s: its states cycle")

    opt = options(tmp_path, **THREE_OPTIONS, time_budget_s=budget_s)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    loop = OptimizeLoop(run_dir, ledger, opt, Services(SlowBuild(clock, build_s), TimedRounds(clock), TOOLS, None, clock=clock))
    old = signal.signal(signal.SIGALRM, cycle)
    signal.alarm(120)
    try:
        assert loop.run() == DONE
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    ledger = open_ledger(run_dir)
    trials = ledger.trials()
    latest = {t.loop_key: max(x.generation for x in trials if x.loop_key == t.loop_key) for t in trials}
    left = [t for t in trials if t.reason == "budget" and not t.build_key and t.generation == latest[t.loop_key]]
    if left and not str(ledger.get("stop_reason")).startswith("--time-budget"):
        assert ledger.get("reserved_confirmations") == 0, (ledger.get("stop_reason"), clock.now)
    # every carry that was planned was built (a carry left unbuilt is what made `combine` cycle)
    assert all(t.build_key for t in trials if t.components)


def test_a_short_budget_with_slow_builds_still_measures_the_top_candidate(tmp_path):
    clock = Clock()

    opt = options(tmp_path, **THREE_OPTIONS, time_budget_s=300)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    runner, backend = TimedRounds(clock), SlowBuild(clock, 30.0)
    loop = OptimizeLoop(run_dir, ledger, opt, Services(backend, runner, TOOLS, None, clock=clock))
    assert loop.run() == DONE
    # Baseline builds, reference run and A/A: 73 s. Building all six candidates (180 s) would leave
    # no pair beyond the reserve for confirmations; the build phase stops when the pairs left can
    # race no more candidates than it has built.
    ledger = open_ledger(run_dir)
    trials = [t for t in ledger.trials() if not t.components]
    measured = {int(k.split("-")[0]) for k in runner.calls if "-screen-" in k}
    best = max(trials, key=lambda t: (t.expected_value, -t.id))
    assert best.id in measured
    not_built = [t for t in trials if t.reason == "budget" and not t.build_key]
    assert not_built and all(t.detail.startswith("not built") for t in not_built)
    assert backend.builds - 2 == len(trials) - len(not_built)  # the two baseline builds, then the built ones
    assert all(t.expected_value <= min(b.expected_value for b in trials if b.build_key) for t in not_built)


def test_a_close_call_confirms_past_max_rounds_while_the_budget_lasts(tmp_path, monkeypatch):
    """Row xor sum x4 is 7.2 % faster against a 5 % bar; its fresh re-measure is noisy (5 %). Within
    --max-rounds (20) it stays inconclusive; the confirmation looks on to twice that and accepts at
    40. With the time budget spent on the way, it stops at the first pair past --max-rounds that
    finds it spent, inconclusive, and says why."""
    from rocm_perf.optimize import confirmation

    def confirmations(run_dir):
        return [(d["verdict"], d["rounds"], d.get("detail", "")) for _, _, d in open_ledger(run_dir).decisions("confirm")]

    run_dir, loop = start(tmp_path / "reach", InjectedRounds(draw="d19", cv=0.005, confirm_cv=0.05), min_gain=0.05)
    assert loop.run() == DONE
    assert confirmations(run_dir) == [(acc.ACCEPT, 40, "")]
    with monkeypatch.context() as m:  # the confirmation as it was: --max-rounds pairs at most
        m.setattr(confirmation, "CONFIRMATION_REACH", 1)
        run_dir, loop = start(tmp_path / "within", InjectedRounds(draw="d19", cv=0.005, confirm_cv=0.05), min_gain=0.05)
        assert loop.run() == DONE
    assert [c[:2] for c in confirmations(run_dir)] == [(acc.INCONCLUSIVE, 20)]

    clock = Clock()
    opt = options(tmp_path / "budget", min_gain=0.05, time_budget_s=100)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    runner = TimedRounds(clock, draw="d19", cv=0.005, confirm_cv=0.05)
    assert OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), runner, TOOLS, None, clock=clock)).run() == DONE
    [(verdict, rounds, detail)] = confirmations(run_dir)
    assert verdict == acc.INCONCLUSIVE and 20 < rounds < 40
    assert detail == f"--time-budget 100 s spent after {rounds} pairs, past --max-rounds 20"
    last_confirm_run = max(i for i, k in enumerate(runner.calls) if "-confirm-" in k) + 1
    assert last_confirm_run >= 100 > last_confirm_run - 2  # its last pair began before the budget ran out


class ClockedCopyBuild(CopyBuildDouble):
    """The build double on a backend that records each dispatch's CPU time and speed probe, as the
    host backend does (HostBackend.dispatch_clocks), so that --metric auto has alternatives."""

    def dispatch_clocks(self):
        return {"HOST_CPU_TIME_NS": "", "HOST_PROBE_NS": "", "HOST_INSTRUCTIONS": "refused", "HOST_CYCLES": "refused"}


class ClockedRounds(InjectedRounds):
    """InjectedRounds with the two clock paths: the core's speed (seeded per round) stretches the
    CPU time by `core_cv`; the probe's path cancels it but carries `probe_cv` of its own."""

    def __init__(self, core_cv: float, probe_cv: float, aa_core_cv: float | None = None, no_probe: bool = False):
        super().__init__(cv=0.0)
        self.core_cv, self.probe_cv = core_cv, probe_cv
        self.aa_core_cv = aa_core_cv  # the core's noise in the A/A pairs, when it differs (a moment of load then)
        self.no_probe = no_probe  # no probe reading (the host backend beside overlapping streams: pipeline.cu)

    def __call__(self, exe, round_dir, key):
        r = super().__call__(exe, round_dir, key)
        rng = random.Random(key)
        core_cv = self.aa_core_cv if self.aa_core_cv is not None and key.split("-")[1] == "aa" else self.core_cv
        core, probe = math.exp(rng.gauss(0, core_cv)), math.exp(rng.gauss(0, self.probe_cv))
        r.outputs["metrics"] = {"cpu-path": r.cp_ns * core, "probed-path": r.cp_ns * probe}
        if self.no_probe:
            del r.outputs["metrics"]["probed-path"]
            r.outputs["metrics_missing"] = {"probed-path": "65 dispatch(es) without HOST_PROBE_NS (streams overlap)"}
        return r


@pytest.mark.parametrize("core_cv, probe_cv, chosen", [(0.20, 0.03, "probed-path"), (0.01, 0.15, "cpu-path")])
def test_auto_decides_on_the_clock_path_its_aa_pairs_find_steadier(tmp_path, core_cv, probe_cv, chosen):
    run_dir, loop = start(tmp_path, ClockedRounds(core_cv, probe_cv), backend=ClockedCopyBuild(), aa_rounds=10)
    assert loop.opt.metric == "cpu-path"  # the default until the A/A pairs are in
    driver.STAGES["baseline"](loop.ctx)
    driver.STAGES["noise-floor"](loop.ctx)
    ledger = open_ledger(run_dir)
    recorded, floor = ledger.get("metric"), ledger.get("noise_floor")
    assert loop.opt.metric == recorded["name"] == chosen
    # These rounds carry only the two ends. Where the probe swings, the fit lands on 0 (cpu-path);
    # where the core swings, near 1: on 0.9 here, a path they lack, and then the steadier end over
    # the A/A pairs decides (no fit recorded).
    assert set(recorded["steadier_of"]) == set(recorded["aa_spreads"]) == {"cpu-path", "probed-path"}
    if chosen == "cpu-path":
        assert recorded["exponent_fit"]["exponent"] == pytest.approx(0.0, abs=0.05)
    else:
        assert recorded["exponent_fit"] is None or recorded["exponent_fit"]["exponent"] > 0.95
    assert floor["spread"] == pytest.approx(recorded["aa_spreads"][chosen])
    assert recorded["aa_spreads"][chosen] < 0.75 * recorded["aa_spreads"]["cpu-path"] or chosen == "cpu-path"
    ledger.close()
    # a resumed run decides on what the A/A pairs chose
    assert resume(run_dir, ClockedRounds(core_cv, probe_cv), backend=ClockedCopyBuild(), aa_rounds=10).opt.metric == chosen


def test_a_metric_chosen_in_a_moment_of_load_is_chosen_again_at_the_first_rung(tmp_path):
    """The A/A pairs fall in a moment of load that the probe cancels (core 20 %, probe 3 %) and
    choose probed-path; the race's pairs run on a steady core (0.5 %): over the A/A pairs and the
    first rung's, cpu-path is the steadier, and the run decides on it from that rung on, with the
    noise floor taken again on it. Every screening decision names cpu-path; the reports say why."""
    run_dir, loop = start(tmp_path, ClockedRounds(0.005, 0.03, aa_core_cv=0.20), backend=ClockedCopyBuild(), aa_rounds=10)
    driver.STAGES["baseline"](loop.ctx)
    driver.STAGES["noise-floor"](loop.ctx)
    ledger = open_ledger(run_dir)
    assert ledger.get("metric")["name"] == "probed-path"  # the A/A pairs' choice
    aa_floor = ledger.get("noise_floor")
    ledger.close()
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    recorded = ledger.get("metric")
    check = recorded["race_check"]
    assert recorded["name"] == "cpu-path" and check["from"] == "probed-path" and check["rung"] == 5
    assert check["pairs"] == 10 + 5 * check["racers"] and check["spreads"]["cpu-path"] < 0.75 * check["spreads"]["probed-path"]
    floor = ledger.get("noise_floor")
    assert floor["spread"] == pytest.approx(check["spreads"]["cpu-path"]) and floor["spread"] != aa_floor["spread"]
    screened = [t.evidence["screen"] for t in ledger.trials() if "decision" in t.evidence.get("screen", {})]
    assert screened and all(e["metric"] == "cpu-path" for e in screened)
    ledger.close()
    summary = json.loads((run_dir / "summary.json").read_text())
    for text in ((run_dir / "report.md").read_text(), (run_dir / "report.html").read_text(), terminal_summary(summary)):
        assert "the A/A pairs chose probed-path" in text and "cpu-path was steadier" in text
    # a resumed run keeps deciding on it
    assert resume(run_dir, ClockedRounds(0.005, 0.03, aa_core_cv=0.20), backend=ClockedCopyBuild(), aa_rounds=10).opt.metric == "cpu-path"


def test_a_metric_no_round_records_is_no_choice_at_the_first_rung(tmp_path):
    """pipeline.cu on the host backend: its overlapping streams leave no probe reading, so only
    cpu-path can decide, at the A/A and at the first rung (a 12-program pass stopped there once)."""
    run_dir, loop = start(tmp_path, ClockedRounds(0.01, 0.01, no_probe=True), backend=ClockedCopyBuild(), aa_rounds=10)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    recorded = ledger.get("metric")
    assert recorded["name"] == "cpu-path" and list(recorded["race_check"]["spreads"]) == ["cpu-path"]
    ledger.close()


def test_a_metric_the_first_rung_confirms_is_kept(tmp_path):
    run_dir, loop = start(tmp_path, ClockedRounds(0.01, 0.15), backend=ClockedCopyBuild(), aa_rounds=10)
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    recorded = ledger.get("metric")
    assert recorded["name"] == recorded["race_check"]["from"] == "cpu-path"
    ledger.close()
    assert "and kept over them and the race's first rung" in (run_dir / "report.md").read_text()


class TwoSpeedRounds(InjectedRounds):
    """InjectedRounds whose rounds are reduced from dispatch-level clocks by the real code
    (measure.clock_paths, probe_exponent.round_statistics), on a core with two speeds: during a
    third of the dispatches (seeded) everything runs slower, the speed probe timed before it by
    1.8x and the kernel by 1.8 ** `follows`, each with small jitter of its own (the probe's 3 %, the
    kernel's 1 %). cpu-path carries the core's swings, probed-path over-corrects them; the exponent
    the A/A rounds fit is about `follows`."""

    def __init__(self, follows: float, dispatches: int = 12):
        super().__init__(cv=0.0)
        self.follows, self.dispatches = follows, dispatches

    def __call__(self, exe, round_dir, key):
        from rocm_perf.optimize.measure import clock_paths
        from rocm_perf.trace import KernelSymbol, Trace
        from rocm_perf.trace.host_clocks import HOST_CPU_TIME_NS, HOST_PROBE_NS

        r = super().__call__(exe, round_dir, key)
        rng = random.Random("speed" + key)
        n = self.dispatches
        slow = [math.log(1.8) if rng.random() < 1 / 3 else 0.0 for _ in range(n)]
        probe = [1e6 * math.exp(s + rng.gauss(0, 0.03)) for s in slow]
        cpu = [r.cp_ns / n * math.exp(self.follows * s + rng.gauss(0, 0.01)) for s in slow]
        starts = [int(sum(cpu[:i])) for i in range(n)]
        trace = Trace.from_rows(start=starts, end=[s + int(c) for s, c in zip(starts, cpu)], kernel=[0] * n,
                                symbols=[KernelSymbol("_Z6kernelv", "kernel()")], stream=[0] * n, queue=[0] * n)
        trace.counters = {HOST_CPU_TIME_NS: np.array(cpu), HOST_PROBE_NS: np.array(probe)}
        r.outputs["metrics"], _ = clock_paths([trace])
        return r


def test_auto_decides_on_the_adjusted_path_at_the_exponent_its_aa_pairs_fit(tmp_path):
    run_dir, loop = start(tmp_path, TwoSpeedRounds(follows=0.4), backend=ClockedCopyBuild(), aa_rounds=10)
    driver.STAGES["baseline"](loop.ctx)
    driver.STAGES["noise-floor"](loop.ctx)
    ledger = open_ledger(run_dir)
    recorded, floor = ledger.get("metric"), ledger.get("noise_floor")
    assert loop.opt.metric == recorded["name"] == "adjusted-path:0.4"
    fit = recorded["exponent_fit"]
    assert fit["slope"] == pytest.approx(0.4, abs=0.05) and fit["rounds"] == 20 and fit["correlation"] > 0.9
    spreads = recorded["aa_spreads"]
    assert spreads["adjusted-path:0.4"] < 0.5 * min(spreads["cpu-path"], spreads["probed-path"])
    assert floor["spread"] == pytest.approx(spreads["adjusted-path:0.4"])
    assert recorded["steadier_of"] == ["adjusted-path:0.4", "cpu-path", "probed-path"]
    assert "to the power 0.4" in recorded["meaning"]
    ledger.close()
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    recorded = ledger.get("metric")
    assert recorded["name"] == recorded["race_check"]["from"] == "adjusted-path:0.4"  # the ends were not clearly steadier
    screened = [t.evidence["screen"] for t in ledger.trials() if "decision" in t.evidence.get("screen", {})]
    assert screened and all(e["metric"] == "adjusted-path:0.4" for e in screened)
    assert [t for t in ledger.trials() if t.status == "accepted"]  # two_loops.cu's real gains, found
    ledger.close()
    report = (run_dir / "report.md").read_text()
    assert "exponent from the slope of log cpu-path on the log of the probe over the 20 A/A rounds, 0.4" in report
    assert "Probe-adjusted CPU-time critical path (exponent 0.4) 1.1" in report  # the headline
    assert resume(run_dir, TwoSpeedRounds(follows=0.4), backend=ClockedCopyBuild(), aa_rounds=10).opt.metric == "adjusted-path:0.4"


@pytest.mark.parametrize("follows, chosen", [(-0.3, "cpu-path"), (0.0, "cpu-path"), (1.5, "probed-path")])
def test_an_exponent_fitted_at_or_past_an_end_decides_on_that_end(tmp_path, follows, chosen):
    run_dir, loop = start(tmp_path, TwoSpeedRounds(follows=follows), backend=ClockedCopyBuild(), aa_rounds=10)
    driver.STAGES["baseline"](loop.ctx)
    driver.STAGES["noise-floor"](loop.ctx)
    assert loop.opt.metric == chosen
    ledger = open_ledger(run_dir)
    fit = ledger.get("metric")["exponent_fit"]
    assert fit["exponent"] == min(1.0, max(0.0, fit["slope"])) and (fit["slope"] > 1.05 if follows > 1 else fit["slope"] < 0.05)
    ledger.close()


class MovedProbeRounds(InjectedRounds):
    """InjectedRounds with the two clock paths, where every rewritten program slows the speed probe
    that follows its kernels by `shift` (as matmul_tiled's `#pragma unroll 8` did on a real VM:
    tests/data/measured/probe_shift_pairs.json). `real_gain`: the rewrites keep their CPU-time gains;
    else every program spends the same CPU time, and only probed-path reads the rewrites faster."""

    def __init__(self, shift: float, real_gain: bool, core_cv: float = 0.05, probe_cv: float = 0.02):
        super().__init__(cv=0.0)
        self.shift, self.real_gain, self.core_cv, self.probe_cv = shift, real_gain, core_cv, probe_cv

    def __call__(self, exe, round_dir, key):
        r = super().__call__(exe, round_dir, key)
        rewritten = r.cp_ns < 99.9e6  # two_loops.cu's original takes 100 ms; its rewrites less
        rng = random.Random(key + Path(exe).read_text())
        core, probe_noise = math.exp(rng.gauss(0, self.core_cv)), math.exp(rng.gauss(0, self.probe_cv))
        work = r.cp_ns if self.real_gain else 100e6
        cpu = work * core
        probe = core * probe_noise * (self.shift if rewritten else 1.0)
        r.outputs["metrics"] = {"cpu-path": cpu, "probed-path": cpu / probe}
        return r


def test_a_candidate_that_only_moves_the_speed_probe_is_not_accepted_on_probed_path(tmp_path):
    run_dir, loop = start(tmp_path, MovedProbeRounds(1.25, real_gain=False), backend=ClockedCopyBuild(),
                          metric="probed-path")
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    trials = ledger.trials()
    assert not [t for t in trials if t.status == "accepted"]
    screened = [t for t in trials if t.evidence.get("screen", {}).get("decision", {}).get("verdict") == "accept"]
    assert screened  # probed-path alone would have taken them: the race passed them on it
    moved = [t for t in trials if t.reason == "moved the speed probe"]
    assert moved
    confirm = moved[0].evidence["confirm"]
    assert confirm["probe_shift"]["low"] > 1.0 and confirm["critical_path"]["high"] < 0.98
    assert confirm["plain"]["metric"] == "cpu-path" and confirm["plain"]["low"] < 0.98 < confirm["plain"]["high"]
    assert "speed probe read x1.2" in moved[0].detail
    ledger.close()


def test_a_real_gain_that_also_moves_the_probe_is_accepted_once_cpu_path_passes_and_the_report_says_so(tmp_path):
    run_dir, loop = start(tmp_path, MovedProbeRounds(1.25, real_gain=True), backend=ClockedCopyBuild(),
                          metric="probed-path")
    assert loop.run() == DONE
    ledger = open_ledger(run_dir)
    accepted = [t for t in ledger.trials() if t.status == "accepted"]
    assert accepted
    confirm = accepted[0].evidence["confirm"]
    assert confirm["probe_shift"]["low"] > 1.0
    assert confirm["plain"]["high"] < 0.98  # the accept held on cpu-path over the same pairs
    assert "speed probe read x1.2" in confirm["detail"] and "cpu-path over the same pairs passes too" in confirm["detail"]
    report = (run_dir / "report.md").read_text()
    assert "speed probe, candidate's readings over the baseline's:" in report and "slower in its rounds" in report
    # the run's headline number on probed-path comes with cpu-path over the same final-check pairs
    summary = json.loads((run_dir / "summary.json").read_text())
    plain, final = summary["final_check_plain"], summary["final_check"]
    assert plain["metric"] == "cpu-path" and plain["n"] == final["n"] and plain["estimate"] > final["estimate"]
    assert re.search(r"speed-up \(probed-path\) [0-9.]+x \[[^]]*\]; cpu-path over the same pairs [0-9.]+x", report)
    ledger.close()
