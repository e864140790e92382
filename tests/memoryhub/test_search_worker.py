"""The semantic index with a real Celery worker (in a thread, on the
configured broker): a search that meets texts without vectors queues the
scope after its transaction, the worker embeds each text once, and the next
search finds an entry that shares no word with the query."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection

from memoryhub import services
from memoryhub.celery import app as celery_app
from memoryhub.models import EntryVector
from tests.api_helpers import agent_client
from tests.factories import AgentFactory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

NOTES = ["Customer prefers email, never phone her at work.", "Brake pads replaced on the gravel bike.",
         "Invoice KC-204511 sent: GBP 42.90."]


@pytest.fixture
def queue(settings: Any) -> Iterator[str]:
    name = f"test-search-{uuid.uuid4().hex[:8]}"
    settings.MEMORYHUB_SEARCH_QUEUE = name
    yield name
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(name)


def _close_db(**_: Any) -> None:
    connection.close()


def test_the_worker_embeds_what_a_search_met_without_vectors(queue: str) -> None:
    agent = AgentFactory()
    services.append_log(session=services.start_session(agent=agent, user_ref="ana"),
                        entries=[{"role": "note", "content": text} for text in [*NOTES, NOTES[0]]])
    api = agent_client(agent)
    first = api.get("/api/v1/memory/search", {"q": "telephone", "user": "ana"})
    assert first.status_code == 200 and first.json()["results"] == []  # no word in common, no vectors yet
    assert not EntryVector.objects.exists()  # nothing is embedded on the request path

    task_postrun.connect(_close_db, weak=False)
    try:
        with start_worker(celery_app, pool="solo", concurrency=1, queues=[queue], perform_ping_check=False,
                          loglevel="WARNING", shutdown_timeout=30):
            deadline = time.monotonic() + 30
            while EntryVector.objects.count() < len(NOTES) and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        task_postrun.disconnect(_close_db)

    # Four entries, three distinct texts: one vector each.
    assert EntryVector.objects.filter(agent=agent, user_ref="ana").count() == len(NOTES)
    results = api.get("/api/v1/memory/search", {"q": "telephone", "user": "ana"}).json()["results"]
    assert results and results[0]["how"] == ["semantic"] and "prefers email" in results[0]["snippet"]
