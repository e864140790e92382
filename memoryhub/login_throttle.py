"""Sign-in throttling (django-axes), audited.

After MEMORYHUB_LOGIN_FAILURE_LIMIT wrong passwords for one username, or
from one address, that username or address is locked out: the sign-in page
answers 429 and says for how long. The cool-off doubles with each lockout of
the same username or address within a day (MEMORYHUB_LOGIN_COOLOFF_SECONDS,
then twice that, …, at most a day), so guessing slows down exponentially
while a person who mistyped waits minutes. Every failure and every lockout
is an audit event.

Behind the TLS proxy (DJANGO_BEHIND_TLS_PROXY), the client's address is the
one the proxy appended to X-Forwarded-For; otherwise REMOTE_ADDR. A client
cannot pick its address by sending the header itself.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.db.models import Q
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

MAX_COOLOFF = timedelta(days=1)


def client_ip(request: HttpRequest) -> str:
    proxies = int(settings.MEMORYHUB_TRUSTED_PROXIES)
    if proxies > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return str(request.META.get("REMOTE_ADDR", ""))


def _recent_lockouts(request: HttpRequest | None) -> int:
    from memoryhub.models import AuditEvent

    if request is None:
        return 0
    username = (getattr(request, "axes_credentials", None) or {}).get("username") or request.POST.get("username", "")
    ip = client_ip(request)
    since = timezone.now() - MAX_COOLOFF
    return AuditEvent.objects.filter(
        Q(details__username=username) | Q(details__ip=ip), action="auth.lockout", created_at__gte=since
    ).count()


def cool_off(request: HttpRequest | None = None) -> timedelta:
    base = timedelta(seconds=settings.MEMORYHUB_LOGIN_COOLOFF_SECONDS)
    doublings = max(_recent_lockouts(request) - 1, 0)
    return min(base * 2 ** min(doublings, 20), MAX_COOLOFF)


def _wait_text(delta: timedelta) -> str:
    minutes = max(1, math.ceil(delta.total_seconds() / 60))
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{math.ceil(minutes / 60)} hours"


def lockout_response(request: HttpRequest, original_response: object = None,
                     credentials: object = None) -> HttpResponse:
    message = (f"Too many failed sign-ins for this account or from this address. Sign-in is paused for "
               f"{_wait_text(cool_off(request))}; each further failure restarts the wait.")
    form = AuthenticationForm(request, data=None)
    response = TemplateResponse(request, "registration/login.html",
                                {"form": form, "lockout": message, "next": request.POST.get("next", "")},
                                status=429)
    response["Retry-After"] = str(int(cool_off(request).total_seconds()))
    # Returned by a middleware, after Django rendered the view's response.
    return response.render()


@receiver(user_login_failed)
def audit_failed_login(sender: object, credentials: dict[str, object], request: HttpRequest | None = None,
                       **kwargs: object) -> None:
    from memoryhub import services

    username = str(credentials.get("username", ""))[:150]
    ip = client_ip(request) if request is not None else ""
    services.record_event(action="auth.login_failed", summary=f"Failed sign-in as {username!r} from {ip}",
                          details={"username": username, "ip": ip})


def audit_lockout(sender: object, request: HttpRequest, username: str | None, ip_address: str | None,
                  **kwargs: object) -> None:
    """One event per lockout, at the failure that starts it; each failure
    during it is audited as a failed sign-in (and restarts the wait)."""
    from memoryhub import services

    if getattr(request, "axes_failures_since_start", settings.AXES_FAILURE_LIMIT) != settings.AXES_FAILURE_LIMIT:
        return
    services.record_event(action="auth.lockout",
                          summary=f"Sign-in locked out for {username!r} / {ip_address} after repeated failures",
                          details={"username": username or "", "ip": ip_address or ""})


def connect() -> None:
    from axes.signals import user_locked_out

    user_locked_out.connect(audit_lockout, dispatch_uid="memoryhub.audit_lockout")
