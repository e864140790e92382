from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memoryhub import demo, services
from memoryhub.models import (
    AgentSession,
    ApiKey,
    AuditEvent,
    LogEntry,
    Membership,
    MemoryFile,
    Proposal,
    StaffToken,
    ToolSetting,
)
from tests.factories import AgentFactory, UserFactory, WorkspaceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


User = get_user_model()
# The demo shows at least this many rows on each page checked below, so a
# query per row could not stay under it.
MAX_CHANGELIST_QUERIES = 10


@pytest.fixture
def superuser():
    return User.objects.create_superuser("root", "root@example.com", "root-pass-for-tests")


@pytest.fixture
def client(superuser):
    client = Client()
    client.force_login(superuser)
    return client


def admin_url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_it_opens_every_changelist_and_change_page_with_demo_data(client):
    demo.seed_demo()
    services.issue_agent_key(agent=AgentFactory(), actor=services.SYSTEM)
    services.issue_staff_token(user=UserFactory())

    for model in admin.site._registry:
        response = client.get(admin_url(model, "changelist"))
        assert response.status_code == 200, model
        obj = model._default_manager.order_by("pk").first()
        if obj is None:  # auth's Group: the demo has none
            continue
        response = client.get(admin_url(model, "change", obj.pk))
        assert response.status_code == 200, model


def test_it_registers_every_memoryhub_model():
    from django.apps import apps

    models = set(apps.get_app_config("memoryhub").get_models())
    assert models <= set(admin.site._registry)


@pytest.mark.parametrize("model", [MemoryFile, MemoryFile.history.model, LogEntry, AuditEvent, Proposal])
def test_it_lets_nobody_add_change_or_delete_records(client, model):
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/")
    request.user = User.objects.get(username="root")

    assert client.get(admin_url(model, "add")).status_code == 403
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_it_shows_memory_history_but_refuses_to_revert_it(client):
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="- Version one.\n")
    services.write_memory(agent=agent, kind="SOUL.md", content="- Version two.\n")
    file = MemoryFile.objects.get()
    first = MemoryFile.history.get(version=1)

    assert client.get(admin_url(MemoryFile, "history", file.pk)).status_code == 200
    assert client.get(admin_url(MemoryFile, "simple_history", file.pk, first.history_id)).status_code == 200
    response = client.post(admin_url(MemoryFile, "simple_history", file.pk, first.history_id), {})

    assert response.status_code == 403
    file.refresh_from_db()
    assert (file.version, file.content) == (2, "- Version two.\n")


def test_it_never_deletes_users_and_deactivates_them_instead(client):
    user = UserFactory(username="leaver")

    assert client.get(admin_url(User, "delete", user.pk)).status_code == 403
    changelist = client.get(admin_url(User, "changelist"))
    actions = [name for name, _label in changelist.context["action_form"].fields["action"].choices]
    assert "delete_selected" not in actions and "deactivate_users" in actions

    response = client.post(admin_url(User, "changelist"), {"action": "deactivate_users", "_selected_action": [user.pk]})

    assert response.status_code == 302
    user.refresh_from_db()
    assert not user.is_active
    assert User.objects.filter(pk=user.pk).exists()
    assert AuditEvent.objects.filter(action="staff.deactivate").count() == 1


def test_it_revokes_keys_and_tokens_through_the_services(client, superuser):
    agent = AgentFactory()
    services.set_role(user=superuser, workspace=agent.workspace, role="admin")
    key, raw_key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    token, raw_token = services.issue_staff_token(user=UserFactory())

    client.post(admin_url(ApiKey, "changelist"), {"action": "revoke_keys", "_selected_action": [key.pk]})
    client.post(admin_url(StaffToken, "changelist"), {"action": "revoke_tokens", "_selected_action": [token.pk]})

    assert services.agent_for_key(raw_key) is None
    assert services.user_for_token(raw_token) is None
    assert set(AuditEvent.objects.values_list("action", flat=True)) >= {"key.revoke", "token.revoke"}


def test_it_never_shows_a_key_hash(client):
    key, _ = services.issue_agent_key(agent=AgentFactory(), actor=services.SYSTEM)

    response = client.get(admin_url(ApiKey, "change", key.pk))

    assert response.status_code == 200
    assert key.key_hash not in response.content.decode()
    assert client.get(admin_url(ApiKey, "add")).status_code == 403


