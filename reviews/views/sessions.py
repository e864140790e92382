"""One agent session's log (`sessions/<pk>/`), the evidence a proposal cites.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from memoryhub import selectors
from reviews.http import HtmxHttpRequest


@login_required
@require_GET
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = selectors.session_for(request.user, pk)
    if session is None:
        raise Http404("There is no such session in your workspaces.")
    return TemplateResponse(request, "reviews/session.html",
                            {"session": session, "entries": selectors.session_log(session)})
