"""Proposals: pending changes to one memory file, and every decision on them.

Whatever made a proposal (an agent under `review`, an admin's persona edit,
dreaming, a reviewer's edit or rebase, a rollback), the same rules decide
it here: the reviewer role in the agent's workspace, four-eyes (nobody who
wrote any revision of a proposal approves it), no unresolved conflict
blocks, compare-and-swap on the base version (otherwise the proposal turns
stale), and the limits and scanner as they stand at decision time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub import errors, merge, policy, risk
from memoryhub.actors import Actor, is_system, username_of
from memoryhub.models import (
    AGENT_SCOPED,
    Agent,
    HighRiskApproval,
    MemoryFile,
    Proposal,
    ProposalStatus,
    RiskLevel,
    Source,
    Workspace,
)
from memoryhub.policy import refuse
from memoryhub.scanning.pii import CATEGORY_LABELS
from memoryhub.services._write import apply_version, create_proposal, lock_file, screen
from memoryhub.services.access import (
    REVIEW_ROLES,
    _int_id,
    require_admin,
    require_reviewer,
    require_role,
    user_or_none,
    visible_proposals,
)
from memoryhub.services.audit import record_event
from memoryhub.services.limits import (
    validate_content,
    validate_target,
    validate_text,
)
from memoryhub.services.memory import get_file, version_row

COMMENT_MAX = 2000
REASON_MAX = 1000
# A batch is read as a list before it is sent: beyond this nobody has.
BULK_MAX = 50
BULK_ACTIONS = ("approve", "reject")

def special_categories(proposal: Proposal) -> list[str]:
    """The special categories of personal data a proposal carries, in order."""
    return list(dict.fromkeys(str(item.get("category")) for item in proposal.pii or []
                              if isinstance(item, dict) and item.get("special")))


def _check_personal_data(proposal: Proposal, acknowledged: bool) -> list[str]:
    categories = special_categories(proposal)
    if categories and not acknowledged:
        labels = ", ".join(CATEGORY_LABELS.get(c, c) for c in categories)
        raise errors.PersonalDataUnacknowledged(
            f"This proposal carries personal data of a special category ({labels}). Approve it only if the agent "
            "needs it to do its work, and say so: tick the acknowledgement (acknowledge_personal_data: true).",
            categories=categories,
        )
    return categories


def propose_change(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    content: object,
    source: str,
    reason: str = "",
    rationale: list[dict[str, object]] | None = None,
    author_user: Actor | None = None,
    author_agent: Agent | None = None,
    base_version: int | None = None,
    revises: Proposal | None = None,
) -> Proposal:
    """Record a pending change for a reviewer to decide. Consolidation runs
    (no author: the system), reviewers' revisions and rebases come through
    here; a staff author needs the reviewer or admin role."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    content = validate_content(content)
    reason = validate_text(reason, field="reason", label="The reason", max_length=REASON_MAX)
    if author_user is not None:
        require_role(user=author_user, workspace=agent.workspace_id, roles=REVIEW_ROLES,
                     action="propose memory changes")
    # Before the lock: the proposed content does not depend on the file.
    screened = screen(agent=agent, kind=kind, content=content)
    with transaction.atomic():
        file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
        current = file.version if file else 0
        if base_version is not None and base_version != current:
            raise errors.VersionConflict(
                f"{kind} moved on to version {current} since version {base_version} was read.",
                current_version=current,
            )
        if (file.content if file else "") == content:
            raise errors.Invalid(f"The proposed content is identical to the current {kind}; nothing to review.")
        return create_proposal(
            agent=agent,
            user_ref=user_ref,
            screened=screened,
            base_content=file.content if file else "",
            base_version=current,
            source=source,
            reason=reason,
            rationale=rationale or [{"kind": "edit", "summary": f"Edit {kind}", "reason": reason, "evidence": []}],
            author_user=author_user,
            author_agent=author_agent,
            revises=revises,
        )


