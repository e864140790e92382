"""Sign-in through an OpenID Connect provider (mozilla-django-oidc), on when
the OIDC_* settings name a client and the provider's endpoints.

The provider says who someone is (issuer + subject, matched through
reviews.models.OIDCIdentity, never by e-mail or username) and which roles
they hold: the claim named by OIDC_ROLES_CLAIM lists `workspace:role`
values (`acme:reviewer`, `acme:admin demo:auditor`). At every sign-in the
user's memberships are set to exactly those roles, through services.set_role
and services.remove_role (each an audit event); values naming an unknown
workspace or role are ignored. Someone with no known role is refused, and
the refusal is audited. One role per workspace: if the claim gives several
for one workspace, the broadest wins (admin, then reviewer, then auditor).

The code flow runs with PKCE, a nonce and state; the id_token's signature
(JWKS), issuer and audience are checked before any claim is believed.
"""

from __future__ import annotations

import hashlib
import logging
import re

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from memoryhub import services
from memoryhub.actors import StaffUser
from memoryhub.models import Membership, Role, Workspace
from reviews.models import OIDCIdentity
from reviews.two_factor import record_signin_event

logger = logging.getLogger(__name__)

# Broadest first: the role kept when a claim names several for one workspace.
_ROLE_RANK = {Role.ADMIN: 3, Role.REVIEWER: 2, Role.AUDITOR: 1}
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")
_USERNAME_MAX = 150


def enabled() -> bool:
    return all(getattr(settings, name, "") for name in (
        "OIDC_RP_CLIENT_ID", "OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT"))


def authenticate(request: HttpRequest) -> HttpResponse:
    """Start the code flow: redirect to the provider."""
    if not enabled():
        raise Http404("Single sign-on is not configured.")
    return OIDCAuthenticationRequestView.as_view()(request)  # type: ignore[no-any-return]


def callback(request: HttpRequest) -> HttpResponse:
    """The provider sends the browser back here with a code."""
    if not enabled():
        raise Http404("Single sign-on is not configured.")
    return OIDCAuthenticationCallbackView.as_view()(request)  # type: ignore[no-any-return]


def roles_from_claims(claims: dict[str, object]) -> tuple[dict[str, str], list[str]]:
    """({workspace slug: role}, ignored values) from the roles claim, for
    workspaces that exist here."""
    raw = claims.get(settings.OIDC_ROLES_CLAIM) or []
    values = raw.replace(",", " ").split() if isinstance(raw, str) else raw if isinstance(raw, list) else []
    asked: dict[str, str] = {}
    ignored: list[str] = []
    for value in values:
        slug, _, role = str(value).partition(":")
        if not slug or role not in _ROLE_RANK:
            ignored.append(str(value)[:100])
            continue
        current = asked.get(slug)
        if current is None or _ROLE_RANK[role] > _ROLE_RANK[current]:  # type: ignore[index]
            asked[slug] = role
    known = set(Workspace.objects.filter(slug__in=list(asked)).values_list("slug", flat=True))
    ignored += [f"{slug}:{role}" for slug, role in asked.items() if slug not in known]
    return {slug: role for slug, role in asked.items() if slug in known}, ignored


def _username(claims: dict[str, object], issuer: str, subject: str) -> str:
    wanted = claims.get(settings.OIDC_USERNAME_CLAIM) or claims.get("email") or subject
    base = _USERNAME_UNSAFE.sub("", str(wanted))[: _USERNAME_MAX - 9] or "oidc"
    User = get_user_model()
    if not User.objects.filter(username=base).exists():
        return base
    # Taken by someone else: a local account is never taken over by name.
    suffix = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:8]
    return f"{base}-{suffix}"


class MemoryHubOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    def authenticate(self, request: HttpRequest | None, **kwargs: object) -> StaffUser | None:
        if request is None or not enabled():
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, requests.RequestException) as exc:
            # A forged or expired token, or a provider that is down: the
            # callback view sends the browser back to the sign-in page.
            logger.warning("OpenID Connect sign-in failed: %s", exc)
            return None

    def verify_token(self, token: str, **kwargs: object) -> dict[str, object]:
        """mozilla-django-oidc checks the signature and nonce; the audience
        and issuer are checked here."""
        payload: dict[str, object] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The id_token was issued to another client.")
        if settings.OIDC_OP_ISSUER and payload.get("iss") != settings.OIDC_OP_ISSUER:
            raise SuspiciousOperation("The id_token comes from another issuer.")
        if not payload.get("sub"):
            raise SuspiciousOperation("The id_token names no subject.")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, object]) -> StaffUser | None:
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if str(userinfo.get("sub", "")) != str(payload["sub"]):
            raise SuspiciousOperation("The userinfo answer is about another subject than the id_token.")
        claims = {**payload, **userinfo}
        issuer, subject = str(payload.get("iss", ""))[:255], str(payload["sub"])[:255]
        roles, ignored = roles_from_claims(claims)
        try:
            with transaction.atomic():
                return self._sign_in(claims=claims, issuer=issuer, subject=subject, roles=roles, ignored=ignored)
        except IntegrityError as exc:  # two first sign-ins of one subject at once
            raise SuspiciousOperation("Concurrent first sign-in; try again.") from exc

    def _sign_in(self, *, claims: dict[str, object], issuer: str, subject: str, roles: dict[str, str],
                 ignored: list[str]) -> StaffUser | None:
        identity = OIDCIdentity.objects.select_related("user").select_for_update().filter(
            issuer=issuer, subject=subject).first()
        details = {"issuer": issuer, "subject": subject, "roles": roles, "ignored": ignored}
        if not roles:
            services.record_event(action="signin.oidc_refused", target=identity.user if identity else None,
                                  summary="Refused an OpenID Connect sign-in: no known workspace role in the claim",
                                  details=details)
            return None
        if identity is None:
            user, _ = services.ensure_staff_user(username=_username(claims, issuer, subject))
            identity = OIDCIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        user = identity.user
        if not user.is_active:
            services.record_event(action="signin.oidc_refused", target=user, summary=f"Refused {user}: deactivated",
                                  details=details)
            return None
        email = str(claims.get("email", ""))[:254]
        if email and user.email != email:
            user.email = email
            user.save(update_fields=["email"])
        for membership in Membership.objects.filter(user=user).select_related("workspace", "user"):
            if membership.workspace.slug not in roles:
                services.remove_role(membership=membership)
        for workspace in Workspace.objects.filter(slug__in=list(roles)):
            services.set_role(user=user, workspace=workspace, role=roles[workspace.slug])
        OIDCIdentity.objects.filter(pk=identity.pk).update(last_signed_in_at=timezone.now())
        record_signin_event(user=user, action="signin.oidc", details=details,
                            summary=f"{user.get_username()} signed in through OpenID Connect")
        return user
