"""Webhooks: admin-only registration, signed deliveries to a real HTTP
server on 127.0.0.1, retries with backoff on transient failures only, and
payloads that carry no memory content."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

import pytest
from django.db import transaction

from memoryhub import services
from memoryhub.models import Role, WritePolicy
from notifications import services as notify
from notifications.models import EVENTS, DeliveryStatus, Webhook, WebhookDelivery
from tests.api_helpers import error_code, staff_client
from tests.clock import later
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db

SECRET = "s3cret-for-the-test-hook"
CONTENT = "- Customer IBAN moved to the new branch account; call back on Tuesdays."


@pytest.fixture(autouse=True)
def _local_receivers(settings: Any) -> None:
    # The receiver listens on 127.0.0.1, which production refuses.
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORYHUB_WEBHOOK_BACKOFF_SECONDS = 30


@pytest.fixture
def workspace() -> Any:
    return WorkspaceFactory(slug="bank")


@pytest.fixture
def admin(workspace: Any) -> Any:
    return staff(workspace, Role.ADMIN, username="ada", email="ada@example.com")


def _hook(workspace: Any, admin: Any, url: str, events: list[str] | None = None) -> Webhook:
    hook, _ = notify.create_webhook(actor=admin, workspace=workspace, url=url,
                                    events=events or ["proposal.created", "proposal.approved"], secret=SECRET)
    return hook


def _propose(workspace: Any) -> Any:
    agent = AgentFactory(workspace=workspace, slug="teller", write_policy=WritePolicy.REVIEW)
    result = services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content=CONTENT)
    return result.proposal


def _verify(received: Any) -> dict[str, Any]:
    expected = "sha256=" + hmac.new(SECRET.encode(), received.body, hashlib.sha256).hexdigest()
    assert received.headers["x-memoryhub-signature"] == expected
    return json.loads(received.body)  # type: ignore[no-any-return]


# --- the API ---------------------------------------------------------------------------------


def test_an_admin_adds_lists_and_deletes_a_webhook_and_never_gets_the_secret_back(workspace: Any,
                                                                                 admin: Any) -> None:
    client = staff_client(admin)
    created = client.post("/api/v1/webhooks", {"url": "https://hooks.example.com/mh",
                                               "events": ["proposal.created", "run.failed"], "secret": SECRET},
                          format="json")
    assert created.status_code == 201, created.content
    assert created.json()["events"] == ["proposal.created", "run.failed"]
    assert created.json()["workspace"] == "bank"
    listed = client.get("/api/v1/webhooks")
    assert listed.status_code == 200
    assert [h["id"] for h in listed.json()] == [created.json()["id"]]
    assert SECRET not in created.content.decode() and SECRET not in listed.content.decode()
    assert Webhook.objects.get().secret == SECRET  # kept, to sign with

    deleted = client.delete(f"/api/v1/webhooks/{created.json()['id']}")
    assert deleted.status_code == 204
    assert client.get("/api/v1/webhooks").json() == []
    assert client.delete(f"/api/v1/webhooks/{created.json()['id']}").status_code == 404


def test_a_generated_secret_is_shown_once(workspace: Any, admin: Any) -> None:
    client = staff_client(admin)
    created = client.post("/api/v1/webhooks", {"url": "https://hooks.example.com/mh", "events": ["run.failed"]},
                          format="json")
    assert created.status_code == 201
    secret = created.json()["secret"]
    assert len(secret) >= 16 and Webhook.objects.get().secret == secret
    assert secret not in client.get("/api/v1/webhooks").content.decode()


def test_a_reviewer_may_not_manage_webhooks(workspace: Any, admin: Any) -> None:
    hook = _hook(workspace, admin, "https://hooks.example.com/mh")
    client = staff_client(staff(workspace, Role.REVIEWER))
    assert error_code(client.get("/api/v1/webhooks")) == "permission_denied"
    refused = client.post("/api/v1/webhooks", {"url": "https://x.example.com/", "events": ["run.failed"],
                                               "secret": SECRET}, format="json")
    assert refused.status_code == 403
    assert client.delete(f"/api/v1/webhooks/{hook.pk}").status_code == 403
    assert Webhook.objects.active().count() == 1


def test_another_workspaces_webhook_is_not_found(workspace: Any, admin: Any) -> None:
    other = WorkspaceFactory(slug="other")
    theirs = _hook(other, staff(other, Role.ADMIN), "https://hooks.example.com/other")
    assert staff_client(admin).delete(f"/api/v1/webhooks/{theirs.pk}").status_code == 404
    assert Webhook.objects.active().count() == 1


@pytest.mark.parametrize("body, field", [
    ({"url": "ftp://hooks.example.com/", "events": ["run.failed"]}, "url"),
    ({"url": "https://user:pw@hooks.example.com/", "events": ["run.failed"]}, "url"),
    ({"url": "https://hooks.example.com/", "events": []}, "events"),
    ({"url": "https://hooks.example.com/", "events": ["proposal.eaten"]}, "events"),
    ({"url": "https://hooks.example.com/", "events": ["run.failed"], "secret": "short"}, "secret"),
])
def test_it_refuses_bad_webhooks(workspace: Any, admin: Any, body: dict[str, Any], field: str) -> None:
    answer = staff_client(admin).post("/api/v1/webhooks", body, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["field"].startswith(field)
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/", "http://10.0.0.7/", "http://169.254.169.254/latest",
                                 "http://[::1]/", "http://localhost/hook"])
def test_it_refuses_private_addresses_in_production(settings: Any, workspace: Any, admin: Any, url: str) -> None:
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = False
    settings.DEBUG = False
    answer = staff_client(admin).post("/api/v1/webhooks", {"url": url, "events": ["run.failed"], "secret": SECRET},
                                      format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["reason"] == "private_address"


def test_a_delivery_is_refused_when_the_host_resolves_to_a_private_address(settings: Any, workspace: Any,
                                                                            admin: Any) -> None:
    with WebhookReceiver() as receiver:
        # Registered while private targets were allowed; checked again, after
        # DNS, at every delivery.
        _hook(workspace, admin, receiver.url.replace("127.0.0.1", "localhost"))
        _propose(workspace)
        settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = False
        attempt = notify.attempt_delivery(delivery_id=WebhookDelivery.objects.get().pk)
        assert receiver.received == []
    assert attempt is not None and attempt.status == DeliveryStatus.FAILED
    assert "is a local name; webhooks go only to public addresses" in WebhookDelivery.objects.get().last_error


# --- deliveries ------------------------------------------------------------------------------


def test_a_new_proposal_is_delivered_signed_and_without_content(workspace: Any, admin: Any,
                                                                django_capture_on_commit_callbacks: Any) -> None:
    with WebhookReceiver() as receiver:
        _hook(workspace, admin, receiver.url)
        with django_capture_on_commit_callbacks() as callbacks:  # not executed: no broker in this test
            proposal = _propose(workspace)
        assert len(callbacks) == 1
        delivery = WebhookDelivery.objects.get()
        attempt = notify.attempt_delivery(delivery_id=delivery.pk)
        (received,) = receiver.wait_for(1)
    assert attempt is not None and attempt.status == DeliveryStatus.SUCCEEDED
    assert received.headers["x-memoryhub-event"] == "proposal.created"
    body = _verify(received)
    assert body["event"] == "proposal.created"
    assert body["target"] == {"type": "proposal", "id": proposal.pk}
    assert body["agent"] == "teller" and body["workspace"] == "bank"
    assert body["data"]["kind"] == "MEMORY.md" and body["delivery"] == delivery.pk
    # No memory content, no end-user id in clear: a pseudonym only.
    assert "IBAN" not in received.body.decode() and "Tuesdays" not in received.body.decode()
    assert "alice" not in received.body.decode() and body["user"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (DeliveryStatus.SUCCEEDED, 1, 200)


def test_a_webhook_gets_only_the_events_it_subscribed_to(workspace: Any, admin: Any) -> None:
    _hook(workspace, admin, "https://hooks.example.com/", events=["run.failed"])
    _propose(workspace)
    assert not WebhookDelivery.objects.exists()


def test_an_action_that_rolls_back_announces_nothing(workspace: Any, admin: Any) -> None:
    _hook(workspace, admin, "https://hooks.example.com/")
    with pytest.raises(RuntimeError), transaction.atomic():
        _propose(workspace)
        raise RuntimeError("the request failed after the write")
    assert not WebhookDelivery.objects.exists()


def test_a_decision_and_a_stale_proposal_are_announced(workspace: Any, admin: Any) -> None:
    _hook(workspace, admin, "https://hooks.example.com/",
          events=["proposal.approved", "proposal.rejected", "proposal.stale"])
    agent = AgentFactory(workspace=workspace, slug="teller", write_policy=WritePolicy.REVIEW)
    first = services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- one").proposal
    second = services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- two").proposal
    reviewer = staff(workspace, Role.REVIEWER)
    services.approve_proposal(proposal_id=first.pk, reviewer=reviewer)
    events = list(WebhookDelivery.objects.order_by("id").values_list("event", "payload__target__id"))
    assert events == [("proposal.stale", second.pk), ("proposal.approved", first.pk)]


def test_a_failed_delivery_is_retried_with_backoff_and_then_succeeds(workspace: Any, admin: Any) -> None:
    with WebhookReceiver() as receiver:
        receiver.answer(500)
        _hook(workspace, admin, receiver.url)
        _propose(workspace)
        delivery = WebhookDelivery.objects.get()
        first = notify.attempt_delivery(delivery_id=delivery.pk)
        assert first is not None and first.status == DeliveryStatus.PENDING and first.retry_in == 30
        # Not due yet: a duplicate message sends nothing.
        assert notify.attempt_delivery(delivery_id=delivery.pk) is None
        second = notify.attempt_delivery(delivery_id=delivery.pk, now=later(seconds=31))
        received = receiver.wait_for(2)
    assert second is not None and second.status == DeliveryStatus.SUCCEEDED and second.retry_in is None
    assert received[0].body == received[1].body
    _verify(received[1])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SUCCEEDED, 2)


def test_backoff_doubles_and_is_capped(settings: Any) -> None:
    settings.MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS = 100
    assert [notify.backoff(n) for n in (1, 2, 3, 4)] == [30, 60, 100, 100]
    assert notify.backoff(1, retry_after=90) == 90


def test_a_client_error_is_not_retried(workspace: Any, admin: Any) -> None:
    with WebhookReceiver() as receiver:
        receiver.answer(410)
        _hook(workspace, admin, receiver.url)
        _propose(workspace)
        delivery = WebhookDelivery.objects.get()
        attempt = notify.attempt_delivery(delivery_id=delivery.pk)
    assert attempt is not None and attempt.status == DeliveryStatus.FAILED and attempt.retry_in is None
    delivery.refresh_from_db()
    assert delivery.response_code == 410 and "410" in delivery.last_error


def test_too_many_requests_is_retried(workspace: Any, admin: Any) -> None:
    with WebhookReceiver() as receiver:
        receiver.answer(429)
        _hook(workspace, admin, receiver.url)
        _propose(workspace)
        attempt = notify.attempt_delivery(delivery_id=WebhookDelivery.objects.get().pk)
    assert attempt is not None and attempt.status == DeliveryStatus.PENDING


def test_it_gives_up_after_the_last_attempt(settings: Any, workspace: Any, admin: Any) -> None:
    settings.MEMORYHUB_WEBHOOK_MAX_ATTEMPTS = 2
    with WebhookReceiver() as receiver:
        receiver.answer(503, 503, 503)
        _hook(workspace, admin, receiver.url)
        _propose(workspace)
        delivery = WebhookDelivery.objects.get()
        notify.attempt_delivery(delivery_id=delivery.pk)
        last = notify.attempt_delivery(delivery_id=delivery.pk, now=later(minutes=5))
        assert notify.attempt_delivery(delivery_id=delivery.pk, now=later(hours=5)) is None
        assert len(receiver.received) == 2
    assert last is not None and last.status == DeliveryStatus.FAILED
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and "Gave up after 2 attempts" in delivery.last_error


def test_a_connection_error_is_retried(workspace: Any, admin: Any) -> None:
    receiver = WebhookReceiver()
    url = receiver.url
    receiver._server.server_close()  # nobody listens there any more
    _hook(workspace, admin, url)
    _propose(workspace)
    attempt = notify.attempt_delivery(delivery_id=WebhookDelivery.objects.get().pk)
    assert attempt is not None and attempt.status == DeliveryStatus.PENDING
    assert "Error" in WebhookDelivery.objects.get().last_error


def test_the_sweep_resends_a_delivery_whose_message_was_lost(workspace: Any, admin: Any) -> None:
    _hook(workspace, admin, "https://hooks.example.com/")
    _propose(workspace)
    delivery = WebhookDelivery.objects.get()
    assert notify.due_deliveries() == []
    assert notify.due_deliveries(now=later(minutes=2)) == [delivery.pk]


def test_a_deleted_webhook_gets_nothing_more(workspace: Any, admin: Any) -> None:
    hook = _hook(workspace, admin, "https://hooks.example.com/")
    _propose(workspace)
    notify.delete_webhook(actor=admin, webhook_id=hook.pk)
    assert WebhookDelivery.objects.get().status == DeliveryStatus.FAILED
    _propose_again = services.write_memory(agent=hook.workspace.agents.get(), kind="MEMORY.md", user_ref="bob",
                                           content="- other")
    assert _propose_again.proposal is not None
    assert WebhookDelivery.objects.count() == 1


# --- console ---------------------------------------------------------------------------------


def test_the_console_adds_a_webhook_sends_a_test_and_shows_the_log(client: Any, workspace: Any,
                                                                   admin: Any) -> None:
    client.force_login(admin)
    with WebhookReceiver() as receiver:
        added = client.post("/webhooks/", {"action": "add", "url": receiver.url, "events": ["proposal.created"],
                                           "secret": SECRET})
        assert added.status_code == 302
        hook = Webhook.objects.get()
        tested = client.post("/webhooks/", {"action": "test", "webhook": hook.pk})
        assert tested.status_code == 302
        delivery = WebhookDelivery.objects.get(event="ping")
        notify.attempt_delivery(delivery_id=delivery.pk)
        (received,) = receiver.wait_for(1)
    assert received.headers["x-memoryhub-event"] == "ping"
    assert _verify(received)["target"] == {"type": "webhook", "id": hook.pk}
    page = client.get("/webhooks/")
    assert page.status_code == 200
    html = page.content.decode()
    assert receiver.url in html and "ping" in html and "Delivered" in html and SECRET not in html
    assert client.post("/webhooks/", {"action": "delete", "webhook": hook.pk}).status_code == 302
    assert not Webhook.objects.active().exists()


def test_the_console_shows_why_a_webhook_was_refused(client: Any, workspace: Any, admin: Any) -> None:
    client.force_login(admin)
    answer = client.post("/webhooks/", {"action": "add", "url": "gopher://x", "events": ["run.failed"]})
    assert answer.status_code == 400
    assert "http" in answer.content.decode()


def test_a_nul_in_the_webhook_form_is_a_400_and_stores_nothing(client: Any, workspace: Any, admin: Any) -> None:
    # notifications/forms.py reads the POST: Django's CharField refuses a NUL
    # before any service sees it (the URL check alone would accept this one).
    client.force_login(admin)
    answer = client.post("/webhooks/", {"action": "add", "url": "https://hooks.example.com/\x00",
                                        "events": ["run.failed"]})
    assert answer.status_code == 400
    assert "Null characters are not allowed" in answer.content.decode()
    assert not Webhook.objects.exists()


def test_the_notification_settings_form_saves_what_is_ticked(client: Any, workspace: Any, admin: Any) -> None:
    client.force_login(admin)
    assert client.post("/settings/notifications/", {"overdue": "on"}).status_code == 302
    pref = notify.preferences_for(admin)
    assert (pref.high_risk, pref.overdue, pref.run_failed) == (False, True, False)


def test_the_add_form_ticks_no_event_until_the_admin_chooses(client: Any, workspace: Any, admin: Any) -> None:
    client.force_login(admin)
    html = client.get("/webhooks/").content.decode()
    boxes = re.findall(r'<input type="checkbox" name="events"[^>]*>', html)
    assert len(boxes) == len(EVENTS) and not any("checked" in box for box in boxes)
    # A refused form keeps what was ticked, and only that.
    again = client.post("/webhooks/", {"action": "add", "url": "gopher://x", "events": ["run.failed"]}).content
    ticked = re.findall(r'<input type="checkbox" name="events" value="([^"]+)" checked', again.decode())
    assert ticked == ["run.failed"]


def test_the_webhooks_page_is_for_admins(client: Any, workspace: Any) -> None:
    client.force_login(staff(workspace, Role.REVIEWER))
    assert client.get("/webhooks/").status_code == 403


def test_the_django_admin_never_shows_the_secret(client: Any, workspace: Any, admin: Any) -> None:
    from django.urls import reverse

    hook = _hook(workspace, admin, "https://hooks.example.com/")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    page = client.get(reverse("admin:notifications_webhook_change", args=[hook.pk]))
    assert page.status_code == 200
    assert "hooks.example.com" in page.content.decode() and SECRET not in page.content.decode()
