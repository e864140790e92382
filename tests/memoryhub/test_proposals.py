"""memoryhub.services.proposals: revisions under four-eyes, rebase of stale
proposals, conflict blocks, withdrawal."""

from __future__ import annotations

import pytest

from memoryhub import errors, services
from memoryhub.merge import has_conflict_markers
from memoryhub.models import AuditEvent, Proposal, ProposalStatus, Role, Source
from tests.factories import staff

pytestmark = pytest.mark.django_db

BASE = "# Memory\n- likes tea\n- lives in Oslo\n- works at Acme\n"


@pytest.fixture
def second_reviewer(agent):
    return staff(agent.workspace, Role.REVIEWER)


@pytest.fixture
def proposal(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE)
    return services.propose_change(
        agent=agent, kind="MEMORY.md", user_ref="u1", source=Source.CONSOLIDATION, reason="tea preference",
        content=BASE.replace("likes tea", "likes green tea"),
        rationale=[{"kind": "update", "summary": "Tea", "reason": "said so", "evidence": []}],
    )


def test_it_saves_a_reviewer_edit_as_a_new_proposal_superseding_the_original(proposal, reviewer):
    edited = BASE.replace("likes tea", "likes green tea, no sugar")
    revision = services.revise_proposal(proposal_id=proposal.pk, reviewer=reviewer, content=edited,
                                                comment="added detail")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.SUPERSEDED and proposal.superseded_by_id == revision.pk
    assert revision.status == ProposalStatus.PENDING
    assert (revision.source, revision.author_user, revision.base_version) == (Source.REVIEWER, reviewer, 1)
    assert revision.proposed_content == edited
    assert revision.rationale[-1]["kind"] == "edit" and revision.rationale[0]["summary"] == "Tea"


def test_it_keeps_four_eyes_on_an_edit_so_someone_else_approves_it(agent, proposal, reviewer, second_reviewer):
    revision = services.revise_proposal(proposal_id=proposal.pk, reviewer=reviewer,
                                                content=BASE + "- new\n")
    with pytest.raises(errors.FourEyes):
        services.approve_proposal(proposal_id=revision.pk, reviewer=reviewer)
    services.approve_proposal(proposal_id=revision.pk, reviewer=second_reviewer)
    assert services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content == BASE + "- new\n"


def test_it_refuses_an_edit_that_changes_nothing_or_comes_from_an_auditor(agent, proposal):
    reviewer = staff(agent.workspace, Role.REVIEWER)
    with pytest.raises(errors.Invalid):
        services.revise_proposal(proposal_id=proposal.pk, reviewer=reviewer,
                                         content=proposal.proposed_content)
    auditor = staff(agent.workspace, Role.AUDITOR)
    with pytest.raises(errors.PermissionDenied):
        services.revise_proposal(proposal_id=proposal.pk, reviewer=auditor, content="x")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING


def test_it_rebases_a_stale_proposal_with_a_clean_merge(agent, proposal, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1",
                          content=BASE.replace("works at Acme", "works at Initech"))
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.STALE
    rebased = services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.SUPERSEDED and proposal.superseded_by_id == rebased.pk
    assert rebased.status == ProposalStatus.PENDING and rebased.base_version == 2
    assert rebased.proposed_content == "# Memory\n- likes green tea\n- lives in Oslo\n- works at Initech\n"
    assert rebased.source == Source.CONSOLIDATION
    # The rebase keeps the original author, so the reviewer who rebased can confirm it.
    services.approve_proposal(proposal_id=rebased.pk, reviewer=reviewer)
    assert services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").version == 3


def test_it_marks_conflicts_and_refuses_to_approve_them_until_resolved(agent, proposal, reviewer,
                                                                       second_reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1",
                          content=BASE.replace("likes tea", "likes coffee"))
    rebased = services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    assert has_conflict_markers(rebased.proposed_content)
    assert "conflict" in rebased.rationale[-1]["summary"]
    with pytest.raises(errors.Conflict, match="merge-conflict blocks"):
        services.approve_proposal(proposal_id=rebased.pk, reviewer=reviewer)
    resolved = services.revise_proposal(
        proposal_id=rebased.pk, reviewer=reviewer, content=BASE.replace("likes tea", "likes coffee and green tea")
    )
    assert resolved.revises_id == rebased.pk
    services.approve_proposal(proposal_id=resolved.pk, reviewer=second_reviewer)
    assert "coffee and green tea" in services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content


