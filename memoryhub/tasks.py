"""Housekeeping tasks for the core app."""

from __future__ import annotations

from celery import shared_task

from memoryhub import idempotency
from memoryhub.models import Workspace


@shared_task
def purge_expired_task() -> int:
    """Expired Idempotency-Keys and form tokens: the table stays small."""
    return idempotency.purge_expired()


@shared_task
def retention_task(workspace_id: int | None = None) -> int:
    """Daily (beat): one task per workspace that keeps logs for a limited
    time; each redacts one bounded batch and re-queues itself while more
    are due (services.retention)."""
    from memoryhub.services.retention import redact_expired_logs

    if workspace_id is None:
        ids = list(Workspace.objects.filter(log_retention_days__isnull=False).values_list("pk", flat=True))
        for pk in ids:
            retention_task.delay(pk)
        return len(ids)
    batch = redact_expired_logs(workspace_id=workspace_id)
    if batch is None:
        return 0
    if batch.redacted and batch.remaining:
        retention_task.delay(workspace_id)
    return batch.redacted
