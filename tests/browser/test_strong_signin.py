"""Strong sign-in in real Chromium: enrolling an authenticator and signing
in with a computed TOTP code, and signing in through an OpenID Connect
provider the test starts on 127.0.0.1; then the compliance page."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import pytest
from django_otp.oath import TOTP

from memoryhub import services
from memoryhub.models import AuditEvent, Membership, Role
from tests.browser.conftest import screenshot, sign_in
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.oidc_provider import OIDCProvider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory


def app_code(secret: str, *, steps_ahead: int = 0) -> str:
    """What an authenticator app shows for the key typed from the page."""
    key = base64.b32decode(secret.replace(" ", "") + "=" * (-len(secret.replace(" ", "")) % 8))
    totp = TOTP(key, step=30, t0=0, digits=6)
    totp.time = time.time() + steps_ahead * 30
    return f"{totp.token():06d}"


def test_a_reviewer_enrols_an_authenticator_and_signs_in_with_a_code(page, live_server, settings):
    settings.MEMORYHUB_REQUIRE_2FA = True
    workspace = WorkspaceFactory(slug="acme", name="Acme Bank")
    AgentFactory(workspace=workspace, slug="support-bot")
    staff(workspace, Role.REVIEWER, username="rita-reviewer")

    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.wait_for_url("**/2fa/enrol/**")
    qr = page.get_by_role("img", name="QR code that sets up MemoryHub in an authenticator app")
    assert qr.get_attribute("src").startswith("data:image/svg+xml;base64,")
    assert qr.evaluate("img => img.naturalWidth") > 0, "the SVG renders under the CSP"
    screenshot(page, "two-factor-enrol")
    secret = page.locator("#totp-secret").inner_text()
    page.get_by_label("Code from the app").fill(app_code(secret))
    page.get_by_role("button", name="Confirm").click()
    codes = page.locator("#recovery-codes code").all_inner_texts()
    assert len(codes) == 10
    page.get_by_role("button", name="I have saved them — continue").click()
    page.wait_for_url(f"{live_server.url}/")
    assert "rita-reviewer" in page.locator("header").inner_text()

    page.get_by_role("button", name="Sign out").click()
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.wait_for_url("**/2fa/verify/**")
    page.get_by_label("Code").fill("000000")
    page.get_by_role("button", name="Verify").click()
    assert "not right" in page.get_by_role("alert").inner_text()
    time.sleep(1.1)  # django-otp's throttle after one wrong code
    page.get_by_label("Code").fill(app_code(secret, steps_ahead=1))
    page.get_by_role("button", name="Verify").click()
    page.wait_for_url(f"{live_server.url}/")
    # The one error is the 422 answering the wrong code on purpose.
    assert [e for e in page.console_errors if "422" not in e] == []
    actions = set(AuditEvent.objects.filter(workspace=workspace).values_list("action", flat=True))
    assert {"signin.2fa_enrolled", "signin.2fa_failed"} <= actions


@pytest.fixture
def provider(settings) -> Iterator[OIDCProvider]:
    with OIDCProvider() as provider:
        for name, value in provider.settings().items():
            setattr(settings, name, value)
        yield provider


def test_an_auditor_signs_in_through_openid_connect_and_exports_a_subject(page, live_server, provider, settings):
    settings.MEMORYHUB_REQUIRE_2FA = True
    workspace = WorkspaceFactory(slug="acme", name="Acme Bank")
    agent = AgentFactory(workspace=workspace, slug="support-bot")
    services.write_memory(agent=agent, kind="USER.md", user_ref="cust-7", content="- Prefers email over phone.")
    provider.claims = {"sub": "0042", "preferred_username": "olga", "email": "olga@acme.example",
                       "memoryhub_roles": ["acme:auditor"]}

    page.goto(f"{live_server.url}/login/")
    page.get_by_role("button", name="Sign in with single sign-on").click()
    page.wait_for_url(f"{live_server.url}/**")
    page.wait_for_load_state()
    assert "olga" in page.locator("header").inner_text()
    assert Membership.objects.get(user__username="olga").role == Role.AUDITOR

    page.goto(f"{live_server.url}/compliance/")
    page.get_by_label("End user reference").fill("cust-7")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download export").click()
    exported = json.loads(download_info.value.path().read_text())
    assert [f["content"] for f in exported["files"]] == ["- Prefers email over phone."]
    page.reload()
    assert "cust-7" in page.locator("#compliance-record").inner_text()
    screenshot(page, "compliance")
    assert page.console_errors == []
