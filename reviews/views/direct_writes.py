"""Direct writes (`direct-writes/`): what agents under `direct` wrote
without review, with withhold and rollback of one write.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from memoryhub import errors, selectors, services
from memoryhub.models import Agent, Proposal
from reviews import diffs
from reviews import forms as action_forms
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import file_url, int_or_none, or_404, refusal_status

DIRECT_WRITES_PAGE_SIZE = 20
DIRECT_WRITES_DAYS = 7


class DirectWritesForm(forms.Form):
    since = forms.DateField(required=False, label="Since")
    agent = forms.ChoiceField(required=False)

    def __init__(self, data: Mapping[str, object] | None, *, agents: list[Agent]) -> None:
        super().__init__(data)
        cast(forms.ChoiceField, self.fields["agent"]).choices = [
            ("", "All agents"), *((a.slug, a.slug) for a in agents)
        ]

    def since_day(self) -> date:
        default = timezone.localdate() - timedelta(days=DIRECT_WRITES_DAYS)
        return (self.cleaned_data.get("since") if self.is_valid() else None) or default

    def agent_slug(self) -> str:
        return str(self.cleaned_data.get("agent") or "") if self.is_valid() else ""


def _direct_writes_context(request: HtmxHttpRequest) -> dict[str, object]:
    agents = list(services.visible_agents(request.user).order_by("slug"))
    form = DirectWritesForm(request.GET or None, agents=agents)
    since = form.since_day()
    paginator = Paginator(selectors.direct_writes(request.user, since=since, agent_slug=form.agent_slug()),
                          DIRECT_WRITES_PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    roles = selectors.roles_by_workspace(request.user)
    writes = []
    for row in page.object_list:
        served = row.version == row.served_version
        writes.append({
            "row": row,
            "diff": diffs.present(row.previous_content or "", row.content, unified_view=True),
            "can_act": roles.get(row.agent.workspace_id) in services.REVIEW_ROLES,
            "served": served,
            "withheld": served and row.withheld_version == row.version,
            "history_url": file_url("file-history", row.agent.slug, row.kind, row.user_ref),
            "anchor": f"write-{row.history_id}-change",
        })
    return {"form": form, "since": since, "page": page, "writes": writes, "agents": agents,
            "query": request.GET.urlencode(), "days": DIRECT_WRITES_DAYS}


def _direct_write_action(request: HtmxHttpRequest, form: action_forms.FileActionForm) -> tuple[str, Proposal | None]:
    agent = or_404(services.get_agent_for_user, request.user, str(form["agent"].value() or ""))
    action_forms.valid(form)
    kind, user_ref = form.value("file"), form.value("user")
    action, reason = form.value("action"), form.value("reason")
    version = form.version_value
    if version is None:
        raise errors.Invalid("Say which version you are acting on.", field="version")
    if action == "withhold":
        file = services.withhold_file(agent=agent, kind=kind, user_ref=user_ref or None, actor=request.user,
                                      reason=reason)
        return (f"Withheld: {kind} v{file.version} of {agent.slug} is no longer served, in new contexts and in "
                "open sessions. Serving it again takes a second reviewer."), None
    if action == "rollback":
        rollback = services.propose_rollback(agent=agent, kind=kind, user_ref=user_ref or None,
                                             to_version=version - 1, actor=request.user, reason=reason)
        return (f"Rollback of {kind} to v{version - 1} proposed as proposal #{rollback.pk}. Another reviewer has "
                "to approve it before it is served (four-eyes rule)."), rollback
    raise errors.Invalid("Choose withhold or rollback.")


@login_required
@require_http_methods(["GET", "POST"])
def direct_writes(request: HtmxHttpRequest) -> HttpResponse:
    template_name = "reviews/direct_writes.html"
    if request.method != "POST":
        return page_or_fragment(request, template_name, _direct_writes_context(request), fragments=("direct-writes",))
    form = action_forms.FileActionForm(request.POST)
    try:
        done, rollback = _direct_write_action(request, form)
    except errors.DomainError as exc:
        context = _direct_writes_context(request)
        context.update(error=exc, error_for=int_or_none(form["row"].value()),
                       posted_action=form["action"].value() or "", posted_reason=form["reason"].value() or "")
        return page_or_fragment(request, template_name, context, fragments=("direct-writes",),
                                status=refusal_status(request, exc.status))
    if not request.htmx:
        messages.success(request, done)
        if rollback is not None:
            return redirect(reverse("proposal", args=[rollback.pk]))
        return redirect(request.get_full_path())
    context = _direct_writes_context(request)
    context.update(done=done, done_proposal=rollback)
    return page_or_fragment(request, template_name, context, fragments=("direct-writes",))
