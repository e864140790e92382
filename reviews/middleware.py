"""Content-Security-Policy for every response.

No 'unsafe-inline' and no 'unsafe-eval': htmx is served from our static
files and configured (meta htmx-config in base.html) not to inject its
indicator styles nor to eval, and the pages carry no inline script or style.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "img-src 'self' data:",
        "style-src 'self'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "base-uri 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # A view that sets its own policy (e.g. the API docs) keeps it.
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
