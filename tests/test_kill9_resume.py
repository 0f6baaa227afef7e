"""kill -9 of `optimize`, `sweep` and `apply` at a few moments (tests/kill_moments.py): each resume
completes once, no trial is lost or recorded twice, nothing rocm-perf started outlives the kill,
and the user's file is the original or the result, never a mix. The deep profile, 20 moments of
each with the decisions compared to an uninterrupted run, is tests/bench/bench_kill9.py.

Real builds and runs of tests/data/programs/unroll_wins.cu on the host backend.
"""

from __future__ import annotations

import time

import pytest

import kill_moments as km

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return km.reference_run(tmp_path_factory.mktemp("reference"))


@pytest.mark.parametrize("moment", ["build", "screen", "finish"])
@pytest.mark.long
def test_optimize_killed_at_a_moment_resumes_to_the_same_trials(moment, reference, tmp_path):
    _, expected = reference
    kill = km.kill_optimize(tmp_path, moment, 0.5)
    kill.judge(expected)
    assert not kill.missed, "the run finished before the kill: the moment was never tested"
    assert not kill.problems, kill
    assert kill.resumes == 1 and kill.outcome.keys == expected.keys


@pytest.mark.parametrize("moment,busy", [("baseline", "build"), ("screen", "program")])
@pytest.mark.long
def test_a_sweep_killed_while_its_target_builds_or_is_measured_resumes_the_same_run(moment, busy, reference, tmp_path):
    """The build moment: a sweep killed while its worker built the baseline and its twin on two
    threads left the worker and both compilers running for 12 s more (now it leaves at once)."""
    _, expected = reference
    kill = km.kill_sweep(tmp_path, moment, 0, busy=busy)
    kill.judge(expected)
    assert not kill.missed and kill.busy == busy, kill
    assert not kill.problems, kill
    assert kill.runs == 1 and kill.outcome.keys == expected.keys


@pytest.fixture(scope="module")
def apply_reference(tmp_path_factory):
    return km.reference_run(tmp_path_factory.mktemp("apply-reference"), km.APPLY_OPTIONS)


@pytest.mark.long
def test_apply_killed_at_any_moment_leaves_the_original_or_the_result(apply_reference):
    run_dir, expected = apply_reference
    user_file = run_dir.parent.parent / "src" / km.PROGRAM.name
    original = km.PROGRAM.read_bytes()
    final = (run_dir / "final.cu").read_bytes()
    if final == original:  # the machine was too noisy for the clear win to be called: nothing to write
        pytest.skip(f"the reference run accepted nothing ({expected.trials}): apply has nothing to write")
    user_file.write_bytes(original)
    start = time.monotonic()
    assert km.run("apply", str(run_dir)).returncode == 0
    span = time.monotonic() - start  # one whole apply on this machine now: the kills fall inside it
    for fraction in (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.2):
        r = km.kill_apply(run_dir, user_file, original, final, span * fraction)
        assert r.after_kill in ("original", "final"), r
        assert r.after_apply == "final", r
    last = km.kill_apply(run_dir, user_file, original, final, 600)  # never killed: the judge must see a write
    assert last.after_kill == "final" and last.exit_code == 0, last
