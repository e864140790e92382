"""The review console: queue, proposal, session log, file history and blame,
governance changes and direct writes.

Function views returning TemplateResponse. One view serves the full page and
its fragments: an htmx request names the element it targets, and the view
renders the partial of that name. A plain POST redirects with a message; an
htmx POST re-renders one fragment in place. Objects come through the scoped
lookups in memoryhub.services, so another workspace's object is a 404; the
services decide who may do what, and their refusal is shown next to the form
it came from. Read queries live in memoryhub.selectors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import date, timedelta
from typing import Any, TypeVar, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from consolidation.provenance import evidence_by_entry, line_entry
from memoryhub import errors, policy, risk, selectors, services, tokens
from memoryhub.actors import Actor
from memoryhub.models import (
    Change,
    ChangeKind,
    FileKind,
    Proposal,
    ProposalStatus,
    RiskLevel,
    Source,
    WritePolicy,
)
from memoryhub.scanning.pii import CATEGORY_LABELS
from reviews import diffs, highlight
from reviews import forms as action_forms
from reviews.api import history_author
from reviews.http import HtmxHttpRequest, page_or_fragment

T = TypeVar("T")
QUEUE_PAGE_SIZE = 25
CHANGES_PAGE_SIZE = 25
DIRECT_WRITES_PAGE_SIZE = 20
DIRECT_WRITES_DAYS = 7
# How many agents under `direct` the queue names before "and N more".
DIRECT_NAMED = 5


def _or_404(lookup: Callable[..., T], *args: Any) -> T:
    try:
        return lookup(*args)
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc


def _file_url(name: str, slug: str, kind: str, user_ref: str) -> str:
    url = reverse(name, args=[slug, kind])
    return f"{url}?{urlencode({'user': user_ref})}" if user_ref else url


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _query(request: HttpRequest, **changes: str | None) -> str:
    """This page's query string with some parameters set (None removes one)."""
    params = request.GET.copy()
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    return f"?{params.urlencode()}"


def _diff_links(request: HttpRequest) -> dict[str, str]:
    # Built here: the {% querystring %} tag cannot set a parameter named "context".
    return {"show_all_url": _query(request, context="all"), "collapse_url": _query(request, context=None)}


def _can_review(request: HttpRequest, workspace_id: int) -> bool:
    return services.can_review(request.user, workspace_id)


# --- queue --------------------------------------------------------------------------


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

    def __init__(self, data: Any, *, agents: list[Any]) -> None:
        super().__init__(data)
        workspaces = sorted({a.workspace.slug for a in agents})
        cast(forms.ChoiceField, self.fields["workspace"]).choices = [
            ("", "All workspaces"), *((w, w) for w in workspaces)
        ]
        cast(forms.ChoiceField, self.fields["agent"]).choices = [
            ("", "All agents"), *((a.slug, a.name or a.slug) for a in agents)
        ]

    def apply(self, proposals: Any, *, user: Actor | None) -> Any:
        data = self.cleaned_data if self.is_valid() else {}
        claimed = data.get("claimed")
        if claimed == "mine":
            proposals = proposals.filter(claimed_by=user)
        elif claimed == "unclaimed":
            proposals = proposals.filter(claimed_by__isnull=True)
        elif claimed == "others":
            proposals = proposals.filter(claimed_by__isnull=False).exclude(claimed_by=user)
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


def queue_filter_query(request: HttpRequest) -> str:
    """The queue filters of this request as a query string ("" when none)."""
    params = [(key, request.GET[key]) for key in QUEUE_FILTERS if request.GET.get(key)]
    return urlencode(params)


def _queue_proposals(request: HttpRequest, agents: list[Any] | None = None) -> tuple[QueueFilterForm, Any]:
    agents = list(services.visible_agents(request.user)) if agents is None else agents
    data = {key: request.GET[key] for key in QUEUE_FILTERS if key in request.GET}
    form = QueueFilterForm(data or None, agents=agents)
    return form, form.apply(services.visible_proposals(request.user), user=request.user)


def _neighbours(request: HttpRequest, proposal: Proposal) -> tuple[Proposal | None, Proposal | None]:
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


def _proposal_url(pk: int, query: str) -> str:
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


