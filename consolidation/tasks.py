"""Celery entry points for consolidation: thin, ids only, one service each.

`acks_late` and `reject_on_worker_lost` are safe here only because the run
is claimed atomically first: a redelivered message finds the run claimed (or
finished) and returns. The database lease plus the sweep cover what the
broker cannot (PITFALLS.md: filesystem:// loses a killed worker's message,
Redis redelivers only after its visibility timeout).
"""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from consolidation import services
from consolidation.backends.base import BackendError
from consolidation.models import Failure

# Transient backend failures (timeouts, 429, 5xx) are retried by the task,
# never by the openai client, so attempts do not multiply.
BACKEND_MAX_RETRIES = 4
RETRY_BACKOFF_SECONDS = 15  # 15, 30, 60, 120: all well inside a lease
RETRY_BACKOFF_MAX_SECONDS = 300


def backoff(retries: int) -> int:
    return int(min(RETRY_BACKOFF_MAX_SECONDS, RETRY_BACKOFF_SECONDS * 2**retries))


def retry_delay(retries: int, retry_after: float | None) -> float:
    """The exponential backoff, never shorter than the server's Retry-After."""
    return max(float(backoff(retries)), float(retry_after or 0))


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=BACKEND_MAX_RETRIES,
             ignore_result=True)
def consolidate_task(self, run_id: int) -> str:  # type: ignore[no-untyped-def]
    if not services.claim_run(run_id=run_id):
        return "not claimed"
    try:
        services.execute_run(run_id=run_id)
    except BackendError as exc:  # only retryable ones get here
        delay = retry_delay(self.request.retries, exc.retry_after)
        if self.request.retries >= self.max_retries:
            services.fail_run(
                run_id=run_id, reason=f"The backend kept failing after {self.request.retries + 1} tries: {exc.reason}",
                failure=Failure.TRANSIENT, code="transient", retry_after=exc.retry_after,
            )
            return "failed"
        if delay > RETRY_BACKOFF_MAX_SECONDS:
            # Longer than a queued run may wait (the lease): the run ends and
            # the gate comes back to the pair after the server's Retry-After.
            services.fail_run(
                run_id=run_id, reason=f"The model server asked to wait {delay:.0f} s: {exc.reason}",
                failure=Failure.TRANSIENT, code="transient", retry_after=exc.retry_after,
            )
            return "failed"
        services.requeue_run(run_id=run_id, reason=f"Retrying after a transient backend error: {exc.reason}",
                             delay=delay if exc.retry_after else 0)
        raise self.retry(countdown=delay, exc=exc) from exc
    except SoftTimeLimitExceeded:
        services.fail_run(
            run_id=run_id,
            reason=f"The run took longer than its {settings.CELERY_TASK_SOFT_TIME_LIMIT} s time limit.",
            failure=Failure.TRANSIENT, code="time_limit",
        )
        return "failed"
    except Exception as exc:
        services.fail_run(run_id=run_id, reason=f"Unexpected error: {type(exc).__name__}: {exc}", code="crash")
        raise
    return "done"


@shared_task(ignore_result=True)
def run_gate_task() -> int:
    return len(services.run_gate())


@shared_task(ignore_result=True)
def sweep_expired_runs_task() -> dict[str, list[int]]:
    result = services.sweep_expired_runs()
    return {"requeued": result.requeued, "failed": result.failed, "redispatched": result.redispatched}
