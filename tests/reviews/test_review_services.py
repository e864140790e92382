"""reviews.services: edit-then-approve under four-eyes, rebase of stale proposals."""

from __future__ import annotations

import pytest

from memoryhub import errors, services
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from reviews import diffs
from reviews import services as review_services
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

BASE = "# Memory\n- likes tea\n- lives in Oslo\n- works at Acme\n"


@pytest.fixture
def agent():
    return AgentFactory()


@pytest.fixture
def reviewer(agent):
    return staff(agent.workspace, Role.REVIEWER)


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
    revision = review_services.edit_and_approve(proposal_id=proposal.pk, reviewer=reviewer, content=edited,
                                                comment="added detail")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.SUPERSEDED and proposal.superseded_by_id == revision.pk
    assert revision.status == ProposalStatus.PENDING
    assert (revision.source, revision.author_user, revision.base_version) == (Source.REVIEWER, reviewer, 1)
    assert revision.proposed_content == edited
    assert revision.rationale[-1]["kind"] == "edit" and revision.rationale[0]["summary"] == "Tea"


def test_it_keeps_four_eyes_on_an_edit_so_someone_else_approves_it(agent, proposal, reviewer, second_reviewer):
    revision = review_services.edit_and_approve(proposal_id=proposal.pk, reviewer=reviewer,
                                                content=BASE + "- new\n")
    with pytest.raises(errors.FourEyes):
        review_services.approve(proposal_id=revision.pk, reviewer=reviewer)
    review_services.approve(proposal_id=revision.pk, reviewer=second_reviewer)
    assert services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content == BASE + "- new\n"


def test_it_refuses_an_edit_that_changes_nothing_or_comes_from_an_auditor(agent, proposal):
    reviewer = staff(agent.workspace, Role.REVIEWER)
    with pytest.raises(errors.Invalid):
        review_services.edit_and_approve(proposal_id=proposal.pk, reviewer=reviewer,
                                         content=proposal.proposed_content)
    auditor = staff(agent.workspace, Role.AUDITOR)
    with pytest.raises(errors.PermissionDenied):
        review_services.edit_and_approve(proposal_id=proposal.pk, reviewer=auditor, content="x")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING


def test_it_rebases_a_stale_proposal_with_a_clean_merge(agent, proposal, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1",
                          content=BASE.replace("works at Acme", "works at Initech"))
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.STALE
    rebased = review_services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.SUPERSEDED and proposal.superseded_by_id == rebased.pk
    assert rebased.status == ProposalStatus.PENDING and rebased.base_version == 2
    assert rebased.proposed_content == "# Memory\n- likes green tea\n- lives in Oslo\n- works at Initech\n"
    assert rebased.source == Source.CONSOLIDATION
    # The rebase keeps the original author, so the reviewer who rebased can confirm it.
    review_services.approve(proposal_id=rebased.pk, reviewer=reviewer)
    assert services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").version == 3


def test_it_marks_conflicts_and_refuses_to_approve_them_until_resolved(agent, proposal, reviewer,
                                                                       second_reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1",
                          content=BASE.replace("likes tea", "likes coffee"))
    rebased = review_services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    assert diffs.has_conflict_markers(rebased.proposed_content)
    assert "conflict" in rebased.rationale[-1]["summary"]
    with pytest.raises(errors.Invalid, match="merge conflicts"):
        review_services.approve(proposal_id=rebased.pk, reviewer=reviewer)
    resolved = review_services.edit_and_approve(
        proposal_id=rebased.pk, reviewer=reviewer, content=BASE.replace("likes tea", "likes coffee and green tea")
    )
    review_services.approve(proposal_id=resolved.pk, reviewer=second_reviewer)
    assert "coffee and green tea" in services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content


def test_it_refuses_to_rebase_a_proposal_that_is_not_behind(proposal, reviewer):
    with pytest.raises(errors.Invalid, match="already based on the current version"):
        review_services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    assert Proposal.objects.count() == 1