def _attach_findings(proposals: Any) -> None:
    """Each flagged row's first finding, highlighted. The queue defers the
    contents, so the flagged rows' texts come in one query (none when no row
    on the page is flagged); the scanner's cache makes the scan itself cheap."""
    flagged = [p for p in proposals if _FINDING_TAGS & set(p.risk_tags or [])]
    for p in proposals:
        p.finding = None
    if not flagged:
        return
    texts = {pk: (base, new) for pk, base, new in Proposal.objects.filter(pk__in=[p.pk for p in flagged])
             .values_list("pk", "base_content", "proposed_content")}
    for p in flagged:
        base, new = texts.get(p.pk, ("", ""))
        p.finding = highlight.first_finding(old=base, new=new, tags=list(p.risk_tags or []))


@login_required
@require_http_methods(["POST"])
def queue_bulk(request: HtmxHttpRequest) -> HttpResponse:
    """Approve or reject the proposals ticked in the queue, with one reason
    code; the answer lists what was decided and what was refused, and why."""
    template_name = "reviews/bulk.html"
    form = action_forms.BulkDecisionForm(request.POST)
    context: dict[str, Any] = {"back_url": reverse("queue") + _safe_query(str(form["query"].value() or ""))}
    try:
        action_forms.valid(form)
        result = services.decide_bulk(ids=form.id_values, action=form.value("action"),
                                      reason_code=form.value("reason_code"), comment=form.value("comment"),
                                      actor=request.user)
    except errors.DomainError as exc:
        context.update(error=exc)
        if request.htmx:
            return TemplateResponse(request, template_name + "#bulk-results", context)
        return TemplateResponse(request, template_name, context, status=exc.status)
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


# --- proposal ------------------------------------------------------------------------


def _rationale(proposal: Proposal) -> list[dict[str, Any]]:
    """Each change of the rationale with the log entries it cites (scoped to
    the proposal's agent and user) and the ids that were not found."""
    found = selectors.evidence(proposal.agent, proposal.user_ref, selectors.cited_ids(proposal.rationale))
    changes = []
    for change in proposal.rationale if isinstance(proposal.rationale, list) else []:
        if not isinstance(change, dict):
            continue
        cited = selectors.cited_ids([change])
        changes.append({
            "kind": str(change.get("kind", "edit")),
            "summary": str(change.get("summary", "")),
            "reason": str(change.get("reason", "")),
            "entries": [found[i] for i in cited if i in found],
            "missing": [i for i in cited if i not in found],
        })
    return changes


def _diff_options(request: HtmxHttpRequest) -> dict[str, bool]:
    return {"unified_view": request.GET.get("view") == "unified", "whole": request.GET.get("context") == "all"}


def _proposal_context(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, Any]:
    """The proposal page: where it sits in the queue, its review state, the
    controls this person may use, the diffs and the evidence."""
    file = services.get_file(agent=proposal.agent, kind=proposal.kind, user_ref=proposal.user_ref)
    current_version = file.version if file else 0
    return {
        "proposal": proposal,
        "agent": proposal.agent,
        "current_version": current_version,
        "file_url": _file_url("file-history", proposal.agent.slug, proposal.kind, proposal.user_ref),
        **_queue_navigation(request, proposal),
        **_review_state(request, proposal),
        **_controls(request, proposal, current_version),
        **_diff_context(request, proposal),
        **_evidence(proposal),
        **_diff_links(request),
    }


