"""Liveness and readiness.

`/healthz` says the process answers (no dependency is touched): restart the
container when it fails. `/readyz` says this node can serve requests: the
database answers a query and the broker accepts a connection, else 503 so a
load balancer or compose stops routing to it. The cache is reported but does
not fail readiness: every read falls back to the database while it is down
(memoryhub.context, memoryhub.rest throttles), so a node without a cache is
slower, not broken. Only exception class names are shown, never a host or
a password from a connection string.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

logger = logging.getLogger(__name__)

BROKER_TIMEOUT_SECONDS = 2.0


@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_broker() -> None:
    from memoryhub.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT_SECONDS)
        # kombu connects lazily: a channel makes the transport talk to the broker.
        conn.default_channel  # noqa: B018


def check_cache() -> None:
    key = f"readyz:{uuid.uuid4().hex}"
    cache.set(key, "1", 10)
    if cache.get(key) != "1":
        raise RuntimeError("the cache did not return what was stored")
    cache.delete(key)


def _run(check: Any) -> str:
    try:
        check()
    except Exception as exc:
        logger.warning("readiness check %s failed", check.__name__, exc_info=True)
        return f"down ({type(exc).__name__})"
    return "ok"


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _run(check_database), "broker": _run(check_broker), "cache": _run(check_cache)}
    ready = checks["database"] == "ok" and checks["broker"] == "ok"
    state = ("ready" if checks["cache"] == "ok" else "degraded") if ready else "unavailable"
    response = JsonResponse({"status": state, "checks": checks}, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response
