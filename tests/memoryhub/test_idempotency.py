"""Idempotency-Key on POSTs that create things: a retried request gets the
first answer, never a second session or log batch."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub import idempotency, services
from memoryhub.models import AgentSession, IdempotencyRecord, LogEntry
from tests.api_helpers import agent_client, error_code
from tests.conftest import needs_postgres
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(agent):
    return agent_client(agent)


def start(client, key: str, user: str = "u1"):
    return client.post("/api/v1/sessions", {"user": user}, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_a_retried_session_start_gets_the_first_answer_and_one_session(agent, client):
    first, again = start(client, "k-1"), start(client, "k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert AgentSession.objects.filter(agent=agent).count() == 1


def test_without_a_key_every_post_creates(agent, client):
    client.post("/api/v1/sessions", {"user": "u1"}, format="json")
    client.post("/api/v1/sessions", {"user": "u1"}, format="json")
    assert AgentSession.objects.filter(agent=agent).count() == 2


def test_a_retried_log_append_appends_once(agent, client):
    session = services.start_session(agent=agent, user_ref="u1")
    body = {"entries": [{"role": "user", "content": "hello"}]}
    url = f"/api/v1/sessions/{session.pk}/log"
    first = client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="log-1")
    again = client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="log-1")
    assert first.status_code == 201 and again.json() == first.json()
    assert LogEntry.objects.filter(session=session).count() == 1


def test_the_same_key_for_another_request_is_422(client):
    start(client, "k-2", user="u1")
    response = start(client, "k-2", user="u2")
    assert response.status_code == 422 and error_code(response) == "idempotency_key_reused"


def test_keys_are_per_caller(agent, client):
    other = agent_client(AgentFactory())
    assert start(client, "shared").status_code == start(other, "shared").status_code == 201
    assert AgentSession.objects.count() == 2


def test_a_refused_request_is_replayed_as_refused(agent, client):
    first = start(client, "k-3", user="")
    again = start(client, "k-3", user="")
    assert first.status_code == again.status_code == 400 and again["Idempotent-Replayed"] == "true"


def test_a_malformed_key_is_400(client):
    response = start(client, "has space")
    assert response.status_code == 400 and response.json()["error"]["field"] == "Idempotency-Key"


def test_an_expired_key_acts_again_and_expired_keys_are_purged(agent, client):
    start(client, "k-4")
    IdempotencyRecord.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert start(client, "k-4").headers.get("Idempotent-Replayed") is None
    assert AgentSession.objects.filter(agent=agent).count() == 2
    assert idempotency.purge_expired(now=timezone.now() + timedelta(days=2)) == 1
    assert not IdempotencyRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_create_once():
    needs_postgres()
    agent = AgentFactory()
    clients = [agent_client(agent) for _ in range(8)]
    barrier = threading.Barrier(len(clients))
    answers: list[tuple[int, dict]] = []

    def send(client) -> None:  # type: ignore[no-untyped-def]
        barrier.wait()
        try:
            response = start(client, "race")
            answers.append((response.status_code, response.json()))
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert {status for status, _ in answers} == {201} and len({body["id"] for _, body in answers}) == 1
    assert AgentSession.objects.filter(agent=agent).count() == 1


def test_a_retried_consolidation_trigger_answers_the_same_run(agent, scratch_queue):
    from consolidation.models import ConsolidationRun
    from memoryhub.models import Role
    from tests.api_helpers import staff_client
    from tests.factories import staff

    client = staff_client(staff(agent.workspace, Role.REVIEWER))
    url = f"/api/v1/agents/{agent.slug}/consolidate"
    first = client.post(url, {"user": "u1"}, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    again = client.post(url, {"user": "u1"}, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert first.status_code == again.status_code == 202 and again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true" and ConsolidationRun.objects.count() == 1
