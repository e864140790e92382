"""The erasure and retention sections of the console's "Erasures and
exports" page: admins request, a second admin approves on the Changes page,
auditors watch; wrong role or workspace is a clear 4xx."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import AuditEvent, Change, ErasureRecord, Role, WritePolicy
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


@pytest.fixture
def agent():
    agent = AgentFactory(write_policy=WritePolicy.DIRECT)
    services.write_memory(agent=agent, kind="USER.md", user_ref="carol-77", content="- carol likes kiwis")
    return agent


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def test_two_admins_erase_a_subject_from_the_console(agent):
    admin, admin2 = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.ADMIN)
    asked = _client(admin).post("/compliance/erasure/", {"user": "carol-77", "workspace": agent.workspace.slug,
                                                         "reason": "Ticket 991"})
    assert asked.status_code == 302
    change = Change.objects.get(kind="erasure")
    page = _client(admin).get("/compliance/").content.decode()
    assert f"Change #{change.pk}" in page and "another admin decides" in page
    # The requester cannot approve on the Changes page; another admin can.
    own = _client(admin).post("/changes/", {"change": change.pk, "action": "approve"})
    assert own.status_code == 403
    done = _client(admin2).post("/changes/", {"change": change.pk, "action": "approve"})
    assert done.status_code == 302
    record = ErasureRecord.objects.get()
    page = _client(staff(agent.workspace, Role.AUDITOR)).get("/compliance/").content.decode()
    assert record.subject_hash[:16] in page and "carol" not in page
    assert 'id="erasure-records"' in page and admin.get_username() in page and admin2.get_username() in page


def test_the_approver_sees_whom_they_erase_before_and_only_the_hash_after(agent):
    admin, admin2 = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.ADMIN)
    change = services.request_erasure(actor=admin, user_ref="carol-77", reason="Ticket 991")
    assert "carol-77" in _client(admin2).get("/changes/").content.decode()
    services.approve_change(change_id=change.pk, actor=admin2)
    assert "carol" not in _client(admin2).get("/changes/").content.decode()


@pytest.mark.parametrize("role", [Role.AUDITOR, Role.REVIEWER])
def test_only_admins_may_request_an_erasure(agent, role):
    response = _client(staff(agent.workspace, role)).post(
        "/compliance/erasure/", {"user": "carol-77", "workspace": agent.workspace.slug, "reason": "x"})
    assert response.status_code == 403
    assert not Change.objects.exists()


def test_auditors_see_the_sections_without_the_forms(agent):
    page = _client(staff(agent.workspace, Role.AUDITOR)).get("/compliance/").content.decode()
    assert 'id="subject-erasure"' in page and 'id="log-retention"' in page
    assert 'action="/compliance/erasure/"' not in page and 'action="/compliance/retention/"' not in page


def test_another_workspace_is_a_404_and_a_missing_reason_a_400(agent):
    admin = staff(agent.workspace, Role.ADMIN)
    other = WorkspaceFactory()
    response = _client(admin).post("/compliance/erasure/", {"user": "carol-77", "workspace": other.slug,
                                                            "reason": "x"})
    assert response.status_code == 404
    response = _client(admin).post("/compliance/erasure/", {"user": "carol-77", "workspace": agent.workspace.slug,
                                                            "reason": ""})
    assert response.status_code == 400 and "reason" in response.content.decode().lower()
    assert not Change.objects.exists()



def test_a_nul_in_an_erasure_or_retention_form_is_a_400(agent):
    client = _client(staff(agent.workspace, Role.ADMIN))
    erasure = client.post("/compliance/erasure/", {"user": "carol-77", "workspace": agent.workspace.slug,
                                                   "reason": "asked\x00"})
    assert erasure.status_code == 400 and "Null characters are not allowed." in erasure.content.decode()
    retention = client.post("/compliance/retention/", {"workspace": agent.workspace.slug + "\x00", "days": "30",
                                                       "reason": "policy"})
    assert retention.status_code == 400 and "Null characters are not allowed." in retention.content.decode()
    assert not Change.objects.exists()


def test_retention_shows_progress_and_is_set_by_admins(agent):
    admin = staff(agent.workspace, Role.ADMIN)
    client = _client(admin)
    assert client.post("/compliance/retention/", {"workspace": agent.workspace.slug, "days": "730"}).status_code == 302
    agent.workspace.refresh_from_db()
    assert agent.workspace.log_retention_days == 730
    client.post("/compliance/retention/", {"workspace": agent.workspace.slug, "days": "30", "reason": "policy"})
    agent.workspace.refresh_from_db()
    assert agent.workspace.log_retention_days == 730
    assert Change.objects.get(kind="workspace_settings").is_pending
    page = client.get("/compliance/").content.decode()
    assert 'id="retention-status"' in page and "730 days" in page
    assert AuditEvent.objects.filter(action="workspace.settings").count() == 1
    bad = client.post("/compliance/retention/", {"workspace": agent.workspace.slug, "days": "0"})
    assert bad.status_code == 400


def test_a_reviewer_cannot_open_the_page(agent):
    assert _client(staff(agent.workspace, Role.REVIEWER)).get("/compliance/").status_code == 403
