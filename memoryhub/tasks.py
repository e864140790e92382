"""Housekeeping tasks for the core app."""

from __future__ import annotations

from celery import shared_task

from memoryhub import idempotency


@shared_task
def purge_expired_task() -> int:
    """Expired Idempotency-Keys and form tokens: the table stays small."""
    return idempotency.purge_expired()
