"""GET /api/v1/subjects/U/export: everything held about one end user,
streamed; admins and auditors only; every export and refusal audited."""

from __future__ import annotations

import json
import tracemalloc
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from memoryhub import jsonstream, services
from memoryhub.models import AuditEvent, LogEntry, Role, Source
from tests.api_helpers import agent_client, error_code, staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


def _export(client, user_ref, **query):
    url = f"/api/v1/subjects/{quote(user_ref, safe='')}/export"
    return client.get(url, query)


def _body(response):
    assert response.streaming, "the export is streamed, not built in memory"
    return json.loads(b"".join(response.streaming_content))


def test_it_exports_every_file_version_proposal_session_and_log_entry(agent, admin):
    other_agent = AgentFactory(workspace=agent.workspace)
    services.write_memory(agent=agent, kind="USER.md", user_ref="alice", content="- Alice likes tea")
    services.write_memory(agent=agent, kind="USER.md", user_ref="alice", content="- Alice likes green tea")
    services.write_memory(agent=other_agent, kind="MEMORY.md", user_ref="alice", content="- Alice rides a bike")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="alice", content="- Alice: Oslo",
                                       source=Source.CONSOLIDATION)
    session = services.start_session(agent=agent, user_ref="alice")
    services.append_log(session=session, entries=[{"role": "user", "content": "I moved to Oslo"}])
    services.write_memory(agent=agent, kind="USER.md", user_ref="bob", content="- Bob secret")
    services.write_memory(agent=AgentFactory(), kind="USER.md", user_ref="alice", content="- other tenant")

    response = _export(staff_client(admin), "alice")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith("attachment;")
    body = _body(response)
    assert (body["format"], body["version"], body["subject"], body["workspace"]) == (
        "memoryhub.subject-export", 1, "alice", agent.workspace.slug)
    assert sorted((f["agent"], f["file"], f["content"]) for f in body["files"]) == sorted([
        (agent.slug, "USER.md", "- Alice likes green tea"), (other_agent.slug, "MEMORY.md", "- Alice rides a bike")])
    assert [v["content"] for v in body["versions"] if v["agent"] == agent.slug] == [
        "- Alice likes tea", "- Alice likes green tea"]
    assert body["versions"][0]["author"] == f"agent:{agent.slug}"
    assert [p["id"] for p in body["proposals"]] == [proposal.pk]
    assert [s["id"] for s in body["sessions"]] == [session.pk]
    assert [e["content"] for e in body["log_entries"]] == ["I moved to Oslo"]
    assert body["counts"]["versions"] == len(body["versions"]) == 3
    text = json.dumps(body)
    assert "Bob secret" not in text and "other tenant" not in text
    event = AuditEvent.objects.get(action="subject.export")
    assert (event.workspace, event.actor_user, event.user_ref) == (agent.workspace, admin, "alice")
    assert event.details["counts"]["log_entries"] == 1 and body["audit_event"] == event.pk


def test_an_auditor_may_export_and_a_reviewer_may_not(agent):
    auditor = staff(agent.workspace, Role.AUDITOR)
    assert _export(staff_client(auditor), "alice").status_code == 200
    reviewer = staff(agent.workspace, Role.REVIEWER)
    refused = _export(staff_client(reviewer), "alice")
    assert refused.status_code == 403 and error_code(refused) == "permission_denied"
    event = AuditEvent.objects.get(action="subject.refused")
    assert (event.workspace, event.actor_user) == (agent.workspace, reviewer)


def test_another_workspace_is_not_found(admin):
    other = WorkspaceFactory()
    response = _export(staff_client(admin), "alice", workspace=other.slug)
    assert response.status_code == 404 and error_code(response) == "not_found"
    assert not AuditEvent.objects.filter(action="subject.export").exists()


def test_a_user_with_several_workspaces_names_one(agent, admin):
    second = WorkspaceFactory()
    staff(second, Role.ADMIN, username=admin.username)
    services.write_memory(agent=AgentFactory(workspace=second), kind="USER.md", user_ref="alice", content="- two")
    client = staff_client(admin)
    ambiguous = _export(client, "alice")
    assert ambiguous.status_code == 400 and ambiguous.json()["error"]["field"] == "workspace"
    body = _body(_export(client, "alice", workspace=second.slug))
    assert [f["content"] for f in body["files"]] == ["- two"]


@pytest.mark.parametrize("bad", ["x" * 256, "tab\there", "bell\x07"])
def test_a_malformed_user_reference_is_invalid(admin, bad):
    response = _export(staff_client(admin), bad)
    assert response.status_code == 400 and error_code(response) == "invalid"


def test_a_subject_with_no_data_gets_empty_lists_and_the_export_is_audited(admin):
    body = _body(_export(staff_client(admin), "nobody"))
    assert all(body[name] == [] for name in ("files", "versions", "proposals", "sessions", "log_entries"))
    assert AuditEvent.objects.filter(action="subject.export", user_ref="nobody").count() == 1


def test_a_reference_with_a_slash_or_accents_travels_url_encoded(agent, admin):
    services.write_memory(agent=agent, kind="USER.md", user_ref="team/José ü", content="- found")
    body = _body(_export(staff_client(admin), "team/José ü"))
    assert [f["content"] for f in body["files"]] == ["- found"]


def test_agents_and_strangers_are_refused(agent):
    assert _export(agent_client(agent), "alice").status_code == 403
    anonymous = _export(APIClient(), "alice")
    assert anonymous.status_code == 401 and error_code(anonymous) == "not_authenticated"


def _streamed(client, user_ref):
    """(bytes, pieces, peak traced memory) of one export read to the end."""
    response = _export(client, user_ref)
    tracemalloc.start()
    pieces = total = 0
    for piece in response.streaming_content:
        pieces += 1
        total += len(piece)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return total, pieces, peak


def test_it_streams_a_large_log_in_pieces_in_bounded_memory(agent, admin):
    client = staff_client(admin)
    line = "x" * 1000
    for user_ref, rows in (("small", 1000), ("large", 3000)):
        session = services.start_session(agent=agent, user_ref=user_ref)
        LogEntry.objects.bulk_create(
            LogEntry(session=session, agent=agent, user_ref=user_ref, role="user", content=f"{i} {line}")
            for i in range(rows)
        )
    small_bytes, _, small_peak = _streamed(client, "small")
    large_bytes, pieces, large_peak = _streamed(client, "large")
    assert large_bytes > 3 * small_bytes * 0.9
    assert pieces > large_bytes // (2 * jsonstream.CHUNK_CHARS)
    # Three times the log, about the same memory: one chunk of rows and one
    # piece of output at a time, never the document.
    assert large_peak < 1.5 * small_peak
    assert large_peak < large_bytes / 2
