"""Content-Security-Policy and Permissions-Policy for every response.

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


# No page of the console needs a device or a powerful browser feature.
PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in ("accelerometer", "autoplay", "camera", "display-capture", "encrypted-media", "fullscreen",
                    "geolocation", "gyroscope", "magnetometer", "microphone", "midi", "payment",
                    "picture-in-picture", "publickey-credentials-get", "screen-wake-lock", "serial", "usb",
                    "xr-spatial-tracking", "interest-cohort", "browsing-topics")
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # A view that sets its own policy (e.g. the API docs) keeps it.
        response.headers.setdefault("Content-Security-Policy", POLICY)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response
