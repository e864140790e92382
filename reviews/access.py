"""Scoped lookups for staff: every object a reviewer, admin or auditor
touches is fetched through here, so a query that forgets the workspace
cannot be written by accident. Another workspace's object is a 404, not a
403: its existence is not disclosed."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from memoryhub import errors, services
from memoryhub.models import Agent, Proposal, ProposalQuerySet


def visible_agents(user: Any) -> QuerySet[Agent]:
    return Agent.objects.filter(workspace_id__in=services.workspace_ids_for(user)).select_related("workspace")


def visible_proposals(user: Any) -> ProposalQuerySet:
    return Proposal.objects.in_workspaces(services.workspace_ids_for(user)).select_related(
        "agent__workspace", "author_user", "author_agent", "decided_by"
    )


def get_agent_for_user(user: Any, slug: str) -> Agent:
    agent = visible_agents(user).filter(slug=slug).first()
    if agent is None:
        raise errors.NotFound(f"There is no agent {slug!r} in your workspaces.")
    return agent


def get_proposal_for_user(user: Any, pk: Any) -> Proposal:
    try:
        pk = int(pk)
    except (TypeError, ValueError) as exc:
        raise errors.NotFound("There is no such proposal.") from exc
    proposal = visible_proposals(user).filter(pk=pk).first()
    if proposal is None:
        raise errors.NotFound("There is no such proposal in your workspaces.")
    return proposal
