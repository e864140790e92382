"""`Idempotency-Key` for API writes: POSTs that create things, and the
memory writes (PUT of a file, POST/PATCH/DELETE of an entry).

A client that does not know whether its POST arrived (a timeout, a dropped
connection) sends it again with the same key and gets the first answer,
marked `Idempotent-Replayed: true`, instead of a second session, log batch
or proposal. The key is the client's (1–255 visible ASCII characters), scoped
to the caller (agent key or staff user), kept MEMORYHUB_IDEMPOTENCY_TTL_SECONDS.

The record is claimed, the operation runs and its answer is stored in one
transaction: a concurrent duplicate waits on the claim's unique index and
then replays the stored answer; an operation that fails with a 5xx leaves
nothing behind, so a retry runs it again. Answers that depend on the moment
rather than the request (401, 403, 409, 412, 429) are not stored either.
The same key with a different request is 422 `idempotency_key_reused`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub import errors
from memoryhub.authentication import AgentAuth
from memoryhub.models import IdempotencyRecord

HEADER = "Idempotency-Key"
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
# Answers that say something about the request, not about the moment.
STORED_STATUSES = frozenset({200, 201, 202, 204, 400, 404, 410, 413, 422})
REPLAYED_HEADERS = ("Location", "ETag")

PARAMETER = OpenApiParameter(
    HEADER, {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}, OpenApiParameter.HEADER,
    description="Send the same key again to get the first answer again (header Idempotent-Replayed: true) "
    "instead of creating twice; kept 24 hours. The same key with another request is 422.",
)


def _principal(request: Request) -> str:
    if isinstance(request.auth, AgentAuth):
        return f"agent:{request.auth.agent.pk}"
    return f"user:{request.user.pk}"


def _digest(request: Request) -> str:
    h = hashlib.sha256()
    for part in (request.method or "", request.get_full_path()):
        h.update(part.encode())
        h.update(b"\0")
    h.update(request._request.body)
    return h.hexdigest()


def _key(request: Request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not _KEY.match(key):
        raise errors.Invalid(f"{HEADER} must be 1–255 visible ASCII characters.", field=HEADER)
    return key


def _subject(request: Request, kwargs: dict[str, Any]) -> str:
    """The end user a request is about: `?user=`, the body's `user`, or the
    session in its path (the API names users no other way)."""
    data = request.data if isinstance(request.data, dict) else {}
    for value in (request.query_params.get("user"), data.get("user")):
        if isinstance(value, str) and value:
            return value[:255]
    session_id = kwargs.get("session_id")
    if session_id is not None:
        from memoryhub.models import AgentSession

        found = AgentSession.objects.filter(pk=session_id).values_list("user_ref", flat=True).first()
        return found or ""
    return ""


def _claim(principal: str, key: str, digest: str, user_ref: str = "") -> IdempotencyRecord | None:
    """Claim the key (None), or return the record of the first request."""
    now = timezone.now()
    expires_at = now + timedelta(seconds=settings.MEMORYHUB_IDEMPOTENCY_TTL_SECONDS)
    for _ in range(2):
        try:
            with transaction.atomic():
                IdempotencyRecord.objects.create(principal=principal, key=key, request_hash=digest,
                                                 user_ref=user_ref, expires_at=expires_at)
            return None
        except IntegrityError:
            # Waited for the first request's transaction; its answer is stored.
            existing = IdempotencyRecord.objects.select_for_update().get(principal=principal, key=key)
            if existing.expires_at > now:
                return existing
            existing.delete()
    raise errors.Conflict("This Idempotency-Key is being used by another request right now; retry.")


def _replay(record: IdempotencyRecord) -> Response:
    headers = {**record.headers, "Idempotent-Replayed": "true"}
    return Response(record.body, status=record.status_code, headers=headers)


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate an APIView's handler that creates or changes something."""

    @functools.wraps(handler)
    def wrapper(view: Any, request: Request, *args: object, **kwargs: object) -> Response:
        key = _key(request)
        if key is None:
            return handler(view, request, *args, **kwargs)
        principal, digest = _principal(request), _digest(request)
        with transaction.atomic():
            existing = _claim(principal, key, digest, _subject(request, kwargs))
            if existing is not None:
                if existing.request_hash != digest:
                    raise errors.IdempotencyKeyReused(
                        f"This {HEADER} was used for a different request; use a new key for a new request.",
                        field=HEADER,
                    )
                return _replay(existing)
            database_failed = False
            try:
                response = handler(view, request, *args, **kwargs)
            except Exception as exc:
                # The API's error answer (a domain error, a refusal), stored like any other.
                database_failed = isinstance(exc, DatabaseError)
                response = view.handle_exception(exc)
            if response.status_code >= 500 or database_failed:
                # Nothing of it stays, the claim included: a retry acts anew
                # (and a failed statement left the transaction unusable).
                transaction.set_rollback(True)
            elif response.status_code in STORED_STATUSES:
                IdempotencyRecord.objects.filter(principal=principal, key=key).update(
                    status_code=response.status_code,
                    # As the client saw it (times as ISO text), not as Python objects.
                    body=json.loads(JSONRenderer().render(response.data) or b"null"),
                    headers={name: response[name] for name in REPLAYED_HEADERS if response.has_header(name)},
                )
            else:
                IdempotencyRecord.objects.filter(principal=principal, key=key).delete()
        return response

    return wrapper


def purge_expired(*, now: object = None) -> int:
    deleted, _ = IdempotencyRecord.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return int(deleted)
