"""Review-workflow operations that sit on top of memoryhub.services:
approve with a conflict guard, edit-then-approve, and rebase of a stale
proposal. Keyword-only, typed, one transaction each.

Decisions, written down:

* **Edit-then-approve** saves the reviewer's edit as a *new* proposal
  (source "reviewer", authored by the editor) on the same base version, and
  marks the original superseded by it. Four-eyes then applies to the edit as
  to any proposal: the editor cannot approve their own edit, someone else
  must. Applying it at once would let one person both write and approve the
  served memory, which is exactly what four-eyes forbids.
* **Rebase** re-applies a stale proposal's change to the current version
  with a line-based three-way merge. The result is a new pending proposal
  that keeps the original author and source (its content is that author's
  change, moved mechanically), so the reviewer who rebased may confirm it.
  Conflicts are written into the content as marked blocks; such a proposal
  cannot be approved until someone resolves them with an edit, which makes
  the resolver its author and puts it back under four-eyes.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memoryhub import errors, services
from memoryhub.models import Proposal, ProposalStatus, Source
from reviews import diffs


def _lock(proposal_id: int) -> Proposal:
    proposal = (
        # Lock the proposal row only: PostgreSQL refuses FOR UPDATE on the
        # nullable side of the outer joins to its authors.
        Proposal.objects.select_for_update(of=("self",)).select_related("agent__workspace", "author_user",
                                                                        "author_agent")
        .filter(pk=proposal_id).first()
    )
    if proposal is None:
        raise errors.NotFound("There is no such proposal.")
    return proposal


def approve(*, proposal_id: int, reviewer: Any, comment: str = "") -> Proposal:
    """services.approve_proposal, refusing content that still carries the
    conflict blocks of a rebase: those must never reach an agent."""
    proposal = Proposal.objects.filter(pk=proposal_id).only("proposed_content").first()
    if proposal is not None and diffs.has_conflict_markers(proposal.proposed_content):
        raise errors.Invalid(
            "This proposal still contains merge conflicts. Edit it to resolve them before it can be approved.",
            field="content",
        )
    return services.approve_proposal(proposal_id=proposal_id, reviewer=reviewer, comment=comment)


def edit_and_approve(*, proposal_id: int, reviewer: Any, content: Any, comment: str = "") -> Proposal:
    """The reviewer's revision of a pending proposal, as a new pending
    proposal that someone other than the reviewer approves (module doc)."""
    content = services.validate_content(content)
    # Browsers send textarea content with CRLF line ends.
    content = content.replace("\r\n", "\n")
    with transaction.atomic():
        original = _lock(proposal_id)
        services.require_role(user=reviewer, workspace=original.agent.workspace_id, roles=services.REVIEW_ROLES,
                              action="edit proposals")
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
        comment = (comment or "").strip()
        try:
            revision = services.propose_change(
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
            )
        except errors.VersionConflict as exc:
            raise errors.StaleProposal(
                "The file changed after this proposal was made. Rebase it onto the current version first."
            ) from exc
        _supersede(original=original, by=revision, reviewer=reviewer, action="proposal.edit",
                   summary=f"Edited proposal #{original.pk} into #{revision.pk}; it awaits another reviewer")
    return revision


def rebase_proposal(*, proposal_id: int, reviewer: Any) -> Proposal:
    """Recompute a stale proposal against the current version (three-way
    merge) as a new pending proposal; the stale one becomes superseded."""
    with transaction.atomic():
        original = _lock(proposal_id)
        services.require_role(user=reviewer, workspace=original.agent.workspace_id, roles=services.REVIEW_ROLES,
                              action="rebase proposals")
        agent = original.agent
        file = services.get_file(agent=agent, kind=original.kind, user_ref=original.user_ref)
        current_version = file.version if file else 0
        current = file.content if file else ""
        if original.status not in (ProposalStatus.PENDING, ProposalStatus.STALE):
            raise errors.NotPending(f"This proposal is already {original.status}; there is nothing to rebase.")
        if current_version == original.base_version:
            raise errors.Invalid("This proposal is already based on the current version; there is nothing to rebase.")
        merged = diffs.merge3(original.base_content, original.proposed_content, current)
        if merged.content == current:
            raise errors.Invalid(
                f"The current version {current_version} already contains this change; reject the stale proposal."
            )
        note = (
            f"Rebased proposal #{original.pk} from v{original.base_version} onto v{current_version}"
            + (f"; {merged.conflicts} conflict(s) to resolve" if merged.conflicts else "; merged cleanly")
        )
        rebased = services.propose_change(
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
        )
        _supersede(original=original, by=rebased, reviewer=reviewer, action="proposal.rebase", summary=note,
                   details={"conflicts": merged.conflicts, "onto_version": current_version})
    return rebased


def _supersede(*, original: Proposal, by: Proposal, reviewer: Any, action: str, summary: str,
               details: dict[str, Any] | None = None) -> None:
    original.status = ProposalStatus.SUPERSEDED
    original.superseded_by = by
    original.save(update_fields=["status", "superseded_by"])
    services.record_event(
        action=action,
        agent=original.agent,
        actor_user=reviewer,
        user_ref=original.user_ref,
        target=original,
        summary=summary,
        details={"new_proposal": by.pk, **(details or {})},
    )
