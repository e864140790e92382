"""The console's "Erasures and exports" page: admins and auditors download
a subject's export (the service the API uses), and see past exports."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import AuditEvent, Role
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", [Role.ADMIN, Role.AUDITOR])
def test_admins_and_auditors_see_the_page(agent, role):
    response = _client(staff(agent.workspace, role)).get("/compliance/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Erasures and exports" in page and 'id="subject-export"' in page
    assert f'<option value="{agent.workspace.slug}"' in page


def test_reviewers_and_strangers_are_refused(agent):
    assert _client(staff(agent.workspace, Role.REVIEWER)).get("/compliance/").status_code == 403
    assert _client(staff(agent.workspace, Role.REVIEWER)).get("/compliance/export/?user=a").status_code == 403
    anonymous = Client().get("/compliance/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")


def test_the_form_downloads_the_subjects_export(agent):
    services.write_memory(agent=agent, kind="USER.md", user_ref="alice", content="- Alice likes tea")
    auditor = staff(agent.workspace, Role.AUDITOR)
    response = _client(auditor).get("/compliance/export/", {"user": "alice", "workspace": agent.workspace.slug})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"].startswith('attachment; filename="memoryhub-subject-')
    body = json.loads(b"".join(response.streaming_content))
    assert [f["content"] for f in body["files"]] == ["- Alice likes tea"]
    assert AuditEvent.objects.filter(action="subject.export", actor_user=auditor, user_ref="alice").exists()


def test_bad_input_is_shown_on_the_page(agent):
    client = _client(staff(agent.workspace, Role.ADMIN))
    malformed = client.get("/compliance/export/", {"user": "bell\x07", "workspace": agent.workspace.slug})
    assert malformed.status_code == 400
    assert "1–255 printable characters" in malformed.content.decode()
    elsewhere = client.get("/compliance/export/", {"user": "alice", "workspace": WorkspaceFactory().slug})
    assert elsewhere.status_code == 404 and "among yours" in elsewhere.content.decode()
    assert not AuditEvent.objects.filter(action="subject.export").exists()


def test_past_exports_are_listed_escaped_and_inert(agent):
    admin = staff(agent.workspace, Role.ADMIN)
    hostile = '<img src=x onerror=alert(1)> hx-get="/logout/"'
    "".join(services.export_subject(actor=admin, user_ref=hostile, workspace=agent.workspace).chunks)
    services.export_subject(actor=staff(AgentFactory().workspace, Role.ADMIN), user_ref="other-tenant")
    page = _client(admin).get("/compliance/").content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page
    assert "other-tenant" not in page
    assert page.count("hx-disable") >= 2
