"""The review queue (`/`): filters, one page of proposals with their SLA
and first finding, the bulk decision and the pending badge; and `/home/`,
which sends each role to its landing page.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import cast

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from memoryhub import errors, selectors, services
from memoryhub.actors import Actor, staff_user
from memoryhub.models import Agent, FileKind, Proposal, ProposalStatus, Role, Source, WritePolicy
from reviews import forms as action_forms
from reviews import highlight
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import refusal_status

QUEUE_PAGE_SIZE = 25
# How many agents under `direct` the queue names before "and N more".
DIRECT_NAMED = 5


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[(ProposalStatus.PENDING, "Pending"), (ProposalStatus.STALE, "Stale")], required=False
    )
    workspace = forms.ChoiceField(required=False)
    # Agent names are typed by admins: their options are inert (hx-disable).
    agent = forms.ChoiceField(required=False, widget=forms.Select(attrs={"hx-disable": ""}))
    user = forms.CharField(required=False, max_length=255, label="User")
    file = forms.ChoiceField(choices=[("", "Any file"), *FileKind.choices], required=False)
    source = forms.ChoiceField(choices=[("", "Any source"), *Source.choices], required=False)
    older_than = forms.IntegerField(required=False, min_value=0, max_value=24 * 365, label="Older than (hours)")
    claimed = forms.ChoiceField(
        choices=[("", "Anyone's"), ("mine", "Claimed by me"), ("unclaimed", "Unclaimed"),
                 ("others", "Claimed by others")], required=False, label="Claimed")
    sort = forms.ChoiceField(choices=[("age", "Oldest first"), ("risk", "Highest risk first")], required=False,
                             label="Sort")

    def __init__(self, data: Mapping[str, object] | None, *, agents: list[Agent]) -> None:
        super().__init__(data)
        workspaces = sorted({a.workspace.slug for a in agents})
        cast(forms.ChoiceField, self.fields["workspace"]).choices = [
            ("", "All workspaces"), *((w, w) for w in workspaces)
        ]
        cast(forms.ChoiceField, self.fields["agent"]).choices = [
            ("", "All agents"), *((a.slug, a.name or a.slug) for a in agents)
        ]

    def apply(self, proposals: QuerySet[Proposal], *, user: Actor | None) -> QuerySet[Proposal]:
        data = self.cleaned_data if self.is_valid() else {}
        claimed = data.get("claimed")
        if claimed == "mine":
            proposals = proposals.filter(claimed_by=staff_user(user))
        elif claimed == "unclaimed":
            proposals = proposals.filter(claimed_by__isnull=True)
        elif claimed == "others":
            proposals = proposals.filter(claimed_by__isnull=False).exclude(claimed_by=staff_user(user))
        if data.get("sort") == "risk":
            proposals = proposals.order_by("-risk_level", "created_at", "id")
        else:
            proposals = proposals.order_by("created_at", "id")
        proposals = proposals.filter(status=data.get("status") or ProposalStatus.PENDING)
        if data.get("workspace"):
            proposals = proposals.filter(agent__workspace__slug=data["workspace"])
        if data.get("agent"):
            proposals = proposals.filter(agent__slug=data["agent"])
        if data.get("user"):
            proposals = proposals.filter(user_ref=data["user"])
        if data.get("file"):
            proposals = proposals.filter(kind=data["file"])
        if data.get("source"):
            proposals = proposals.filter(source=data["source"])
        if data.get("older_than"):
            proposals = proposals.filter(created_at__lte=timezone.now() - timedelta(hours=data["older_than"]))
        return proposals


# The queue's filter travels with the reviewer: onto each proposal's URL and
# into its decision forms, so "Approve & next" stays within the same filter.
QUEUE_FILTERS = ("status", "workspace", "agent", "user", "file", "source", "older_than", "claimed", "sort")


def queue_filter_query(request: HtmxHttpRequest) -> str:
    """The queue filters of this request as a query string ("" when none)."""
    params = [(key, request.GET[key]) for key in QUEUE_FILTERS if request.GET.get(key)]
    return urlencode(params)


def _queue_proposals(request: HtmxHttpRequest,
                     agents: list[Agent] | None = None) -> tuple[QueueFilterForm, QuerySet[Proposal]]:
    agents = list(services.visible_agents(request.user)) if agents is None else agents
    data = {key: request.GET[key] for key in QUEUE_FILTERS if key in request.GET}
    form = QueueFilterForm(data or None, agents=agents)
    return form, form.apply(services.visible_proposals(request.user), user=request.user)


def neighbours(request: HtmxHttpRequest, proposal: Proposal) -> tuple[Proposal | None, Proposal | None]:
    """The proposals before and after this one in the queue as filtered and
    sorted by the reviewer; after the last one, the first one still waiting
    (the reviewer may have skipped it). Two queries, whatever the queue size."""
    _form, proposals = _queue_proposals(request)
    # The ids in the queue's own order (by age or by risk): one query of
    # integers, so the neighbours follow whatever sort the reviewer chose.
    # This proposal is counted in its place even once decided, so "& next"
    # goes on from where the reviewer was.
    ids = list((proposals | Proposal.objects.filter(pk=proposal.pk)).values_list("id", flat=True))
    here = ids.index(proposal.pk)
    before_id = ids[here - 1] if here > 0 else None
    after_id = ids[here + 1] if here + 1 < len(ids) else next((pk for pk in ids if pk != proposal.pk), None)
    found = Proposal.objects.in_bulk([pk for pk in (before_id, after_id) if pk])
    return found.get(before_id) if before_id else None, found.get(after_id) if after_id else None


def proposal_url(pk: int, query: str) -> str:
    url = reverse("proposal", args=[pk])
    return f"{url}?{query}" if query else url


@login_required
@require_GET
def queue(request: HtmxHttpRequest) -> HttpResponse:
    agents = list(services.visible_agents(request.user))
    form, proposals = _queue_proposals(request, agents)
    proposals = selectors.with_review_facts(proposals)
    page = Paginator(proposals, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    now = timezone.now()
    selectors.attach_related(page.object_list)
    for p in page.object_list:
        p.sla = selectors.sla_state(created_at=p.created_at, sla_hours=p.agent.workspace.sla_hours, now=now)
    _attach_findings(page.object_list)
    # The queue may promise review only for agents under `review`: name the others.
    direct = sorted((a for a in agents if a.write_policy == WritePolicy.DIRECT), key=lambda a: a.slug)
    return page_or_fragment(request, "reviews/queue.html", fragments=("proposal-list",), context={
        "form": form,
        "page": page,
        "counts": selectors.queue_counts(request.user),
        "changes_pending": selectors.pending_change_count(request.user),
        "can_decide": bool(services.workspace_ids_for(request.user, services.REVIEW_ROLES)),
        "now": now,
        "has_agents": bool(agents),
        "reason_codes": selectors.reason_codes_for(request.user),
        "bulk_max": services.BULK_MAX,
        "direct_named": direct[:DIRECT_NAMED],
        "direct_more": max(0, len(direct) - DIRECT_NAMED),
        "queue_query": queue_filter_query(request),
        # Shown on the collapsed filter box, so a filtered queue says so.
        "filters_active": [str(form[name].label) for name in form.fields if request.GET.get(name)],
    })


# The tags that come with a finding a person reads in the queue row.
_FINDING_TAGS = frozenset({"scanner_findings", "agent_directed"})


def _attach_findings(proposals: Iterable[Proposal]) -> None:
    """Each flagged row's first finding, highlighted. The queue defers the
    contents, so the flagged rows' texts come in one query (none when no row
    on the page is flagged); the scanner's cache makes the scan itself cheap."""
    flagged = [p for p in proposals if _FINDING_TAGS & set(p.risk_tags or [])]
    for p in proposals:
        p.finding = None  # type: ignore[attr-defined]
    if not flagged:
        return
    texts = {pk: (base, new) for pk, base, new in Proposal.objects.filter(pk__in=[p.pk for p in flagged])
             .values_list("pk", "base_content", "proposed_content")}
    for p in flagged:
        base, new = texts.get(p.pk, ("", ""))
        p.finding = highlight.first_finding(  # type: ignore[attr-defined]
            old=base, new=new, tags=list(p.risk_tags or []))


