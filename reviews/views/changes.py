"""Governance changes (`changes/`): pending and decided changes with what
each would set, and the approve/reject/withdraw POST; the pending badge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_http_methods

from memoryhub import errors, policy, selectors, services
from memoryhub.models import Change, ChangeKind
from reviews import forms as action_forms
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import file_url, or_404, refusal_status

CHANGES_PAGE_SIZE = 25


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


def _change_rows(request: HtmxHttpRequest, changes: Iterable[Change], roles: dict[int, str]) -> list[ChangeRow]:
    rows = []
    for change in changes:
        pending = change.is_pending
        rows.append(ChangeRow(
            change=change,
            lines=_payload_lines(change),
            can_decide=policy.approve_change(actor=request.user, change=change, known=roles) is None,
            can_withdraw=policy.withdraw_change(actor=request.user, change=change) is None,
            file_url=file_url("file-history", change.agent.slug, change.file_kind, change.user_ref)
            if change.agent and change.file_kind else "",
            would_erase=services.count_lines(services.pending_counts(change)) if pending else [],
        ))
    return rows


def _changes_context(request: HtmxHttpRequest) -> dict[str, object]:
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
    change = or_404(services.get_change_for_user, request.user, form["change"].value())
    action = str(form["action"].value() or "")
    try:
        done = _change_action(request, change, form)
    except errors.DomainError as exc:
        context = _changes_context(request)
        context.update(error=exc, error_for=change.pk, posted_action=action,
                       posted_comment=form["comment"].value() or "")
        return page_or_fragment(request, template_name, context, fragments=("pending-changes",),
                                status=refusal_status(request, exc.status))
    if not request.htmx:
        messages.success(request, done)
        return redirect("changes")
    context = _changes_context(request)
    context.update(done=done, changes_badge=selectors.pending_change_count(request.user))
    return page_or_fragment(request, template_name, context, fragments=("pending-changes",))


@login_required
@require_GET
def changes_badge(request: HtmxHttpRequest) -> HttpResponse:
    return TemplateResponse(request, "reviews/badge.html", {"pending": selectors.pending_change_count(request.user)})
