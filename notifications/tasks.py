"""Celery entry points for notifications: thin, ids only.

A delivery is claimed atomically before it is sent (so a redelivered or
duplicated message sends nothing twice) and retried with exponential
backoff on transient failures only; the attempt count lives in the row,
which also bounds the retries."""

from __future__ import annotations

from celery import shared_task

from notifications import services


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def deliver_webhook_task(self, delivery_id: int) -> str:  # type: ignore[no-untyped-def]
    attempt = services.attempt_delivery(delivery_id=delivery_id)
    if attempt is None:
        return "not claimed"
    if attempt.retry_in is not None:
        raise self.retry(countdown=attempt.retry_in)
    return attempt.status


@shared_task(ignore_result=True)
def notifications_sweep_task() -> dict[str, int]:
    result = services.sweep()
    return {"redelivered": len(result.redelivered), "overdue": result.overdue, "emails": result.emails}
