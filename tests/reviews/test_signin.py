"""Two-factor sign-in: enrolment with a QR code and recovery codes, the
verify step after the password, who must pass it, and what a session that
still owes its code may reach."""

from __future__ import annotations

import base64
import re
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryhub.models import AuditEvent, Role
from tests.api_helpers import staff_client
from tests.factories import AgentFactory, UserFactory, staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

PASSWORD = "pw-for-tests-1"


@pytest.fixture
def required(settings):
    settings.MEMORYHUB_REQUIRE_2FA = True


@pytest.fixture
def workspace():
    return AgentFactory().workspace


def code_for(device, *, steps_ahead=0):
    """The code an authenticator app shows now (or `steps_ahead` steps later:
    a code is accepted once, so a second sign-in in the same 30 s uses the next)."""
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + steps_ahead * device.step
    return f"{totp.token():0{device.digits}d}"


def sign_in(user):
    """Through the real sign-in form (the lockout backend needs the request)."""
    client = Client()
    response = client.post("/login/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:500]
    return client


def enrol(client, user):
    client.get("/2fa/enrol/")
    device = TOTPDevice.objects.get(user=user, confirmed=False)
    response = client.post("/2fa/enrol/", {"token": code_for(device), "next": "/agents/"})
    assert response.status_code == 200
    codes = re.findall(r"<li><code>([a-z2-7]{8})</code></li>", response.content.decode())
    return TOTPDevice.objects.get(pk=device.pk), codes


def test_without_the_requirement_a_password_is_enough(workspace):
    client = sign_in(staff(workspace, Role.REVIEWER))
    assert client.get("/agents/").status_code == 200


def test_a_reviewer_enrols_with_a_qr_code_and_gets_ten_recovery_codes_once(required, workspace):
    reviewer = staff(workspace, Role.REVIEWER)
    client = sign_in(reviewer)
    redirect = client.get("/agents/")
    assert redirect.status_code == 302 and redirect["Location"] == "/2fa/enrol/?next=%2Fagents%2F"
    page = client.get("/2fa/enrol/?next=/agents/").content.decode()
    image = re.search(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert image and base64.b64decode(image.group(1)).startswith(b"<svg")
    assert "|safe" not in page and "<svg" not in page  # an image, not markup in the page

    wrong = client.post("/2fa/enrol/", {"token": "000000"})
    assert wrong.status_code == 422 and "not right" in wrong.content.decode()
    assert not TOTPDevice.objects.filter(user=reviewer, confirmed=True).exists()
    # django-otp throttles after a wrong code (1 s, then 2, 4…); skip the wait.
    TOTPDevice.objects.filter(user=reviewer).update(throttling_failure_timestamp=None)

    device, codes = enrol(client, reviewer)
    assert device.confirmed and len(set(codes)) == 10
    assert sorted(StaticToken.objects.filter(device__user=reviewer).values_list("token", flat=True)) == sorted(codes)
    assert client.get("/agents/").status_code == 200
    event = AuditEvent.objects.get(action="signin.2fa_enrolled")
    assert (event.workspace, event.actor_user) == (workspace, reviewer)
    # Shown once: the page never lists them again.
    again = client.get("/2fa/enrol/").content.decode()
    assert not any(code in again for code in codes)


def test_the_next_sign_in_asks_for_a_code(required, workspace):
    admin = staff(workspace, Role.ADMIN)
    device, _ = enrol(sign_in(admin), admin)
    client = sign_in(admin)
    redirect = client.get("/audit/")
    assert redirect["Location"] == "/2fa/verify/?next=%2Faudit%2F"
    wrong = client.post("/2fa/verify/", {"token": "123456", "next": "/audit/"})
    assert wrong.status_code == 422
    assert AuditEvent.objects.filter(action="signin.2fa_failed", actor_user=admin).count() == 1
    device.refresh_from_db()
    device.throttling_failure_timestamp = None  # the throttle is checked below; skip its delay here
    device.save()
    ok = client.post("/2fa/verify/", {"token": code_for(device, steps_ahead=1), "next": "/audit/"})
    assert ok.status_code == 302 and ok["Location"] == "/audit/"
    assert client.get("/audit/").status_code == 200


def test_wrong_codes_are_throttled(required, workspace):
    admin = staff(workspace, Role.ADMIN)
    device, _ = enrol(sign_in(admin), admin)
    client = sign_in(admin)
    client.post("/2fa/verify/", {"token": "111111"})
    throttled = client.post("/2fa/verify/", {"token": code_for(device, steps_ahead=1)})
    assert throttled.status_code == 422 and "Too many wrong codes" in throttled.content.decode()
    assert AuditEvent.objects.get(action="signin.2fa_failed", details__throttled=True)


def test_a_recovery_code_signs_in_once(required, workspace):
    admin = staff(workspace, Role.ADMIN)
    _, codes = enrol(sign_in(admin), admin)
    client = sign_in(admin)
    assert client.post("/2fa/verify/", {"token": codes[0].upper()}).status_code == 302
    event = AuditEvent.objects.get(action="signin.recovery_code_used")
    assert event.details["left"] == 9
    again = sign_in(admin)
    assert again.post("/2fa/verify/", {"token": codes[0]}).status_code == 422


def test_an_enrolled_user_is_asked_even_when_not_required(workspace):
    reviewer = staff(workspace, Role.REVIEWER)
    enrol(sign_in(reviewer), reviewer)
    assert sign_in(reviewer).get("/agents/")["Location"].startswith("/2fa/verify/")


def test_a_password_alone_cannot_replace_an_enrolled_authenticator(required, workspace):
    reviewer = staff(workspace, Role.REVIEWER)
    enrol(sign_in(reviewer), reviewer)
    client = sign_in(reviewer)
    assert client.get("/2fa/enrol/")["Location"].startswith("/2fa/verify/")
    assert client.post("/2fa/enrol/", {"token": "123456"})["Location"].startswith("/2fa/verify/")
    assert TOTPDevice.objects.filter(user=reviewer).count() == 1


def test_auditors_are_required_by_default_and_the_roles_are_a_setting(required, settings, workspace):
    auditor = staff(workspace, Role.AUDITOR)
    assert sign_in(auditor).get("/audit/").status_code == 302
    settings.MEMORYHUB_2FA_ROLES = ["reviewer", "admin"]
    assert sign_in(auditor).get("/audit/").status_code == 200


def test_a_session_owing_its_code_cannot_use_the_api_but_a_token_can(required, workspace):
    reviewer = staff(workspace, Role.REVIEWER)
    session = sign_in(reviewer)
    refused = session.get("/api/v1/proposals")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "otp_required"
    assert staff_client(reviewer).get("/api/v1/proposals").status_code == 200
    # A polling htmx fragment gets nothing to swap, not the sign-in page.
    badge = session.get("/queue/badge/", HTTP_HX_REQUEST="true")
    assert badge.status_code == 204 and badge.content == b""


def test_the_next_parameter_stays_on_this_site(required, workspace):
    admin = staff(workspace, Role.ADMIN)
    device, _ = enrol(sign_in(admin), admin)
    client = sign_in(admin)
    response = client.post("/2fa/verify/", {"token": code_for(device, steps_ahead=1),
                                            "next": "https://elsewhere.example/"})
    assert response["Location"] == "/home/"


def test_the_shell_resets_a_lost_authenticator(required, workspace):
    admin = staff(workspace, Role.ADMIN)
    enrol(sign_in(admin), admin)
    out = StringIO()
    call_command("reset_2fa", admin.username, stdout=out)
    assert "was reset" in out.getvalue()
    assert not TOTPDevice.objects.filter(user=admin).exists()
    assert not StaticToken.objects.filter(device__user=admin).exists()
    event = AuditEvent.objects.get(action="signin.2fa_reset")
    assert event.actor_user is None and event.workspace == workspace
    assert sign_in(admin).get("/agents/")["Location"].startswith("/2fa/enrol/")


def test_django_admin_users_are_required_too(required):
    superuser = UserFactory(is_staff=True, is_superuser=True)
    assert sign_in(superuser).get("/django-admin/")["Location"].startswith("/2fa/enrol/")
