"""Workspace settings (`workspaces/<slug>/settings/`): every setting in one
form for admins; a weakening becomes a pending change for a second admin.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods

from memoryhub import errors, selectors, services
from memoryhub.models import HighRiskApproval, Workspace, WritePolicy
from memoryhub.services.agents import MAX_RETENTION_DAYS, MAX_SLA_HOURS
from memoryhub.services.limits import PII_POLICIES
from reviews import forms, once
from reviews.http import HtmxHttpRequest
from reviews.views.common import forbidden, is_admin

# What each setting does, in one line; whether loosening it takes a second
# admin comes from the setting itself (`Setting.governed`), not from here.
WORKSPACE_HELP = {
    "name": "The name shown for this workspace in the console.",
    "default_write_policy": "The write policy new agents in this workspace start under.",
    "pii_policy": "What happens when an agent writes personal data: allow it, flag it for review, or refuse it.",
    "log_retention_days": "Days session logs are kept before they are redacted; empty keeps them forever.",
    "review_reason_codes": "The reason codes reviewers pick from, comma-separated (lower-case letters, digits, _).",
    "sla_hours": "Hours a pending proposal may wait before the queue marks it overdue.",
    "high_risk_approval": "Who may approve a high-risk proposal.",
}
WORKSPACE_LABELS = {
    "name": "Name",
    "default_write_policy": "Default write policy",
    "pii_policy": "Personal-data policy",
    "log_retention_days": "Log retention (days)",
    "review_reason_codes": "Review reason codes",
    "sla_hours": "Review SLA (hours)",
    "high_risk_approval": "High-risk approval",
}


def _setting_text(field: str, value: object) -> str:
    """A setting's current value as the form shows it."""
    if value is None:
        return ""
    if field == "review_reason_codes":
        return ", ".join(code for code in str(value).split(",") if code)
    return str(value)


def _same_text(field: str, typed: str, current: str) -> bool:
    if field == "review_reason_codes":
        return [c.strip() for c in typed.split(",") if c.strip()] == [c.strip() for c in current.split(",") if c]
    return typed.strip() == current


def _workspace_settings_context(request: HtmxHttpRequest, workspace: Workspace,
                                typed: dict[str, str] | None = None, error: str = "") -> dict[str, object]:
    choices: dict[str, list[tuple[str, str]]] = {
        "default_write_policy": list(WritePolicy.choices),
        "pii_policy": [(p, p) for p in PII_POLICIES],
        "high_risk_approval": list(HighRiskApproval.choices),
    }
    numbers = {"log_retention_days": (1, MAX_RETENTION_DAYS), "sla_hours": (1, MAX_SLA_HOURS)}
    rows = []
    for field, spec in services.WORKSPACE_SETTINGS.items():
        current = _setting_text(field, getattr(workspace, field))
        rows.append({
            "field": field,
            "label": WORKSPACE_LABELS.get(field, field),
            "help": WORKSPACE_HELP.get(field, ""),
            "governed": spec.governed,
            "current": current,
            "value": (typed or {}).get(field, current),
            "choices": choices.get(field),
            "number": numbers.get(field),
        })
    return {
        "workspace": workspace,
        "rows": rows,
        "is_admin": is_admin(request, workspace.pk),
        "pending_changes": selectors.pending_workspace_settings_changes(request.user, workspace),
        "reason": (typed or {}).get("reason", ""),
        "error": error,
    }


@login_required
@require_http_methods(["GET", "POST"])
def workspace_settings(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Every workspace setting in one form for admins (read-only for the
    other roles). A POST sends only the changed fields to
    services.update_workspace, which applies tightenings at once and turns a
    weakening into one pending change for a second admin."""
    workspace = selectors.workspace_for_user(request.user, slug)
    if workspace is None:
        raise Http404("There is no such workspace among yours.")
    template = "reviews/admin/workspace_settings.html"
    if request.method == "GET":
        return TemplateResponse(request, template, _workspace_settings_context(request, workspace))

    form = forms.WorkspaceSettingsForm(request.POST)
    try:
        # The service's own role check, before the form is read and its token spent.
        services.require_admin(user=request.user, workspace=workspace.pk, action="change workspace settings")
        forms.valid(form)
        if not form.reason_value:
            raise errors.Invalid("Say why you change the workspace settings.", field="reason")
        changed = {field: value for field, value in form.typed.items()
                   if not _same_text(field, value, _setting_text(field, getattr(workspace, field)))}
        # A double-submitted form would request the same change twice.
        once.consume(request)
        update = services.update_workspace(workspace=workspace, actor=request.user, settings=changed,
                                           reason=form.reason_value)
    except errors.PermissionDenied as exc:
        raise forbidden(exc) from exc
    except errors.DomainError as exc:
        ctx = _workspace_settings_context(request, workspace, form.shown(), exc.detail)
        return TemplateResponse(request, template, ctx, status=exc.status)
    if update.change is not None:
        messages.success(request, format_html(
            'Pending change <a href="{}#change-{}">#{}</a>: another admin approves it on the Changes page '
            "(weakens: {}). Nothing has changed yet.",
            reverse("changes"), update.change.pk, update.change.pk, ", ".join(update.weakens),
        ))
    elif update.applied:
        messages.success(request, f"Applied: {', '.join(update.applied)}.")
    else:
        messages.info(request, "Nothing changed.")
    return HttpResponseRedirect(reverse("workspace-settings", args=[workspace.slug]))
