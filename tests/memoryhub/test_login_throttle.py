"""Sign-in throttling: wrong passwords lock the username and the address
out, with a clear message, a doubling wait and an audit trail."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub.models import AuditEvent
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]
PASSWORD = "pw-for-tests-1"  # tests/factories.py


def sign_in(username: str, password: str, ip: str = "10.0.0.1", **extra: str):
    return Client(REMOTE_ADDR=ip, **extra).post("/login/", {"username": username, "password": password})


def test_forty_wrong_passwords_in_a_row_are_stopped_at_the_fifth():
    UserFactory(username="alice")
    answers = [sign_in("alice", f"guess-{i}").status_code for i in range(40)]
    assert answers[:4] == [200] * 4 and set(answers[4:]) == {429}
    assert AuditEvent.objects.filter(action="auth.lockout", details__username="alice").exists()


def test_a_locked_out_user_cannot_sign_in_even_with_the_password_and_is_told_why():
    UserFactory(username="alice")
    for i in range(5):
        sign_in("alice", f"guess-{i}")
    response = sign_in("alice", PASSWORD)
    page = response.content.decode()
    assert response.status_code == 429 and "Too many failed sign-ins" in page and "5 minutes" in page
    assert int(response["Retry-After"]) == 300
    assert "_auth_user_id" not in response.client.session


def test_the_username_is_locked_from_every_address():
    UserFactory(username="alice")
    for i in range(5):
        sign_in("alice", f"guess-{i}", ip=f"10.0.1.{i}")
    assert sign_in("alice", PASSWORD, ip="10.9.9.9").status_code == 429


def test_an_address_guessing_many_usernames_is_locked_but_others_are_not():
    UserFactory(username="bob")
    for i in range(5):
        sign_in(f"nobody-{i}", "guess", ip="10.0.0.66")
    assert sign_in("bob", PASSWORD, ip="10.0.0.66").status_code == 429
    assert sign_in("bob", PASSWORD, ip="10.0.0.67").status_code == 302


def test_the_wait_doubles_with_each_lockout():
    from axes.utils import reset

    UserFactory(username="alice")
    for round_, wait in ((1, "5 minutes"), (2, "10 minutes"), (3, "20 minutes")):
        for i in range(5):
            sign_in("alice", f"guess-{round_}-{i}")
        assert wait in sign_in("alice", PASSWORD).content.decode()
        reset(username="alice")  # the wait passed (axes forgets the attempts; the audit log remembers)


def test_every_failure_is_audited_with_username_and_address():
    sign_in("mallory", "guess", ip="10.0.0.5")
    event = AuditEvent.objects.get(action="auth.login_failed")
    assert event.details == {"username": "mallory", "ip": "10.0.0.5"}


def test_a_forged_forwarded_for_header_does_not_change_the_address(settings):
    settings.MEMORYHUB_TRUSTED_PROXIES = 0
    UserFactory(username="bob")
    for i in range(5):
        sign_in(f"nobody-{i}", "guess", ip="10.0.0.66", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert sign_in("bob", PASSWORD, ip="10.0.0.66", HTTP_X_FORWARDED_FOR="192.0.2.200").status_code == 429


def test_behind_the_proxy_the_forwarded_address_counts(settings):
    settings.MEMORYHUB_TRUSTED_PROXIES = 1
    UserFactory(username="bob")
    for i in range(5):
        sign_in(f"nobody-{i}", "guess", ip="10.0.0.2", HTTP_X_FORWARDED_FOR="192.0.2.7")
    assert sign_in("bob", PASSWORD, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="192.0.2.8").status_code == 302
    assert sign_in("bob", PASSWORD, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="192.0.2.7").status_code == 429


def test_a_right_password_resets_the_count():
    UserFactory(username="alice")
    for i in range(4):
        sign_in("alice", f"guess-{i}")
    assert sign_in("alice", PASSWORD).status_code == 302
    for i in range(4):
        sign_in("alice", f"again-{i}")
    assert sign_in("alice", PASSWORD).status_code == 302
