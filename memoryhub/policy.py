"""Who may do what: one function per rule.

Each function answers "may ACTOR do ACTION on OBJ?" with None (yes) or the
`DomainError` the service would raise (no), and changes nothing. The
services raise the answer (`refuse(...)`); the console asks the same
function to decide which controls to show, so a button can never promise
what the service refuses (tests/reviews/test_policy_controls.py).

A function reads the object as it is; the services call it on the row they
have locked. Rules checked elsewhere by nature (limits, the scanner, stale
versions found under the file lock) stay with the write they guard.

This module imports only the models, the errors and the actor type: the
services import it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from memoryhub import errors, risk
from memoryhub.actors import Actor, active_staff_user, is_system, staff_id
from memoryhub.merge import has_conflict_markers
from memoryhub.models import (
    ChangeKind,
    HighRiskApproval,
    Membership,
    ProposalStatus,
    RiskLevel,
    Role,
    Workspace,
)

if TYPE_CHECKING:
    from memoryhub.models import Change, Proposal

REVIEW_ROLES = frozenset({Role.REVIEWER, Role.ADMIN})
ADMIN_ROLES = frozenset({Role.ADMIN})
READ_ROLES = frozenset({Role.REVIEWER, Role.ADMIN, Role.AUDITOR})
# Who may decide each kind of change. A release puts reviewed content back:
# any reviewer may decide it; policy and erasure are admin decisions.
CHANGE_DECIDERS = {
    ChangeKind.AGENT_SETTINGS: ADMIN_ROLES,
    ChangeKind.WORKSPACE_SETTINGS: ADMIN_ROLES,
    ChangeKind.RELEASE: REVIEW_ROLES,
    ChangeKind.ERASURE: ADMIN_ROLES,
}
# A revision chain longer than this is a bug, not a review (authors_of).
MAX_REVISIONS = 100

Refusal = errors.DomainError | None


def refuse(refusal: Refusal) -> None:
    """Raise the rule's answer, if it says no."""
    if refusal is not None:
        raise refusal


# --- roles --------------------------------------------------------------------------------


def role_in(*, user: Actor | None, workspace: Workspace | int) -> str | None:
    """The actor's role in the workspace: only active staff members hold one."""
    member = active_staff_user(user)
    if member is None:
        return None
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    return Membership.objects.filter(user=member, workspace_id=workspace_id).values_list("role", flat=True).first()


def role(*, actor: Actor | None, workspace: Workspace | int, roles: Iterable[str], action: str,
         known: Mapping[int, str] | None = None) -> Refusal:
    """The actor holds one of `roles` in the workspace (SYSTEM always does).
    `known`: the actor's roles by workspace id, when a page listing many
    objects has read them in one query (selectors.roles_by_workspace)."""
    if is_system(actor):
        return None
    workspace_id = workspace if isinstance(workspace, int) else workspace.pk
    held = role_in(user=actor, workspace=workspace_id) if known is None else known.get(workspace_id)
    if held not in set(roles):
        return errors.PermissionDenied(f"Your role in this workspace does not allow you to {action}.")
    return None


# --- four-eyes ----------------------------------------------------------------------------


def authors_of(proposal: Proposal) -> set[int]:
    """Every staff user who wrote a revision of this proposal (an edit's
    author and the author of what it edits): none of them may approve it."""
    authors: set[int] = set()
    current: Proposal | None = proposal
    for _ in range(MAX_REVISIONS):
        if current is None:
            break
        if current.author_user_id is not None:
            authors.add(current.author_user_id)
        current = current.revises if current.revises_id else None
    return authors


def four_eyes(*, actor: Actor | None, requester_id: int | None, what: str) -> Refusal:
    """Whoever asked for something is not the one who decides it."""
    if requester_id is not None and staff_id(actor) == requester_id:
        return errors.FourEyes(f"You made this {what}, so someone else has to decide it (four-eyes rule).")
    return None


