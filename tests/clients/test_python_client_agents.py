"""memoryhub-client for issue 22 against a live server, sync and async:
strict tool schemas, the agent's own pending proposals on a read, the
PendingReview exception, notes and the session-end note."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import AsyncMemoryHub, MemoryHub, NoOpenSession, Note, PendingChange, PendingReview

from memoryhub.models import AgentSession, WritePolicy
from memoryhub.models import LogEntry as LogRow
from tests.factories import AgentFactory
from tests.live import run_async

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent():
    return AgentFactory(write_policy=WritePolicy.REVIEW)


def test_it_fetches_strict_schemas(live_server: Any, key):
    with MemoryHub(live_server.url, key) as hub:
        strict = hub.tool_schemas("anthropic", strict=True)
        default = hub.tool_schemas("anthropic")
    assert all(tool["strict"] is True for tool in strict) and all("strict" not in tool for tool in default)
    assert [tool["name"] for tool in strict] == [tool["name"] for tool in default]


def test_a_read_carries_the_agents_pending_writes_and_an_edit_of_them_raises_pending_review(live_server, key):
    with MemoryHub(live_server.url, key) as hub:
        outcome = hub.add_entry("MEMORY.md", "Prefers email.", user="u1")
        file = hub.read("MEMORY.md", user="u1")
        with pytest.raises(PendingReview) as refused:
            hub.replace_entry("MEMORY.md", "email", "Prefers post.", user="u1")
    assert outcome.pending and file.content == ""
    (pending,) = file.pending_review
    assert isinstance(pending, PendingChange) and pending.proposal == outcome.proposal
    assert pending.adds == ["Prefers email."] and pending.created_at is not None
    assert refused.value.status == 409 and refused.value.proposal == outcome.proposal


def test_it_saves_notes_reads_them_and_ends_a_session_with_a_final_note(live_server, agent, key):
    with MemoryHub(live_server.url, key) as hub:
        with pytest.raises(NoOpenSession):
            hub.note("Nothing open.", user="u1")
        session = hub.start_session("u1")
        saved = hub.note("Promised a callback.", user="u1")
        ended = hub.end_session(session.id, note="Callback on Friday.")
        notes = hub.notes(user="u1")
    assert saved.session == session.id and saved.redacted == 0
    assert ended.ended_at is not None and AgentSession.objects.get(pk=session.id).is_ended
    assert all(isinstance(note, Note) for note in notes)
    assert [note.text for note in notes] == ["Promised a callback.", "Callback on Friday."]
    assert list(LogRow.objects.values_list("role", flat=True)) == ["note", "note"]


def test_the_async_client_makes_the_same_calls(live_server, key):
    async def run() -> Any:
        async with AsyncMemoryHub(live_server.url, key) as hub:
            strict = await hub.tool_schemas("openai", strict=True)
            session = await hub.start_session("u1")
            saved = await hub.note("Async note.", user="u1", session=session.id)
            notes = await hub.notes(user="u1")
            await hub.add_entry("MEMORY.md", "Prefers tea.", user="u1")
            file = await hub.read("MEMORY.md", user="u1")
            ended = await hub.end_session(session.id, note="Bye.")
            return strict, saved, notes, file, ended

    strict, saved, notes, file, ended = run_async(run)
    assert all(tool["function"]["strict"] for tool in strict)
    assert [n.text for n in notes] == ["Async note."] and saved.entry == notes[0].entry
    assert file.pending_review[0].adds == ["Prefers tea."] and ended.ended_at is not None
