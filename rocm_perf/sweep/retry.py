"""A failing target is tried again, a bounded number of times over the sweep's whole life, then
quarantined with its reason; a target that cannot work (it does not build) is failed at once.
The sweep goes on either way: one target's failure, whatever it is, never ends it.

Tasks run side by side (executor.py), so a retry is not a blocking loop around one call: when a
task fails, tenacity's stop and wait policies, asked with the target's count of failed attempts,
say whether it gets another try and after how long; the dispatcher submits it again then.
"""

from __future__ import annotations

import logging

import tenacity

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.ledger import QUARANTINED, SweepLedger
from rocm_perf.sweep.schedule import SweepSettings

log = logging.getLogger("rocm_perf.sweep")


def next_try_after(settings: SweepSettings, failed_attempts: int) -> float | None:
    """Seconds to wait before the next try after `failed_attempts` failures; None when the target
    has had all its tries (`--max-attempts`)."""
    state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})
    state.attempt_number = max(1, failed_attempts)
    if tenacity.stop_after_attempt(settings.max_attempts)(state):
        return None
    lo, hi = settings.retry_wait_s
    return float(tenacity.wait_exponential(multiplier=lo, min=lo, max=hi)(state))


def quarantine(ledger: SweepLedger, name: str, reason: str) -> None:
    ledger.update_target(name, status=QUARANTINED, reason=reason)
    ledger.event(name, "quarantined", reason)
    log.error("target %s: quarantined after %d failed attempts: %s", name, ledger.target(name).attempts, reason)


def reason_of(e: BaseException | None) -> str:
    """One line for the ledger: the message of our own errors, the type and message of anything else."""
    if e is None:
        return ""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text if isinstance(e, RocmPerfError) else f"{type(e).__name__}: {text}"
