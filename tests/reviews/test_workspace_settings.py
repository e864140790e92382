"""The workspace settings page: one form for every governed workspace
setting; tightenings apply at once, any loosening becomes one pending change
that a second admin approves."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client

from memoryhub.models import AuditEvent, Change, ChangeKind, Role, Workspace
from memoryhub.services.agents import WORKSPACE_SETTINGS
from reviews import once
from tests.factories import WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


def url(workspace: Workspace) -> str:
    return f"/workspaces/{workspace.slug}/settings/"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(workspace: Workspace, user: Any, **changes: Any) -> dict[str, Any]:
    """The form as the page shows it, with some fields changed."""
    workspace.refresh_from_db()
    values: dict[str, Any] = {
        field: "" if getattr(workspace, field) is None else str(getattr(workspace, field))
        for field in WORKSPACE_SETTINGS
    }
    values["review_reason_codes"] = values["review_reason_codes"].replace(",", ", ")
    return {**values, "reason": "Quarterly policy review", once.FIELD: once.token_for(user), **changes}


@pytest.fixture
def workspace() -> Workspace:
    return WorkspaceFactory(pii_policy="flag", sla_hours=24)


def test_it_shows_every_setting_with_its_current_value_to_an_admin(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    body = signed_in(admin).get(url(workspace)).content.decode()
    for field in WORKSPACE_SETTINGS:
        assert f'name="{field}"' in body
        assert f'<label for="ws-{field}">' in body
    assert 'name="reason"' in body and once.FIELD in body
    assert 'value="24"' in body
    assert '<option value="flag" selected>' in body


def test_the_help_says_second_admin_exactly_for_settings_that_can_weaken(workspace: Workspace) -> None:
    body = signed_in(staff(workspace, Role.ADMIN)).get(url(workspace)).content.decode()
    for field, spec in WORKSPACE_SETTINGS.items():
        help_line = body.split(f'id="ws-{field}-help">')[1].split("</small>")[0]
        assert ("Loosening it takes a second admin." in help_line) == spec.governed, field
    assert WORKSPACE_SETTINGS["pii_policy"].governed and not WORKSPACE_SETTINGS["sla_hours"].governed


def test_an_admin_tightens_and_it_applies_at_once_with_an_audit_event(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    client = signed_in(admin)
    response = client.post(url(workspace), form(workspace, admin, sla_hours="8", pii_policy="refuse"), follow=True)
    workspace.refresh_from_db()
    assert (workspace.sla_hours, workspace.pii_policy) == (8, "refuse")
    body = response.content.decode()
    assert "Applied: pii_policy, sla_hours." in body or "Applied: sla_hours, pii_policy." in body
    event = AuditEvent.objects.get(action="workspace.settings")
    assert set(event.details["fields"]) == {"sla_hours", "pii_policy"}
    assert not Change.objects.exists()


def test_an_admin_loosening_pii_makes_a_pending_change_a_second_admin_approves(workspace: Workspace) -> None:
    admin, admin2 = staff(workspace, Role.ADMIN), staff(workspace, Role.ADMIN)
    response = signed_in(admin).post(url(workspace), form(workspace, admin, pii_policy="allow"), follow=True)
    change = Change.objects.get()
    assert change.kind == ChangeKind.WORKSPACE_SETTINGS and change.reason == "Quarterly policy review"
    body = response.content.decode()
    assert f"Pending change <a href=\"/changes/#change-{change.pk}\">#{change.pk}</a>" in body
    assert "another admin approves it on the Changes page (weakens: pii_policy)" in body
    assert f"/changes/#change-{change.pk}" in body.split('id="pending-heading"')[1]
    workspace.refresh_from_db()
    assert workspace.pii_policy == "flag"
    assert not AuditEvent.objects.filter(action="workspace.settings").exists()

    signed_in(admin2).post("/changes/", {"change": change.pk, "action": "approve"})
    workspace.refresh_from_db()
    assert workspace.pii_policy == "allow"


def test_a_mixed_request_is_one_change_and_applies_nothing_yet(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    response = signed_in(admin).post(url(workspace), form(workspace, admin, pii_policy="allow", sla_hours="4"),
                                     follow=True)
    change = Change.objects.get()
    assert set(change.payload["fields"]) == {"pii_policy", "sla_hours"}
    assert "(weakens: pii_policy)" in response.content.decode()
    workspace.refresh_from_db()
    assert (workspace.pii_policy, workspace.sla_hours) == ("flag", 24)


def test_only_the_changed_fields_reach_the_service(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    signed_in(admin).post(url(workspace), form(workspace, admin, sla_hours="12"))
    event = AuditEvent.objects.get(action="workspace.settings")
    assert list(event.details["fields"]) == ["sla_hours"]


@pytest.mark.parametrize("field, value, sentence", [
    ("sla_hours", "0", "The review SLA (hours)"),
    ("review_reason_codes", "duplicate, Bad Code", "'Bad Code' is not a reason code"),
    ("log_retention_days", "-3", "Log retention"),
])
def test_a_bad_value_is_a_400_with_the_sentence_and_nothing_stored(
    workspace: Workspace, field: str, value: str, sentence: str
) -> None:
    admin = staff(workspace, Role.ADMIN)
    before = {f: getattr(workspace, f) for f in WORKSPACE_SETTINGS}
    response = signed_in(admin).post(url(workspace), form(workspace, admin, **{field: value, "sla_hours": "6"}
                                                          if field != "sla_hours" else {field: value}))
    assert response.status_code == 400
    body = response.content.decode()
    assert html.escape(sentence) in body and 'role="alert"' in body
    assert f'value="{html.escape(value)}"' in body  # the typed value is kept
    workspace.refresh_from_db()
    assert {f: getattr(workspace, f) for f in WORKSPACE_SETTINGS} == before
    assert not Change.objects.exists() and not AuditEvent.objects.filter(action="workspace.settings").exists()


def test_a_missing_reason_is_refused(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    response = signed_in(admin).post(url(workspace), form(workspace, admin, sla_hours="6", reason=" "))
    assert response.status_code == 400
    assert "Say why you change the workspace settings." in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.sla_hours == 24



@pytest.mark.parametrize("field", ["reason", "name"])
def test_a_nul_in_the_form_is_a_400_and_changes_nothing(workspace: Workspace, field: str) -> None:
    admin = staff(workspace, Role.ADMIN)
    response = signed_in(admin).post(url(workspace), form(workspace, admin, sla_hours="6", **{field: "a\x00b"}))
    assert response.status_code == 400
    assert "Null characters are not allowed." in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.sla_hours == 24 and not Change.objects.exists()


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.AUDITOR])
def test_reviewers_and_auditors_see_it_read_only_and_may_not_post(workspace: Workspace, role: str) -> None:
    user = staff(workspace, role)
    client = signed_in(user)
    body = client.get(url(workspace)).content.decode()
    assert "<form method=\"post\" action=\"/workspaces/" not in body
    assert "Only an admin of this workspace can change these settings." in body
    assert "Personal-data policy" in body and "flag" in body
    response = client.post(url(workspace), form(workspace, user, sla_hours="6"))
    assert response.status_code == 403
    workspace.refresh_from_db()
    assert workspace.sla_hours == 24


def test_another_workspace_is_a_404(workspace: Workspace) -> None:
    outsider = staff(WorkspaceFactory(), Role.ADMIN)
    client = signed_in(outsider)
    assert client.get(url(workspace)).status_code == 404
    assert client.post(url(workspace), form(workspace, outsider, sla_hours="6")).status_code == 404
    workspace.refresh_from_db()
    assert workspace.sla_hours == 24


def test_a_double_submit_acts_once(workspace: Workspace) -> None:
    admin = staff(workspace, Role.ADMIN)
    client = signed_in(admin)
    data = form(workspace, admin, pii_policy="allow")
    assert client.post(url(workspace), data).status_code == 302
    again = client.post(url(workspace), data)
    assert again.status_code == 409
    assert "already submitted" in again.content.decode()
    assert Change.objects.count() == 1


def test_the_agents_page_links_each_workspace_to_its_settings(workspace: Workspace) -> None:
    body = signed_in(staff(workspace, Role.REVIEWER)).get("/agents/").content.decode()
    assert f'href="{url(workspace)}"' in body
