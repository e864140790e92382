"""The review console: queue, proposal, session log, file history and blame.

Function views returning TemplateResponse. One view serves the full page and
its fragments: an htmx request names the element it targets, and the view
renders the partial of that name. A plain POST redirects with a message; an
htmx POST re-renders one fragment in place. Objects come through the scoped
helpers in reviews.access, so another workspace's object is a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar, cast
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from memoryhub import errors, scanner, services, tokens
from memoryhub.models import AgentSession, FileKind, LogEntry, Proposal, ProposalStatus, Source
from reviews import diffs
from reviews.api import history_author

T = TypeVar("T")
QUEUE_PAGE_SIZE = 25


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _or_404(lookup: Callable[..., T], *args: Any) -> T:
    try:
        return lookup(*args)
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc


def _fragment(request: HtmxHttpRequest, template_name: str, allowed: set[str], default: str) -> str:
    """The page, or for htmx the partial named like the element it targets."""
    if not request.htmx:
        return template_name
    target = request.htmx.target or ""
    return f"{template_name}#{target if target in allowed else default}"


# --- queue --------------------------------------------------------------------------


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[(ProposalStatus.PENDING, "Pending"), (ProposalStatus.STALE, "Stale")], required=False
    )
    workspace = forms.ChoiceField(required=False)
    agent = forms.ChoiceField(required=False)
    user = forms.CharField(required=False, max_length=255, label="User")
    file = forms.ChoiceField(choices=[("", "Any file"), *FileKind.choices], required=False)
    source = forms.ChoiceField(choices=[("", "Any source"), *Source.choices], required=False)
    older_than = forms.IntegerField(required=False, min_value=0, max_value=24 * 365, label="Older than (hours)")

    def __init__(self, data: Any, *, agents: list[Any]) -> None:
        super().__init__(data)
        workspaces = sorted({a.workspace.slug for a in agents})
        cast(forms.ChoiceField, self.fields["workspace"]).choices = [
            ("", "All workspaces"), *((w, w) for w in workspaces)
        ]
        cast(forms.ChoiceField, self.fields["agent"]).choices = [
            ("", "All agents"), *((a.slug, a.name or a.slug) for a in agents)
        ]

    def apply(self, proposals: Any) -> Any:
        data = self.cleaned_data if self.is_valid() else {}
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


@login_required
@require_GET
def queue(request: HtmxHttpRequest) -> HttpResponse:
    visible = services.visible_proposals(request.user)
    form = QueueFilterForm(request.GET or None, agents=list(services.visible_agents(request.user)))
    counts = visible.aggregate(
        pending=Count("id", filter=Q(status=ProposalStatus.PENDING)),
        stale=Count("id", filter=Q(status=ProposalStatus.STALE)),
    )
    proposals = form.apply(visible).order_by("created_at", "id")
    page = Paginator(proposals, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    can_decide = bool(services.workspace_ids_for(request.user, services.REVIEW_ROLES))
    return TemplateResponse(
        request,
        _fragment(request, "reviews/queue.html", {"proposal-list"}, "proposal-list"),
        {"form": form, "page": page, "counts": counts, "can_decide": can_decide, "now": timezone.now()},
    )


@login_required
@require_GET
def queue_badge(request: HtmxHttpRequest) -> HttpResponse:
    pending = services.visible_proposals(request.user).pending().count()
    return TemplateResponse(request, "reviews/badge.html", {"pending": pending})


# --- proposal ------------------------------------------------------------------------


def _evidence(proposal: Proposal) -> dict[int, LogEntry]:
    """The log entries cited by the rationale, in one query. Scoped to the
    proposal's agent, and to its user for a user's file, so an id forged into
    a rationale cannot show another pair's log. Agent-wide files (SOUL, ABOUT,
    TOOLS) learn from all the agent's users, so the agent is their boundary."""
    ids = {
        int(i)
        for change in proposal.rationale if isinstance(change, dict)
        for i in change.get("evidence") or [] if isinstance(i, int) or (isinstance(i, str) and i.isdigit())
    }
    if not ids:
        return {}
    entries = LogEntry.objects.filter(pk__in=ids, agent=proposal.agent)
    if proposal.user_ref:
        entries = entries.filter(user_ref=proposal.user_ref)
    return {e.pk: e for e in entries}


def _changes(proposal: Proposal, evidence: dict[int, LogEntry]) -> list[dict[str, Any]]:
    changes = []
    for change in proposal.rationale:
        if not isinstance(change, dict):
            continue
        cited = [int(i) for i in change.get("evidence") or [] if str(i).isdigit()]
        changes.append({
            "kind": change.get("kind", "edit"),
            "summary": change.get("summary", ""),
            "reason": change.get("reason", ""),
            "entries": [evidence[i] for i in cited if i in evidence],
            "missing": [i for i in cited if i not in evidence],
        })
    return changes


