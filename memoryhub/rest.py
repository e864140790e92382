"""REST plumbing shared by every app's API: the error body, throttles and
the two base views (agent routes and staff routes)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError
from django.http import Http404, UnreadablePostError
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import exceptions, serializers, status, throttling
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import errors, faults
from memoryhub.authentication import AgentAuth, BearerAuthentication, IsAgent, IsStaff, SessionAuthentication
from memoryhub.models import Agent

logger = logging.getLogger(__name__)

_DRF_CODES: list[tuple[type[Exception], str]] = [
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "not_authenticated"),
    (exceptions.PermissionDenied, "permission_denied"),
    (exceptions.NotFound, "not_found"),
    (exceptions.Throttled, "throttled"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.ParseError, "invalid"),
    (exceptions.ValidationError, "invalid"),
]
# Errors that are not bugs in the request handling but states of the world:
# each is answered, never a 500.
_OTHER_ERRORS: list[tuple[type[Exception], int, str, str]] = [
    (RequestDataTooBig, 413, "too_large", "The request body is larger than this server accepts."),
    (UnreadablePostError, 408, "timeout", "The request body stopped arriving before it was complete."),
    # A race the service did not turn into a domain error (two inserts of
    # one unique row): the second writer retries and sees the first.
    (IntegrityError, 409, "conflict", "Someone else changed this at the same moment; read it again and retry."),
    (DataError, 400, "invalid", "The database cannot store a value in this request."),
]


def _first_message(detail: object, path: str = "") -> tuple[str, str]:
    """The first human message in a DRF error detail, with the field it is about."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            field = key if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{field}" if path and field else field or path)
    if isinstance(detail, list) and detail:
        for index, item in enumerate(detail):
            if isinstance(item, dict | list):
                return _first_message(item, f"{path}[{index}]")
            return str(item), path
    return str(detail), path


def error_body(code: str, detail: str, **extra: object) -> dict[str, object]:
    return {"error": {"code": code, "detail": detail, **extra}}


def exception_handler(exc: Exception, context: dict[str, object]) -> Response | None:
    """Every error leaves as {"error": {"code", "detail", …}}."""
    if isinstance(exc, errors.DomainError):
        return Response({"error": exc.as_dict()}, status=exc.status)
    if isinstance(exc, Http404):
        return Response(error_body("not_found", "Not found."), status=status.HTTP_404_NOT_FOUND)
    if faults.is_unavailable(exc):
        logger.warning("database unavailable: %s", exc)
        seconds = faults.retry_after()
        return Response(error_body("unavailable", faults.UNAVAILABLE_DETAIL, retry_after=seconds),
                        status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": str(seconds)})
    for cls, code_status, code, detail in _OTHER_ERRORS:
        if isinstance(exc, cls):
            logger.warning("%s answered %s: %s", type(exc).__name__, code_status, exc)
            return Response(error_body(code, detail), status=code_status)
    if not isinstance(exc, exceptions.APIException):
        return None
    code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "invalid")
    headers: dict[str, str] = {}
    extra: dict[str, object] = {}
    if isinstance(exc, exceptions.ValidationError):
        message, field = _first_message(exc.detail)
        detail = f"{field}: {message}" if field else message
        if field:
            extra["field"] = field
        extra["fields"] = exc.detail
    elif isinstance(exc, exceptions.Throttled):
        wait = int(getattr(exc, "wait", None) or 1)
        detail = f"Too many requests; try again in {wait} seconds."
        headers["Retry-After"] = str(wait)
        extra["retry_after"] = wait
    else:
        detail = str(exc.detail)
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    return Response(error_body(code, detail, **extra), status=exc.status_code, headers=headers)


class _FixedWindowThrottle(throttling.SimpleRateThrottle):
    """A counter per key and window, not DRF's list of timestamps: that list
    is re-pickled on every request and costs ~1 ms at 1,000 requests a
    minute. The state lives in the cache; if the cache is down, serving the
    request beats refusing it, so the throttle fails open."""

    # Set by SimpleRateThrottle.__init__ from the rate ("1200/min").
    num_requests: int
    duration: int

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        self.wait_seconds = (window + 1) * self.duration - now
        counter = f"{key}:{window}"
        try:
            if self.cache.add(counter, 1, int(self.duration) + 1):
                return True
            return bool(self.cache.incr(counter) <= self.num_requests)
        except ValueError:  # the counter expired between add and incr
            return True
        except Exception:
            logger.warning("throttle cache unavailable; allowing request", exc_info=True)
            return True

    def wait(self) -> float:
        return max(1.0, self.wait_seconds)


class AgentKeyThrottle(_FixedWindowThrottle):
    scope = "agent"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if isinstance(request.auth, AgentAuth):
            return f"throttle:agent:{request.auth.key.pk}"
        return None


class StaffThrottle(_FixedWindowThrottle):
    scope = "staff"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if request.user and request.user.is_authenticated:
            return f"throttle:staff:{request.user.pk}"
        return None


class _NamedSerializersMixin:
    """Give each view's nested InputSerializer/OutputSerializer a unique
    name, so OpenAPI components don't collide ("ContextOutput", …)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None:
            # Otherwise the OpenAPI description would be a base class's docstring.
            cls.__doc__ = ""
        prefix = cls.__name__.removesuffix("View")
        for attr, value in list(vars(cls).items()):
            if isinstance(value, type) and issubclass(value, serializers.BaseSerializer):
                value.__name__ = f"{prefix}{attr}"


class AgentAPIView(_NamedSerializersMixin, APIView):
    """Base for routes an agent calls with its key. `self.agent` is the
    caller; there is no agent id in these paths, so no route can name
    another agent."""

    authentication_classes = [BearerAuthentication]
    permission_classes = [IsAgent]
    throttle_classes = [AgentKeyThrottle]

    @property
    def agent(self) -> Agent:
        return self.request.auth.agent  # type: ignore[union-attr,no-any-return]


class StaffAPIView(_NamedSerializersMixin, APIView):
    authentication_classes = [BearerAuthentication, SessionAuthentication]
    permission_classes = [IsStaff]
    throttle_classes = [StaffThrottle]


ErrorSerializer = inline_serializer(
    "Error",
    fields={
        "error": inline_serializer(
            "ErrorDetail",
            fields={
                "code": serializers.CharField(),
                "detail": serializers.CharField(),
            },
        )
    },
)


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    descriptions = {
        400: "invalid input",
        401: "not_authenticated",
        403: "permission_denied / four_eyes",
        404: "not_found",
        409: "stale_proposal, stale_change, conflict, ambiguous, withheld or not pending",
        410: "session_expired",
        412: "version_conflict",
        413: "too_large",
        422: "limit_exceeded / unsafe_content / idempotency_key_reused",
        429: "throttled",
    }
    return {code: OpenApiResponse(ErrorSerializer, description=descriptions.get(code, "")) for code in codes}

