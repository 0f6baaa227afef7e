"""The names the optimize loop's ledger records: its states, a trial's open statuses, and the
named reasons a candidate is rejected. Every stage module imports them from here, so that a state or
a reason is spelled once (the driver, optimize/driver.py, says which stage runs in which state)."""

from __future__ import annotations

from rocm_perf.optimize import racing
from rocm_perf.optimize.search_prior import SUPERSEDED

BASELINE, NOISE, RANK, PROPOSE, BUILD, SCREEN, CONFIRM, COMBINE, FINAL_CHECK, WHOLE_PROGRAM, FINISH, DONE = (
    "baseline", "noise-floor", "rank", "propose", "build", "screen", "confirm", "combine", "final-check", "whole-program",
    "finish", "done")

# A trial still in play: a resume goes on with it.
OPEN_STATUSES = ("proposed", "built", "screening", "screened", "confirming")
CARRIED = "carried"  # terminal: its rewrite was accepted as part of a later trial (`components`)

# Named reasons a candidate is rejected (MEASUREMENT.md and the issue); measurement adds
# slower / not significant / inconclusive / out of reach from acceptance.py, outraced and budget from racing.py.
R_GUARD, R_COMPILE, R_RESOURCES, R_WRONG_OUTPUT, R_CRASH, R_TIMEOUT = (
    "guard", "compile", "resources", "wrong output", "crash", "timeout")
R_SUPERSEDED = SUPERSEDED
R_BUDGET = racing.BUDGET
R_OUTRACED = racing.OUTRACED
R_DUPLICATE = "duplicate"  # its built program is the baseline's or another candidate's: it could only measure noise
# A project run's screened winner of another loop when one was accepted: its loop is planned again
# on the new baseline (carrying between a project's trees is not done).
R_REPLANNED = "re-planned"
R_CONFLICT = "conflict"  # its loop was rewritten by an accepted change: it cannot be carried onto the new baseline
# A combination whose fresh ratio is not below its best part's screened ones (their 50 % interval):
# the other parts added nothing that shows, and accepting it would end the search with less.
R_BEHIND_PART = "behind its best part"
# Evidence key of a candidate the build phase left unbuilt for the budget (reason `budget`): planned
# again when a race of its generation leaves room.
NOT_BUILT = "not_built"


class Stopped(Exception):
    """SIGINT/SIGTERM: the loop stopped after recording; `--resume` continues it."""
