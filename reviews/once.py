"""One-time form tokens: a console form submitted twice acts once.

A double click, a browser resubmitting after a slow answer or an htmx retry
sends the same form twice; for a persona edit that made two proposals, for
the key form two keys. Each form that creates something carries a signed
token (`{% load once %}{% once_token %}` inside the <form>), bound to the
signed-in user and valid for a session's length; the view calls
`consume(request)` before acting. The first submission claims the token in
the database (a unique row, so two concurrent submissions cannot both win);
the second raises `AlreadySubmitted`, a DomainError the view shows next to
the form like any other. Re-rendering the form issues a fresh token.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from memoryhub import errors
from memoryhub.actors import Actor
from memoryhub.models import IdempotencyRecord

FIELD = "once_token"
_SALT = "reviews.once"


class AlreadySubmitted(errors.DomainError):
    code = "already_submitted"
    status = 409


def _max_age() -> int:
    return int(settings.SESSION_COOKIE_AGE)


def token_for(user: Actor) -> str:
    """A fresh token for `user` (what the template tag renders; tests post it)."""
    return signing.dumps({"u": user.pk, "n": secrets.token_urlsafe(16)}, salt=_SALT)


def issue(request: HttpRequest) -> str:
    return token_for(request.user)


def consume(request: HttpRequest) -> None:
    """Claim this POST's token, or raise: Invalid when it is missing, forged,
    expired or another user's; AlreadySubmitted when it was used before."""
    token = request.POST.get(FIELD, "")
    try:
        payload = signing.loads(token, salt=_SALT, max_age=_max_age())
    except signing.BadSignature as exc:  # also SignatureExpired
        raise errors.Invalid("This form is out of date; reload the page and submit it again.",
                             field=FIELD) from exc
    if not isinstance(payload, dict) or payload.get("u") != request.user.pk or not payload.get("n"):
        raise errors.Invalid("This form was made for someone else; reload the page.", field=FIELD)
    try:
        with transaction.atomic():
            IdempotencyRecord.objects.create(
                principal=f"form:user:{request.user.pk}", key=str(payload["n"])[:255], request_hash="",
                expires_at=timezone.now() + timedelta(seconds=_max_age()),
            )
    except IntegrityError as exc:
        raise AlreadySubmitted("This form was already submitted, so it was not done a second time.") from exc


def once_per_submit(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a view whose every POST creates something: a repeated submission
    is redirected back to the page with a message instead of acting again."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.method == "POST":
            try:
                consume(request)
            except errors.DomainError as exc:
                messages.warning(request, exc.detail)
                return HttpResponseRedirect(request.get_full_path(), status=303)  # type: ignore[arg-type]
        return view(request, *args, **kwargs)

    return wrapper
