"""The review workflow of issue 14: bulk decisions with guardrails, reason
codes, claims, SLA badges, the high-risk approval rule and related work."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub import errors, services
from memoryhub.merge import CONFLICT_START
from memoryhub.models import AuditEvent, Change, MemoryFile, Proposal, ProposalStatus, Role, Source, Workspace
from tests.api_helpers import error_code, staff_client
from tests.clock import later, looking_from
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db

BASE = "- likes tea\n- lives in Oslo\n"
IBAN = "DE89 3704 0044 0532 0130 00"


@pytest.fixture
def workspace():
    return WorkspaceFactory()


@pytest.fixture
def agent(workspace):
    return AgentFactory(workspace=workspace)


@pytest.fixture
def reviewer(workspace):
    return staff(workspace, Role.REVIEWER, username="rita")


@pytest.fixture
def reviewer2(workspace):
    return staff(workspace, Role.REVIEWER, username="rob")


@pytest.fixture
def admin(workspace):
    return staff(workspace, Role.ADMIN, username="alice")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def propose(agent, user_ref="u1", content=None, *, kind="MEMORY.md", author=None, source=Source.AGENT):
    if kind == "MEMORY.md" and MemoryFile.objects.filter(agent=agent, kind=kind, user_ref=user_ref).first() is None:
        services.write_memory(agent=agent, kind=kind, user_ref=user_ref, content=BASE)
    return services.propose_change(agent=agent, kind=kind, user_ref=user_ref if kind == "MEMORY.md" else None,
                                   content=content or BASE + f"- fact for {user_ref}\n", source=source,
                                   author_user=author, reason="test")


def status_of(proposal) -> str:
    return Proposal.objects.get(pk=proposal.pk).status


# --- bulk ------------------------------------------------------------------------------------------


@pytest.fixture
def mixed_batch(agent, reviewer, admin):
    """Two clean proposals and one of each kind a batch must refuse."""
    clean = [propose(agent, "u1"), propose(agent, "u2")]
    own = propose(agent, "u3", author=reviewer, source=Source.REVIEWER)
    stale = propose(agent, "u4")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u4", content=BASE + "- moved on\n")
    conflicted = propose(agent, "u5", "- likes coffee\n- lives in Oslo\n")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u5", content="- likes water\n- lives in Oslo\n")
    conflicted = services.rebase_proposal(proposal_id=conflicted.pk, reviewer=admin)
    assert CONFLICT_START in conflicted.proposed_content
    persona = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                            actor_user=admin)
    flagged = propose(agent, "u6", BASE + f"- pays from {IBAN}\n")
    assert flagged.pii
    return {"clean": clean, "own": own, "stale": stale, "conflicted": conflicted, "persona": persona,
            "flagged": flagged}


def test_a_bulk_approve_decides_the_clean_proposals_and_lists_each_refusal(mixed_batch, reviewer):
    ids = [p.pk for p in [*mixed_batch["clean"], *(mixed_batch[k] for k in ("own", "stale", "conflicted", "persona",
                                                                             "flagged"))]]
    response = staff_client(reviewer).post("/api/v1/proposals/bulk", {"ids": ids, "action": "approve",
                                                                      "reason_code": "accurate"}, format="json")
    assert response.status_code == 200
    results = {item["id"]: item for item in response.json()["results"]}
    assert [results[p.pk]["status"] for p in mixed_batch["clean"]] == ["approved", "approved"]
    codes = {name: results[mixed_batch[name].pk]["error"]["code"]
             for name in ("own", "stale", "conflicted", "persona", "flagged")}
    assert codes == {"own": "four_eyes", "stale": "stale_proposal", "conflicted": "conflict",
                     "persona": "needs_single_review", "flagged": "needs_single_review"}
    assert "persona file" in results[mixed_batch["persona"].pk]["error"]["message"]
    for name in ("own", "conflicted", "persona", "flagged"):
        assert status_of(mixed_batch[name]) == ProposalStatus.PENDING
    assert status_of(mixed_batch["stale"]) == ProposalStatus.STALE
    approved = Proposal.objects.get(pk=mixed_batch["clean"][0].pk)
    assert approved.reason_code == "accurate" and approved.decided_by == reviewer


def test_every_item_of_a_batch_has_one_audit_event_under_the_batch_id(mixed_batch, reviewer):
    ids = [mixed_batch["clean"][0].pk, mixed_batch["own"].pk, mixed_batch["persona"].pk, mixed_batch["stale"].pk]
    result = services.decide_bulk(ids=ids, action="approve", reason_code="accurate", actor=reviewer)
    events = AuditEvent.objects.filter(details__batch=result.batch)
    assert sorted((e.target_id, e.action) for e in events) == sorted([
        (str(ids[0]), "proposal.approve"), (str(ids[1]), "proposal.bulk_refused"),
        (str(ids[2]), "proposal.bulk_refused"), (str(ids[3]), "proposal.bulk_refused"),
    ])
    assert {e.details["reason_code"] for e in events} == {"accurate"}


def test_a_bulk_reject_uses_the_single_reject_with_the_reason_code(mixed_batch, reviewer):
    ids = [mixed_batch["clean"][0].pk, mixed_batch["stale"].pk, mixed_batch["own"].pk]
    result = services.decide_bulk(ids=ids, action="reject", reason_code="duplicate", actor=reviewer)
    assert [(i.id, i.status or i.error.code) for i in result.items] == [
        (ids[0], "rejected"), (ids[1], "rejected"), (ids[2], "four_eyes")]
    assert Proposal.objects.get(pk=ids[0]).reason_code == "duplicate"


def test_a_batch_of_51_is_refused_whole(agent, reviewer):
    ids = [propose(agent, f"u{i}").pk for i in range(51)]
    response = staff_client(reviewer).post("/api/v1/proposals/bulk", {"ids": ids, "action": "approve",
                                                                      "reason_code": "accurate"}, format="json")
    assert response.status_code == 422 and error_code(response) == "batch_too_large"
    assert not Proposal.objects.exclude(status=ProposalStatus.PENDING).exists()
    # 50 is allowed.
    result = services.decide_bulk(ids=ids[:50], action="approve", reason_code="accurate", actor=reviewer)
    assert len(result.done) == 50


@pytest.mark.parametrize("body, field", [
    ({"action": "approve"}, "reason_code"),
    ({"action": "approve", "reason_code": "because"}, "reason_code"),
    ({"action": "merge", "reason_code": "accurate"}, "action"),
])
def test_a_batch_without_a_known_reason_code_or_action_is_refused(agent, reviewer, body, field):
    proposal = propose(agent)
    response = staff_client(reviewer).post("/api/v1/proposals/bulk", {"ids": [proposal.pk], **body}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert status_of(proposal) == ProposalStatus.PENDING


def test_the_reason_codes_are_the_workspaces_own(agent, reviewer, admin, workspace):
    services.update_workspace(workspace=workspace, settings={"review_reason_codes": ["policy", "typo"]},
                              actor=admin)
    proposal = propose(agent)
    with pytest.raises(errors.Invalid):
        services.decide_bulk(ids=[proposal.pk], action="approve", reason_code="accurate", actor=reviewer)
    result = services.decide_bulk(ids=[proposal.pk], action="approve", reason_code="typo", actor=reviewer)
    assert result.items[0].status == "approved"


def test_a_batch_cannot_reach_another_workspace(agent, reviewer):
    hidden = propose(AgentFactory(workspace=WorkspaceFactory()))
    result = services.decide_bulk(ids=[hidden.pk], action="approve", reason_code="accurate", actor=reviewer)
    assert result.items[0].error.code == "not_found" and status_of(hidden) == ProposalStatus.PENDING


def test_the_console_bulk_form_works_as_a_plain_post(agent, reviewer):
    own = propose(agent, "u1", author=reviewer, source=Source.REVIEWER)
    others = [propose(agent, "u2"), propose(agent, "u3")]
    client = client_for(reviewer)
    queue = client.get("/").content.decode()
    assert 'id="bulk-form"' in queue and f'name="ids" value="{own.pk}" form="bulk-form"' in queue
    response = client.post("/queue/bulk/", {"ids": [own.pk, *(p.pk for p in others)], "action": "approve",
                                            "reason_code": "accurate"})
    body = response.content.decode()
    assert response.status_code == 200 and "2 approved, 1 refused" in body
    assert f"Proposal #{own.pk}</a>: <code>four_eyes</code>" in body
    assert [status_of(p) for p in others] == ["approved", "approved"] and status_of(own) == "pending"


def test_the_console_bulk_form_refuses_a_batch_without_a_reason_code(agent, reviewer):
    proposal = propose(agent)
    response = client_for(reviewer).post("/queue/bulk/", {"ids": [proposal.pk], "action": "approve"})
    assert response.status_code == 400 and "needs a reason code" in response.content.decode()
    assert status_of(proposal) == ProposalStatus.PENDING


# --- reason codes on single decisions -------------------------------------------------------------


def test_a_single_decision_carries_an_optional_reason_code(agent, reviewer):
    approved, rejected = propose(agent, "u1"), propose(agent, "u2")
    client = staff_client(reviewer)
    assert client.post(f"/api/v1/proposals/{approved.pk}/approve", {"reason_code": "accurate"},
                       format="json").status_code == 200
    # A reason code says why as well as a comment does.
    assert client.post(f"/api/v1/proposals/{rejected.pk}/reject", {"reason_code": "outdated"},
                       format="json").status_code == 200
    assert client.get(f"/api/v1/proposals/{rejected.pk}").json()["reason_code"] == "outdated"
    unknown = client.post(f"/api/v1/proposals/{propose(agent, 'u3').pk}/approve", {"reason_code": "vibes"},
                          format="json")
    assert unknown.status_code == 400 and "not a reason code" in unknown.json()["error"]["detail"]
    page = client_for(reviewer).get(f"/proposals/{approved.pk}/").content.decode()
    assert '<code class="reason-code">accurate</code>' in page


def test_the_console_approve_form_sends_a_reason_code(agent, reviewer):
    proposal = propose(agent)
    client = client_for(reviewer)
    assert 'name="reason_code"' in client.get(f"/proposals/{proposal.pk}/").content.decode()
    client.post(f"/proposals/{proposal.pk}/", {"action": "approve", "reason_code": "accurate"})
    assert Proposal.objects.get(pk=proposal.pk).reason_code == "accurate"


# --- claims --------------------------------------------------------------------------------------


def test_a_reviewer_claims_and_releases_a_proposal(agent, reviewer):
    proposal = propose(agent)
    client = staff_client(reviewer)
    claimed = client.post(f"/api/v1/proposals/{proposal.pk}/claim")
    assert claimed.status_code == 200 and claimed.json()["claimed_by"] == "rita"
    assert AuditEvent.objects.filter(action="proposal.claim", target_id=str(proposal.pk)).count() == 1
    assert client.post(f"/api/v1/proposals/{proposal.pk}/unclaim").status_code == 200
    assert Proposal.objects.get(pk=proposal.pk).claimed_by is None


def test_a_claim_is_not_taken_over_and_only_its_holder_or_an_admin_releases_it(agent, reviewer, reviewer2, admin):
    proposal = propose(agent)
    services.claim_proposal(proposal_id=proposal.pk, actor=reviewer)
    taken = staff_client(reviewer2).post(f"/api/v1/proposals/{proposal.pk}/claim")
    assert taken.status_code == 409 and error_code(taken) == "claimed"
    assert "rita holds the claim" in taken.json()["error"]["detail"]
    released = staff_client(reviewer2).post(f"/api/v1/proposals/{proposal.pk}/unclaim")
    assert released.status_code == 403
    assert staff_client(admin).post(f"/api/v1/proposals/{proposal.pk}/unclaim").status_code == 200


def test_the_author_cannot_claim_their_own_proposal(agent, reviewer):
    own = propose(agent, author=reviewer, source=Source.REVIEWER)
    with pytest.raises(errors.FourEyes):
        services.claim_proposal(proposal_id=own.pk, actor=reviewer)


def test_a_claim_is_advisory_others_are_warned_and_may_still_decide(agent, reviewer, reviewer2):
    proposal = propose(agent)
    services.claim_proposal(proposal_id=proposal.pk, actor=reviewer)
    client = client_for(reviewer2)
    page = client.get(f"/proposals/{proposal.pk}/").content.decode()
    assert "Claimed by <strong>rita</strong>" in page and "Claims are advisory" in page
    client.post(f"/proposals/{proposal.pk}/", {"action": "approve"})
    assert status_of(proposal) == ProposalStatus.APPROVED


def test_the_console_claims_and_the_queue_filters_mine(agent, reviewer, reviewer2):
    mine, theirs, free = propose(agent, "u1"), propose(agent, "u2"), propose(agent, "u3")
    client = client_for(reviewer)
    client.post(f"/proposals/{mine.pk}/", {"action": "claim"})
    services.claim_proposal(proposal_id=theirs.pk, actor=reviewer2)
    queue = client.get("/?claimed=mine").content.decode()
    assert f"Open proposal {mine.pk}" in queue and f"Open proposal {theirs.pk}" not in queue
    assert f"Open proposal {free.pk}" not in queue and "claimed by you" in queue
    everyone = client.get("/").content.decode()
    assert "claimed by rob" in everyone
    unclaimed = client.get("/?claimed=unclaimed").content.decode()
    assert f"Open proposal {free.pk}" in unclaimed and f"Open proposal {mine.pk}" not in unclaimed


def test_the_api_lists_my_claims_and_sorts_by_risk(agent, reviewer, reviewer2, admin):
    mine, theirs = propose(agent, "u1"), propose(agent, "u2")
    high = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                         actor_user=admin)
    services.claim_proposal(proposal_id=mine.pk, actor=reviewer)
    services.claim_proposal(proposal_id=theirs.pk, actor=reviewer2)
    client = staff_client(reviewer)
    assert [p["id"] for p in client.get("/api/v1/proposals?claimed=mine").json()["results"]] == [mine.pk]
    others = client.get("/api/v1/proposals?claimed=others").json()["results"]
    assert [(p["id"], p["claimed_by"]) for p in others] == [(theirs.pk, "rob")]
    ranked = client.get("/api/v1/proposals?sort=risk").json()["results"]
    assert ranked[0]["id"] == high.pk and ranked[0]["risk"] == "high" and "persona_file" in ranked[0]["risk_tags"]
    assert client.get("/api/v1/proposals?sort=size").status_code == 400


# --- SLA and sorting --------------------------------------------------------------------------------


def test_the_queue_shows_sla_badges_from_the_workspace_sla(agent, reviewer, workspace, admin):
    services.update_workspace(workspace=workspace, settings={"sla_hours": 10}, actor=admin)
    propose(agent)
    client = client_for(reviewer)
    assert 'class="tag sla-ok"' in client.get("/").content.decode()
    # (Signed in again in the future: the session would have expired.)
    with looking_from(later(hours=8)):
        assert 'class="tag sla-due"' in client_for(reviewer).get("/").content.decode()
    with looking_from(later(hours=11)):
        page = client_for(reviewer).get("/").content.decode()
        assert 'class="tag sla-overdue"' in page


def test_the_queue_sorts_by_risk(agent, reviewer, admin):
    low = propose(agent, "u1")
    high = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                         actor_user=admin)
    page = client_for(reviewer).get("/?sort=risk").content.decode()
    assert page.index(f"Open proposal {high.pk}") < page.index(f"Open proposal {low.pk}")
    page = client_for(reviewer).get("/").content.decode()
    assert page.index(f"Open proposal {low.pk}") < page.index(f"Open proposal {high.pk}")


def test_the_dashboard_shows_overdue_counts_and_median_time_to_decision(agent, reviewer, admin, workspace):
    services.update_workspace(workspace=workspace, settings={"sla_hours": 2}, actor=admin)
    first, second, waiting = propose(agent, "u1"), propose(agent, "u2"), propose(agent, "u3")
    with looking_from(later(hours=1)):
        services.approve_proposal(proposal_id=first.pk, reviewer=reviewer)
    with looking_from(later(hours=3)):
        services.reject_proposal(proposal_id=second.pk, reviewer=reviewer, comment="no")
        page = client_for(admin).get("/dashboard/").content.decode()
    assert waiting.status == ProposalStatus.PENDING
    assert '<header>Overdue</header>\n    <p class="stat"><a href="/?sort=age">1</a>' in page
    assert "2 h 0 min" in page and "median over 2 decisions" in page


# --- high-risk approval rule ------------------------------------------------------------------------


@pytest.fixture
def high_risk(agent, admin):
    proposal = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                             actor_user=admin)
    assert proposal.risk_level == 2
    return proposal


def test_any_reviewer_approves_a_high_risk_proposal_by_default(high_risk, reviewer):
    assert services.approve_proposal(proposal_id=high_risk.pk, reviewer=reviewer).status == "approved"


def test_under_the_admin_rule_only_an_admin_approves_high_risk(high_risk, reviewer, workspace, agent, admin):
    Workspace.objects.filter(pk=workspace.pk).update(high_risk_approval="admin")
    response = staff_client(reviewer).post(f"/api/v1/proposals/{high_risk.pk}/approve", {}, format="json")
    assert response.status_code == 403 and error_code(response) == "high_risk"
    assert status_of(high_risk) == ProposalStatus.PENDING
    other_admin = staff(workspace, Role.ADMIN)
    assert services.approve_proposal(proposal_id=high_risk.pk, reviewer=other_admin).status == "approved"
    # Low risk stays open to every reviewer.
    assert services.approve_proposal(proposal_id=propose(agent).pk, reviewer=reviewer).status == "approved"


def test_under_two_approvals_the_second_different_reviewer_serves_it(high_risk, reviewer, reviewer2, workspace,
                                                                     agent):
    Workspace.objects.filter(pk=workspace.pk).update(high_risk_approval="two_approvals")
    first = staff_client(reviewer).post(f"/api/v1/proposals/{high_risk.pk}/approve", {}, format="json")
    assert first.status_code == 200 and first.json() == {"status": "pending", "version": None,
                                                        "stale_siblings": [], "approvals": 1}
    assert not MemoryFile.objects.filter(agent=agent, kind="SOUL.md").exists()
    again = staff_client(reviewer).post(f"/api/v1/proposals/{high_risk.pk}/approve", {}, format="json")
    assert again.status_code == 403 and error_code(again) == "four_eyes"
    done = services.approve_proposal(proposal_id=high_risk.pk, reviewer=reviewer2)
    assert done.status == "approved" and done.first_approved_by == reviewer
    assert MemoryFile.objects.get(agent=agent, kind="SOUL.md").content == "I am Penny."
    assert AuditEvent.objects.filter(action="proposal.approve_first", target_id=str(high_risk.pk)).count() == 1


def test_tightening_the_high_risk_rule_is_free_and_loosening_takes_a_second_admin(workspace, admin):
    assert services.update_workspace(workspace=workspace, settings={"high_risk_approval": "two_approvals"},
                                     actor=admin).applied == ["high_risk_approval"]
    update = services.update_workspace(workspace=workspace, settings={"high_risk_approval": "any_reviewer"},
                                       actor=admin)
    assert update.applied == [] and isinstance(update.change, Change)
    assert Workspace.objects.get(pk=workspace.pk).high_risk_approval == "two_approvals"
    services.approve_change(change_id=update.change.pk, actor=staff(workspace, Role.ADMIN))
    assert Workspace.objects.get(pk=workspace.pk).high_risk_approval == "any_reviewer"


# --- related work -------------------------------------------------------------------------------


def test_related_proposals_are_listed_and_approving_one_names_the_ones_made_stale(agent, reviewer):
    one = propose(agent, "u1", BASE + "- a\n")
    two = propose(agent, "u1", BASE + "- b\n")
    three = propose(agent, "u1", BASE + "- c\n")
    other_file = propose(agent, "u2")
    client = client_for(reviewer)
    page = client.get(f"/proposals/{one.pk}/").content.decode()
    assert 'id="related"' in page and f"Proposal #{two.pk}</a>" in page and f"Proposal #{three.pk}</a>" in page
    assert f"Proposal #{other_file.pk}</a>" not in page
    queue = client.get("/").content.decode()
    assert queue.count("+2 related") == 3 and "related</a>" in queue
    answer = staff_client(reviewer).post(f"/api/v1/proposals/{one.pk}/approve", {}, format="json").json()
    assert answer["stale_siblings"] == [two.pk, three.pk]
    assert status_of(two) == status_of(three) == ProposalStatus.STALE
    assert status_of(other_file) == ProposalStatus.PENDING


def test_the_console_says_which_proposals_an_approval_made_stale(agent, reviewer):
    one, two = propose(agent, "u1", BASE + "- a\n"), propose(agent, "u1", BASE + "- b\n")
    response = client_for(reviewer).post(f"/proposals/{one.pk}/", {"action": "approve"}, follow=True)
    assert f"Now stale (they were made from the old version): #{two.pk}." in response.content.decode()

