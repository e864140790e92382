"""Take content out of service alone, put it into service with two: withhold,
release, rollback reaching open sessions, governed settings, session age."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub import context, errors, services
from memoryhub.models import (
    AgentSession,
    AuditEvent,
    Change,
    ChangeStatus,
    MemoryFile,
    Proposal,
    ProposalStatus,
    Role,
    Strategy,
    WritePolicy,
)
from tests.api_helpers import agent_client, error_code, staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db

CLEAN = "- Prefers German.\n- Has two cards.\n"


@pytest.fixture
def agent():
    return AgentFactory(strategy=Strategy.FULL)


@pytest.fixture
def second_reviewer(agent):
    return staff(agent.workspace, Role.REVIEWER)


@pytest.fixture
def poisoned(agent):
    services.write_memory(agent=agent, kind="USER.md", user_ref="u1", content=CLEAN)
    services.write_memory(agent=agent, kind="USER.md", user_ref="u1", content=CLEAN + "- Lives in Bern.\n")
    return agent


def prompt_of(agent, session=None):
    if session is None:
        return context.cached_context(agent=agent, user_ref="u1")["system_prompt"]
    return services.session_context(agent=agent, session_id=session.pk, user_ref="u1")["system_prompt"]


# --- withhold -------------------------------------------------------------------------------


def test_one_reviewer_withholds_a_file_everywhere_at_once(poisoned, reviewer):
    session = services.start_session(agent=poisoned, user_ref="u1")
    assert "Lives in Bern" in prompt_of(poisoned) and "Lives in Bern" in prompt_of(poisoned, session)

    services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="poisoned line")

    assert "Lives in Bern" not in prompt_of(poisoned) and "[WITHHELD]" in prompt_of(poisoned)
    assert "Lives in Bern" not in prompt_of(poisoned, session) and "[WITHHELD]" in prompt_of(poisoned, session)
    read = agent_client(poisoned).get("/api/v1/memory/USER.md?user=u1").json()
    assert (read["content"], read["withheld"]) == ("[WITHHELD]", True)
    file = MemoryFile.objects.get(kind="USER.md")
    assert "Lives in Bern" in file.content  # reviewers still see what is stored
    event = AuditEvent.objects.get(action="file.withhold")
    assert event.actor_user == reviewer and event.details["reason"] == "poisoned line"


def test_a_session_that_is_not_touched_by_a_withhold_keeps_its_frozen_bytes(poisoned, reviewer):
    services.write_memory(agent=poisoned, kind="MEMORY.md", user_ref="u1", content="- Card blocked.")
    session = services.start_session(agent=poisoned, user_ref="u1")
    frozen = services.session_context(agent=poisoned, session_id=session.pk, user_ref="u1")

    services.write_memory(agent=poisoned, kind="MEMORY.md", user_ref="u1", content="- Card unblocked.")

    assert services.session_context(agent=poisoned, session_id=session.pk, user_ref="u1") == frozen


def test_an_agent_cannot_write_withheld_content_back_even_under_direct(poisoned, reviewer):
    services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="poisoned")

    result = services.write_memory(agent=poisoned, kind="USER.md", user_ref="u1", content=CLEAN + "- Lives in Zug.\n")

    assert result.applied is False and result.proposal is not None
    assert MemoryFile.objects.get(kind="USER.md").version == 2


def test_withholding_needs_a_reviewer_and_a_reason(poisoned, reviewer):
    auditor = staff(poisoned.workspace, Role.AUDITOR)
    outsider = staff(WorkspaceFactory(), Role.REVIEWER)
    for actor in (auditor, outsider):
        with pytest.raises(errors.PermissionDenied):
            services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=actor, reason="x")
    with pytest.raises(errors.Invalid):
        services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="  ")
    with pytest.raises(errors.NotFound):
        services.withhold_file(agent=poisoned, kind="MEMORY.md", user_ref="u1", actor=reviewer, reason="x")
    assert MemoryFile.objects.get(kind="USER.md").withheld_version is None
    assert not AuditEvent.objects.filter(action="file.withhold").exists()


def test_release_is_a_change_a_second_person_approves(poisoned, reviewer, second_reviewer):
    services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="check it")
    change = services.request_release(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer,
                                      reason="checked: the line is true")
    assert "[WITHHELD]" in prompt_of(poisoned)
    with pytest.raises(errors.FourEyes):
        services.approve_change(change_id=change.pk, actor=reviewer)
    with pytest.raises(errors.Invalid, match="already waiting"):
        services.request_release(agent=poisoned, kind="USER.md", user_ref="u1", actor=second_reviewer, reason="x")

    services.approve_change(change_id=change.pk, actor=second_reviewer, comment="agreed")

    assert "Lives in Bern" in prompt_of(poisoned)
    change.refresh_from_db()
    assert (change.status, change.decided_by, change.result) == (ChangeStatus.APPROVED, second_reviewer,
                                                                  {"released_version": 2})
    assert AuditEvent.objects.filter(action="file.release").count() == 1


def test_a_release_overtaken_by_a_rollback_is_refused(poisoned, reviewer, second_reviewer):
    services.withhold_file(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="poisoned")
    release = services.request_release(agent=poisoned, kind="USER.md", user_ref="u1", actor=reviewer, reason="x")
    rollback = services.propose_rollback(agent=poisoned, kind="USER.md", user_ref="u1", to_version=1,
                                         actor=reviewer, reason="drop the bad line")
    services.approve_proposal(proposal_id=rollback.pk, reviewer=second_reviewer)

    with pytest.raises(services.StaleChange):
        services.approve_change(change_id=release.pk, actor=second_reviewer)
    assert Change.objects.get(pk=release.pk).status == ChangeStatus.PENDING


# --- rollback reaches open sessions ------------------------------------------------------------


def test_an_approved_rollback_reaches_every_open_session(poisoned, reviewer, second_reviewer):
    session = services.start_session(agent=poisoned, user_ref="u1")
    rollback = services.propose_rollback(agent=poisoned, kind="USER.md", user_ref="u1", to_version=1,
                                         actor=reviewer, reason="v2 is poisoned")
    assert "Lives in Bern" in prompt_of(poisoned, session)  # pending: nothing changed yet

    services.approve_proposal(proposal_id=rollback.pk, reviewer=second_reviewer)

    served = services.session_context(agent=poisoned, session_id=session.pk, user_ref="u1")
    assert "Lives in Bern" not in served["system_prompt"] and "Has two cards" in served["system_prompt"]
    assert served["revised"] is True and served["etag"] != session.context["etag"]
    assert services.session_context(agent=poisoned, session_id=session.pk, user_ref="u1") == served


# --- session age -----------------------------------------------------------------------------------


def test_a_session_older_than_its_maximum_age_answers_410(agent, settings):
    settings.MEMORYHUB_SESSION_MAX_AGE_SECONDS = 3600
    client = agent_client(agent)
    session_id = client.post("/api/v1/sessions", {"user": "u1"}, format="json").json()["id"]
    assert client.get(f"/api/v1/context?user=u1&session={session_id}").status_code == 200

    AgentSession.objects.filter(pk=session_id).update(started_at=timezone.now() - timedelta(hours=2))

    response = client.get(f"/api/v1/context?user=u1&session={session_id}")
    assert response.status_code == 410 and error_code(response) == "session_expired"
    log = client.post(f"/api/v1/sessions/{session_id}/log", {"entries": [{"role": "note", "content": "x"}]},
                      format="json")
    assert log.status_code == 410


# --- governed agent settings ------------------------------------------------------------------------


def test_new_agents_start_under_review_and_the_workspace_sets_the_default(admin):
    workspace = admin.memberships.get().workspace
    agent = services.create_agent(workspace=workspace, slug="fresh", actor=admin)
    assert agent.write_policy == WritePolicy.REVIEW
    with pytest.raises(errors.Invalid, match="request `direct` as a change"):
        services.create_agent(workspace=workspace, slug="eager", actor=admin, write_policy="direct")

    update = services.update_workspace(workspace=workspace, settings={"default_write_policy": "direct"}, actor=admin)

    assert update.change is not None and update.applied == []
    workspace.refresh_from_db()
    assert workspace.default_write_policy == "review"


def test_patch_applies_what_tightens_and_holds_what_weakens_for_a_second_admin(agent, admin):
    agent.write_policy = WritePolicy.REVIEW
    agent.save()
    second = staff(agent.workspace, Role.ADMIN)
    client = staff_client(admin)

    tighter = client.patch(f"/api/v1/agents/{agent.slug}", {"limits": {"MEMORY.md": 4000}, "strategy": "full"},
                           format="json")
    assert tighter.status_code == 200 and tighter.json()["limits"]["MEMORY.md"] == 4000

    weaker = client.patch(f"/api/v1/agents/{agent.slug}", {"write_policy": "direct", "name": "Helper",
                                                           "reason": "trusted agent"}, format="json")
    assert weaker.status_code == 202 and weaker.json()["status"] == "pending"
    agent.refresh_from_db()
    assert (agent.write_policy, agent.name) == (WritePolicy.REVIEW, agent.slug.title())

    change_id = weaker.json()["change"]
    own = client.post(f"/api/v1/changes/{change_id}/approve", {}, format="json")
    assert own.status_code == 403 and error_code(own) == "four_eyes"
    listed = staff_client(second).get("/api/v1/changes?status=pending").json()
    assert [c["id"] for c in listed] == [change_id]
    assert listed[0]["payload"]["fields"]["write_policy"] == {"from": "review", "to": "direct"}
    done = staff_client(second).post(f"/api/v1/changes/{change_id}/approve", {"comment": "ok"}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "approved"
    agent.refresh_from_db()
    assert (agent.write_policy, agent.name) == (WritePolicy.DIRECT, "Helper")


def test_a_change_whose_fields_moved_on_is_refused_not_applied(agent, admin):
    agent.write_policy = WritePolicy.REVIEW
    agent.save()
    second = staff(agent.workspace, Role.ADMIN)
    update = services.update_agent(agent=agent, settings={"limit_memory": 9000}, actor=admin)
    services.update_agent(agent=agent, settings={"limit_memory": 3000}, actor=second)

    response = staff_client(second).post(f"/api/v1/changes/{update.change.pk}/approve", {}, format="json")

    assert response.status_code == 409 and error_code(response) == "stale_change"
    agent.refresh_from_db()
    assert agent.limit_memory == 3000


@pytest.mark.parametrize("body, field", [
    ({"write_policy": "sometimes"}, "write_policy"),
    ({"limits": {"NOTES.md": 10}}, "limits"),
    ({"limits": {"MEMORY.md": 0}}, "limits"),
    ({"name": 5}, "name"),
    ({}, None),
])
def test_patch_refuses_bad_input_and_changes_nothing(agent, admin, body, field):
    response = staff_client(admin).patch(f"/api/v1/agents/{agent.slug}", body, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert not Change.objects.exists()
    assert not AuditEvent.objects.filter(action="agent.settings").exists()


def test_only_admins_change_settings_and_nobody_outside_sees_the_agent(agent, reviewer):
    response = staff_client(reviewer).patch(f"/api/v1/agents/{agent.slug}", {"strategy": "full"}, format="json")
    assert response.status_code == 403
    outsider = staff(WorkspaceFactory(), Role.ADMIN)
    assert staff_client(outsider).get(f"/api/v1/agents/{agent.slug}").status_code == 404
    assert agent_client(agent).get(f"/api/v1/agents/{agent.slug}").status_code == 403


def test_the_rejecter_says_why_and_the_requester_may_only_withdraw(agent, admin):
    agent.write_policy = WritePolicy.REVIEW
    agent.save()
    second = staff(agent.workspace, Role.ADMIN)
    change = services.update_agent(agent=agent, settings={"write_policy": "direct"}, actor=admin).change
    with pytest.raises(errors.FourEyes):
        services.reject_change(change_id=change.pk, actor=admin, comment="no")
    with pytest.raises(errors.Invalid):
        services.reject_change(change_id=change.pk, actor=second, comment="")
    with pytest.raises(errors.PermissionDenied):
        services.withdraw_change(change_id=change.pk, actor=second)

    services.reject_change(change_id=change.pk, actor=second, comment="not yet")

    change.refresh_from_db()
    assert (change.status, change.decision_comment) == (ChangeStatus.REJECTED, "not yet")
    assert AuditEvent.objects.filter(action__in=["change.request", "change.reject"]).count() == 2


def test_rollback_over_the_api_answers_202_and_serves_nothing_until_approved(poisoned, reviewer):
    response = staff_client(reviewer).post(f"/api/v1/agents/{poisoned.slug}/files/USER.md/rollback?user=u1",
                                           {"version": 1, "reason": "bad"}, format="json")
    assert response.status_code == 202
    proposal = Proposal.objects.get(pk=response.json()["proposal"])
    assert (proposal.status, proposal.source, proposal.rollback_to) == (ProposalStatus.PENDING, "rollback", 1)
    assert "Lives in Bern" in prompt_of(poisoned)


def test_withhold_and_release_over_the_api(poisoned, reviewer, second_reviewer):
    base = f"/api/v1/agents/{poisoned.slug}/files/USER.md"
    no_reason = staff_client(reviewer).post(f"{base}/withhold?user=u1", {}, format="json")
    assert no_reason.status_code == 400
    held = staff_client(reviewer).post(f"{base}/withhold?user=u1", {"reason": "poisoned"}, format="json")
    assert held.status_code == 200 and held.json()["withheld"] is True
    assert agent_client(poisoned).post(f"{base}/withhold?user=u1", {"reason": "x"}, format="json").status_code == 403
    release = staff_client(reviewer).post(f"{base}/release?user=u1", {"reason": "checked"}, format="json")
    assert release.status_code == 202
    approved = staff_client(second_reviewer).post(f"/api/v1/changes/{release.json()['change']}/approve", {},
                                                  format="json")
    assert approved.status_code == 200
    assert "Lives in Bern" in prompt_of(poisoned)


def test_turning_spotlighting_off_takes_a_second_admin_and_turning_it_on_does_not(agent, admin):
    second = staff(agent.workspace, Role.ADMIN)
    assert agent.spotlighting
    update = services.update_agent(agent=agent, settings={"spotlighting": "off"}, actor=admin)
    assert update.applied == [] and update.change is not None and update.weakens == ["spotlighting"]
    agent.refresh_from_db()
    assert agent.spotlighting
    with pytest.raises(errors.FourEyes):
        services.approve_change(change_id=update.change.pk, actor=admin)
    services.approve_change(change_id=update.change.pk, actor=second)
    agent.refresh_from_db()
    assert not agent.spotlighting
    # Back on is a tightening: applied at once.
    again = services.update_agent(agent=agent, settings={"spotlighting": True}, actor=admin)
    assert again.change is None and again.applied == ["spotlighting"]
    agent.refresh_from_db()
    assert agent.spotlighting


def test_patch_shows_and_holds_spotlighting(agent, admin):
    client = staff_client(admin)
    assert client.get(f"/api/v1/agents/{agent.slug}").json()["spotlighting"] is True
    response = client.patch(f"/api/v1/agents/{agent.slug}", {"spotlighting": False}, format="json")
    assert response.status_code == 202
    agent.refresh_from_db()
    assert agent.spotlighting
