"""The optimize loop's driver: a state machine over its ledger, one stage module per state.

    state         stage (optimize/stages/)   what it commits before the next state
    baseline      baseline.run               the baseline (generation 0), its reference outputs, its A/A twin
    noise-floor   noise_floor.run            the A/A floor, the bar (effective min gain), the decision metric
    rank          rank.run                   the kernels ranked, the top ones, the loops' heat
    propose       propose.run                the generation's planned candidates (or why the search stops)
    build         build.run                  each candidate's build and verdict: built, or why not
    screen        screen.run                 each rung's calls: screened winners, the stopped and outraced
    confirm       confirm.run                each confirmation's decision; an accept is a new baseline
    combine       combine.run                the loops' winners joined, or carried onto the new baseline
    final-check   final_check.run            the original against the final program, for the report
    whole-program whole_program.run          a replayed kernel's result confirmed on the whole program it came from
    finish        finish.run                 verdicts, the search prior, summary and reports
    done

    baseline -> noise-floor -> rank -> propose -> build -> screen -> confirm -> combine -> build -> ...
                                          \\-> final-check -> whole-program -> finish -> done

Every stage is safe to run again from its start: it reads what the ledger already holds and does
only what is missing. The transition to the next state is committed before that state runs, so a
run killed at any moment resumes in the state it was in; a racing candidate goes on from its last
complete pair, a confirmation in flight is measured again from its first round, and no decided
candidate is ever measured again.
"""

from __future__ import annotations

import errno
from typing import Callable

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.run_context import RunContext
from rocm_perf.optimize.stages import (baseline, build, combine, confirm, final_check, finish, noise_floor, propose, rank,
                                       screen, whole_program)
from rocm_perf.optimize.states import (BASELINE, BUILD, COMBINE, CONFIRM, DONE, FINAL_CHECK, FINISH, NOISE, PROPOSE, RANK,
                                       SCREEN, WHOLE_PROGRAM)

# Each state's stage: it runs the state's work and returns the next state.
STAGES: dict[str, Callable[[RunContext], str]] = {
    BASELINE: baseline.run,
    NOISE: noise_floor.run,
    RANK: rank.run,
    PROPOSE: propose.run,
    BUILD: build.run,
    SCREEN: screen.run,
    CONFIRM: confirm.run,
    COMBINE: combine.run,
    FINAL_CHECK: final_check.run,
    WHOLE_PROGRAM: whole_program.run,
    FINISH: finish.run,
}

# A full disk, a quota, a read-only or forbidden run directory: the run stops, its ledger intact.
_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def drive(ctx: RunContext) -> str:
    """Run from the ledger's state to `done` (or raise states.Stopped after a stop request)."""
    state = ctx.ledger.state
    if state is None:
        state = BASELINE
        ctx.ledger.transition(state)
    while state != DONE:
        ctx.check_stop()
        ctx.report.stage(state)
        try:
            nxt = STAGES[state](ctx)
        except OSError as e:
            if e.errno in _WRITE_ERRORS:
                raise RocmPerfError(f"{ctx.run_dir}: cannot write the run's files ({e.strerror}: {e.filename}); "
                                    f"the ledger is intact: free space, then `rocm-perf optimize --resume {ctx.run_dir}`") from e
            raise
        ctx.ledger.set("elapsed_s", ctx.elapsed())
        ctx.ledger.transition(nxt)
        state = nxt
    return state
