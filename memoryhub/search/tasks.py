"""The worker's side of the semantic index: embed what a scope lacks."""

from __future__ import annotations

from celery import shared_task

from memoryhub.models import Agent, LogEntry
from memoryhub.search import embedding


@shared_task(soft_time_limit=240, time_limit=300)
def embed_scope_task(agent_id: int, anchor: str, pk: int) -> int:
    """Vectors for the texts of one scope that have none. The scope is
    named by a row of it (`anchor` "log" and a log entry's id, or "files"
    for the agent's own files), so the message holds no user reference."""
    from memoryhub import search

    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return 0
    user_ref = ""
    if anchor == "log":
        user_ref = LogEntry.objects.filter(pk=pk, agent=agent).values_list("user_ref", flat=True).first() or ""
        if not user_ref:
            return 0
    search._queued.discard((agent_id, user_ref))
    return embedding.embed_scope(agent=agent, user_ref=user_ref or None)
