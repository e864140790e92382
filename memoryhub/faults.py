"""What a request gets when a part of the platform fails.

A database that is down, restarting, out of connections or too slow (the
statement or lock timeout fired) is a temporary state, not a bug: the client
gets 503 `unavailable` with `Retry-After`, as JSON on the API and a plain
page elsewhere, never a 500 or a hang. Request limits (URL and header sizes)
answer in the same shape. Every builder here works without the database.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

# Connection refused or lost, timeouts (QueryCanceled and LockNotAvailable
# are OperationalErrors), SQLite's "database is locked".
UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)

UNAVAILABLE_DETAIL = "The database is unavailable or too slow right now; nothing was changed. Try again shortly."


def retry_after() -> int:
    return int(settings.MEMORYHUB_RETRY_AFTER_SECONDS)


def is_unavailable(exc: BaseException | None) -> bool:
    return isinstance(exc, UNAVAILABLE_ERRORS)


def wants_json(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def error_response(request: HttpRequest, *, status: int, code: str, detail: str,
                   headers: dict[str, str] | None = None, **extra: object) -> HttpResponse:
    """The API's error body on /api/, a plain text page elsewhere."""
    if wants_json(request):
        body = json.dumps({"error": {"code": code, "detail": detail, **extra}})
        response = HttpResponse(body, status=status, content_type="application/json")
    else:
        response = HttpResponse(f"{detail}\n", status=status, content_type="text/plain; charset=utf-8")
    for name, value in (headers or {}).items():
        response[name] = value
    response["Cache-Control"] = "no-store"
    return response


def unavailable_response(request: HttpRequest) -> HttpResponse:
    seconds = retry_after()
    return error_response(request, status=503, code="unavailable", detail=UNAVAILABLE_DETAIL,
                          headers={"Retry-After": str(seconds)}, retry_after=seconds)
