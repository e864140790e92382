"""What the console's views share: scoped lookups that answer 404, URLs
of a file's pages, query strings, and how a refusal is answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.urls import reverse
from django.utils.http import urlencode

from memoryhub import errors, services
from memoryhub.models import Agent
from reviews.http import HtmxHttpRequest

T = TypeVar("T")


def or_404(lookup: Callable[..., T], *args: object) -> T:
    try:
        return lookup(*args)
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc


def file_url(name: str, slug: str, kind: str, user_ref: str) -> str:
    url = reverse(name, args=[slug, kind])
    return f"{url}?{urlencode({'user': user_ref})}" if user_ref else url


def int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def query_with(request: HtmxHttpRequest, **changes: str | None) -> str:
    """This page's query string with some parameters set (None removes one)."""
    params = request.GET.copy()
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    return f"?{params.urlencode()}"


def diff_links(request: HtmxHttpRequest) -> dict[str, str]:
    # Built here: the {% querystring %} tag cannot set a parameter named "context".
    return {"show_all_url": query_with(request, context="all"), "collapse_url": query_with(request, context=None)}


def can_review(request: HtmxHttpRequest, workspace_id: int) -> bool:
    return services.can_review(request.user, workspace_id)


def agent_or_404(request: HtmxHttpRequest, slug: str) -> Agent:
    try:
        return services.get_agent_for_user(request.user, slug)
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc


def is_admin(request: HtmxHttpRequest, workspace_id: int) -> bool:
    return services.role_in(user=request.user, workspace=workspace_id) in services.ADMIN_ROLES


def forbidden(exc: errors.PermissionDenied) -> PermissionDenied:
    return PermissionDenied(exc.detail)


def refusal_status(request: HtmxHttpRequest, status: int) -> int:
    """The refusal's own status, as every console page and the API answer
    it (tests/test_parity.py); htmx 2 does not swap 4xx responses by
    default, so there the fragment carries the error with a 200."""
    return 200 if request.htmx else status