def _queue_navigation(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    query = queue_filter_query(request)
    before, after = _neighbours(request, proposal)
    return {
        "queue_query": query,
        "action_url": _proposal_url(proposal.pk, query),
        "queue_url": reverse("queue") + (f"?{query}" if query else ""),
        "previous_url": _proposal_url(before.pk, query) if before else "",
        "next_url": _proposal_url(after.pk, query) if after else "",
        "next_pk": after.pk if after else None,
    }


def _review_state(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    """Timeline, risk, SLA and claim, as this person reads them."""
    workspace = proposal.agent.workspace
    return {
        "timeline": selectors.proposal_timeline(proposal),
        "reason_codes": workspace.reason_codes,
        "related": selectors.related_proposals(proposal),
        "risk_tags": [(tag, risk.TAG_LABELS.get(tag, tag)) for tag in proposal.risk_tags or []],
        "high_risk_rule": workspace.high_risk_approval if proposal.risk_level == RiskLevel.HIGH else "",
        "sla": selectors.sla_state(created_at=proposal.created_at, sla_hours=workspace.sla_hours,
                                   now=timezone.now()) if proposal.is_open else "",
        "sla_hours": workspace.sla_hours,
        "claimed_by_other": proposal.claimed_by_id is not None and proposal.claimed_by_id != request.user.pk,
        "first_approved_by_me": proposal.first_approved_by_id is not None
        and proposal.first_approved_by_id == request.user.pk,
        "is_author": request.user.pk in policy.authors_of(proposal),
    }


def _controls(request: HtmxHttpRequest, proposal: Proposal, current_version: int) -> dict[str, object]:
    """Which controls to show. Each decision control is shown exactly when
    memoryhub.policy, the rule the service raises, says yes: nobody who wrote
    a revision sees Approve or Reject; the author may take it back instead."""
    actor = request.user
    can_review = _can_review(request, proposal.agent.workspace_id)
    behind = proposal.is_open and current_version != proposal.base_version
    return {
        "behind": behind,
        "can_decide": can_review,
        "has_conflicts": diffs.has_conflict_markers(proposal.proposed_content),
        "can_claim": proposal.claimed_by_id is None and policy.claim_proposal(actor=actor, proposal=proposal) is None,
        "can_unclaim": policy.unclaim_proposal(actor=actor, proposal=proposal) is None,
        "can_approve": policy.approve_proposal(actor=actor, proposal=proposal,
                                               current_version=current_version) is None,
        "can_reject": policy.reject_proposal(actor=actor, proposal=proposal) is None,
        "can_withdraw": policy.withdraw_proposal(actor=actor, proposal=proposal) is None,
        "can_edit": can_review and proposal.status == ProposalStatus.PENDING and not behind,
        "can_rebase": can_review and behind and proposal.source != Source.ROLLBACK,
    }


def _diff_context(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    """The diff against the base version, and against the revised proposal."""
    options = _diff_options(request)
    revises = proposal.revises if proposal.revises_id else None
    return {
        "view": "unified" if options["unified_view"] else "split",
        "whole": options["whole"],
        "left_label": f"Version {proposal.base_version}" if proposal.base_version else "Empty (new file)",
        "diff": diffs.present(proposal.base_content, proposal.proposed_content, **options),
        "revises": revises,
        "revision_label": f"Proposal #{revises.pk}" if revises else "",
        "revision_diff": diffs.present(revises.proposed_content, proposal.proposed_content, **options)
        if revises else None,
        "stats": diffs.stats(proposal.base_content, proposal.proposed_content),
    }


def _evidence(proposal: Proposal) -> dict[str, object]:
    """Rationale, scanner and directive findings, personal data, size."""
    counter = tokens.counter_for(proposal.agent.token_encoding)
    return {
        "changes": _rationale(proposal),
        "findings": highlight.scanner_findings(proposal.proposed_content),
        "directive_findings": highlight.directive_findings(old=proposal.base_content, new=proposal.proposed_content)
        if "agent_directed" in (proposal.risk_tags or []) else [],
        "special_categories": [CATEGORY_LABELS.get(c, c) for c in services.special_categories(proposal)],
        "size": {
            "chars_before": len(proposal.base_content),
            "chars_after": len(proposal.proposed_content),
            "tokens_before": counter.count(proposal.base_content),
            "tokens_after": counter.count(proposal.proposed_content),
            "limit": proposal.agent.limit_for(proposal.kind),
            "limit_kind": "soft" if proposal.kind == FileKind.MEMORY else "hard",
            "estimated": counter.estimated,
            "encoding": counter.describe()["encoding"],
        },
    }


def _decide(request: HtmxHttpRequest, proposal: Proposal,
            form: action_forms.DecisionForm) -> tuple[str, Proposal | None]:
    """Run one decision; returns the message and, for an edit or rebase, the
    new proposal to go to."""
    action_forms.valid(form)
    action, comment, reason_code = form.value("action"), form.value("comment"), form.value("reason_code")
    if action == "approve":
        acknowledged = form.acknowledged
        done = services.approve_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment,
                                         reason_code=reason_code, acknowledge_personal_data=acknowledged)
        if done.status == ProposalStatus.PENDING:
            return ("First approval recorded. This proposal is high risk: a second, different reviewer approves it "
                    "before it is served."), None
        stale = ", ".join(f"#{pk}" for pk in done.stale_siblings)
        return f"Approved. {done.kind} is now version {done.applied_version}." + (
            f" Now stale (they were made from the old version): {stale}." if stale else ""), None
    if action == "reject":
        services.reject_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment,
                                 reason_code=reason_code)
        return "Rejected. Nothing served has changed.", None
    if action == "claim":
        services.claim_proposal(proposal_id=proposal.pk, actor=request.user)
        return "Claimed: others see that you are reviewing this proposal.", None
    if action == "unclaim":
        services.unclaim_proposal(proposal_id=proposal.pk, actor=request.user)
        return "Claim released.", None
    if action == "withdraw":
        services.withdraw_proposal(proposal_id=proposal.pk, actor=request.user, comment=comment)
        return "Withdrawn. Nothing served has changed.", None
    if action == "edit":
        revision = services.revise_proposal(proposal_id=proposal.pk, reviewer=request.user,
                                            content=form.value("content"), comment=comment)
        return (f"Your edit is saved as proposal #{revision.pk}. Another reviewer has to approve it "
                "(four-eyes rule)."), revision
    if action == "rebase":
        rebased = services.rebase_proposal(proposal_id=proposal.pk, reviewer=request.user)
        return f"Rebased onto the current version as proposal #{rebased.pk}. Review it and confirm.", rebased
    raise errors.Invalid("Choose approve, reject, withdraw, edit, rebase, claim or unclaim.")


@login_required
@require_http_methods(["GET", "POST"])
def proposal_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    proposal = _or_404(services.get_proposal_for_user, request.user, pk)
    template_name = "reviews/proposal.html"
    if request.method != "POST":
        return page_or_fragment(request, template_name, _proposal_context(request, proposal), fragments=("diff",))
    form = action_forms.DecisionForm(request.POST)
    action = str(form["action"].value() or "")
    try:
        done, target = _decide(request, proposal, form)
    except errors.DomainError as exc:
        proposal = services.get_proposal_for_user(request.user, proposal.pk)
        context = _proposal_context(request, proposal)
        context.update(error=exc, posted_action=action, posted_comment=form["comment"].value() or "",
                       posted_content=form["content"].value())
        if request.htmx:
            # htmx swaps only 2xx answers by default; the error is in the fragment.
            return TemplateResponse(request, template_name + "#decision", context)
        return TemplateResponse(request, template_name, context, status=exc.status)
    query = queue_filter_query(request)
    url = _proposal_url((target or proposal).pk, query)
    if target is None and form.go_next:
        # "Approve & next" / "Reject & next": on to the next proposal waiting
        # in the reviewer's filter, or back to the (now shorter) queue.
        _before, after = _neighbours(request, proposal)
        url = _proposal_url(after.pk, query) if after else reverse("queue") + (f"?{query}" if query else "")
        if after is None:
            done += " Nothing else is waiting in this filter."
        messages.success(request, done)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if target is not None or not request.htmx:
        messages.success(request, done)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    proposal = services.get_proposal_for_user(request.user, proposal.pk)
    context = _proposal_context(request, proposal)
    context.update(done=done, pending_badge=selectors.pending_proposal_count(request.user))
    return TemplateResponse(request, template_name + "#decision", context)


@login_required
@require_GET
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = selectors.session_for(request.user, pk)
    if session is None:
        raise Http404("There is no such session in your workspaces.")
    return TemplateResponse(request, "reviews/session.html",
                            {"session": session, "entries": selectors.session_log(session)})


# --- file history and blame ---------------------------------------------------------------


def _versions(request: HtmxHttpRequest, slug: str, kind: str) -> tuple[Any, str, list[Any]]:
    agent = _or_404(services.get_agent_for_user, request.user, slug)
    user_ref = request.GET.get("user", "")
    try:
        rows = services.file_versions(agent=agent, kind=kind, user_ref=user_ref or None)
    except (errors.NotFound, errors.Invalid) as exc:
        raise Http404(exc.detail) from exc
    return agent, user_ref, rows


def _history_action(request: HtmxHttpRequest, agent: Any, kind: str, user_ref: str,
                    form: action_forms.FileActionForm) -> tuple[str, Any]:
    """Run one POSTed action of the history page; returns the message and
    what it made (a rollback proposal, a release change or the file)."""
    action_forms.valid(form)
    action, reason = form.value("action"), form.value("reason")
    if action == "rollback":
        version = form.version_value
        if version is None:
            raise errors.Invalid("Choose a version to roll back to.", field="version")
        rollback = services.propose_rollback(agent=agent, kind=kind, user_ref=user_ref or None, to_version=version,
                                             actor=request.user, reason=reason)
        return (f"Rollback to the content of version {version} proposed as proposal #{rollback.pk}. "
                "Another reviewer has to approve it before it is served (four-eyes rule)."), rollback
    if action == "withhold":
        file = services.withhold_file(agent=agent, kind=kind, user_ref=user_ref or None, actor=request.user,
                                      reason=reason)
        return (f"Withheld: {kind} v{file.version} is no longer served, in new contexts and in open sessions. "
                "Serving it again takes a second reviewer (a release or a rollback)."), file
    if action == "release":
        change = services.request_release(agent=agent, kind=kind, user_ref=user_ref or None, actor=request.user,
                                          reason=reason)
        return (f"Release requested as change #{change.pk}. Another reviewer decides it on the Changes page "
                "(four-eyes rule)."), change
    raise errors.Invalid("Choose rollback, withhold or release.")


@login_required
@require_http_methods(["GET", "POST"])
def file_history(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    template_name = "reviews/file_history.html"
    if request.method != "POST":
        context = _history_context(request, agent, file, user_ref, rows, _int(request.GET.get("rollback")))
        return page_or_fragment(request, template_name, context, fragments=("timeline", "version-diff"))
    form = action_forms.FileActionForm(request.POST)
    action = str(form["action"].value() or "")
    try:
        done, made = _history_action(request, agent, file, user_ref, form)
    except errors.DomainError as exc:
        confirm = _int(form["version"].value()) if action == "rollback" else None
        context = _history_context(request, agent, file, user_ref, rows, confirm)
        context.update(error=exc, posted_action=action, posted_reason=form["reason"].value() or "")
        if request.htmx:
            return TemplateResponse(request, template_name + "#timeline", context)
        return TemplateResponse(request, template_name, context, status=exc.status)
    if not request.htmx:
        messages.success(request, done)
        if isinstance(made, Proposal):
            return redirect(reverse("proposal", args=[made.pk]))
        return redirect(_file_url("file-history", agent.slug, file, user_ref))
    _agent, _user, rows = _versions(request, slug, file)
    context = _history_context(request, agent, file, user_ref, rows, None)
    context.update(done=done, done_proposal=made if isinstance(made, Proposal) else None,
                   done_change=made if isinstance(made, Change) else None)
    return TemplateResponse(request, template_name + "#timeline", context)


def _history_context(request: HtmxHttpRequest, agent: Any, kind: str, user_ref: str, rows: list[Any],
                     confirm: int | None) -> dict[str, Any]:
    by_version = {row.version: row for row in rows}
    latest = rows[-1].version if rows else 0
    asked_a, asked_b = _int(request.GET.get("a")), _int(request.GET.get("b"))
    b = asked_b if asked_b is not None and asked_b in by_version else latest
    a = asked_a if asked_a is not None and asked_a in by_version else (b - 1 if b - 1 in by_version else b)
    old = by_version[a].content if a in by_version else ""
    new = by_version[b].content if b in by_version else ""
    state = selectors.file_state(agent, kind, user_ref)
    history_url = _file_url("file-history", agent.slug, kind, user_ref)
    whole = request.GET.get("context") == "all"
    return {
        "agent": agent,
        "kind": kind,
        "user_ref": user_ref,
        "timeline": [{"row": row, "author": history_author(row)} for row in reversed(rows)],
        "latest": latest,
        "versions": [row.version for row in rows],
        "a": a,
        "b": b,
        "diff": diffs.present(old, new, whole=whole),
        "whole": whole,
        "a_label": f"Version {a}",
        "b_label": f"Version {b}",
        "can_rollback": _can_review(request, agent.workspace_id),
        "confirm": by_version.get(confirm) if confirm != latest else None,
        "file_state": state,
        "withheld": bool(state and state.is_withheld),
        "can_withhold": bool(state and state.exists and not state.is_withheld),
        "release": selectors.pending_release(agent, kind, user_ref) if state and state.is_withheld else None,
        "history_url": history_url,
        "blame_url": _file_url("file-blame", agent.slug, kind, user_ref),
        **_diff_links(request),
    }


@login_required
@require_GET
def file_blame(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    by_version = {row.version: row for row in rows}
    # Per line, what the version that wrote it cited for that very entry
    # (not every id of its run): consolidation keeps evidence per entry.
    per_entry = {row.version: evidence_by_entry(row.proposal.rationale if row.proposal_id else [], file=file)
                 for row in rows}
    # An approved rollback is credited like a revert: its lines are its own
    # (who asked, who approved), each still naming the version that wrote it.
    rollbacks = {row.version: row.proposal.rollback_to for row in rows
                 if row.source == Source.ROLLBACK and row.proposal_id and row.proposal.rollback_to}
    blamed = diffs.blame([(row.version, row.content) for row in rows], rollbacks)
    # Evidence belongs to the version that wrote the entry, not to a rollback.
    cited = [per_entry[line.written or line.origin].get(line_entry(line.text), []) if line_entry(line.text) else []
             for line in blamed]
    found = selectors.evidence(agent, user_ref, {i for ids in cited for i in ids})
    lines = [
        {"line": line, "row": by_version[line.origin], "author": history_author(by_version[line.origin]),
         "written": by_version[line.written] if line.written else None,
         "written_by": history_author(by_version[line.written]) if line.written else "",
         "evidence": [found[i] for i in ids if i in found]}
        for line, ids in zip(blamed, cited, strict=True)
    ]
    return TemplateResponse(request, "reviews/file_blame.html", {
        "agent": agent,
        "kind": file,
        "user_ref": user_ref,
        "lines": lines,
        "latest": rows[-1].version if rows else 0,
        "history_url": _file_url("file-history", agent.slug, file, user_ref),
    })


# --- governance changes --------------------------------------------------------------------------

SETTING_LABELS = {
    "write_policy": "Write policy",
    "consolidation_backend": "Consolidation backend",
    "daily_budget_usd": "Daily budget (USD)",
    "default_write_policy": "Default write policy for new agents",
    "log_retention_days": "Keep session logs for (days; None = forever)",
    **{f"limit_{k}": f"{k.upper()}.md limit (characters)" for k in ("soul", "about", "tools", "user", "memory")},
}


@dataclass(frozen=True)
class ChangeRow:
    change: Change
    # (what, from, to) for each thing the change would set.
    lines: list[tuple[str, str, str]]
    can_decide: bool
    can_withdraw: bool
    file_url: str
    # A pending erasure: (kind, count) of what it would erase, counted now.
    would_erase: list[tuple[str, int]] = dataclass_field(default_factory=list)



def _payload_lines(change: Change) -> list[tuple[str, str, str]]:
    payload = change.payload if isinstance(change.payload, dict) else {}
    fields = payload.get("fields")
    if isinstance(fields, dict):
        return [
            (SETTING_LABELS.get(field, field.replace("_", " ").capitalize()), str(values.get("from", "")),
             str(values.get("to", "")))
            for field, values in fields.items() if isinstance(values, dict)
        ]
    if change.kind == ChangeKind.RELEASE:
        return [(f"{change.file_kind} v{payload.get('version', '?')}", "withheld", "served again")]
    if change.kind == ChangeKind.ERASURE:
        # The approver must see whom they erase; once decided, only the hash.
        who = change.user_ref if change.is_pending else "(no longer named)"
        return [("End user", who, "erased everywhere in the workspace"),
                ("Subject hash", "", str(payload.get("subject_hash", ""))[:16])]
    return [(str(key), "", json.dumps(value, ensure_ascii=False)) for key, value in payload.items()]


def _change_rows(request: HttpRequest, changes: Any, roles: dict[int, str]) -> list[ChangeRow]:
    rows = []
    for change in changes:
        pending = change.is_pending
        rows.append(ChangeRow(
            change=change,
            lines=_payload_lines(change),
            can_decide=policy.approve_change(actor=request.user, change=change, known=roles) is None,
            can_withdraw=policy.withdraw_change(actor=request.user, change=change) is None,
            file_url=_file_url("file-history", change.agent.slug, change.file_kind, change.user_ref)
            if change.agent and change.file_kind else "",
            would_erase=services.count_lines(services.pending_counts(change)) if pending else [],
        ))
    return rows


def _changes_context(request: HtmxHttpRequest) -> dict[str, Any]:
    visible = services.visible_changes(request.user)
    roles = selectors.roles_by_workspace(request.user)
    decided = Paginator(visible.exclude(status="pending").order_by("-decided_at", "-id"), CHANGES_PAGE_SIZE)
    page = decided.get_page(request.GET.get("page"))
    return {
        "pending": _change_rows(request, visible.pending().order_by("created_at", "id"), roles),
        "decided": _change_rows(request, page.object_list, roles),
        "page": page,
    }


def _change_action(request: HtmxHttpRequest, change: Change, form: action_forms.ChangeDecisionForm) -> str:
    action_forms.valid(form)
    action, comment = form.value("action"), form.value("comment")
    if action == "approve":
        services.approve_change(change_id=change.pk, actor=request.user, comment=comment)
        return f"Approved change #{change.pk}: it is in effect now."
    if action == "reject":
        services.reject_change(change_id=change.pk, actor=request.user, comment=comment)
        return f"Rejected change #{change.pk}. Nothing has changed."
    if action == "withdraw":
        services.withdraw_change(change_id=change.pk, actor=request.user, comment=comment)
        return f"Withdrew change #{change.pk}. Nothing has changed."
    raise errors.Invalid("Choose approve, reject or withdraw.")


@login_required
@require_http_methods(["GET", "POST"])
def changes(request: HtmxHttpRequest) -> HttpResponse:
    template_name = "reviews/changes.html"
    if request.method != "POST":
        return page_or_fragment(request, template_name, _changes_context(request),
                                fragments=("pending-changes", "decided-changes"))
    form = action_forms.ChangeDecisionForm(request.POST)
    change = _or_404(services.get_change_for_user, request.user, form["change"].value())
    action = str(form["action"].value() or "")
    try:
        done = _change_action(request, change, form)
    except errors.DomainError as exc:
        context = _changes_context(request)
        context.update(error=exc, error_for=change.pk, posted_action=action,
                       posted_comment=form["comment"].value() or "")
        if request.htmx:
            return TemplateResponse(request, template_name + "#pending-changes", context)
        return TemplateResponse(request, template_name, context, status=exc.status)
    if not request.htmx:
        messages.success(request, done)
        return redirect("changes")
    context = _changes_context(request)
    context.update(done=done, changes_badge=selectors.pending_change_count(request.user))
    return TemplateResponse(request, template_name + "#pending-changes", context)


@login_required
@require_GET
def changes_badge(request: HtmxHttpRequest) -> HttpResponse:
    return TemplateResponse(request, "reviews/badge.html", {"pending": selectors.pending_change_count(request.user)})


# --- direct writes ------------------------------------------------------------------------------------


class DirectWritesForm(forms.Form):
    since = forms.DateField(required=False, label="Since")
    agent = forms.ChoiceField(required=False)

    def __init__(self, data: Any, *, agents: list[Any]) -> None:
        super().__init__(data)
        cast(forms.ChoiceField, self.fields["agent"]).choices = [
            ("", "All agents"), *((a.slug, a.slug) for a in agents)
        ]

    def since_day(self) -> date:
        default = timezone.localdate() - timedelta(days=DIRECT_WRITES_DAYS)
        return (self.cleaned_data.get("since") if self.is_valid() else None) or default

    def agent_slug(self) -> str:
        return str(self.cleaned_data.get("agent") or "") if self.is_valid() else ""


def _direct_writes_context(request: HtmxHttpRequest) -> dict[str, Any]:
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
            "history_url": _file_url("file-history", row.agent.slug, row.kind, row.user_ref),
            "anchor": f"write-{row.history_id}-change",
        })
    return {"form": form, "since": since, "page": page, "writes": writes, "agents": agents,
            "query": request.GET.urlencode(), "days": DIRECT_WRITES_DAYS}


def _direct_write_action(request: HtmxHttpRequest, form: action_forms.FileActionForm) -> tuple[str, Proposal | None]:
    agent = _or_404(services.get_agent_for_user, request.user, str(form["agent"].value() or ""))
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
        context.update(error=exc, error_for=_int(form["row"].value()),
                       posted_action=form["action"].value() or "", posted_reason=form["reason"].value() or "")
        if request.htmx:
            return TemplateResponse(request, template_name + "#direct-writes", context)
        return TemplateResponse(request, template_name, context, status=exc.status)
    if not request.htmx:
        messages.success(request, done)
        if rollback is not None:
            return redirect(reverse("proposal", args=[rollback.pk]))
        return redirect(request.get_full_path())
    context = _direct_writes_context(request)
    context.update(done=done, done_proposal=rollback)
    return TemplateResponse(request, template_name + "#direct-writes", context)
