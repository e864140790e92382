"""The context preview (`agents/<slug>/preview/`): what the context API
would serve an agent for one end user and strategy.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from memoryhub import context, errors, selectors, services
from memoryhub.models import Strategy
from reviews import forms
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import agent_or_404


@login_required
@require_GET
def context_preview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = agent_or_404(request, slug)
    form = forms.PreviewForm(request.GET)
    user_ref = form.value("user")
    strategy = form.value("strategy") or agent.strategy
    error = ""
    payload: dict[str, Any] | None = None
    try:
        if strategy not in Strategy.values:
            raise errors.Invalid(f"Strategy must be one of {', '.join(Strategy.values)}.")
        if user_ref:
            services.validate_user_ref(user_ref)
        payload = context.build_context(agent=agent, user_ref=user_ref, strategy=strategy)
    except errors.DomainError as exc:
        error = exc.detail
    return page_or_fragment(request, "reviews/admin/preview.html", {
        "agent": agent,
        "user_ref": user_ref,
        "strategy": strategy,
        "strategies": Strategy.choices,
        "user_refs": selectors.known_user_refs(agent),
        "payload": payload,
        "error": error,
    }, fragments=("preview",))
