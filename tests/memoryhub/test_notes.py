"""memory_note over REST (memoryhub.services.notes): a short note appended
to the pair's session log as a `note` entry, scanned like any log entry;
a final note on session end; the last two days' notes readable, never
injected into a context; the standing instructions ask for it."""

from __future__ import annotations

import pytest

from memoryhub import context, services
from memoryhub.models import LogEntry, LogRole
from tests.api_helpers import agent_client, error_code
from tests.clock import later, looking_from
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/memory/notes"


@pytest.fixture
def client(agent):
    return agent_client(agent)


@pytest.fixture
def session(agent):
    return services.start_session(agent=agent, user_ref="u1")


def test_a_note_lands_in_the_pairs_open_session_log_as_a_note(client, session):
    response = client.post(URL, {"user": "u1", "text": "Agreed to call back on Friday."}, format="json")
    assert response.status_code == 201
    body = response.json()
    entry = LogEntry.objects.get(pk=body["entry"])
    assert entry.role == LogRole.NOTE and entry.session_id == session.pk == body["session"]
    assert entry.content == "Agreed to call back on Friday." and body["redacted"] == 0


def test_a_note_goes_to_the_named_session_or_the_most_recent_open_one(client, agent, session):
    newer = services.start_session(agent=agent, user_ref="u1")
    assert client.post(URL, {"user": "u1", "text": "One."}, format="json").json()["session"] == newer.pk
    named = client.post(URL, {"user": "u1", "text": "Two.", "session": session.pk}, format="json")
    assert named.json()["session"] == session.pk


def test_a_note_without_an_open_session_is_a_409_saying_what_to_do(client, agent, session):
    services.end_session(session=session)
    response = client.post(URL, {"user": "u1", "text": "Lost?"}, format="json")
    assert response.status_code == 409 and error_code(response) == "no_open_session"
    assert "POST /api/v1/sessions" in response.json()["error"]["detail"]
    assert not LogEntry.objects.exists()


def test_another_agents_or_users_session_is_not_found(client, session):
    other = services.start_session(agent=AgentFactory(), user_ref="u1")
    assert client.post(URL, {"user": "u1", "text": "x", "session": other.pk}, format="json").status_code == 404
    assert client.post(URL, {"user": "u2", "text": "x", "session": session.pk}, format="json").status_code == 404


def test_a_secret_in_a_note_is_redacted_before_it_is_stored(client, session):
    response = client.post(URL, {"user": "u1", "text": "Key for later: AKIAIOSFODNN7EXAMPLE"}, format="json")
    assert response.status_code == 201 and response.json()["redacted"] == 1
    assert "AKIA" not in LogEntry.objects.get().content


@pytest.mark.parametrize(("text", "status", "code"), [("", 400, "invalid"), ("   ", 400, "invalid"),
                                                       ("x" * 2001, 422, "limit_exceeded"), (7, 400, "invalid")])
def test_a_bad_note_is_refused_and_nothing_stored(client, session, text, status, code):
    response = client.post(URL, {"user": "u1", "text": text}, format="json")
    assert response.status_code == status and error_code(response) == code
    assert not LogEntry.objects.exists()


def test_a_long_note_is_refused_by_the_service_with_its_limit(agent, session):
    from memoryhub import errors

    with pytest.raises(errors.LimitExceeded, match="at most 2,000"):
        services.add_note(agent=agent, user_ref="u1", text="x" * 2001)


def test_the_session_end_call_may_carry_a_final_note(client, session):
    response = client.post(f"/api/v1/sessions/{session.pk}/end", {"note": "Refund promised by Friday."},
                           format="json")
    assert response.status_code == 200
    session.refresh_from_db()
    assert session.is_ended
    assert list(LogEntry.objects.values_list("role", "content")) == [("note", "Refund promised by Friday.")]


def test_ending_without_a_body_still_works_and_a_bad_final_note_ends_nothing(client, session):
    bad = client.post(f"/api/v1/sessions/{session.pk}/end", {"note": ""}, format="json")
    assert bad.status_code == 400
    session.refresh_from_db()
    assert not session.is_ended
    assert client.post(f"/api/v1/sessions/{session.pk}/end").status_code == 200


def test_the_last_two_days_notes_are_readable_oldest_first(client, agent, session):
    services.add_note(agent=agent, user_ref="u1", text="First.")
    services.append_log(session=session, entries=[{"role": "user", "content": "Not a note."}])
    services.add_note(agent=agent, user_ref="u1", text="Second.")
    body = client.get(URL, {"user": "u1"}).json()
    assert body["days"] == 2
    assert [n["text"] for n in body["notes"]] == ["First.", "Second."]
    assert {n["session"] for n in body["notes"]} == {session.pk}
    # The database refuses back-dated rows, so age is seen from later on.
    with looking_from(later(days=1, hours=23)):
        assert len(client.get(URL, {"user": "u1"}).json()["notes"]) == 2
    with looking_from(later(days=2, minutes=1)):
        assert client.get(URL, {"user": "u1"}).json()["notes"] == []


def test_another_agents_notes_are_not_read(client, agent, session):
    other = AgentFactory()
    services.add_note(agent=other, user_ref="u1", text="Other agent's note.",
                      session_id=services.start_session(agent=other, user_ref="u1").pk)
    assert client.get(URL, {"user": "u1"}).json()["notes"] == []


def test_another_users_notes_are_not_read(client, agent):
    services.add_note(agent=agent, user_ref="u2",
                      text="u2's note.", session_id=services.start_session(agent=agent, user_ref="u2").pk)
    assert client.get(URL, {"user": "u1"}).json()["notes"] == []
    assert client.get(URL).status_code == 400


def test_notes_are_never_injected_into_the_context(agent, session):
    services.add_note(agent=agent, user_ref="u1", text="Promised a callback on Friday.")
    assert "callback" not in context.build_context(agent=agent, user_ref="u1")["system_prompt"]


def test_the_standing_instructions_ask_for_a_note_before_compaction(agent):
    prompt = context.build_context(agent=agent, user_ref="u1")["system_prompt"]
    assert "Before your conversation history is compacted" in prompt and "memory_note" in prompt


def test_the_next_consolidation_reads_a_note_as_the_agents_own(agent, session):
    from consolidation.models import ConsolidationRun, RunStatus, Trigger
    from consolidation.tasks import consolidate_task
    from memoryhub.models import Proposal

    services.add_note(agent=agent, user_ref="u1", text="Prefers email over phone calls.")
    services.end_session_with_note(session=session, note="Works night shifts at the harbour.")
    run = ConsolidationRun.objects.create(agent=agent, user_ref="u1", status=RunStatus.QUEUED, trigger=Trigger.GATE,
                                          backend=agent.consolidation_backend)
    consolidate_task.apply(args=(run.pk,))
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    proposed = "".join(Proposal.objects.filter(agent=agent, user_ref="u1").values_list("proposed_content", flat=True))
    assert "email" in proposed and "night shifts" in proposed
