"""Request limits, checked before anything else runs.

The app, not gunicorn, refuses over-long URLs (414) and oversized headers
(431), so the client gets the API's error body; gunicorn's own limits are set
above these (gunicorn.conf.py). A NUL in the path or query string is refused
here too (400): PostgreSQL cannot compare text with NUL, so any lookup that
took it would fail as a 500.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from memoryhub.faults import error_response


def _problem(request: HttpRequest) -> tuple[int, str, str] | None:
    meta = request.META
    url_bytes = len(meta.get("PATH_INFO", "").encode("latin-1", "replace")) + len(meta.get("QUERY_STRING", ""))
    if url_bytes > settings.MEMORYHUB_MAX_URL_BYTES:
        return 414, "uri_too_long", f"The URL is longer than {settings.MEMORYHUB_MAX_URL_BYTES:,} bytes."
    headers = [(k, v) for k, v in meta.items() if k.startswith("HTTP_") and isinstance(v, str)]
    if len(headers) > settings.MEMORYHUB_MAX_HEADER_COUNT:
        return 431, "headers_too_large", f"The request has more than {settings.MEMORYHUB_MAX_HEADER_COUNT} headers."
    for name, value in headers:
        if len(name) + len(value) > settings.MEMORYHUB_MAX_HEADER_BYTES:
            header = name.removeprefix("HTTP_").replace("_", "-").title()
            return 431, "headers_too_large", (
                f"The {header} header is longer than {settings.MEMORYHUB_MAX_HEADER_BYTES:,} bytes."
            )
    query = meta.get("QUERY_STRING", "")
    if "\x00" in meta.get("PATH_INFO", "") or "\x00" in query or "%00" in query:
        return 400, "invalid", "The URL contains a NUL character (%00)."
    return None


class RequestLimitsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = _problem(request)
        if problem is not None:
            status, code, detail = problem
            return error_response(request, status=status, code=code, detail=detail)
        return self.get_response(request)
