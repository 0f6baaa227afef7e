"""alternatives.py: screened winners whose carry onto an accepted change measured no gain.

The trials are the shape of softmax's ledger in the 98a482b pass (bench_search, 2026-11-28):
trial 23 (manual x2 on loop 5:60) accepted at 0.945 screened, trial 4 (pragma x4 on loop 1:35,
0.957 screened) carried onto it as trial 32 and measured 1.004 there, not significant.
"""

from __future__ import annotations

import math

from rocm_perf.optimize.alternatives import alternatives
from rocm_perf.optimize.ledger import COMBINATION, Baseline, Trial


def _iv(estimate: float, low: float, high: float, n: int = 10) -> dict:
    return {"critical_path": {"estimate": estimate, "low": low, "high": high, "n": n}}


def _trial(id_: int, *, loop: str, status: str, reason: str = "", generation: int = 0, screen=None, confirm=None,
           components=(), rule: str = "unroll_manual", factor: int = 2) -> Trial:
    evidence = {}
    if screen:
        evidence["screen"] = _iv(*screen)
    if confirm:
        evidence["confirm"] = _iv(*confirm)
    return Trial(id=id_, generation=generation, loop_key=loop, kernel="softmax_rows", loop_id=loop, rule=rule,
                 factor=factor, expected_value=1.0, status=status, reason=reason, detail="", source_sha256="", diff="",
                 executable="", resources={}, evidence=evidence, components=list(components))


BASELINES = [Baseline(0, None, "a", "baseline", "", {}), Baseline(1, 23, "b", "trials/23/tree", "", {})]


def _softmax(carry_reason: str = "not significant", alone=(0.957, 0.951, 0.967)) -> list[Trial]:
    return [
        _trial(4, loop="1:35", status="rejected", reason=carry_reason, screen=alone, rule="unroll_pragma", factor=4),
        _trial(23, loop="5:60", status="accepted", reason="significant gain", screen=(0.945, 0.921, 0.962),
               confirm=(0.947, 0.928, 0.970)),
        _trial(32, loop="1:35", status="rejected", reason=carry_reason, generation=1, confirm=(1.004, 0.983, 1.025),
               components=[4], rule="unroll_pragma", factor=4),
    ]


def test_a_carry_that_measured_no_gain_names_its_rewrite_as_an_alternative_to_the_accepted_change():
    (alt,) = alternatives(_softmax(), BASELINES)
    assert (alt["trial"], alt["carry"], alt["onto"], alt["reason"]) == (4, 32, [23], "not significant")
    assert alt["screen"]["estimate"] == 0.957 and alt["measured"]["estimate"] == 1.004
    assert alt["rivals"] == [{"trial": 23, "screened_as": 23, "screen": _iv(0.945, 0.921, 0.962)["critical_path"]}]
    assert alt["words"] == ("alone it screened at 0.957 [0.951, 0.967], within the interval of trial 23's 0.945 "
                            "[0.921, 0.962] on the same baseline; on top of trial 23 it measured 1.004 [0.983, 1.025] "
                            "(not significant, trial 32): the gains do not add; the run kept the change that was "
                            "confirmed first, and the two were not measured against each other")


def test_how_its_screening_compares_with_the_accepted_change_s_is_said_as_the_intervals_show():
    (slower,) = alternatives(_softmax(alone=(0.975, 0.965, 0.985)), BASELINES)
    assert "slower than trial 23's" in slower["words"]
    (faster,) = alternatives(_softmax(alone=(0.900, 0.890, 0.910)), BASELINES)
    assert "faster than trial 23's" in faster["words"]
    # A first rung's interval can be unbounded: it prints, and compares as overlapping.
    (open_,) = alternatives(_softmax(alone=(0.999, 0.0, math.inf)), BASELINES)
    assert "0.999 [0.000, inf], within the interval of" in open_["words"]


def test_only_a_carry_that_measured_no_gain_is_an_alternative():
    # A carry that crashed or changed the output says nothing about how the gains add.
    assert alternatives(_softmax(carry_reason="wrong output"), BASELINES) == []
    # An accepted carry added its gain: it is carried, not an alternative.
    trials = _softmax()
    trials[2] = _trial(32, loop="1:35", status="accepted", reason="significant gain", generation=1,
                       confirm=(0.97, 0.96, 0.98), components=[4])
    assert alternatives(trials, BASELINES) == []
    # A rejected combination's parts go on alone: it is not one rewrite's carry.
    trials = _softmax()
    trials[2] = _trial(32, loop="1:35;5:60", status="rejected", reason="slower", generation=0,
                       confirm=(1.02, 1.01, 1.03), components=[4, 23], rule=COMBINATION, factor=0)
    assert alternatives(trials, BASELINES) == []