@login_required
@require_http_methods(["POST"])
def queue_bulk(request: HtmxHttpRequest) -> HttpResponse:
    """Approve or reject the proposals ticked in the queue, with one reason
    code; the answer lists what was decided and what was refused, and why."""
    template_name = "reviews/bulk.html"
    form = action_forms.BulkDecisionForm(request.POST)
    context: dict[str, object] = {"back_url": reverse("queue") + _safe_query(str(form["query"].value() or ""))}
    try:
        action_forms.valid(form)
        result = services.decide_bulk(ids=form.id_values, action=form.value("action"),
                                      reason_code=form.value("reason_code"), comment=form.value("comment"),
                                      actor=request.user)
    except errors.DomainError as exc:
        context.update(error=exc)
        return page_or_fragment(request, template_name, context, fragments=("bulk-results",),
                                status=refusal_status(request, exc.status))
    context.update(result=result, pending_badge=selectors.pending_proposal_count(request.user))
    return page_or_fragment(request, template_name, context, fragments=("bulk-results",))


def _safe_query(query: str) -> str:
    """The queue's own filter query string, echoed back as a link: only
    ever a query string, never a URL elsewhere."""
    return f"?{query}" if query and "/" not in query and ":" not in query else ""


@login_required
@require_GET
def queue_badge(request: HtmxHttpRequest) -> HttpResponse:
    return TemplateResponse(request, "reviews/badge.html", {"pending": selectors.pending_proposal_count(request.user)})


@login_required
@require_GET
def home(request: HtmxHttpRequest) -> HttpResponse:
    """Auditors land on the audit log; reviewers and admins on the queue."""
    review_ws = services.workspace_ids_for(request.user, services.REVIEW_ROLES)
    audit_ws = services.workspace_ids_for(request.user, {Role.AUDITOR})
    if audit_ws and not review_ws:
        return redirect("audit")
    return redirect("/")
