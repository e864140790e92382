"""End to end with a real Celery worker (in a thread, on the configured
broker): an agent's write becomes a proposal, the delivery is sent after
commit, the receiver's first answer is a 503, the task retries after its
backoff and the second, identically signed delivery succeeds."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection

from memoryhub.celery import app as celery_app
from memoryhub.models import Role, WritePolicy
from notifications import services as notify
from notifications.models import DeliveryStatus, WebhookDelivery
from tests.api_helpers import agent_client
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SECRET = "worker-test-secret-0123456789"


@pytest.fixture
def queue(settings: Any) -> Iterator[str]:
    name = f"test-notify-{uuid.uuid4().hex[:8]}"
    settings.MEMORYHUB_NOTIFICATIONS_QUEUE = name
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORYHUB_WEBHOOK_BACKOFF_SECONDS = 0.2
    yield name
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(name)


def _close_db(**_: Any) -> None:
    connection.close()


def test_a_worker_retries_a_failed_delivery_until_it_succeeds(queue: str) -> None:
    workspace = WorkspaceFactory(slug="bank")
    admin = staff(workspace, Role.ADMIN)
    agent = AgentFactory(workspace=workspace, write_policy=WritePolicy.REVIEW)
    task_postrun.connect(_close_db, weak=False)
    try:
        with WebhookReceiver() as receiver, start_worker(celery_app, pool="solo", concurrency=1, queues=[queue],
                                                         perform_ping_check=False, loglevel="WARNING",
                                                         shutdown_timeout=30):
            receiver.answer(503)
            notify.create_webhook(actor=admin, workspace=workspace, url=receiver.url, events=["proposal.created"],
                                  secret=SECRET)
            answer = agent_client(agent).put("/api/v1/memory/MEMORY.md?user=alice",
                                              {"content": "- prefers e-mail"}, format="json")
            assert answer.status_code == 202
            first, second = receiver.wait_for(2)
            deadline = time.monotonic() + 10
            while WebhookDelivery.objects.get().status != DeliveryStatus.SUCCEEDED and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        task_postrun.disconnect(_close_db)
    assert first.body == second.body
    expected = "sha256=" + hmac.new(SECRET.encode(), second.body, hashlib.sha256).hexdigest()
    assert second.headers["x-memoryhub-signature"] == expected
    assert json.loads(second.body)["target"]["id"] == answer.json()["proposal"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (DeliveryStatus.SUCCEEDED, 2, 200)