def _proposal_context(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, Any]:
    agent = proposal.agent
    file = services.get_file(agent=agent, kind=proposal.kind, user_ref=proposal.user_ref)
    current_version = file.version if file else 0
    counter = tokens.counter_for(agent.token_encoding)
    view = request.GET.get("view", "split")
    return {
        "proposal": proposal,
        "agent": agent,
        "current_version": current_version,
        "behind": proposal.status in (ProposalStatus.PENDING, ProposalStatus.STALE)
        and current_version != proposal.base_version,
        "can_decide": services.role_in(user=request.user, workspace=agent.workspace_id) in services.REVIEW_ROLES,
        "is_author": proposal.author_user_id == request.user.pk,
        "has_conflicts": diffs.has_conflict_markers(proposal.proposed_content),
        "view": "unified" if view == "unified" else "split",
        "left_label": f"Version {proposal.base_version}" if proposal.base_version else "Empty (new file)",
        "side_rows": diffs.side_by_side(proposal.base_content, proposal.proposed_content),
        "unified_rows": diffs.unified(proposal.base_content, proposal.proposed_content),
        "stats": diffs.stats(proposal.base_content, proposal.proposed_content),
        "changes": _changes(proposal, _evidence(proposal)),
        "findings": scanner.scan_all(proposal.proposed_content),
        "size": {
            "chars_before": len(proposal.base_content),
            "chars_after": len(proposal.proposed_content),
            "tokens_before": counter.count(proposal.base_content),
            "tokens_after": counter.count(proposal.proposed_content),
            "limit": agent.limit_for(proposal.kind),
            "limit_kind": "soft" if proposal.kind == FileKind.MEMORY else "hard",
            "estimated": counter.estimated,
            "encoding": counter.describe()["encoding"],
        },
        "file_url": _file_url("file-history", agent.slug, proposal.kind, proposal.user_ref),
    }


def _file_url(name: str, slug: str, kind: str, user_ref: str) -> str:
    url = reverse(name, args=[slug, kind])
    # Encoded: a user ref like "bob&user=alice" must not name another file.
    return f"{url}?{urlencode({'user': user_ref})}" if user_ref else url


@login_required
@require_http_methods(["GET", "POST"])
def proposal_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    proposal = _or_404(services.get_proposal_for_user, request.user, pk)
    template_name = "reviews/proposal.html"
    error: errors.DomainError | None = None
    if request.method == "POST":
        action = request.POST.get("action", "")
        comment = request.POST.get("comment", "")
        try:
            if action == "approve":
                proposal = services.approve_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment)
                done, target = f"Approved. {proposal.kind} is now version {proposal.applied_version}.", None
            elif action == "reject":
                services.reject_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment)
                done, target = "Rejected. Nothing served has changed.", None
            elif action == "edit":
                target = services.revise_proposal(
                    proposal_id=proposal.pk, reviewer=request.user, content=request.POST.get("content", ""),
                    comment=comment,
                )
                done = (f"Your edit is saved as proposal #{target.pk}. Another reviewer has to approve it "
                        "(four-eyes rule).")
            elif action == "rebase":
                target = services.rebase_proposal(proposal_id=proposal.pk, reviewer=request.user)
                done = f"Rebased onto the current version as proposal #{target.pk}. Review it and confirm."
            else:
                raise errors.Invalid("Choose approve, reject, edit or rebase.")
        except errors.DomainError as exc:
            error = exc
            proposal = services.get_proposal_for_user(request.user, proposal.pk)
        else:
            url = reverse("proposal", args=[(target or proposal).pk])
            if target is not None or not request.htmx:
                messages.success(request, done)
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
            proposal = services.get_proposal_for_user(request.user, proposal.pk)
            context = _proposal_context(request, proposal)
            return TemplateResponse(request, template_name + "#decision", {**context, "done": done})
        context = _proposal_context(request, proposal)
        context.update(error=error, posted_action=action, posted_comment=comment,
                       posted_content=request.POST.get("content"))
        if request.htmx:
            # htmx swaps only 2xx answers by default; the error is in the fragment.
            return TemplateResponse(request, template_name + "#decision", context)
        return TemplateResponse(request, template_name, context, status=error.status)
    return TemplateResponse(
        request, _fragment(request, template_name, {"diff"}, "diff"), _proposal_context(request, proposal)
    )


@login_required
@require_GET
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = (
        AgentSession.objects.filter(pk=pk, agent__in=services.visible_agents(request.user))
        .select_related("agent").first()
    )
    if session is None:
        raise Http404("There is no such session in your workspaces.")
    return TemplateResponse(request, "reviews/session.html",
                            {"session": session, "entries": session.entries.order_by("id")})


