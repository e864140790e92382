"""Strong sign-in in the console: the two-factor step after the password,
enrolment of an authenticator, and the middleware that holds back a
session that still owes its second factor (reviews.two_factor says who).

A session that owes a code reaches only sign-in pages and static files:
console pages redirect to the verify step (or to enrolment, for a user
without an authenticator), and staff API calls made with the session cookie
answer 403 `otp_required`. Calls with a personal token (Authorization:
Bearer) are not sessions and pass.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import django_otp
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from memoryhub.actors import signed_in_user
from reviews import two_factor

# Paths a session owing its second factor may still reach.
_OPEN_PREFIXES = ("/login/", "/logout/", "/2fa/", "/oidc/", "/static/", "/healthz")


class TwoFactorMiddleware:
    """After django_otp's OTPMiddleware: request.user.is_verified() is set."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        is_api = path.startswith("/api/")
        # Decided from the path and header alone, before the session is
        # read: agent API calls (the hot path) never load one.
        if path.startswith(_OPEN_PREFIXES) or (
            is_api and request.headers.get("Authorization", "").lower().startswith("bearer ")
        ):
            return self.get_response(request)
        if not request.user.is_authenticated or not two_factor.needs_verification(request):
            return self.get_response(request)
        if is_api:
            return JsonResponse({"error": {
                "code": "otp_required",
                "detail": "This session has not passed two-factor sign-in; finish signing in in the console, "
                          "or use a personal token.",
            }}, status=403)
        if request.headers.get("HX-Request"):
            # The header's polling badge runs on the sign-in pages too:
            # it gets nothing to swap (204), not the sign-in page.
            return HttpResponse(status=204)
        step = "two-factor-verify" if two_factor.confirmed_device(request.user) else "two-factor-enrol"
        return HttpResponseRedirect(f"{reverse(step)}?{urlencode({'next': request.get_full_path()})}")


def _next_url(request: HttpRequest) -> str:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return wanted
    return resolve_url(settings.LOGIN_REDIRECT_URL)


def _token(request: HttpRequest) -> str:
    return str(request.POST.get("token", ""))[:64]


@login_required
@require_http_methods(["GET", "POST"])
def verify(request: HttpRequest) -> HttpResponse:
    """The second step of sign-in: a code from the authenticator, or a
    recovery code."""
    user = signed_in_user(request)
    if user.is_verified():  # type: ignore[attr-defined]  # django-otp's middleware adds it
        return HttpResponseRedirect(_next_url(request))
    if two_factor.confirmed_device(user) is None:
        return HttpResponseRedirect(f"{reverse('two-factor-enrol')}?{urlencode({'next': _next_url(request)})}")
    error = ""
    if request.method == "POST":
        result = two_factor.verify(user=user, token=_token(request))
        if result.device is not None:
            django_otp.login(request, result.device)
            # A new session key once the sign-in is complete.
            request.session.cycle_key()
            return HttpResponseRedirect(_next_url(request))
        error = ("Too many wrong codes: wait a little, then try again." if result.throttled
                 else "That code is not right. Type the six digits your app shows now, or a recovery code.")
    return TemplateResponse(request, "registration/two_factor_verify.html",
                            {"error": error, "next": _next_url(request)}, status=422 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def enrol(request: HttpRequest) -> HttpResponse:
    """Enrol an authenticator: scan the QR code, confirm with a first code,
    and get ten recovery codes, shown once."""
    user = signed_in_user(request)
    if two_factor.confirmed_device(user) is not None:
        # Replacing an authenticator takes a reset at the shell: otherwise a
        # stolen password alone could enrol the thief's phone.
        if user.is_verified():  # type: ignore[attr-defined]  # django-otp's middleware adds it
            return TemplateResponse(request, "registration/two_factor_enrolled.html", {"next": _next_url(request)})
        return HttpResponseRedirect(f"{reverse('two-factor-verify')}?{urlencode({'next': _next_url(request)})}")
    error = ""
    if request.method == "POST":
        confirmed = two_factor.confirm_enrolment(user=user, token=_token(request))
        if confirmed is not None:
            device, codes = confirmed
            django_otp.login(request, device)
            request.session.cycle_key()
            return TemplateResponse(request, "registration/two_factor_codes.html",
                                    {"codes": codes, "next": _next_url(request)})
        error = ("That code is not right, or came too soon after a wrong one. Wait a few seconds and type the "
                 "six digits your app shows now for MemoryHub.")
    enrolment = two_factor.start_enrolment(user)
    return TemplateResponse(
        request,
        "registration/two_factor_enrol.html",
        {"enrolment": enrolment, "error": error, "next": _next_url(request),
         "required": two_factor.required_for(user)},
        status=422 if error else 200,
    )
