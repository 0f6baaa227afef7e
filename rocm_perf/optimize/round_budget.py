"""What the time budget buys, said once the first baseline round has run.

Real programs are often sized for a GPU: on the CPU of the host backend one run can take minutes.
The size is the user's to choose, but a user should learn at once, not after an hour, that a
round takes 80 s and an hour therefore holds some 40 pairs of rounds, of which the A/A noise
floor takes the first `--aa-rounds`. When the budget left cannot even pay for the A/A floor, the
run stops with one line that says what to change, instead of spending the budget on a floor it
cannot finish.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rocm_perf.durations import duration
from rocm_perf.errors import RocmPerfError


@dataclass(frozen=True)
class RoundBudget:
    """The first baseline round's seconds against the time budget."""

    round_s: float  # one run of the program, as the reference round took it
    budget_s: float  # --time-budget
    elapsed_s: float  # spent so far (builds, the reference round)
    aa_rounds: int  # --aa-rounds: pairs of the noise floor
    first_look: int  # --rounds: pairs before a candidate's first decision
    warmup: int  # --warmup: untimed runs of each program before its first timed round
    together: bool  # the two programs of a pair run at the same time

    @property
    def pair_s(self) -> float:
        """One interleaved pair: its two rounds at once, or one after the other."""
        return self.round_s * (1.0 if self.together else 2.0)

    @property
    def left_s(self) -> float:
        return max(0.0, self.budget_s - self.elapsed_s)

    @property
    def pairs(self) -> int:
        """Pairs the budget left holds (warm-ups paid first)."""
        if self.pair_s <= 0:
            return 0
        return max(0, math.floor((self.left_s - self.warmup_s) / self.pair_s))

    @property
    def warmup_s(self) -> float:
        return 2 * self.warmup * self.round_s  # the program and its A/A twin

    @property
    def floor_s(self) -> float:
        """What the A/A noise floor costs."""
        return self.warmup_s + self.aa_rounds * self.pair_s

    @property
    def least_useful_s(self) -> float:
        """A budget that pays for the floor and one candidate's first look."""
        return self.elapsed_s + self.floor_s + self.first_look * self.pair_s


def format_duration(seconds: float) -> str:
    """0.4 s, 12.5 s, 3m07s, 2h05m."""
    return f"{seconds:.1f} s" if seconds < 60 else duration(seconds)


def round_budget(round_s: float, opt, elapsed_s: float, together: bool) -> RoundBudget:
    """The budget of a run with options `opt` (OptimizeOptions) after a first round of `round_s`."""
    return RoundBudget(round_s=round_s, budget_s=opt.time_budget_s, elapsed_s=elapsed_s, aa_rounds=opt.aa_rounds,
                       first_look=opt.rounds, warmup=opt.warmup, together=together)


def budget_line(b: RoundBudget) -> str:
    """The one line a run prints after its first baseline round."""
    how = "pairs run together" if b.together else "a pair is two rounds"
    after_floor = max(0, b.pairs - b.aa_rounds)
    return (f"a baseline round took {format_duration(b.round_s)}: the time budget left ({format_duration(b.left_s)} of "
            f"{format_duration(b.budget_s)}) holds about {b.pairs} pair{'s' if b.pairs != 1 else ''} ({how}); the A/A "
            f"noise floor takes {b.aa_rounds}, leaving {after_floor} for candidates, each {b.first_look} or more")


def check_round_budget(b: RoundBudget) -> None:
    """RocmPerfError (one line) when the budget left cannot pay for the A/A noise floor."""
    if b.left_s >= b.floor_s:
        return
    raise RocmPerfError(
        f"--time-budget {format_duration(b.budget_s)} is too small for this program: a round takes "
        f"{format_duration(b.round_s)}, so the A/A noise floor ({b.aa_rounds} pairs) needs about "
        f"{format_duration(b.floor_s)} and {format_duration(b.left_s)} are left; give at least "
        f"--time-budget {format_duration(b.least_useful_s)}, fewer --aa-rounds, or the program a smaller input")


def announce_round_budget(round_s: float, opt, elapsed_s: float, together: bool, say) -> None:
    """After the first baseline round: stop (RocmPerfError) when the budget cannot pay for the A/A
    floor, else `say` what it holds. The loop's one call (stages/baseline.py)."""
    b = round_budget(round_s, opt, elapsed_s, together)
    check_round_budget(b)
    say(budget_line(b))