# --- file history and blame ---------------------------------------------------------------


def _versions(request: HtmxHttpRequest, slug: str, kind: str) -> tuple[Any, str, list[Any]]:
    agent = _or_404(services.get_agent_for_user, request.user, slug)
    user_ref = request.GET.get("user", "")
    try:
        rows = services.file_versions(agent=agent, kind=kind, user_ref=user_ref or None)
    except (errors.NotFound, errors.Invalid) as exc:
        raise Http404(exc.detail) from exc
    return agent, user_ref, rows


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@login_required
@require_http_methods(["GET", "POST"])
def file_history(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    template_name = "reviews/file_history.html"
    error: errors.DomainError | None = None
    confirm = _int(request.GET.get("rollback"))
    if request.method == "POST":
        confirm = _int(request.POST.get("version"))
        try:
            if request.POST.get("action") != "rollback" or confirm is None:
                raise errors.Invalid("Choose a version to roll back to.", field="version")
            rollback = services.propose_rollback(agent=agent, kind=file, user_ref=user_ref or None,
                                                 to_version=confirm, actor=request.user,
                                                 reason=request.POST.get("reason", ""))
        except errors.DomainError as exc:
            error = exc
        else:
            done = (f"Rollback to the content of version {confirm} proposed as proposal #{rollback.pk}. "
                    "Another reviewer has to approve it before it is served (four-eyes rule).")
            if not request.htmx:
                messages.success(request, done)
                return redirect(reverse("proposal", args=[rollback.pk]))
            _agent, _user, rows = _versions(request, slug, file)
            context = _history_context(request, agent, file, user_ref, rows, None)
            return TemplateResponse(request, template_name + "#timeline", {**context, "done": done})
        context = _history_context(request, agent, file, user_ref, rows, confirm)
        context.update(error=error, posted_reason=request.POST.get("reason", ""))
        if request.htmx:
            return TemplateResponse(request, template_name + "#timeline", context)
        return TemplateResponse(request, template_name, context, status=error.status)
    context = _history_context(request, agent, file, user_ref, rows, confirm)
    return TemplateResponse(request, _fragment(request, template_name, {"timeline", "version-diff"}, "timeline"),
                            context)


def _history_context(request: HtmxHttpRequest, agent: Any, kind: str, user_ref: str, rows: list[Any],
                     confirm: int | None) -> dict[str, Any]:
    by_version = {row.version: row for row in rows}
    latest = rows[-1].version if rows else 0
    asked_a, asked_b = _int(request.GET.get("a")), _int(request.GET.get("b"))
    b = asked_b if asked_b is not None and asked_b in by_version else latest
    a = asked_a if asked_a is not None and asked_a in by_version else (b - 1 if b - 1 in by_version else b)
    old = by_version[a].content if a in by_version else ""
    new = by_version[b].content if b in by_version else ""
    return {
        "agent": agent,
        "kind": kind,
        "user_ref": user_ref,
        "timeline": [{"row": row, "author": history_author(row)} for row in reversed(rows)],
        "latest": latest,
        "versions": [row.version for row in rows],
        "a": a,
        "b": b,
        "diff_rows": diffs.side_by_side(old, new),
        "a_label": f"Version {a}",
        "b_label": f"Version {b}",
        "can_rollback": services.role_in(user=request.user, workspace=agent.workspace_id) in services.REVIEW_ROLES,
        "confirm": by_version.get(confirm) if confirm != latest else None,
        "history_url": _file_url("file-history", agent.slug, kind, user_ref),
        "blame_url": _file_url("file-blame", agent.slug, kind, user_ref),
    }


@login_required
@require_GET
def file_blame(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    by_version = {row.version: row for row in rows}
    cited = {
        row.version: sorted({
            int(i) for change in (row.proposal.rationale if row.proposal_id else []) if isinstance(change, dict)
            for i in change.get("evidence") or [] if str(i).isdigit()
        })
        for row in rows
    }
    # One query for every line's evidence, scoped like the proposal page's.
    entries = LogEntry.objects.filter(pk__in={i for ids in cited.values() for i in ids}, agent=agent)
    if user_ref:
        entries = entries.filter(user_ref=user_ref)
    found = {e.pk: e for e in entries}
    lines = [
        {"line": line, "row": by_version[line.origin], "author": history_author(by_version[line.origin]),
         "evidence": [found[i] for i in cited[line.origin] if i in found]}
        for line in diffs.blame([(row.version, row.content) for row in rows])
    ]
    return TemplateResponse(request, "reviews/file_blame.html", {
        "agent": agent,
        "kind": file,
        "user_ref": user_ref,
        "lines": lines,
        "latest": rows[-1].version if rows else 0,
        "history_url": _file_url("file-history", agent.slug, file, user_ref),
    })
