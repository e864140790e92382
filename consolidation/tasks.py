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

# Transient backend failures (timeouts, 429, 5xx) are retried by the task,
# never by the openai client, so attempts do not multiply.
BACKEND_MAX_RETRIES = 4
RETRY_BACKOFF_SECONDS = 15  # 15, 30, 60, 120: all well inside a lease
RETRY_BACKOFF_MAX_SECONDS = 300


def backoff(retries: int) -> int:
    return int(min(RETRY_BACKOFF_MAX_SECONDS, RETRY_BACKOFF_SECONDS * 2**retries))


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=BACKEND_MAX_RETRIES,
             ignore_result=True)
def consolidate_task(self, run_id: int) -> str:  # type: ignore[no-untyped-def]
    if not services.claim_run(run_id=run_id):
        return "not claimed"
    try:
        services.execute_run(run_id=run_id)
    except BackendError as exc:  # only retryable ones get here
        if self.request.retries >= self.max_retries:
            services.fail_run(
                run_id=run_id, reason=f"The backend kept failing after {self.request.retries + 1} tries: {exc.reason}"
            )
            return "failed"
        services.requeue_run(run_id=run_id, reason=f"Retrying after a transient backend error: {exc.reason}")
        raise self.retry(countdown=backoff(self.request.retries), exc=exc) from exc
    except SoftTimeLimitExceeded:
        services.fail_run(
            run_id=run_id,
            reason=f"The run took longer than its {settings.CELERY_TASK_SOFT_TIME_LIMIT} s time limit.",
        )
        return "failed"
    except Exception as exc:
        services.fail_run(run_id=run_id, reason=f"Unexpected error: {type(exc).__name__}: {exc}")
        raise
    return "done"


@shared_task(ignore_result=True)
def run_gate_task() -> int:
    return len(services.run_gate())


@shared_task(ignore_result=True)
def sweep_expired_runs_task() -> dict[str, list[int]]:
    result = services.sweep_expired_runs()
    return {"requeued": result.requeued, "failed": result.failed, "redispatched": result.redispatched}
