"""What every console view shares about the request and the answer.

`HtmxHttpRequest` is a request that went through django-htmx's
`HtmxMiddleware` (every console request does). `page_or_fragment()` is the
one place that decides between the whole page and one of its
`{% partialdef %}` fragments (django-htmx-patterns' `for_htmx`).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An htmx request wants a fragment, except when htmx restores history
    (historyCacheSize is 0, so back/forward refetches the whole page)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def page_or_fragment(request: HtmxHttpRequest, template_name: str, context: dict[str, object], *,
                     fragments: Sequence[str], status: int | None = None) -> TemplateResponse:
    """The page, or for htmx the fragment named like the element it targets
    (the first of `fragments` when it targets none of them). The same URL
    answers with either, so the answer varies on HX-Request for caches."""
    name = template_name
    if wants_fragment(request):
        target = request.htmx.target or ""
        name += "#" + (target if target in fragments else fragments[0])
    response = TemplateResponse(request, name, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response