def test_it_lists_rows_without_a_query_per_row(client):
    demo.seed_demo()

    for model in (LogEntry, AuditEvent, Proposal, MemoryFile, MemoryFile.history.model, AgentSession):
        assert model._default_manager.count() >= MAX_CHANGELIST_QUERIES, model
        with CaptureQueriesContext(connection) as queries:
            response = client.get(admin_url(model, "changelist"))
        assert response.status_code == 200
        assert len(queries.captured_queries) < MAX_CHANGELIST_QUERIES, [q["sql"] for q in queries.captured_queries]


def test_it_changes_roles_through_the_service_so_they_are_audited(client):
    user = UserFactory(username="newcomer")
    workspace = WorkspaceFactory(slug="bank")

    response = client.post(admin_url(Membership, "add"), {"user": user.pk, "workspace": workspace.pk, "role": "admin"})

    assert response.status_code == 302
    assert Membership.objects.get(user=user).role == "admin"
    user.refresh_from_db()
    assert user.is_staff
    assert AuditEvent.objects.filter(action="staff.role", actor_user__username="root").count() == 1


def test_it_refuses_to_revoke_a_key_outside_the_users_workspaces(client):
    key, raw_key = services.issue_agent_key(agent=AgentFactory(), actor=services.SYSTEM)

    response = client.post(admin_url(ApiKey, "changelist"), {"action": "revoke_keys", "_selected_action": [key.pk]},
                           follow=True)

    assert "not an admin of their workspace" in response.content.decode()
    assert services.agent_for_key(raw_key) is not None


def test_it_keeps_governed_settings_and_tools_out_of_the_django_admin(client):
    # Write policy, limits, backend and the tool registry change in the
    # console, where weakening them takes a second admin and tools pass the scanner.
    agent = AgentFactory(write_policy="review")

    assert client.get(admin_url(ToolSetting, "add")).status_code == 403
    assert client.get(admin_url(type(agent), "add")).status_code == 403
    page = client.get(admin_url(type(agent), "change", agent.pk)).content.decode()
    assert 'name="write_policy"' not in page and 'name="limit_memory"' not in page
    assert 'name="name"' in page


def _form_field_names(page: str) -> set[str]:
    import re

    return set(re.findall(r'<(?:input|select|textarea)[^>]*\bname="([^"]+)"', page))


def test_it_shows_every_governed_workspace_setting_read_only_with_a_link_to_the_settings_page(client):
    from memoryhub.models import Workspace

    workspace = WorkspaceFactory(slug="bank", default_write_policy="review", pii_policy="flag",
                                 high_risk_approval="two_approvals")
    page = client.get(admin_url(Workspace, "change", workspace.pk)).content.decode()
    governed = [f for f in services.WORKSPACE_SETTINGS if f != "name"]
    assert {"default_write_policy", "pii_policy", "high_risk_approval"} <= set(governed)
    editable = _form_field_names(page)
    assert not editable & set(governed), editable & set(governed)
    assert 'name="name"' in page
    settings_url = reverse("workspace-settings", args=["bank"])
    assert f'href="{settings_url}"' in page
    assert "two_approvals" in page  # shown, just not editable
    # The add form too: a new workspace starts at the defaults.
    add_page = client.get(admin_url(Workspace, "add")).content.decode()
    assert not _form_field_names(add_page) & set(governed)


def test_a_posted_governed_workspace_setting_is_never_taken_for_a_change(client):
    from memoryhub.models import AuditEvent, Workspace

    workspace = WorkspaceFactory(slug="bank", default_write_policy="review", pii_policy="flag")
    answer = client.post(admin_url(Workspace, "change", workspace.pk), {
        "name": "Bank", "default_write_policy": "direct", "pii_policy": "allow",
        "high_risk_approval": "any_reviewer", "_save": "Save"}, follow=True)
    workspace.refresh_from_db()
    assert (workspace.default_write_policy, workspace.pii_policy) == ("review", "flag")
    # What the admin says it changed is what it changed: the name only.
    events = list(AuditEvent.objects.filter(action="workspace.update").values_list("summary", flat=True))
    assert events == ["Renamed workspace bank to 'Bank'"]
    assert answer.status_code == 200


def test_every_workspace_and_agent_field_is_either_a_label_or_read_only(client):
    from memoryhub.models import Agent, Workspace

    agent = AgentFactory()
    for model, obj, labels in ((Workspace, agent.workspace, {"name"}),
                               (Agent, agent, {"name", "description", "is_active"})):
        page = client.get(admin_url(model, "change", obj.pk)).content.decode()
        model_fields = {f.name for f in model._meta.concrete_fields}
        editable = _form_field_names(page) & model_fields
        assert editable <= labels, (model.__name__, editable - labels)
    agent_page = client.get(admin_url(Agent, "change", agent.pk)).content.decode()
    assert f'href="{reverse("agent", args=[agent.slug])}"' in agent_page