def proposal_four_eyes(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    """No author of any revision decides the proposal."""
    if staff_id(actor) in authors_of(proposal):
        return errors.FourEyes("You wrote this proposal (or a revision of it), so someone else has to decide it "
                               "(four-eyes rule).")
    return None


# --- proposals ----------------------------------------------------------------------------


def decide_proposal(*, actor: Actor | None, proposal: Proposal, action: str) -> Refusal:
    """A reviewer of the workspace who wrote no revision of it."""
    return (role(actor=actor, workspace=proposal.agent.workspace_id, roles=REVIEW_ROLES, action=action)
            or proposal_four_eyes(actor=actor, proposal=proposal))


def high_risk_approval(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    """The workspace's rule for high-risk proposals: an admin only, or two
    approvals by different reviewers (the second may not be the first)."""
    if proposal.risk_level != RiskLevel.HIGH or is_system(actor):
        return None
    rule = proposal.agent.workspace.high_risk_approval
    if rule == HighRiskApproval.ADMIN:
        if role_in(user=actor, workspace=proposal.agent.workspace_id) not in ADMIN_ROLES:
            tags = ", ".join(risk.TAG_LABELS.get(t, t) for t in proposal.risk_tags if t in risk.HIGH)
            return errors.HighRisk(
                f"This proposal is high risk ({tags}); in workspace {proposal.agent.workspace.slug} only an admin "
                "approves it."
            )
    elif (rule == HighRiskApproval.TWO_APPROVALS and proposal.first_approved_by_id is not None
          and proposal.first_approved_by_id == staff_id(actor)):
        return errors.FourEyes(
            "You gave this high-risk proposal its first approval; a second, different reviewer serves it."
        )
    return None


def stale_proposal(*, current_version: int) -> errors.StaleProposal:
    return errors.StaleProposal(
        "The file changed after this proposal was made, so approving it would overwrite that change. "
        "Rebase the proposal onto the current version or reject it.",
        current_version=current_version,
    )


def approvable(*, proposal: Proposal) -> Refusal:
    """A pending proposal free of conflict blocks (its staleness is found
    under the file's lock)."""
    if not proposal.is_pending:
        return errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to approve.")
    if has_conflict_markers(proposal.proposed_content):
        return errors.Conflict(
            "This proposal still contains merge-conflict blocks. Edit it to resolve them before it can be "
            "approved; conflict markers must never reach an agent."
        )
    return None


def approve_proposal(*, actor: Actor | None, proposal: Proposal, current_version: int) -> Refusal:
    """Everything approve_proposal checks before it writes, given the file's
    current version: who, the proposal's state (at its base, pending, free of
    conflict blocks), then the high-risk rule. Limits, the scanner and the
    personal-data policy are the write's own checks."""
    if refusal := decide_proposal(actor=actor, proposal=proposal, action="approve proposals"):
        return refusal
    if proposal.status == ProposalStatus.STALE or (proposal.is_open and current_version != proposal.base_version):
        return stale_proposal(current_version=current_version)
    return approvable(proposal=proposal) or high_risk_approval(actor=actor, proposal=proposal)


def rejectable(*, proposal: Proposal) -> Refusal:
    if not proposal.is_open:
        return errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to reject.")
    return None


def reject_proposal(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    return decide_proposal(actor=actor, proposal=proposal, action="reject proposals") or rejectable(proposal=proposal)


def withdraw_proposal(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    """Only its author takes an open proposal back."""
    if refusal := role(actor=actor, workspace=proposal.agent.workspace_id, roles=REVIEW_ROLES,
                       action="withdraw proposals"):
        return refusal
    if proposal.author_user_id is None or proposal.author_user_id != staff_id(actor):
        return errors.PermissionDenied("Only the person who made a proposal can withdraw it; reject it instead.")
    if not proposal.is_open:
        return errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to withdraw.")
    return None


def claim_proposal(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    """A reviewer who wrote no revision claims an open proposal nobody else
    holds (claiming one's own claim again changes nothing)."""
    if refusal := role(actor=actor, workspace=proposal.agent.workspace_id, roles=REVIEW_ROLES,
                       action="claim proposals"):
        return refusal
    if not proposal.is_open:
        return errors.NotPending(f"This proposal is already {proposal.status}; there is nothing to claim.")
    if staff_id(actor) in authors_of(proposal):
        return errors.FourEyes("You wrote this proposal (or a revision of it), so someone else reviews it "
                               "(four-eyes rule); it cannot be yours to claim.")
    if proposal.claimed_by_id is not None and proposal.claimed_by_id != staff_id(actor):
        return errors.Claimed(
            f"This proposal is claimed already: {proposal.claimer_name} holds the claim; they or an admin "
            "release it first.",
            claimed_by=proposal.claimer_name,
        )
    return None


def unclaim_proposal(*, actor: Actor | None, proposal: Proposal) -> Refusal:
    """The claimer releases their claim; an admin (or the shell) anyone's."""
    workspace_id = proposal.agent.workspace_id
    if refusal := role(actor=actor, workspace=workspace_id, roles=REVIEW_ROLES, action="release claims"):
        return refusal
    if not proposal.is_open:
        return errors.NotPending(f"This proposal is already {proposal.status}; there is no claim to release.")
    if proposal.claimed_by_id is None:
        return errors.Invalid("This proposal is not claimed.")
    if (proposal.claimed_by_id != staff_id(actor) and not is_system(actor)
            and role_in(user=actor, workspace=workspace_id) not in ADMIN_ROLES):
        return errors.PermissionDenied(f"This proposal is claimed by someone else: only {proposal.claimer_name} or "
                                       "an admin releases the claim.")
    return None


# --- governed changes ---------------------------------------------------------------------


def _change_role(*, actor: Actor | None, change: Change, verb: str, known: Mapping[int, str] | None) -> Refusal:
    return role(actor=actor, workspace=change.workspace_id, roles=CHANGE_DECIDERS[ChangeKind(change.kind)],
                action=f"{verb} {change.get_kind_display().lower()} changes", known=known)


def approve_change(*, actor: Actor | None, change: Change, known: Mapping[int, str] | None = None) -> Refusal:
    """A decider for the change's kind who did not request it."""
    if refusal := (_change_role(actor=actor, change=change, verb="approve", known=known)
                   or four_eyes(actor=actor, requester_id=change.requested_by_id, what="change")):
        return refusal
    if not change.is_pending:
        return errors.NotPending(f"This change is already {change.status}; there is nothing to approve.")
    return None


def reject_change(*, actor: Actor | None, change: Change, known: Mapping[int, str] | None = None) -> Refusal:
    """A decider for the change's kind; its requester withdraws instead."""
    if refusal := _change_role(actor=actor, change=change, verb="reject", known=known):
        return refusal
    if change.requested_by_id is not None and change.requested_by_id == staff_id(actor):
        return errors.FourEyes("You requested this change; withdraw it instead of rejecting it.")
    if not change.is_pending:
        return errors.NotPending(f"This change is already {change.status}; there is nothing to reject.")
    return None


def withdraw_change(*, actor: Actor | None, change: Change) -> Refusal:
    """Only its requester takes a pending change back."""
    if change.requested_by_id is None or change.requested_by_id != staff_id(actor):
        return errors.PermissionDenied("Only the person who requested a change can withdraw it.")
    if not change.is_pending:
        return errors.NotPending(f"This change is already {change.status}; there is nothing to withdraw.")
    return None
