"""From audit events to webhook deliveries and e-mail notices.

`on_audit_event` is subscribed to memoryhub.services.audit (apps.py), so every
action of every entry point — agent REST, MCP, staff REST, console,
commands, Celery tasks, the review helpers' bulk decisions — is announced
from this one place. It runs inside the action's transaction and only writes
rows (the outbox); the Celery task is sent once the transaction commits, so
a rolled-back action announces nothing and a receiver never hears of a
proposal it cannot yet read.

What leaves the bank: ids, the agent's slug, the file kind, states and
version numbers, who acted (`user:NAME`, `agent:SLUG` or `system`) and a
pseudonym of the end user (an HMAC of the user_ref under the server's
secret key: stable, so a receiver can group events, but not reversible).
Never memory content, log text, reasons, comments or error messages.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub.models import AuditEvent
from notifications.models import NoticeKind, Webhook, WebhookDelivery

logger = logging.getLogger(__name__)

# Audit action → webhook event (API.md, "Webhook events").
EVENT_FOR_ACTION = {
    "proposal.create": "proposal.created",
    "proposal.approve": "proposal.approved",
    "proposal.reject": "proposal.rejected",
    "proposal.stale": "proposal.stale",
    "file.withhold": "file.withheld",
    "consolidation.failed": "run.failed",
    "change.request": "change.pending",
}
# Audit details that may travel: numbers, states and names from fixed lists.
# Anything typed by a person or an agent (reason, comment, error, payload)
# stays home.
SAFE_DETAILS = frozenset({"kind", "base_version", "current_version", "version", "source", "status", "rollback_to",
                          "undone_versions", "onto_version", "conflicts"})
CONSOLE_PATHS = {"Proposal": "/proposals/{id}/", "Change": "/changes/"}


def user_pseudonym(user_ref: str) -> str | None:
    if not user_ref:
        return None
    digest = hmac.new(settings.SECRET_KEY.encode(), f"memoryhub-user:{user_ref}".encode(), hashlib.sha256)
    return digest.hexdigest()[:16]


def payload_for(event: AuditEvent, name: str) -> dict[str, object]:
    target_type = event.target_type
    target: dict[str, object] | None = None
    if target_type:
        target = {"type": target_type.lower(), "id": int(event.target_id) if event.target_id.isdigit()
                  else event.target_id}
    data = {key: value for key, value in (event.details or {}).items() if key in SAFE_DETAILS}
    path = CONSOLE_PATHS.get(target_type, "")
    return {
        "event": name,
        "occurred_at": event.created_at.isoformat(),
        "workspace": event.workspace.slug if event.workspace is not None else None,
        "agent": event.agent.slug if event.agent is not None else None,
        "user": user_pseudonym(event.user_ref),
        "actor": event.actor_label,
        "target": target,
        "data": data,
        "console_path": path.format(id=event.target_id) if path else None,
    }


def on_audit_event(event: AuditEvent, target: object) -> None:
    name = EVENT_FOR_ACTION.get(event.action)
    if name is None or event.workspace_id is None:
        return
    queue_deliveries(workspace_id=event.workspace_id, event=name, payload=payload_for(event, name))
    # E-mails: the notices are rows of this transaction too; the periodic
    # sweep sends them (notifications.services.send_pending_notices).
    from notifications import services

    if name == "proposal.created" and target is not None and services.is_high_risk(target):
        # Its author knows already (and may not decide it anyway).
        services.queue_notices(kind=NoticeKind.HIGH_RISK, workspace=event.workspace, objects=[target],
                               exclude_user_id=getattr(target, "author_user_id", None))
    elif name == "run.failed" and target is not None:
        services.queue_notices(kind=NoticeKind.RUN_FAILED, workspace=event.workspace, objects=[target])


def queue_deliveries(*, workspace_id: int, event: str, payload: dict[str, Any],
                     webhooks: list[Webhook] | None = None) -> list[WebhookDelivery]:
    """One delivery per subscribed webhook of the workspace, sent after commit."""
    if webhooks is None:
        webhooks = [hook for hook in Webhook.objects.active().filter(workspace_id=workspace_id) if hook.wants(event)]
    if not webhooks:
        return []
    now = timezone.now()
    deliveries = [WebhookDelivery.objects.create(webhook=hook, event=event, payload=payload, next_attempt_at=now)
                  for hook in webhooks]
    ids = [delivery.pk for delivery in deliveries]
    transaction.on_commit(lambda: send_soon(ids))
    return deliveries


def send_soon(delivery_ids: list[int], countdown: float = 0) -> None:
    from notifications.tasks import deliver_webhook_task

    queue = getattr(settings, "MEMORYHUB_NOTIFICATIONS_QUEUE", None)
    for delivery_id in delivery_ids:
        try:
            deliver_webhook_task.apply_async(args=(delivery_id,), countdown=countdown,
                                             **({"queue": queue} if queue else {}))
        except Exception:
            # The row is the truth: the sweep sends it later.
            logger.warning("could not enqueue webhook delivery %s; the sweep will send it", delivery_id,
                           exc_info=True)
