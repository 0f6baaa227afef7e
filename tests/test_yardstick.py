"""The guard on accepts decided on a probe-divided metric (optimize/yardstick.py), on rounds
measured on a real VM (tests/data/measured/probe_shift_pairs.json) and on seeded pairs."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize import yardstick
from conftest import DATA

PAIRS = json.loads((DATA / "measured" / "probe_shift_pairs.json").read_text())["programs"]
CONFIRMATION = acc.SequentialPlan(min_gain=0.02, alpha=0.025, futility=True)


def columns(program: str, key: str) -> tuple[list[float], list[float]]:
    pairs = PAIRS[program]["pairs"]
    return [a[key] for a, _ in pairs], [b[key] for _, b in pairs]


def shift_of(program: str, n: int | None = None, tail: float = yardstick.SHIFT_TAIL) -> acc.RatioInterval:
    (pb, pc), (db, dc) = columns(program, "cpu-path"), columns(program, "probed-path")
    return yardstick.probe_shift(pb[:n], pc[:n], db[:n], dc[:n], tail)


def test_the_candidate_that_moved_the_probe_on_a_real_vm_is_found_and_the_one_that_did_not_is_not():
    moved, kept = shift_of("matmul_tiled"), shift_of("transpose")
    assert yardstick.flatters(moved) and 1.03 < moved.estimate < 1.10
    assert not yardstick.flatters(kept) and kept.low < 1.0 < kept.high
    # The probe before each run's first kernel did not move: the candidate's kernels moved the rest.
    fb, fc = columns("matmul_tiled", "first_probe_ns")
    first = acc.median_ratio_interval(fb, fc, tail_alpha=yardstick.SHIFT_TAIL)
    assert first.low < 1.0 < first.high
    # probed-path reads matmul_tiled's candidate faster than the CPU time it spent, by about the shift
    (pb, pc), (db, dc) = columns("matmul_tiled", "cpu-path"), columns("matmul_tiled", "probed-path")
    plain, divided = (acc.median_ratio_interval(b, c, tail_alpha=0.025).estimate for b, c in ((pb, pc), (db, dc)))
    assert plain / divided == pytest.approx(moved.estimate, rel=0.03)


def test_the_guard_refuses_the_real_flattered_accept_where_cpu_path_cannot_pass():
    (pb, pc), (db, dc) = columns("matmul_tiled", "cpu-path"), columns("matmul_tiled", "probed-path")
    n = 40
    decision = acc.sequential_decision(db[:n], dc[:n], CONFIRMATION)
    assert decision.verdict == acc.ACCEPT  # probed-path alone accepts it at 40 pairs
    plain = acc.sequential_decision(pb[:n], pc[:n], CONFIRMATION)
    assert plain.verdict == acc.REJECT  # cpu-path's 2.5 % at this spread could not pass the 2 % bar by 100 pairs
    guarded = yardstick.guard_accept(decision, CONFIRMATION, pb[:n], pc[:n], db[:n], dc[:n], "cpu-path")
    assert guarded.verdict == acc.REJECT and guarded.reason == yardstick.REASON_MOVED_PROBE
    assert "speed probe read x1.0" in guarded.detail and "cpu-path over the same pairs does not pass" in guarded.detail
    # Where cpu-path could still pass at a later look, the test goes on instead.
    waiting = yardstick.guard_accept(decision, replace(CONFIRMATION, futility=False), pb[:n], pc[:n], db[:n], dc[:n],
                                     "cpu-path")
    assert waiting.verdict == acc.CONTINUE and "waiting for cpu-path" in waiting.detail


def test_an_unmoved_probe_leaves_every_decision_as_it_was():
    (pb, pc), (db, dc) = columns("transpose", "cpu-path"), columns("transpose", "probed-path")
    for n in CONFIRMATION.looks():
        if n > len(db):
            break
        decision = acc.sequential_decision(db[:n], dc[:n], CONFIRMATION)
        assert yardstick.guard_accept(decision, CONFIRMATION, pb[:n], pc[:n], db[:n], dc[:n], "cpu-path") == decision


def seeded_pairs(rng: random.Random, n: int, gain: float, shift: float, core_cv=0.10, probe_cv=0.03):
    """(cpu b, cpu c, probed b, probed c): a core whose speed the probe follows, a candidate `gain`
    faster in CPU time whose kernels slow the probe by `shift`."""
    out = ([], [], [], [])
    for _ in range(n):
        for role in (0, 1):
            core = math.exp(rng.gauss(0, core_cv))
            cpu = 100.0 * core * ((1 - gain) if role else 1.0)
            probe = core * math.exp(rng.gauss(0, probe_cv)) * (shift if role else 1.0)
            out[role].append(cpu)
            out[2 + role].append(cpu / probe)
    return out


def confirm(pairs, guarded: bool) -> str:
    pb, pc, db, dc = pairs
    for n in range(1, len(db) + 1):
        d = acc.sequential_decision(db[:n], dc[:n], CONFIRMATION)
        if guarded:
            d = yardstick.guard_accept(d, CONFIRMATION, pb[:n], pc[:n], db[:n], dc[:n], "cpu-path")
        if d.verdict != acc.CONTINUE:
            return d.verdict
    return acc.INCONCLUSIVE


@pytest.mark.parametrize("gain, shift, unguarded_min, guarded_max, guarded_min", [
    (0.0, 1.30, 0.9, 0.05, 0.0),   # only the probe moved, grossly (an inlined probe read 35-56 % slower)
    (0.0, 1.15, 0.9, 0.4, 0.0),    # only the probe moved: most caught, within cpu-path's own noise
    (0.0, 1.0, 0.0, 0.05, 0.0),    # nothing moved: nothing taken either way
    (0.08, 1.0, 0.9, 1.0, 0.85),   # a real gain, the probe unmoved: the guard costs little
    (0.15, 1.08, 0.9, 1.0, 0.8),   # a real gain that also moves the probe: taken on cpu-path too
])
def test_seeded_confirmations_with_and_without_the_guard(gain, shift, unguarded_min, guarded_max, guarded_min):
    rng = random.Random(17)
    runs = [seeded_pairs(rng, CONFIRMATION.max_rounds, gain, shift) for _ in range(60)]
    unguarded = sum(confirm(p, False) == acc.ACCEPT for p in runs) / len(runs)
    guarded = sum(confirm(p, True) == acc.ACCEPT for p in runs) / len(runs)
    assert unguarded >= unguarded_min or unguarded_min == 0.0
    assert guarded <= unguarded
    assert guarded_min <= guarded <= guarded_max
