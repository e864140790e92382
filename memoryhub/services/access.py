"""Role checks for the services, and scoped lookups.

Every service operation names its acting principal (a
`memoryhub.actors.Actor`) and checks it: a staff user's role in the
object's workspace (the rule is `memoryhub.policy.role`; `require_role`
raises its answer), an agent for its own data, or SYSTEM for the operator
at the shell (management commands) and Celery tasks. Objects a staff user
touches are fetched through the scoped helpers below, so a query that
forgets the workspace cannot be written by accident; another workspace's
object is a 404, not a 403 (its existence is not disclosed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, SupportsInt

from django.db.models import QuerySet

from memoryhub import errors, policy
from memoryhub.actors import SYSTEM as SYSTEM  # moved to memoryhub/actors.py; kept importable from here
from memoryhub.actors import Actor, active_staff_user, staff_user
from memoryhub.actors import System as System
from memoryhub.actors import is_system as is_system
from memoryhub.actors import username_of as username_of
from memoryhub.models import Agent, Membership, Proposal, ProposalQuerySet, Workspace

# Re-exported: the services and other apps read the role sets from here.
from memoryhub.policy import ADMIN_ROLES as ADMIN_ROLES
from memoryhub.policy import READ_ROLES as READ_ROLES
from memoryhub.policy import REVIEW_ROLES as REVIEW_ROLES
from memoryhub.policy import refuse
from memoryhub.policy import role_in as role_in

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def user_or_none(actor: Actor | None) -> User | None:
    """The Django user to record for an actor (None for SYSTEM, agents, anonymous)."""
    return staff_user(actor)


def require_role(*, user: Actor | None, workspace: Workspace | int, roles: Iterable[str], action: str) -> None:
    """Refuse unless the user holds one of `roles` there (policy.role; SYSTEM does)."""
    refuse(policy.role(actor=user, workspace=workspace, roles=roles, action=action))


def require_reviewer(*, user: Actor | None, workspace: Workspace | int, action: str) -> None:
    require_role(user=user, workspace=workspace, roles=REVIEW_ROLES, action=action)


def require_admin(*, user: Actor | None, workspace: Workspace | int, action: str) -> None:
    require_role(user=user, workspace=workspace, roles=ADMIN_ROLES, action=action)


def workspace_ids_for(user: Actor | None, roles: Iterable[str] = READ_ROLES) -> list[int]:
    member = active_staff_user(user)
    if member is None:
        return []
    return list(Membership.objects.filter(user=member, role__in=list(roles)).values_list("workspace_id", flat=True))


def can_review(user: Actor | None, workspace_id: int) -> bool:
    return role_in(user=user, workspace=workspace_id) in REVIEW_ROLES


def is_admin(user: Actor | None, workspace_id: int) -> bool:
    return role_in(user=user, workspace=workspace_id) in ADMIN_ROLES


# --- scoped lookups ---------------------------------------------------------------------


def visible_agents(user: Actor | None) -> QuerySet[Agent]:
    return Agent.objects.filter(workspace_id__in=workspace_ids_for(user)).select_related("workspace")


def visible_proposals(user: Actor | None) -> ProposalQuerySet:
    return Proposal.objects.in_workspaces(workspace_ids_for(user)).select_related(
        "agent__workspace", "author_user", "author_agent", "decided_by"
    )


def get_agent_for_user(user: Actor | None, slug: str) -> Agent:
    agent = visible_agents(user).filter(slug=slug).first()
    if agent is None:
        raise errors.NotFound(f"There is no agent {slug!r} in your workspaces.")
    return agent


def _int_id(value: object, what: str) -> int:
    if not isinstance(value, str | bytes | SupportsInt):
        raise errors.NotFound(f"There is no such {what}.")
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise errors.NotFound(f"There is no such {what}.") from exc
    if not 1 <= number <= 2**63 - 1:
        raise errors.NotFound(f"There is no such {what}.")
    return number


def get_proposal_for_user(user: Actor | None, pk: object) -> Proposal:
    proposal = visible_proposals(user).filter(pk=_int_id(pk, "proposal")).first()
    if proposal is None:
        raise errors.NotFound("There is no such proposal in your workspaces.")
    return proposal
