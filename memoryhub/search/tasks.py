"""The worker's side of the semantic index: embed what a scope lacks."""

from __future__ import annotations

from celery import shared_task

from memoryhub.models import Agent
from memoryhub.search import embedding


@shared_task(soft_time_limit=240, time_limit=300)
def embed_scope_task(agent_id: int, user_ref: str) -> int:
    """Vectors for the texts of one (agent, user) scope that have none."""
    from memoryhub import search

    search._queued.discard((agent_id, user_ref))
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        return 0
    return embedding.embed_scope(agent=agent, user_ref=user_ref or None)