def propose_persona_edit(*, agent: Agent, kind: str, content: object, reason: str, actor_user: Actor) -> Proposal:
    """Persona files (SOUL/ABOUT/TOOLS) are admin territory; the edit is a
    proposal that another reviewer approves (four-eyes lives in approve)."""
    require_admin(user=actor_user, workspace=agent.workspace_id, action="edit the persona")
    if kind not in AGENT_SCOPED:
        raise errors.Invalid(f"{kind} is not a persona file; only SOUL.md, ABOUT.md and TOOLS.md are edited here.",
                             field="kind")
    if isinstance(content, str):
        # Browsers submit textarea line breaks as CRLF; limits count what a reader sees.
        content = content.replace("\r\n", "\n")
    return propose_change(agent=agent, kind=kind, content=content, source=Source.ADMIN, author_user=actor_user,
                          reason=reason)


def propose_rollback(
    *, agent: Agent, kind: str, user_ref: str | None = None, to_version: object, actor: Actor, reason: object
) -> Proposal:
    """Serving an earlier version again is a proposal (source `rollback`)
    that another reviewer approves; approving it creates a new version with
    that content and takes the undone versions out of every open session."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    require_reviewer(user=actor, workspace=agent.workspace_id, action="roll back memory files")
    reason = validate_text(reason, field="reason", label="The reason for a rollback", max_length=REASON_MAX,
                           required=True)
    if isinstance(to_version, bool) or not isinstance(to_version, int):
        raise errors.Invalid("version must be a whole number.", field="version")
    with transaction.atomic():
        file = lock_file(agent=agent, kind=kind, user_ref=user_ref)
        if file is None:
            raise errors.NotFound(f"{kind} has never been written, so there is nothing to roll back.")
        if not 1 <= to_version <= file.version:
            raise errors.Invalid(
                f"{kind} has versions 1 to {file.version}; version {to_version} does not exist.", field="version"
            )
        if to_version == file.version:
            raise errors.Invalid(f"Version {to_version} is already the current version of {kind}.", field="version")
        old = version_row(file=file, version=to_version)
        if old is None:
            raise errors.NotFound(f"Version {to_version} of {kind} is missing from the history.")
        if old.content == file.content:
            raise errors.Invalid(
                f"Version {to_version} has the same content as the current version {file.version}; "
                "withhold the file instead if it must not be served.", field="version"
            )
        # The old content meets today's limits and today's scanner, or it stays history.
        screened = screen(agent=agent, kind=kind, content=old.content)
        return create_proposal(
            agent=agent,
            user_ref=user_ref,
            screened=screened,
            base_content=file.content,
            base_version=file.version,
            source=Source.ROLLBACK,
            reason=reason,
            rationale=[{"kind": "rollback", "summary": f"Roll {kind} back to the content of v{to_version}",
                        "reason": reason, "evidence": []}],
            author_user=actor,
            rollback_to=to_version,
        )


# --- decisions ----------------------------------------------------------------------------


def _lock_proposal(proposal_id: object) -> Proposal:
    try:
        proposal = (
            Proposal.objects.select_for_update(of=("self",)).select_related("agent__workspace")
            .get(pk=_int_id(proposal_id, "proposal"))
        )
    except Proposal.DoesNotExist as exc:
        raise errors.NotFound("There is no such proposal.") from exc
    return proposal


def _lock_file_then_proposal(proposal_id: object) -> Proposal:
    """Lock the proposal's file row, then the proposal: the order every write
    takes (a write locks the file, then marks that file's pending proposals
    stale). Locking the proposal first and the file second, while a write
    held the file and waited for the proposal, deadlocked."""
    target = Proposal.objects.filter(pk=_int_id(proposal_id, "proposal")).values("agent_id", "kind",
                                                                              "user_ref").first()
    if target is None:
        raise errors.NotFound("There is no such proposal.")
    # What a proposal is about never changes (memoryhub.immutability), so the
    # file read here is the one the proposal names.
    MemoryFile.objects.select_for_update(of=("self",)).filter(
        agent_id=target["agent_id"], kind=target["kind"], user_ref=target["user_ref"]
    ).first()
    return _lock_proposal(proposal_id)


def check_decider(*, proposal: Proposal, reviewer: Actor, action: str) -> None:
    refuse(policy.decide_proposal(actor=reviewer, proposal=proposal, action=action))


stale_error = policy.stale_proposal


def current_version_of(proposal: Proposal) -> int:
    file = get_file(agent=proposal.agent, kind=proposal.kind, user_ref=proposal.user_ref)
    return file.version if file else 0


def clean_reason_code(*, workspace: Workspace, code: object, required: bool = False) -> str:
    """A decision's reason code: one of the workspace's list, or empty when
    not required."""
    if code is None or code == "":
        if required:
            raise errors.Invalid(
                f"Choose a reason code ({', '.join(workspace.reason_codes)}).", field="reason_code"
            )
        return ""
    if not isinstance(code, str) or code.strip() not in workspace.reason_codes:
        raise errors.Invalid(
            f"{code!r} is not a reason code of workspace {workspace.slug}; use one of "
            f"{', '.join(workspace.reason_codes)}.", field="reason_code"
        )
    return code.strip()


def _check_batchable(proposal: Proposal, batch: str | None) -> None:
    if batch is None:
        return
    single = [risk.TAG_LABELS[t] for t in proposal.risk_tags if t in risk.SINGLE_REVIEW]
    if single:
        raise errors.NeedsSingleReview(
            f"Proposal #{proposal.pk} is not decided in a batch ({', '.join(single)}): open it and decide it on its "
            "own.", tags=[t for t in proposal.risk_tags if t in risk.SINGLE_REVIEW]
        )


def approve_proposal(*, proposal_id: object, reviewer: Actor, comment: object = "", reason_code: object = "",
                     batch: str | None = None, acknowledge_personal_data: bool = False) -> Proposal:
    """Apply a pending proposal as a new version, in one transaction, only if
    the file is still at the proposal's base version; otherwise mark it stale
    (that mark commits) and raise StaleProposal. A high-risk proposal obeys
    the workspace's `high_risk_approval` rule: an admin only, or a first
    approval that a second, different reviewer completes. The returned
    proposal carries `stale_siblings`: the same file's pending proposals this
    approval made stale. `batch` names the bulk decision it belongs to. A
    proposal carrying personal data of a special category needs
    `acknowledge_personal_data` (recorded in the audit event), never a
    silent click."""
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    with transaction.atomic():
        proposal = _lock_file_then_proposal(proposal_id)
        check_decider(proposal=proposal, reviewer=reviewer, action="approve proposals")
        code = clean_reason_code(workspace=proposal.agent.workspace, code=reason_code)
        if proposal.status == ProposalStatus.STALE:
            stale = stale_error(current_version=current_version_of(proposal))
        elif refusal := policy.approvable(proposal=proposal):
            raise refusal
        else:
            _check_batchable(proposal, batch)
            applied = _apply_proposal(proposal=proposal, reviewer=reviewer, comment=comment, reason_code=code,
                                      batch=batch, acknowledge=bool(acknowledge_personal_data))
            if applied is None:
                return proposal
            stale = applied
    # Raised outside the transaction so the stale mark and its audit event stay.
    raise stale


def _high_risk_rule(*, proposal: Proposal, reviewer: Actor) -> str:
    """The workspace's rule for this proposal, after checking the reviewer
    may act under it: "" (any reviewer approves), or "first" when this
    approval is the first of two."""
    refuse(policy.high_risk_approval(actor=reviewer, proposal=proposal))
    if proposal.risk_level != RiskLevel.HIGH or is_system(reviewer):
        return ""
    if (proposal.agent.workspace.high_risk_approval == HighRiskApproval.TWO_APPROVALS
            and proposal.first_approved_by_id is None):
        return "first"
    return ""


def _apply_proposal(*, proposal: Proposal, reviewer: Actor, comment: str, reason_code: str = "",
                    batch: str | None = None, acknowledge: bool = False) -> errors.StaleProposal | None:
    agent = proposal.agent
    file = lock_file(agent=agent, kind=proposal.kind, user_ref=proposal.user_ref)
    current = file.version if file else 0
    if current != proposal.base_version:
        proposal.mark_stale()
        record_event(
            action="proposal.stale",
            agent=agent,
            actor_user=reviewer,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"Proposal #{proposal.pk} is stale: {proposal.kind} is at v{current}, not v{proposal.base_version}",
            details={"base_version": proposal.base_version, "current_version": current},
        )
        return stale_error(current_version=current)
    # Rules may have tightened since the proposal was made.
    screen(agent=agent, kind=proposal.kind, content=proposal.proposed_content)
    # After the policy: content the workspace refuses is refused, whatever
    # the reviewer acknowledges.
    acknowledged = _check_personal_data(proposal, acknowledge)
    batch_details: dict[str, object] = {"reason_code": reason_code, **({"batch": batch} if batch else {}),
                                     **({"personal_data_acknowledged": acknowledged} if acknowledged else {})}
    if _high_risk_rule(proposal=proposal, reviewer=reviewer) == "first":
        proposal.first_approved_by = user_or_none(reviewer)
        proposal.first_approved_by_username = username_of(reviewer)
        proposal.first_approved_at = timezone.now()
        proposal.save(update_fields=["first_approved_by", "first_approved_by_username", "first_approved_at"])
        record_event(
            action="proposal.approve_first",
            agent=agent,
            actor_user=reviewer,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"First of two approvals of high-risk proposal #{proposal.pk}; a second reviewer serves it",
            details={"comment": comment, "risk_tags": proposal.risk_tags, **batch_details},
        )
        return None
    siblings = list(
        Proposal.objects.pending().for_file(agent, proposal.kind, proposal.user_ref).exclude(pk=proposal.pk)
        .order_by("pk").values_list("pk", flat=True)
    )
    undone: list[int] = []
    if file is not None and proposal.source == Source.ROLLBACK and proposal.rollback_to is not None:
        # Every version after the target is undone: open sessions that froze
        # one of them get the restored content from their next request on.
        undone = list(range(proposal.rollback_to + 1, file.version + 1))
        file.revoked_versions = sorted(set(file.revoked_versions or []) | set(undone))
        file.withheld_version = None
        file.withheld_at = None
        file.withheld_by = None
        file.withheld_reason = ""
    file = apply_version(
        agent=agent,
        kind=proposal.kind,
        user_ref=proposal.user_ref,
        file=file,
        content=proposal.proposed_content,
        source=proposal.source,
        reason=comment or proposal.reason or f"Approved proposal #{proposal.pk}",
        actor_user=proposal.author_user,
        actor_agent=proposal.author_agent,
        approved_by=reviewer,
        proposal=proposal,
    )
    proposal.status = ProposalStatus.APPROVED
    proposal.decided_by = user_or_none(reviewer)
    proposal.decided_by_username = username_of(reviewer)
    proposal.decided_at = timezone.now()
    proposal.decision_comment = comment
    proposal.reason_code = reason_code
    proposal.applied_version = file.version
    proposal.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at", "decision_comment",
                                 "reason_code", "applied_version"])
    # apply_version turned every other pending proposal for this file stale.
    proposal.stale_siblings = tuple(siblings)
    details: dict[str, object] = {"version": file.version, "comment": comment, "source": proposal.source,
                               **batch_details}
    if siblings:
        details["stale_siblings"] = siblings
    if proposal.first_approved_by_id:
        details["first_approved_by"] = proposal.first_approved_by_username
    if undone:
        details.update(rollback_to=proposal.rollback_to, undone_versions=undone)
    record_event(
        action="proposal.approve",
        agent=agent,
        actor_user=reviewer,
        user_ref=proposal.user_ref,
        target=proposal,
        summary=f"Approved proposal #{proposal.pk}: {proposal.kind} is now v{file.version}"
        + (f" (the content of v{proposal.rollback_to})" if undone else ""),
        details=details,
    )
    return None


def reject_proposal(*, proposal_id: object, reviewer: Actor, comment: object, reason_code: object = "",
                    batch: str | None = None) -> Proposal:
    """Nothing served changes. A rejection says why: a comment, a reason
    code, or both."""
    has_code = isinstance(reason_code, str) and bool(reason_code.strip())
    comment = validate_text(comment, field="comment", label="A comment saying why you reject this proposal",
                            max_length=COMMENT_MAX, required=not has_code)
    with transaction.atomic():
        proposal = _lock_proposal(proposal_id)
        check_decider(proposal=proposal, reviewer=reviewer, action="reject proposals")
        code = clean_reason_code(workspace=proposal.agent.workspace, code=reason_code)
        refuse(policy.rejectable(proposal=proposal))
        _check_batchable(proposal, batch)
        proposal.status = ProposalStatus.REJECTED
        proposal.decided_by = user_or_none(reviewer)
        proposal.decided_by_username = username_of(reviewer)
        proposal.decided_at = timezone.now()
        proposal.decision_comment = comment
        proposal.reason_code = code
        proposal.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at", "decision_comment",
                                     "reason_code"])
        record_event(
            action="proposal.reject",
            agent=proposal.agent,
            actor_user=reviewer,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"Rejected proposal #{proposal.pk} for {proposal.kind}" + (f" ({code})" if code else ""),
            details={"comment": comment, "source": proposal.source, "reason_code": code,
                     **({"batch": batch} if batch else {})},
        )
    return proposal


# --- batches --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkItem:
    id: Any
    status: str = ""
    error: errors.DomainError | None = None
    # Under the two-approvals rule: this approval was the first of two.
    first_approval: bool = False
    stale_siblings: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        if self.error is not None:
            return {"id": self.id, "error": {"code": self.error.code, "message": self.error.detail}}
        answer: dict[str, object] = {"id": self.id, "status": self.status}
        if self.first_approval:
            answer["approvals"] = 1
        if self.stale_siblings:
            answer["stale_siblings"] = list(self.stale_siblings)
        return answer


@dataclass(frozen=True)
class BulkResult:
    batch: str
    action: str
    reason_code: str
    items: list[BulkItem] = field(default_factory=list)

    @property
    def done(self) -> list[BulkItem]:
        return [item for item in self.items if item.error is None]

    @property
    def refused(self) -> list[BulkItem]:
        return [item for item in self.items if item.error is not None]


def _bulk_ids(ids: object) -> list[int]:
    if not isinstance(ids, list) or not ids:
        raise errors.Invalid("Send the proposals to decide as a non-empty list of ids.", field="ids")
    cleaned: list[int] = []
    for raw in ids:
        if isinstance(raw, bool):
            raise errors.Invalid("Every id must be a whole number.", field="ids")
        try:
            cleaned.append(int(raw))
        except (TypeError, ValueError) as exc:
            raise errors.Invalid("Every id must be a whole number.", field="ids") from exc
    cleaned = list(dict.fromkeys(cleaned))
    if len(cleaned) > BULK_MAX:
        raise errors.BatchTooLarge(
            f"A batch decides at most {BULK_MAX} proposals; this one has {len(cleaned)}. Split it.",
            limit=BULK_MAX,
        )
    return cleaned


def decide_bulk(*, ids: object, action: object, reason_code: object, actor: Actor, comment: object = "") -> BulkResult:
    """Approve or reject up to BULK_MAX proposals with one reason code. Each
    goes through approve_proposal / reject_proposal, so every rule of the
    single decision holds per item (own, stale, conflicted, role, high
    risk); proposals that must be read on their own (persona files, scanner
    or personal-data findings) are refused too. A refused item is listed
    with its error and the rest are decided. Every item gets one audit
    event carrying the batch id: its decision, or `proposal.bulk_refused`."""
    if not isinstance(action, str) or action not in BULK_ACTIONS:
        raise errors.Invalid("action must be approve or reject.", field="action")
    wanted = _bulk_ids(ids)
    if not isinstance(reason_code, str) or not reason_code.strip():
        raise errors.Invalid("A batch decision needs a reason code.", field="reason_code")
    reason_code = reason_code.strip()
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    found = {p.pk: p for p in visible_proposals(actor).filter(pk__in=wanted)}
    known: set[str] = set()
    for visible in found.values():
        known.update(visible.agent.workspace.reason_codes)
    if found and reason_code not in known:
        raise errors.Invalid(
            f"{reason_code!r} is not a reason code here; use one of {', '.join(sorted(known))}.", field="reason_code"
        )
    batch = uuid.uuid4().hex
    items: list[BulkItem] = []
    for pk in wanted:
        seen = found.get(pk)
        if seen is None:
            items.append(BulkItem(id=pk, error=errors.NotFound("There is no such proposal in your workspaces.")))
            continue
        proposal = seen
        try:
            if action == "approve":
                done = approve_proposal(proposal_id=pk, reviewer=actor, comment=comment, reason_code=reason_code,
                                        batch=batch)
            else:
                done = reject_proposal(proposal_id=pk, reviewer=actor, comment=comment, reason_code=reason_code,
                                       batch=batch)
        except errors.DomainError as exc:
            items.append(BulkItem(id=pk, error=exc))
            record_event(
                action="proposal.bulk_refused",
                agent=proposal.agent,
                actor_user=actor,
                user_ref=proposal.user_ref,
                target=proposal,
                summary=f"Batch {action} refused proposal #{pk}: {exc.code}",
                details={"batch": batch, "action": action, "reason_code": reason_code, "code": exc.code,
                         "detail": exc.detail},
            )
            continue
        items.append(BulkItem(id=pk, status=done.status, stale_siblings=done.stale_siblings,
                              first_approval=done.status == ProposalStatus.PENDING))
    return BulkResult(batch=batch, action=action, reason_code=reason_code, items=items)


# --- claims ---------------------------------------------------------------------------------


def claim_proposal(*, proposal_id: object, actor: Actor) -> Proposal:
    """Say "I am reviewing this". Advisory: others see the claim and are
    warned, but may still decide the proposal (a lock would leave it stuck
    when the claimer is away). A claim is not taken over silently: the
    claimer or an admin releases it first."""
    with transaction.atomic():
        proposal = _lock_proposal(proposal_id)
        refuse(policy.claim_proposal(actor=actor, proposal=proposal))
        if proposal.claimed_by_id is not None:
            return proposal  # the actor's own claim already
        proposal.claimed_by = user_or_none(actor)
        proposal.claimed_by_username = username_of(actor)
        proposal.claimed_at = timezone.now()
        proposal.save(update_fields=["claimed_by", "claimed_by_username", "claimed_at"])
        record_event(action="proposal.claim", agent=proposal.agent, actor_user=actor, user_ref=proposal.user_ref,
                     target=proposal, summary=f"Claimed proposal #{proposal.pk}")
    return proposal


def unclaim_proposal(*, proposal_id: object, actor: Actor) -> Proposal:
    """Release a claim: the claimer's own, or anyone's for an admin."""
    with transaction.atomic():
        proposal = _lock_proposal(proposal_id)
        refuse(policy.unclaim_proposal(actor=actor, proposal=proposal))
        holder = proposal.claimer_name
        proposal.claimed_by = None
        proposal.claimed_by_username = ""
        proposal.claimed_at = None
        proposal.save(update_fields=["claimed_by", "claimed_by_username", "claimed_at"])
        record_event(action="proposal.unclaim", agent=proposal.agent, actor_user=actor, user_ref=proposal.user_ref,
                     target=proposal, summary=f"Released the claim of {holder} on proposal #{proposal.pk}",
                     details={"claimed_by": holder})
    return proposal


def withdraw_proposal(*, proposal_id: object, actor: Actor, comment: object = "") -> Proposal:
    """The author takes back their own open proposal (what they see instead
    of Approve/Reject). Nothing served changes."""
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    with transaction.atomic():
        proposal = _lock_proposal(proposal_id)
        refuse(policy.withdraw_proposal(actor=actor, proposal=proposal))
        proposal.status = ProposalStatus.WITHDRAWN
        proposal.decided_by = user_or_none(actor)
        proposal.decided_by_username = username_of(actor)
        proposal.decided_at = timezone.now()
        proposal.decision_comment = comment
        proposal.save(update_fields=["status", "decided_by", "decided_by_username", "decided_at", "decision_comment"])
        record_event(
            action="proposal.withdraw",
            agent=proposal.agent,
            actor_user=actor,
            user_ref=proposal.user_ref,
            target=proposal,
            summary=f"Withdrew proposal #{proposal.pk} for {proposal.kind}",
            details={"comment": comment},
        )
    return proposal


def revise_proposal(*, proposal_id: object, reviewer: Actor, content: object, comment: object = "") -> Proposal:
    """A reviewer's edit of a pending proposal, as a new pending proposal
    that someone who wrote neither version approves."""
    content = validate_content(content)
    # Browsers send textarea content with CRLF line ends.
    content = content.replace("\r\n", "\n")
    comment = validate_text(comment, field="comment", label="The comment", max_length=COMMENT_MAX)
    with transaction.atomic():
        original = _lock_file_then_proposal(proposal_id)
        require_reviewer(user=reviewer, workspace=original.agent.workspace_id, action="edit proposals")
        if original.status == ProposalStatus.STALE:
            raise errors.StaleProposal(
                "The file changed after this proposal was made. Rebase it onto the current version first, "
                "then edit the rebased proposal."
            )
        if not original.is_pending:
            raise errors.NotPending(f"This proposal is already {original.status}; there is nothing to edit.")
        if content == original.proposed_content:
            raise errors.Invalid("Your edit changes nothing; approve or reject the proposal as it is.",
                                 field="content")
        try:
            revision = propose_change(
                agent=original.agent,
                kind=original.kind,
                user_ref=original.user_ref or None,
                content=content,
                source=Source.REVIEWER,
                reason=comment or f"Reviewer edit of proposal #{original.pk}",
                rationale=[
                    *original.rationale,
                    {"kind": "edit", "summary": f"Reviewer edit of proposal #{original.pk}",
                     "reason": comment or "Edited during review.", "evidence": []},
                ],
                author_user=reviewer,
                base_version=original.base_version,
                revises=original,
            )
        except errors.VersionConflict as exc:
            raise errors.StaleProposal(
                "The file changed after this proposal was made. Rebase it onto the current version first."
            ) from exc
        _supersede(original=original, by=revision, reviewer=reviewer, action="proposal.edit",
                   summary=f"Edited proposal #{original.pk} into #{revision.pk}; it awaits another reviewer")
    return revision


def rebase_proposal(*, proposal_id: object, reviewer: Actor) -> Proposal:
    """Recompute a stale proposal against the current version (three-way
    merge) as a new pending proposal; the stale one becomes superseded.
    Conflicting lines are left as conflict blocks that block approval."""
    with transaction.atomic():
        original = _lock_file_then_proposal(proposal_id)
        require_reviewer(user=reviewer, workspace=original.agent.workspace_id, action="rebase proposals")
        agent = original.agent
        file = get_file(agent=agent, kind=original.kind, user_ref=original.user_ref)
        current_version = file.version if file else 0
        current = file.content if file else ""
        if not original.is_open:
            raise errors.NotPending(f"This proposal is already {original.status}; there is nothing to rebase.")
        if current_version == original.base_version:
            raise errors.Invalid("This proposal is already based on the current version; there is nothing to rebase.")
        if original.source == Source.ROLLBACK:
            # A merged rollback would no longer restore one known version.
            raise errors.Invalid("A rollback is not rebased: reject it and roll back again from the file's history.")
        merged = merge.merge3(original.base_content, original.proposed_content, current)
        if merged.content == current:
            raise errors.Invalid(
                f"The current version {current_version} already contains this change; reject the stale proposal."
            )
        note = (
            f"Rebased proposal #{original.pk} from v{original.base_version} onto v{current_version}"
            + (f"; {merged.conflicts} conflict(s) to resolve" if merged.conflicts else "; merged cleanly")
        )
        rebased = propose_change(
            agent=agent,
            kind=original.kind,
            user_ref=original.user_ref or None,
            content=merged.content,
            source=original.source,
            reason=original.reason,
            rationale=[*original.rationale, {"kind": "merge", "summary": note,
                                             "reason": "The file changed after the proposal was made.",
                                             "evidence": []}],
            author_user=original.author_user,
            author_agent=original.author_agent,
            base_version=current_version,
            revises=original,
        )
        _supersede(original=original, by=rebased, reviewer=reviewer, action="proposal.rebase", summary=note,
                   details={"conflicts": merged.conflicts, "onto_version": current_version})
    return rebased


def _supersede(*, original: Proposal, by: Proposal, reviewer: Actor, action: str, summary: str,
               details: dict[str, object] | None = None) -> None:
    original.status = ProposalStatus.SUPERSEDED
    original.superseded_by = by
    original.save(update_fields=["status", "superseded_by"])
    record_event(
        action=action,
        agent=original.agent,
        actor_user=reviewer,
        user_ref=original.user_ref,
        target=original,
        summary=summary,
        details={"new_proposal": by.pk, **(details or {})},
    )

