"""Issue 22 through the official MCP SDK's client over streamable HTTP:
memory_note, memory_view of `notes`, and read-your-own-writes under review
(the pending part of memory_view, 409-like `pending_review` of an entry
operation). The transport itself is tests/memoryhub/test_mcp.py's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memoryhub import context, services, tool_schemas
from memoryhub.models import LogEntry, Proposal, WritePolicy
from tests.live import asgi_server
from tests.memoryhub.test_mcp import over_http, text_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[str]:
    with asgi_server() as url:
        yield url


def test_memory_note_is_listed_with_its_published_schema(server, key):
    tools = {tool.name: tool for tool in over_http(server, key)}
    assert tools["memory_note"].input_schema == tool_schemas.BY_NAME["memory_note"].parameters
    assert "notes" in tools["memory_view"].input_schema["properties"]["file"]["enum"]


def test_a_note_is_logged_and_read_back_with_memory_view(server, agent, key):
    session = services.start_session(agent=agent, user_ref="u1")
    # As a strict-mode model sends it: every property, null for the unused one.
    noted, view, empty = over_http(
        server, key, ("memory_note", {"text": "Promised a callback on Friday.", "user": "u1", "session": None}),
        ("memory_view", {"file": "notes", "user": "u1"}), ("memory_view", {"file": "notes", "user": "u2"}))
    assert not noted.is_error, text_of(noted)
    assert noted.structured_content["session"] == session.pk
    entry = LogEntry.objects.get(pk=noted.structured_content["entry"])
    assert entry.role == "note" and entry.content == "Promised a callback on Friday."
    assert not view.is_error and "Promised a callback on Friday." in text_of(view)
    assert [n["text"] for n in view.structured_content["notes"]] == ["Promised a callback on Friday."]
    assert empty.structured_content["notes"] == [] and "no notes" in text_of(empty)
    assert "callback" not in context.build_context(agent=agent, user_ref="u1")["system_prompt"]


def test_a_note_without_an_open_session_or_without_a_user_is_refused(server, agent, key):
    no_session, no_user = over_http(server, key, ("memory_note", {"text": "x", "user": "u1"}),
                                    ("memory_view", {"file": "notes"}))
    assert no_session.is_error and no_session.structured_content["error"]["code"] == "no_open_session"
    assert no_user.is_error and "`user`" in text_of(no_user)
    assert not LogEntry.objects.exists()


def test_memory_view_shows_the_agents_own_pending_write_apart_and_a_replace_on_it_names_it(server, agent, key):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Likes tea.\n")
    agent.write_policy = WritePolicy.REVIEW
    agent.save(update_fields=["write_policy"])
    added, view, replaced = over_http(
        server, key, ("memory_add", {"file": "MEMORY.md", "user": "u1", "text": "Prefers email."}),
        ("memory_view", {"file": "MEMORY.md", "user": "u1"}),
        ("memory_replace", {"file": "MEMORY.md", "user": "u1", "old_text": "email", "new_text": "Prefers post."}))
    proposal = added.structured_content["proposal"]
    assert view.structured_content["content"] == "- Likes tea.\n"
    assert view.structured_content["pending_review"][0]["proposal"] == proposal
    served, _, pending = text_of(view).partition("PENDING REVIEW")
    assert "email" not in served and f"proposal #{proposal}" in pending and "+ - Prefers email." in pending
    assert replaced.is_error and replaced.structured_content["error"]["code"] == "pending_review"
    assert replaced.structured_content["error"]["proposal"] == proposal
    assert Proposal.objects.count() == 1


def test_memory_view_without_pending_writes_reads_as_before(server, agent, key):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Likes tea.\n")
    (view,) = over_http(server, key, ("memory_view", {"file": "MEMORY.md", "user": "u1"}))
    assert "PENDING REVIEW" not in text_of(view) and view.structured_content["pending_review"] == []
