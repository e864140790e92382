"""Requesting a governance change: the step every governed setting
(services.agents), erasure (services.erasure) and release (services.changes)
shares. Deciding one is services.changes, which imports what each kind of
change applies; the services that request changes import only this module,
so the two directions never meet in an import cycle.
"""

from __future__ import annotations

from memoryhub.actors import Actor, username_of
from memoryhub.models import Agent, Change, Workspace
from memoryhub.services.access import user_or_none
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_text

REASON_MAX = 1000


def request_change(
    *,
    workspace: Workspace,
    kind: str,
    actor: Actor,
    payload: dict[str, object],
    summary: str,
    reason: object = "",
    agent: Agent | None = None,
    file_kind: str = "",
    user_ref: str = "",
    event_user_ref: str | None = None,
) -> Change:
    """Record a pending change (the caller checked the requester's role).
    `event_user_ref` names the user in the audit event instead of
    `user_ref` (an erasure names its subject by pseudonym only)."""
    reason = validate_text(reason, field="reason", label="The reason", max_length=REASON_MAX)
    change = Change.objects.create(
        workspace=workspace, agent=agent, kind=kind, file_kind=file_kind, user_ref=user_ref, payload=payload,
        summary=summary[:500], reason=reason, requested_by=user_or_none(actor),
        requested_by_username=username_of(actor),
    )
    record_event(
        action="change.request",
        workspace=workspace,
        agent=agent,
        actor_user=actor,
        user_ref=user_ref if event_user_ref is None else event_user_ref,
        target=change,
        summary=f"Requested change #{change.pk}: {change.summary}",
        details={"kind": kind, "payload": payload, "reason": reason},
    )
    return change
