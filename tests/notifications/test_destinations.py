"""Where a webhook may point, checked at both points with every spelling of
a host: at registration (staff REST and console give the same 400) and at
delivery, after DNS. No test here connects anywhere but 127.0.0.1: a guard
around the socket module refuses any other connection and any DNS query,
and the one name that must resolve is answered by a resolver the test
installs in place of the system's."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest
from django.utils.html import escape

from memoryhub import errors
from memoryhub.models import Role, WritePolicy
from memoryhub.services import write_memory
from notifications import destinations
from notifications import services as notify
from notifications.models import DeliveryStatus, Webhook, WebhookDelivery
from tests.api_helpers import staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db

SECRET = "s3cret-for-the-test-hook"

# (host as written in the URL, the address a client reaches)
LOOPBACK_SPELLINGS = [
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("127.000.000.001", "127.0.0.1"),
    ("0", "0.0.0.0"),
]
EMBEDDED = [
    ("[::ffff:127.0.0.1]", "127.0.0.1"),
    ("[::ffff:7f00:1]", "127.0.0.1"),
    ("[64:ff9b::7f00:1]", "127.0.0.1"),
    ("[64:ff9b::10.0.0.7]", "10.0.0.7"),
    ("[2002:7f00:1::]", "127.0.0.1"),
    ("[2002:a9fe:a9fe::1]", "169.254.169.254"),
    ("[::ffff:0:a00:7]", "10.0.0.7"),
]
OTHER_PRIVATE = [
    ("[::1]", "::1"),
    ("[::]", "::"),
    ("[::127.0.0.1]", "::7f00:1"),
    ("[fe80::1%25eth0]", "fe80::1"),
    ("[fd00::1]", "fd00::1"),
    ("[64:ff9b:1::a00:1]", "64:ff9b:1::a00:1"),
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("100.64.0.1", "100.64.0.1"),
    ("224.0.0.1", "224.0.0.1"),
    ("255.255.255.255", "255.255.255.255"),
    ("localhost.", "localhost"),
    ("LOCALHOST", "localhost"),
    ("api.localhost", "api.localhost"),
    ("printer.local.", "printer.local"),
    ("metadata.google.internal", "metadata.google.internal"),
]
EVERY_SPELLING = LOOPBACK_SPELLINGS + EMBEDDED + OTHER_PRIVATE
PUBLIC = ["8.8.8.8", "0x08080808", "134744072", "[64:ff9b::808:808]", "[2002:808:808::]", "[2606:4700::1111]",
          "hooks.example.com", "hooks.example.com."]


@pytest.fixture(autouse=True)
def _only_loopback(monkeypatch: Any) -> list[tuple[str, int]]:
    """Every connection goes to 127.0.0.1, and no DNS query leaves the
    machine; a broken check fails here instead of reaching anything."""
    connected: list[tuple[str, int]] = []
    create_connection = socket.create_connection
    getaddrinfo = socket.getaddrinfo

    def guarded_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        connected.append(address)
        assert address[0] == "127.0.0.1", f"a test tried to connect to {address}"
        return create_connection(address, *args, **kwargs)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise AssertionError(f"a test tried to resolve {host!r}") from None
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded_connection)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return connected


@pytest.fixture(autouse=True)
def _production(settings: Any) -> None:
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = False
    settings.DEBUG = False


@pytest.fixture
def workspace() -> Any:
    return WorkspaceFactory(slug="bank")


@pytest.fixture
def admin(workspace: Any) -> Any:
    return staff(workspace, Role.ADMIN, username="ada")


def _url(host: str, port: int = 8080) -> str:
    return f"http://{host}:{port}/hook"


# --- the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize("host, address", LOOPBACK_SPELLINGS + [("0x7F.0.0.1", "127.0.0.1"),
                                                                ("017700000001", "127.0.0.1")])
def test_it_reads_ipv4_spellings_as_the_c_library_does(host: str, address: str) -> None:
    parsed = destinations.parse_host(host)
    assert str(parsed.address) == address
    # The delivery connects through getaddrinfo (inet_aton); both must agree.
    if not host.endswith("."):
        assert socket.inet_ntoa(socket.inet_aton(host)) == address


@pytest.mark.parametrize("host", ["1.2.3.4.5", "256.1.1.1", "1.16777216", "08.1.1.1", "0x1g.1", "exa mple.com",
                                  "-bad.example.com", "[::gg]", "a..b"])
def test_it_refuses_hosts_no_client_could_reach(host: str) -> None:
    with pytest.raises(destinations.HostError):
        destinations.parse_host(host)


def test_the_table_covers_every_range_python_knows_is_not_global() -> None:
    known = [*ipaddress._IPv4Constants._private_networks,  # type: ignore[attr-defined]
             *ipaddress._IPv6Constants._private_networks]  # type: ignore[attr-defined]
    for network in known:
        for address in (network.network_address, network.broadcast_address):
            assert destinations.check_address(address) is not None, network


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses_pass_in_every_spelling(host: str) -> None:
    assert destinations.check_host(destinations.parse_host(host)) is None


# --- registration ----------------------------------------------------------------------------


@pytest.mark.parametrize("host, address", EVERY_SPELLING)
def test_registration_refuses_every_spelling_of_a_private_address(workspace: Any, admin: Any, client: Any,
                                                                   host: str, address: str) -> None:
    answer = staff_client(admin).post("/api/v1/webhooks", {"url": _url(host), "events": ["run.failed"],
                                                           "secret": SECRET}, format="json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "invalid" and error["reason"] == "private_address" and error["field"] == "url"
    assert error["address"] == address
    assert "webhooks go only to public addresses" in error["detail"]
    # The console calls the same service and says the same sentence.
    client.force_login(admin)
    page = client.post("/webhooks/", {"action": "add", "url": _url(host), "events": ["run.failed"],
                                      "secret": SECRET})
    assert page.status_code == 400
    assert escape(error["detail"]) in page.content.decode()
    assert not Webhook.objects.exists()


def test_the_refusal_names_the_address_and_the_range(workspace: Any, admin: Any) -> None:
    with pytest.raises(errors.Invalid) as caught:
        notify.create_webhook(actor=admin, workspace=workspace, url=_url("[64:ff9b::7f00:1]"),
                              events=["run.failed"], secret=SECRET)
    assert caught.value.detail == (
        "The host [64:ff9b::7f00:1] carries the IPv4 address 127.0.0.1 (NAT64, 64:ff9b::/96), in the loopback "
        "range (127.0.0.0/8); webhooks go only to public addresses.")
    assert caught.value.extra["range"] == "127.0.0.0/8"
    with pytest.raises(errors.Invalid) as caught:
        notify.create_webhook(actor=admin, workspace=workspace, url=_url("0x7f000001"), events=["run.failed"],
                              secret=SECRET)
    assert caught.value.detail.startswith("The host 0x7f000001 is the address 127.0.0.1, in the loopback range")


def test_a_malformed_host_is_refused_with_its_reason(workspace: Any, admin: Any) -> None:
    answer = staff_client(admin).post("/api/v1/webhooks", {"url": _url("256.1.1.1"), "events": ["run.failed"],
                                                           "secret": SECRET}, format="json")
    assert answer.status_code == 400
    assert answer.json()["error"]["reason"] == "invalid_host"


@pytest.mark.parametrize("host", PUBLIC)
def test_registration_accepts_public_addresses(workspace: Any, admin: Any, host: str) -> None:
    hook, _ = notify.create_webhook(actor=admin, workspace=workspace, url=_url(host), events=["run.failed"],
                                    secret=SECRET)
    assert hook.url == _url(host)


# --- delivery --------------------------------------------------------------------------------


def _registered_while_allowed(settings: Any, workspace: Any, admin: Any, url: str) -> WebhookDelivery:
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = True
    notify.create_webhook(actor=admin, workspace=workspace, url=url, events=["proposal.created"], secret=SECRET)
    agent = AgentFactory(workspace=workspace, write_policy=WritePolicy.REVIEW)
    write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- a fact")
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = False
    return WebhookDelivery.objects.get()


@pytest.mark.parametrize("host, address", EVERY_SPELLING)
def test_a_delivery_refuses_every_spelling_before_connecting(settings: Any, workspace: Any, admin: Any,
                                                             _only_loopback: list[Any], host: str,
                                                             address: str) -> None:
    with WebhookReceiver() as receiver:
        port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
        delivery = _registered_while_allowed(settings, workspace, admin, _url(host, port))
        attempt = notify.attempt_delivery(delivery_id=delivery.pk)
        assert receiver.received == []
    assert attempt is not None and attempt.status == DeliveryStatus.FAILED
    delivery.refresh_from_db()
    assert "webhooks go only to public addresses" in delivery.last_error
    assert _only_loopback == []


@pytest.mark.parametrize("host", [h for h, a in LOOPBACK_SPELLINGS if a == "127.0.0.1"])
def test_where_private_targets_are_allowed_every_spelling_reaches_the_address_it_names(
        settings: Any, workspace: Any, admin: Any, _only_loopback: list[Any], host: str) -> None:
    # The other half of "parse as the client does": the address we checked
    # is the one the delivery reaches.
    with WebhookReceiver() as receiver:
        port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
        delivery = _registered_while_allowed(settings, workspace, admin, _url(host, port))
        settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = True
        attempt = notify.attempt_delivery(delivery_id=delivery.pk)
        receiver.wait_for(1)
    assert attempt is not None and attempt.status == DeliveryStatus.SUCCEEDED
    assert _only_loopback == [("127.0.0.1", port)]


@pytest.mark.parametrize("answer", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1", "::ffff:127.0.0.1",
                                    "64:ff9b::7f00:1", "2002:7f00:1::", "fd00::1"])
def test_a_delivery_is_refused_when_dns_answers_a_private_address(settings: Any, workspace: Any, admin: Any,
                                                                  monkeypatch: Any, _only_loopback: list[Any],
                                                                  answer: str) -> None:
    delivery = _registered_while_allowed(settings, workspace, admin, "https://rebind.example.com/hook")
    asked: list[str] = []

    def resolver(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        # A DNS server that rebinds the name to an inside address after
        # registration (and answers nothing else).
        asked.append(host)
        assert host == "rebind.example.com"
        family = socket.AF_INET6 if ":" in answer else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (answer, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    attempt = notify.attempt_delivery(delivery_id=delivery.pk)
    assert asked == ["rebind.example.com"]
    assert attempt is not None and attempt.status == DeliveryStatus.FAILED
    delivery.refresh_from_db()
    assert delivery.last_error.startswith("The host rebind.example.com ")
    assert "webhooks go only to public addresses" in delivery.last_error
    assert _only_loopback == []
