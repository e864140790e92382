"""Two-factor sign-in for staff: a TOTP authenticator (django-otp) and ten
single-use recovery codes.

Who must use it: with MEMORYHUB_REQUIRE_2FA=1, every user whose role is in
MEMORYHUB_2FA_ROLES (reviewer, admin and auditor by default: auditors read
and export everything held about every end user, which a password alone
should not open) and every Django-admin user (is_staff, is_superuser).
Anyone who has enrolled an authenticator is asked for a code after the
password, required or not. Signing in through OpenID Connect counts as
strong sign-in when MEMORYHUB_OIDC_SATISFIES_2FA is on: the provider
enforces its own second factor.

Personal API tokens are not asked for codes: they are issued at the shell,
shown once, and revocable; a console session is what a stolen password
opens. Every enrolment, failed code, recovery-code use and reset is an
audit event in each workspace the user has a role in.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any

import segno
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.db import transaction
from django.http import HttpRequest
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryhub import services
from memoryhub.actors import Actor, StaffUser
from memoryhub.models import Membership, Workspace

RECOVERY_CODES = 10
DEVICE_NAME = "authenticator"
RECOVERY_NAME = "recovery codes"
OIDC_BACKEND = "reviews.oidc.MemoryHubOIDCBackend"


# --- who must verify ----------------------------------------------------------------------


def required_for(user: StaffUser) -> bool:
    """Whether the deployment requires a second factor of this user."""
    if not settings.MEMORYHUB_REQUIRE_2FA:
        return False
    if user.is_staff or user.is_superuser:
        return True
    return Membership.objects.filter(user=user, role__in=settings.MEMORYHUB_2FA_ROLES).exists()


def confirmed_device(user: StaffUser) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).first()


def signed_in_by_provider(request: HttpRequest) -> bool:
    return bool(request.session.get(BACKEND_SESSION_KEY) == OIDC_BACKEND)


def needs_verification(request: HttpRequest) -> bool:
    """An authenticated user who still owes a code (or an enrolment)."""
    user: Any = request.user
    if user.is_verified():
        return False
    if settings.MEMORYHUB_OIDC_SATISFIES_2FA and signed_in_by_provider(request):
        return False
    return confirmed_device(user) is not None or required_for(user)


# --- audit --------------------------------------------------------------------------------


def record_signin_event(*, user: StaffUser, action: str, summary: str, details: dict[str, Any] | None = None,
                        actor: Actor | None = None) -> None:
    """One event per workspace the user has a role in, so each workspace's
    admins and auditors see it in their audit log (one without a workspace
    for a user with none)."""
    workspaces: list[Workspace | None] = [
        m.workspace for m in Membership.objects.filter(user=user).select_related("workspace")]
    for workspace in workspaces or [None]:
        services.record_event(action=action, workspace=workspace, actor_user=actor or user, target=user,
                              summary=summary, details={"user": user.get_username(), **(details or {})})


# --- enrolment ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Enrolment:
    device: TOTPDevice

    @property
    def secret(self) -> str:
        """The key in base32, in groups of four, for typing into an app."""
        key = base64.b32encode(self.device.bin_key).decode().rstrip("=")
        return " ".join(key[i:i + 4] for i in range(0, len(key), 4))

    @property
    def qr_data_uri(self) -> str:
        """The otpauth:// URL as a QR code: an SVG image in a data URI (the
        CSP allows data: images; no markup from us enters the page)."""
        buffer = io.BytesIO()
        segno.make(self.device.config_url, error="m").save(buffer, kind="svg", scale=5, border=4, dark="#000",
                                                           light="#fff", xmldecl=False)
        return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


def start_enrolment(user: StaffUser) -> Enrolment:
    """The user's unconfirmed authenticator, created on first call; the same
    one (and so the same QR code) until it is confirmed."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("id").first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)
    return Enrolment(device=device)


def confirm_enrolment(*, user: StaffUser, token: str) -> tuple[TOTPDevice, list[str]] | None:
    """Confirm the pending authenticator with its first code. Returns the
    device and ten new recovery codes (shown once), or None for a wrong code."""
    with transaction.atomic():
        if confirmed_device(user) is not None:
            return None
        device = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=False).order_by("id").first()
        if device is None or not device.verify_token(_digits(token)):
            return None
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        TOTPDevice.objects.filter(user=user, confirmed=False).delete()
        codes = _new_recovery_codes(user)
        record_signin_event(user=user, action="signin.2fa_enrolled", details={"recovery_codes": len(codes)},
                            summary=f"{user.get_username()} enrolled an authenticator")
    return device, codes


def _new_recovery_codes(user: StaffUser) -> list[str]:
    StaticDevice.objects.filter(user=user).delete()
    device = StaticDevice.objects.create(user=user, name=RECOVERY_NAME, confirmed=True)
    codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create(StaticToken(device=device, token=code) for code in codes)
    return codes


# --- verification -------------------------------------------------------------------------


@dataclass(frozen=True)
class Verification:
    device: Any = None
    throttled: bool = False
    recovery_left: int | None = None


def _digits(token: str) -> str:
    return "".join(token.split())


def verify(*, user: StaffUser, token: str) -> Verification:
    """Check a code from the authenticator, or else a recovery code (used up
    by this). Wrong and throttled codes are audited; so is every recovery
    code used, with how many are left."""
    token = _digits(token)[:16]
    with transaction.atomic():
        totp = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True).first()
        is_code = token.isdigit() and len(token) in (6, 8)
        if totp is not None and is_code:
            if not totp.verify_is_allowed()[0]:
                return _failed(user, throttled=True)
            if totp.verify_token(token):
                return Verification(device=totp)
        static = StaticDevice.objects.select_for_update().filter(user=user, confirmed=True).first()
        if static is not None and not is_code:
            if not static.verify_is_allowed()[0]:
                return _failed(user, throttled=True)
            if static.verify_token(token.lower()):
                left = static.token_set.count()
                record_signin_event(user=user, action="signin.recovery_code_used", details={"left": left},
                                    summary=f"{user.get_username()} signed in with a recovery code ({left} left)")
                return Verification(device=static, recovery_left=left)
    return _failed(user, throttled=False)


def _failed(user: StaffUser, *, throttled: bool) -> Verification:
    suffix = " (throttled)" if throttled else ""
    record_signin_event(user=user, action="signin.2fa_failed", details={"throttled": throttled},
                        summary=f"Wrong two-factor code for {user.get_username()}{suffix}")
    return Verification(throttled=throttled)


def reset(*, user: StaffUser, actor: Actor) -> bool:
    """Remove the user's authenticator and recovery codes (a lost phone).
    The operator at the shell only; the user enrols again at next sign-in."""
    with transaction.atomic():
        removed = TOTPDevice.objects.filter(user=user).delete()[0] + StaticDevice.objects.filter(user=user).delete()[0]
        if not removed:
            return False
        record_signin_event(
            user=user, action="signin.2fa_reset", actor=actor,
            summary=f"Two-factor sign-in of {user.get_username()} was reset; they enrol again at next sign-in")
    return True