def test_it_refuses_to_rebase_a_proposal_that_is_not_behind(proposal, reviewer):
    with pytest.raises(errors.Invalid, match="already based on the current version"):
        services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    assert Proposal.objects.count() == 1


def test_nobody_who_wrote_a_revision_may_approve_it(agent, reviewer, second_reviewer):
    # An admin's persona edit, revised by a reviewer: neither of them may
    # approve the revision; a third person may.
    admin = staff(agent.workspace, Role.ADMIN)
    original = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="new",
                                             actor_user=admin)
    revision = services.revise_proposal(proposal_id=original.pk, reviewer=reviewer, content="I am Penny, kind.")

    for writer in (admin, reviewer):
        with pytest.raises(errors.FourEyes):
            services.approve_proposal(proposal_id=revision.pk, reviewer=writer)
    services.approve_proposal(proposal_id=revision.pk, reviewer=second_reviewer)
    assert services.read_memory(agent=agent, kind="SOUL.md").content == "I am Penny, kind."


def test_the_author_withdraws_a_proposal_and_nobody_else_can(agent, reviewer, second_reviewer):
    admin = staff(agent.workspace, Role.ADMIN)
    proposal = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="new",
                                             actor_user=admin)
    with pytest.raises(errors.PermissionDenied):
        services.withdraw_proposal(proposal_id=proposal.pk, actor=reviewer)
    with pytest.raises(errors.FourEyes):
        services.reject_proposal(proposal_id=proposal.pk, reviewer=admin, comment="changed my mind")

    services.withdraw_proposal(proposal_id=proposal.pk, actor=admin, comment="changed my mind")

    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.WITHDRAWN
    with pytest.raises(errors.NotPending):
        services.approve_proposal(proposal_id=proposal.pk, reviewer=second_reviewer)


def test_a_rollback_is_not_rebased(agent, reviewer):
    for text in ("- one\n", "- two\n"):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=text)
    rollback = services.propose_rollback(agent=agent, kind="MEMORY.md", user_ref="u1", to_version=1,
                                         actor=reviewer, reason="two is wrong")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- three\n")

    with pytest.raises(errors.Invalid, match="not rebased"):
        services.rebase_proposal(proposal_id=rollback.pk, reviewer=reviewer)


# --- personal data of a special category ---------------------------------------------------------


def test_a_proposal_carrying_special_personal_data_is_never_approved_silently(agent, reviewer):
    # Today's hole: a proposal with a government id, a card, a relative's
    # phone and a family member's diagnosis carried a `pii` tag and approving
    # it succeeded. Now each category is recorded, and approval needs an
    # acknowledgement, which the audit trail keeps.
    services.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- Prefers email.\n")
    proposal = services.propose_change(
        agent=agent, kind="USER.md", user_ref="u1", source=Source.CONSOLIDATION, reason="r",
        content="- Prefers email.\n- Passport number is C01X00T47.\n- IBAN DE89 3704 0044 0532 0130 00.\n"
                "- Sister's number +33 6 12 34 56 78.\n- Son has asthma.\n")

    assert services.special_categories(proposal) == ["government_id", "bank_account", "relative_contact", "health"]
    assert "pii" in proposal.risk_tags
    assert not any("C01X00T47" in item["detail"] or "3704" in item["detail"] for item in proposal.pii)
    with pytest.raises(errors.PersonalDataUnacknowledged) as refused:
        services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    assert refused.value.status == 409 and "health data" in refused.value.detail
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING

    approved = services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, acknowledge_personal_data=True)

    assert approved.status == ProposalStatus.APPROVED
    event = AuditEvent.objects.filter(action="proposal.approve").latest("id")
    assert event.details["personal_data_acknowledged"] == ["government_id", "bank_account", "relative_contact",
                                                           "health"]


def test_special_categories_are_recorded_whatever_the_workspace_policy(agent, reviewer):
    agent.workspace.pii_policy = "allow"
    agent.workspace.save()

    proposal = services.propose_change(agent=agent, kind="USER.md", user_ref="u2", source=Source.CONSOLIDATION,
                                       reason="r", content="- Is diabetic; needs sugar-free meals.\n")

    assert services.special_categories(proposal) == ["health"]
    with pytest.raises(errors.PersonalDataUnacknowledged):
        services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)


def test_a_proposal_without_special_personal_data_needs_no_acknowledgement(proposal, reviewer):
    assert services.special_categories(proposal) == []
    assert services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer).status == ProposalStatus.APPROVED
