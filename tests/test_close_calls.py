"""Close calls (optimize/close_calls.py): which unproven candidates the report names, and the
pairs it says a decision would need. The loop's side (a run's summary and report) is in
test_optimize_loop.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rocm_perf.optimize import acceptance as acc
from rocm_perf.optimize.artifacts import _cell
from rocm_perf.optimize.close_calls import (MAX_PAIRS_TO_SETTLE, MIN_PAIRS, SETTLE_MAX_PAIRS, CloseCall, close_call,
                                            settle_words, to_settle)
from rocm_perf.optimize.racing import OUTRACED

THRESHOLD = 0.98  # the default 2 % bar
TAIL = 0.0043  # about the first confirmation's per-look level with the default options


def pairs(ratio: float, n: int, sd: float = 0.02, seed: int = 3) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    b = 1e6 * np.exp(rng.normal(0.0, sd, n))
    return list(b), list(b * ratio * np.exp(rng.normal(0.0, sd, n)))


def evidence(b, c, phase: str = "screen") -> dict:
    iv = acc.median_ratio_interval(b, c, tail_alpha=0.05 / 6)
    return {phase: {"critical_path": iv.to_json(), "rounds": iv.n}}


def call(status="rejected", reason=OUTRACED, ratio=0.975, n=20, phase="screen", **kw):
    b, c = pairs(ratio, n, **kw)
    return close_call(7, "k loop unroll_manual x2", status, reason, "stopped", evidence(b, c, phase), THRESHOLD, (b, c), TAIL)


def test_an_unproven_candidate_that_read_faster_than_the_bar_is_a_close_call():
    found = call()
    assert found is not None and found.estimate < THRESHOLD and found.pairs == 20 and found.phase == "screen"
    b, c = pairs(0.975, 20)
    assert found.spread == pytest.approx(acc.paired_spread(b, c))
    # A ratio that held at its estimate would clear the bar after pairs_to_settle pairs, not before.
    n = found.pairs_to_settle
    assert found.estimate * math.exp(acc.log_half_width(found.spread, math.ceil(n), TAIL)) < THRESHOLD
    assert found.estimate * math.exp(acc.log_half_width(found.spread, math.floor(n) - 1, TAIL)) > THRESHOLD
    # Stopped in its confirmation: that measurement is the one named.
    assert call(reason=acc.REASON_OUT_OF_REACH, phase="confirm").phase == "confirm"


@pytest.mark.parametrize("kw, why", [
    (dict(status="accepted", reason=acc.REASON_GAIN), "accepted"),
    (dict(reason=acc.REASON_SLOWER), "decided slower"),
    (dict(reason="wrong output"), "broken: no pairs worth spending"),
    (dict(reason="superseded"), "its loop has its winner"),
    (dict(ratio=1.01), "read slower than the bar"),
    (dict(n=MIN_PAIRS - 1), "too few pairs: the best of a few noisy readings"),
])
def test_what_is_not_a_close_call(kw, why):
    assert call(**kw) is None, why


def test_pairs_to_clear_is_infinite_at_or_above_the_bar():
    assert acc.pairs_to_clear(0.02, THRESHOLD, THRESHOLD, TAIL) == math.inf
    assert acc.pairs_to_clear(0.02, 0.99, THRESHOLD, TAIL) == math.inf
    assert acc.pairs_to_clear(0.02, 0.95, THRESHOLD, TAIL) < acc.pairs_to_clear(0.04, 0.95, THRESHOLD, TAIL)


def test_settle_words_name_a_longer_max_rounds_only_when_the_run_s_own_would_not_reach():
    base = {"pairs": 20, "spread": 0.034}
    far = settle_words({**base, "pairs_to_settle": 554.2}, 0.65, 100)
    assert "about 555 pairs at its spread 3.4 %" in far and "run with --max-rounds 600" in far and "6 min" in far
    near = settle_words({**base, "pairs_to_settle": 31.0}, 0.001, 100)  # under a second: no time said
    assert near == "about 31 pairs at its spread 3.4 %, if its ratio holds"  # halved out: more rounds would not help
    assert "out of reach" in settle_words({**base, "pairs_to_settle": MAX_PAIRS_TO_SETTLE + 1}, 0.65, 100)
    assert "out of reach" in settle_words({**base, "pairs_to_settle": math.inf}, 0.65, 100)


def test_a_long_detail_is_cut_at_a_word_never_inside_a_number():
    detail = ("could not pass by the last look: after 20 pairs its 50% interval reaches down to 0.973, and at this "
              "spread 100 pairs still leave x1.008 of doubt (needs below 0.980)")
    cut = _cell(detail, 160)
    assert cut.endswith(" ...") and len(cut) <= 164
    assert detail.startswith(cut[:-4]) and cut[:-4].split()[-1] in detail.split()
    assert _cell("a | b\nc", 100) == "a \\| b c"


def test_a_rewrite_carried_onto_a_newer_baseline_is_judged_by_its_carry(tmp_path):
    """softmax (12-program pass, cc8f131): `unroll_manual x2` screened at 0.942, was carried onto the
    baseline another loop's accepted change made, and there its gain was gone (the carry stopped out
    of reach). The report names neither the stale 0.942 nor, on the new baseline, a carry that did not
    read faster than the bar; a rival the stale one outraced still is a close call."""
    from rocm_perf.optimize.artifacts import close_calls_of
    from rocm_perf.optimize.ledger import RoundRow, open_ledger

    ledger = open_ledger(tmp_path, create=True)
    ledger.set("options", {"min_gain": 0.02, "confidence": 0.95, "rounds": 5, "max_rounds": 100})
    ledger.set("effective_min_gain", 0.02)

    def trial(ratio, reason, components=None, generation=0, factor=2, n=10):
        tid = ledger.add_trial(generation=generation, loop_key="softmax:5:60", kernel="softmax_rows", loop_id="5:60",
                               rule="unroll_manual", factor=factor, expected_value=1.0, components=components)
        b, c = pairs(ratio, n, seed=tid)
        for i in range(n):
            for role, v in (("B", b[i]), ("C", c[i])):
                ledger.add_round(RoundRow(tid, "screen", i, role, True, "", v, v, {}, {}))
        ledger.update_trial(tid, status="rejected", reason=reason, evidence=evidence(b, c))
        return tid

    stale = trial(0.942, acc.REASON_OUT_OF_REACH)
    rival = trial(0.958, OUTRACED, factor=4)
    trial(0.995, acc.REASON_OUT_OF_REACH, components=[stale], generation=1)
    assert [c["trial"] for c in close_calls_of(ledger, ledger.trials())] == [rival]


def settled_call(trial: int, needed: float) -> CloseCall:
    return CloseCall(trial, f"candidate {trial}", OUTRACED, "", "screen", 0.97, 0.95, 0.99, 20, 0.01, THRESHOLD, needed)


def test_to_settle_takes_each_undecided_loop_s_cheapest_close_call_within_the_cap_and_the_pairs_left():
    calls = [settled_call(1, 30.0), settled_call(2, 12.5), settled_call(3, 25.0), settled_call(4, 8.0),
             settled_call(5, SETTLE_MAX_PAIRS + 1), settled_call(6, 5.0)]
    loop_of = {1: "a", 2: "a", 3: "b", 4: "c", 5: "d", 6: "e"}
    # a: the cheaper of two; b alone; c decided (a rival passed screening); d over the cap; e: cheapest first
    assert to_settle(calls, loop_of, decided_loops={"c"}) == [6, 2, 3]
    # each costs at least MIN_PAIRS of the pairs left, in that order, while they last
    assert to_settle(calls, loop_of, decided_loops={"c"}, pairs_left=MIN_PAIRS + 13) == [6, 2]
    assert to_settle(calls, loop_of, decided_loops={"c"}, pairs_left=MIN_PAIRS - 1) == []
    assert to_settle(calls, loop_of, decided_loops=set(), max_pairs=0) == []
    assert to_settle(calls, loop_of, decided_loops=set(), max_pairs=math.inf) == [6, 4, 2, 3, 5]
