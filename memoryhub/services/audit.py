"""The audit log: one append-only event per action, written in the same
transaction as the action it records.

Every action passes through here, so this is the one place other apps hear
of them: a listener (`subscribe`) is called with each event inside the same
transaction. memoryhub imports no other app; notifications subscribes in its
AppConfig.ready and turns some actions into webhook deliveries and e-mails,
written in this transaction and sent only after it commits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model

from memoryhub.actors import Actor
from memoryhub.models import Agent, AuditEvent, Workspace
from memoryhub.services.access import user_or_none

Listener = Callable[[AuditEvent, Any], None]
_listeners: list[Listener] = []


def subscribe(listener: Listener) -> None:
    """Call `listener(event, target)` after every audit event is written,
    in its transaction. A listener that raises rolls the action back: it
    must only write rows that belong with the action (an outbox)."""
    if listener not in _listeners:
        _listeners.append(listener)


def record_event(
    *,
    action: str,
    agent: Agent | None = None,
    workspace: Workspace | None = None,
    actor_user: Actor | None = None,
    actor_agent: Agent | None = None,
    user_ref: str = "",
    target: Model | None = None,
    summary: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    if workspace is None and agent is not None:
        workspace = agent.workspace
    user = user_or_none(actor_user)
    event = AuditEvent.objects.create(
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
    for listener in _listeners:
        listener(event, target)
    return event
