"""A failing target is tried again, a bounded number of times over the sweep's whole life, then
quarantined with its reason; a target that cannot work (it does not build) is failed at once.
The sweep goes on either way: one target's failure, whatever it is, never ends it."""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Any, Callable

import tenacity

from rocm_perf.errors import RocmPerfError
from rocm_perf.sweep.ledger import FAILED, QUARANTINED, SweepLedger, TargetRow
from rocm_perf.sweep.run_target import TargetFailed
from rocm_perf.sweep.schedule import SweepSettings

log = logging.getLogger("rocm_perf.sweep")


class StopRequested(Exception):
    """A stop request reached the target's work: nothing is held against the target."""


def with_retries(ledger: SweepLedger, row: TargetRow, fn: Callable[[], Any], settings: SweepSettings,
                 stop_event: threading.Event) -> Any:
    """fn() with bounded retries (tenacity); None when the target failed or was quarantined.

    Raises StopRequested when `stop_event` is set during an attempt or a wait between attempts.
    """
    # `attempts` counts failed attempts: a kill -9 in the middle of one is not the target's fault.
    left = settings.max_attempts - row.attempts
    if left <= 0:
        quarantine(ledger, row.name, row.reason or "kept failing")
        return None
    counter = {"n": row.attempts}

    def attempt():
        try:
            return fn()
        except (TargetFailed, StopRequested):
            raise
        except Exception as e:
            if stop_event.is_set():
                raise StopRequested() from e
            counter["n"] += 1
            ledger.update_target(row.name, attempts=counter["n"], reason=reason_of(e))
            raise

    def before_sleep(state: tenacity.RetryCallState) -> None:
        reason = reason_of(state.outcome.exception())
        ledger.event(row.name, "retry", f"attempt {counter['n']}: {reason}")
        log.warning("target %s: attempt %d failed (%s); retrying in %.0f s", row.name, counter["n"], reason,
                    state.next_action.sleep if state.next_action else 0)

    def sleep(seconds: float) -> None:
        if stop_event.wait(seconds):
            raise StopRequested()

    lo, hi = settings.retry_wait_s
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(left),
        wait=tenacity.wait_exponential(multiplier=lo, min=lo, max=hi),
        retry=tenacity.retry_if_exception(_retryable) & tenacity.retry_if_exception(lambda e: not stop_event.is_set()),
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except TargetFailed as e:
        ledger.update_target(row.name, status=FAILED, reason=str(e))
        ledger.event(row.name, "failed", str(e))
        log.error("target %s: failed: %s", row.name, e)
    except StopRequested:
        raise
    except Exception as e:  # noqa: BLE001 - one target's failure, whatever it is, must not end the sweep
        if stop_event.is_set():
            raise StopRequested() from e
        reason = reason_of(e)
        if not isinstance(e, RocmPerfError):
            log.error("target %s: internal error\n%s", row.name, "".join(traceback.format_exception(e)))
        quarantine(ledger, row.name, reason)
    return None


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


def _retryable(e: BaseException) -> bool:
    return not isinstance(e, (TargetFailed, StopRequested))
