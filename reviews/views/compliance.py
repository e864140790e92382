"""The "Erasures and exports" page of the console, for admins and auditors.

One page, one section per compliance operation, each fed by its own
context function: a subject's export (a plain GET form whose answer is the
JSON download, streamed by the same service as the REST API), a subject's
erasure (a POST form for admins that records a pending change; a second
admin approves it on the Changes page, the same flow as every governance
change), the erasure records (subject hash, counts, requester, approver,
time), log retention per workspace (setting, entries due, last batch) and
the record of past exports, erasures and imports.

Everything shown is text that staff, agents or end users wrote (user
references, summaries): it is escaped by the templates, and the containers
that show it carry `hx-disable`.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_POST

from memoryhub import errors, policy, selectors, services
from memoryhub.models import AuditEvent, Workspace
from reviews import forms
from reviews.http import HtmxHttpRequest

RECORD_ACTIONS = ("subject.export", "subject.refused", "subject.erase", "agent.export", "agent.import",
                  "retention.redact")
RECORD_ROWS = 50
ERASURE_ROWS = 50


def _workspaces(request: HtmxHttpRequest) -> list[Workspace]:
    """Workspaces where the user may export subjects; none is a 403."""
    ids = services.workspace_ids_for(request.user, services.EXPORT_ROLES)
    if not ids:
        raise PermissionDenied("Erasures and exports are for admins and auditors.")
    return list(Workspace.objects.filter(pk__in=ids).order_by("slug"))


def _export_context(workspaces: list[Workspace], form: dict[str, str], error: str = "") -> dict[str, object]:
    return {"export_workspaces": workspaces, "export_form": form, "export_error": error}


def _record_context(workspaces: list[Workspace]) -> dict[str, object]:
    events = (
        AuditEvent.objects.filter(workspace__in=workspaces, action__in=RECORD_ACTIONS)
        .select_related("workspace", "actor_user", "actor_agent", "agent")
        .order_by("-created_at", "-id")[:RECORD_ROWS]
    )
    return {"record": list(events)}


def _erasure_context(request: HtmxHttpRequest, workspaces: list[Workspace], form: dict[str, str],
                     error: str = "") -> dict[str, object]:
    ids = [ws.pk for ws in workspaces]
    admin_of = [ws for ws in workspaces if ws.pk in set(services.workspace_ids_for(request.user,
                                                                                   services.ERASE_ROLES))]
    pending = list(services.pending_erasures(workspace_ids=ids).order_by("created_at", "id"))
    roles = selectors.roles_by_workspace(request.user)
    return {
        "erasure_workspaces": admin_of,
        "erasure_form": form,
        "erasure_error": error,
        # Who may approve which: a different admin of that workspace.
        "pending_erasures": [(c, policy.approve_change(actor=request.user, change=c, known=roles) is None,
                              services.count_lines(services.pending_counts(c)))
                             for c in pending],
        "erasures": list(services.erasure_records(workspace_ids=ids).order_by("-created_at", "-id")[:ERASURE_ROWS]),
        "retention": [services.retention_status(ws) for ws in workspaces],
    }


def _page(request: HtmxHttpRequest, workspaces: list[Workspace], *, form: dict[str, str] | None = None,
          error: str = "", status: int = 200, erasure_form: dict[str, str] | None = None,
          erasure_error: str = "", retention_error: str = "") -> TemplateResponse:
    context = {
        "retention_error": retention_error,
        **_export_context(workspaces, form or {"user": "", "workspace": ""}, error),
        **_erasure_context(request, workspaces, erasure_form or {"user": "", "workspace": "", "reason": ""},
                           erasure_error),
        **_record_context(workspaces),
    }
    return TemplateResponse(request, "compliance/index.html", context, status=status)


@login_required
@require_GET
def index(request: HtmxHttpRequest) -> HttpResponse:
    return _page(request, _workspaces(request))


@login_required
@require_GET
def subject_export(request: HtmxHttpRequest) -> HttpResponseBase:
    """The export form's target: the JSON file, or the page with the error."""
    workspaces = _workspaces(request)
    form = forms.SubjectExportForm(request.GET)
    try:
        forms.valid(form)
        export = services.export_subject(actor=request.user, user_ref=form.value("user"),
                                         workspace=form.value("workspace") or None)
    except errors.PermissionDenied as exc:
        raise PermissionDenied(exc.detail) from exc
    except errors.DomainError as exc:
        return _page(request, workspaces, form=form.shown(), error=exc.detail, status=exc.status)
    response = StreamingHttpResponse(export.chunks, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def subject_erasure(request: HtmxHttpRequest) -> HttpResponseBase:
    """The erasure form's target: a pending change, then back to the page
    (its pending list links to the Changes page, where a second admin
    decides). A wrong role is a 403; another workspace a 404 on the page."""
    workspaces = _workspaces(request)
    form = forms.ErasureRequestForm(request.POST)
    try:
        forms.valid(form)
        change = services.request_erasure(actor=request.user, user_ref=form.value("user"),
                                          reason=form.value("reason"), workspace=form.value("workspace") or None)
    except errors.PermissionDenied as exc:
        raise PermissionDenied(exc.detail) from exc
    except errors.DomainError as exc:
        return _page(request, workspaces, erasure_form=form.shown(), erasure_error=exc.detail, status=exc.status)
    would = ", ".join(f"{count} {label}" for label, count in services.count_lines(change.payload.get("counts", {})))
    messages.success(request, f"Erasure requested as change #{change.pk}; it would erase {would}. Another admin of "
                              f"{change.workspace.slug} approves it on the Changes page (the counts are taken again "
                              "then); nothing is erased until then.")
    return redirect("compliance")


@login_required
@require_POST
def retention_setting(request: HtmxHttpRequest) -> HttpResponseBase:
    """Set a workspace's log retention: applied at once when it keeps logs
    longer, a pending change for a second admin when it shortens it."""
    workspaces = _workspaces(request)
    form = forms.RetentionForm(request.POST)
    try:
        forms.valid(form)
    except errors.Invalid as exc:
        return _page(request, workspaces, retention_error=exc.detail, status=exc.status)
    workspace = next((ws for ws in workspaces if ws.slug == form.value("workspace")), None)
    if workspace is None:
        return _page(request, workspaces, retention_error="There is no such workspace among yours.", status=404)
    try:
        update = services.update_workspace(workspace=workspace, actor=request.user,
                                           settings={"log_retention_days": form.value("days")},
                                           reason=form.value("reason"))
    except errors.PermissionDenied as exc:
        raise PermissionDenied(exc.detail) from exc
    except errors.DomainError as exc:
        return _page(request, workspaces, retention_error=exc.detail, status=exc.status)
    if update.change is not None:
        messages.success(request, f"Shorter retention requested as change #{update.change.pk}: another admin "
                                  "approves it on the Changes page.")
    elif update.applied:
        messages.success(request, f"Log retention of {workspace.slug} changed.")
    else:
        messages.info(request, "Nothing changed.")
    return redirect("compliance")
