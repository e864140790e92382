"""The audit log: one append-only event per action, written in the same
transaction as the action it records."""

from __future__ import annotations

from typing import Any

from memoryhub.models import Agent, AuditEvent, Workspace
from memoryhub.services.access import user_or_none


def record_event(
    *,
    action: str,
    agent: Agent | None = None,
    workspace: Workspace | None = None,
    actor_user: Any = None,
    actor_agent: Agent | None = None,
    user_ref: str = "",
    target: Any = None,
    summary: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    if workspace is None and agent is not None:
        workspace = agent.workspace
    user = user_or_none(actor_user)
    return AuditEvent.objects.create(
        action=action,
        workspace=workspace,
        actor_user=user,
        actor_username=user.get_username() if user is not None else "",
        actor_agent=actor_agent,
        agent=agent,
        user_ref=user_ref,
        target_type=type(target).__name__ if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        summary=summary[:500],
        details=details or {},
    )
