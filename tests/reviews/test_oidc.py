"""OpenID Connect sign-in against a provider the test starts on 127.0.0.1:
users are created and matched by issuer and subject, their memberships
follow the roles claim (audited), and anyone without a known role, or with
a token that does not check out, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from memoryhub.models import AuditEvent, Membership, Role
from reviews.models import OIDCIdentity
from tests.factories import UserFactory, WorkspaceFactory
from tests.oidc_provider import OIDCProvider

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def provider(settings) -> Iterator[OIDCProvider]:
    with OIDCProvider() as provider:
        for name, value in provider.settings().items():
            setattr(settings, name, value)
        yield provider


@pytest.fixture
def acme():
    return WorkspaceFactory(slug="acme")


def sso(client: Client) -> Client:
    """Run the code flow: our redirect to the provider, its redirect back
    with a code, our callback (which calls the token, JWKS and userinfo
    endpoints itself). Returns the client, signed in or not."""
    start = client.get("/oidc/authenticate/?next=/agents/")
    assert start.status_code == 302
    back = requests.get(start["Location"], allow_redirects=False, timeout=5)
    assert back.status_code == 302
    callback = urlparse(back.headers["Location"])
    client.response = client.get(f"{callback.path}?{callback.query}")  # type: ignore[attr-defined]
    return client


def test_a_new_user_signs_in_with_the_roles_the_claim_names(provider, acme):
    other = WorkspaceFactory(slug="demo")
    provider.claims = {"sub": "u-1", "preferred_username": "ann", "email": "ann@example.com",
                       "memoryhub_roles": ["acme:reviewer", "demo:auditor", "nowhere:admin", "acme:janitor"]}
    client = sso(Client())
    assert client.response.status_code == 302 and client.response["Location"] == "/agents/"
    ann = User.objects.get(username="ann")
    assert not ann.has_usable_password() and ann.email == "ann@example.com"
    assert dict(Membership.objects.filter(user=ann).values_list("workspace__slug", "role")) == {
        "acme": Role.REVIEWER, "demo": Role.AUDITOR}
    assert OIDCIdentity.objects.get(user=ann).subject == "u-1"
    assert client.get("/agents/").status_code == 200
    event = AuditEvent.objects.get(action="signin.oidc", workspace=acme)
    assert sorted(event.details["ignored"]) == ["acme:janitor", "nowhere:admin"]
    assert AuditEvent.objects.filter(action="staff.role", workspace=other).exists()
    assert {"/authorize", "/token", "/jwks", "/userinfo"} <= set(provider.requests)


def test_memberships_follow_the_claim_at_every_sign_in(provider, acme):
    WorkspaceFactory(slug="demo")
    provider.claims = {"sub": "u-2", "preferred_username": "bo", "memoryhub_roles": "acme:reviewer demo:admin"}
    sso(Client())
    provider.claims = {**provider.claims, "memoryhub_roles": "acme:admin,acme:auditor", "email": "bo@new.example"}
    sso(Client())
    bo = User.objects.get(username="bo")
    assert bo.email == "bo@new.example"
    assert dict(Membership.objects.filter(user=bo).values_list("workspace__slug", "role")) == {"acme": Role.ADMIN}
    assert AuditEvent.objects.filter(action="staff.role_removed").count() == 1
    assert User.objects.filter(username__startswith="bo").count() == 1


def test_someone_without_a_known_role_is_refused(provider, acme):
    provider.claims = {"sub": "u-3", "preferred_username": "cy", "memoryhub_roles": ["elsewhere:admin"]}
    client = sso(Client())
    assert client.response["Location"] == "/login/?sso=failed"
    assert not User.objects.filter(username="cy").exists()
    refusal = AuditEvent.objects.get(action="signin.oidc_refused")
    assert refusal.details["subject"] == "u-3"
    assert client.get("/agents/").status_code == 302  # still signed out
    page = client.get("/login/?sso=failed").content.decode()
    assert "Single sign-on did not sign you in" in page


def test_a_local_account_is_never_taken_over_by_name_or_email(provider, acme):
    local = UserFactory(username="dee", email="dee@example.com")
    provider.claims = {"sub": "u-4", "preferred_username": "dee", "email": "dee@example.com",
                       "memoryhub_roles": ["acme:admin"]}
    sso(Client())
    identity = OIDCIdentity.objects.get(subject="u-4")
    assert identity.user != local and identity.user.username.startswith("dee-")
    assert not Membership.objects.filter(user=local).exists()


@pytest.mark.parametrize("knob", ["forge_signature", "audience"])
def test_a_token_that_does_not_check_out_signs_nobody_in(provider, acme, knob):
    setattr(provider, knob, True if knob == "forge_signature" else "another-client")
    provider.claims = {"sub": "u-5", "preferred_username": "eve", "memoryhub_roles": ["acme:admin"]}
    client = sso(Client())
    assert client.response["Location"] == "/login/?sso=failed"
    assert not User.objects.filter(username="eve").exists()


def test_a_deactivated_user_is_refused(provider, acme):
    provider.claims = {"sub": "u-6", "preferred_username": "fay", "memoryhub_roles": ["acme:reviewer"]}
    sso(Client())
    User.objects.filter(username="fay").update(is_active=False)
    assert sso(Client()).response["Location"] == "/login/?sso=failed"


def test_the_provider_counts_as_a_second_factor_unless_told_otherwise(provider, acme, settings):
    settings.MEMORYHUB_REQUIRE_2FA = True
    provider.claims = {"sub": "u-7", "preferred_username": "gus", "memoryhub_roles": ["acme:admin"]}
    assert sso(Client()).get("/agents/").status_code == 200
    settings.MEMORYHUB_OIDC_SATISFIES_2FA = False
    assert sso(Client()).get("/agents/")["Location"].startswith("/2fa/enrol/")


def test_without_configuration_there_is_no_single_sign_on(settings):
    settings.OIDC_RP_CLIENT_ID = ""
    client = Client()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert "single sign-on" not in client.get("/login/").content.decode()


def test_the_sign_in_page_offers_single_sign_on_when_configured(provider):
    page = Client().get("/login/?next=/audit/").content.decode()
    assert 'href="/oidc/authenticate/?next=/audit/"' in page
