"""What the time budget buys, said after the first baseline round (optimize/round_budget.py), and
the one-line stop when it cannot pay for the A/A noise floor: the loop with its measurement
double on an injected clock (a program whose every run takes 40 s), and the arithmetic alone."""

from __future__ import annotations

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize import driver
from rocm_perf.optimize.command import create_run
from rocm_perf.optimize.ledger import BASELINE_TRIAL
from rocm_perf.optimize.loop import OptimizeLoop
from rocm_perf.optimize.progress import Reporter
from rocm_perf.optimize.services import Services
from rocm_perf.optimize.round_budget import RoundBudget, budget_line, check_round_budget
from test_optimize_loop import TOOLS, Clock, CopyBuildDouble, InjectedRounds, options


class SlowRounds(InjectedRounds):
    """Injected rounds that each take `seconds` of the injected clock (a program sized for a GPU)."""

    def __init__(self, clock: Clock, seconds: float):
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def __call__(self, exe, round_dir, key):
        self.clock.now += self.seconds
        return super().__call__(exe, round_dir, key)


class Said(Reporter):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def run_loop(tmp_path, seconds: float, budget_s: float, **kw):
    clock = Clock()
    opt = options(tmp_path, time_budget_s=budget_s, aa_rounds=6, rounds=5, **kw)
    run_dir, ledger = create_run(opt, "copy-double", "double", ["test"])
    said = Said()
    loop = OptimizeLoop(run_dir, ledger, opt, Services(CopyBuildDouble(), SlowRounds(clock, seconds), TOOLS, None,
                                                       reporter=said, clock=clock))
    return loop, said, ledger


def test_the_first_baseline_round_says_what_the_budget_holds(tmp_path):
    loop, said, ledger = run_loop(tmp_path, seconds=40.0, budget_s=3600)
    driver.STAGES["baseline"](loop.ctx)  # the baseline state alone: builds and the reference round
    line = next(l for l in said.lines if l.startswith("a baseline round took"))
    # 40 s a round, pairs apart (two rounds each, the double's backend pairs apart): 80 s a pair;
    # 3,560 s left, less two warm-ups of 40 s: 43 pairs, 6 of them the A/A floor.
    assert line == ("a baseline round took 40.0 s: the time budget left (59m20s of 1h00m) holds about 43 pairs (a pair "
                    "is two rounds); the A/A noise floor takes 6, leaving 37 for candidates, each 5 or more")


def test_a_budget_too_small_for_the_noise_floor_stops_with_one_line(tmp_path):
    loop, said, ledger = run_loop(tmp_path, seconds=40.0, budget_s=300)
    with pytest.raises(RocmPerfError) as e:
        loop.run()
    message = str(e.value)
    assert "\n" not in message
    assert message == ("--time-budget 5m00s is too small for this program: a round takes 40.0 s, so the A/A noise "
                       "floor (6 pairs) needs about 9m20s and 4m20s are left; give at least --time-budget 16m40s, "
                       "fewer --aa-rounds, or the program a smaller input")
    assert ledger.rounds(BASELINE_TRIAL, "aa") == []  # no pair of the floor was spent


@pytest.mark.parametrize("together, pairs, floor_s", [(True, 29, 240.0), (False, 14, 440.0)])
def test_the_pairs_a_budget_holds(together, pairs, floor_s):
    b = RoundBudget(round_s=20.0, budget_s=660.0, elapsed_s=40.0, aa_rounds=10, first_look=5, warmup=1, together=together)
    assert b.pairs == pairs  # (620 s left - 40 s of warm-ups) / 20 s or 40 s a pair
    assert b.floor_s == floor_s  # the warm-ups and 10 pairs
    assert f"holds about {pairs} pairs" in budget_line(b)
    check_round_budget(b)  # both fit in the 620 s left
    tight = RoundBudget(round_s=20.0, budget_s=40.0 + floor_s - 1, elapsed_s=40.0, aa_rounds=10, first_look=5, warmup=1,
                        together=together)
    with pytest.raises(RocmPerfError, match="is too small for this program"):
        check_round_budget(tight)
