"""The confirmation test: the fresh re-measure that alone can accept a screened candidate.

The loop builds it here once per run (its alpha then split over the run's confirmations,
acceptance.confirmation_alpha); the acceptance benches and the report's close calls build the
same test from the same options.
"""

from __future__ import annotations

from dataclasses import replace

from rocm_perf.optimize import acceptance as acc

# The pairs the budget keeps for each confirmation: a screened winner's fresh re-measure usually settles
# within this many (its interval was already below the bar); one that needs --max-rounds may run over.
CONFIRMATION_PAIRS_RESERVED = 30
# A confirmation may take this many times --max-rounds pairs (its looks go on: 120, 160, 200), while the
# time budget lasts. A gain just over the bar needs them: at 2.4 % spread a 2.6 % gain against the 2 % bar
# passes a confirmation in 100 pairs 54 % of the time, in 200 pairs 85 % (400 seeded re-measures), and
# in the race's simulation of the 12-program pass's miss (matmul_tiled) the search found it in 50 % of
# 300 searches instead of 37 %, for 1-3 % more pairs on the spaces with nothing to find (the futility
# rule stops a hopeless re-measure long before). The race's rungs stay at --max-rounds: raising them
# too cost 12-17 % more pairs on the noisy spaces with nothing to find (pipeline, transpose).
CONFIRMATION_REACH = 2
CONFIRMATION_FUTILITY_FROM = 20
CONFIRMATION_DROP_ALPHA = 0.10  # the futility rule's lenient interval: 80 % (a screened winner earns more benefit of doubt)


def with_confirmation_rules(plan: acc.SequentialPlan) -> acc.SequentialPlan:
    """`plan` as the loop's confirmations run it: their futility rule on (the benches use it too).

    It stops a re-measure that could not pass by the last look (80 % lenient interval, from 20
    pairs): in a seeded simulation of confirmations (ten cells of gain, bar and spread;
    tests/test_acceptance.py checks three) a gain below the bar stops after about 30 pairs instead
    of 90-100, and 2 % of the passes of the full test are lost; with a 50 % interval, as the
    race's, 8 %."""
    return replace(plan, futility=True, futility_from=CONFIRMATION_FUTILITY_FROM, drop_alpha=CONFIRMATION_DROP_ALPHA)


def confirmation_test(min_gain: float, alpha: float, rounds: int, max_rounds: int, step: int = 0) -> acc.SequentialPlan:
    """The loop's confirmation test for --min-gain, --rounds, --max-rounds (and --round-step), before
    its alpha is split over the run's confirmations: looks up to CONFIRMATION_REACH x --max-rounds."""
    return with_confirmation_rules(acc.SequentialPlan(min_gain, alpha, rounds, max_rounds * CONFIRMATION_REACH, step))
