"""The "Erasures and exports" page of the console, for admins and auditors.

One page, one section per compliance operation, each fed by its own
context function: today a subject's export (a plain GET form whose answer
is the JSON download, streamed by the same service as the REST API) and
the record of past exports and imports. Subject erasure joins as another
section when it lands.

Everything shown is text that staff, agents or end users wrote (user
references, summaries): it is escaped by the templates, and the containers
that show it carry `hx-disable`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from memoryhub import errors, services
from memoryhub.models import AuditEvent, Workspace

RECORD_ACTIONS = ("subject.export", "subject.refused", "agent.export", "agent.import")
RECORD_ROWS = 50


def _workspaces(request: HttpRequest) -> list[Workspace]:
    """Workspaces where the user may export subjects; none is a 403."""
    ids = services.workspace_ids_for(request.user, services.EXPORT_ROLES)
    if not ids:
        raise PermissionDenied("Erasures and exports are for admins and auditors.")
    return list(Workspace.objects.filter(pk__in=ids).order_by("slug"))


def _export_context(workspaces: list[Workspace], form: dict[str, str], error: str = "") -> dict[str, Any]:
    return {"export_workspaces": workspaces, "export_form": form, "export_error": error}


def _record_context(workspaces: list[Workspace]) -> dict[str, Any]:
    events = (
        AuditEvent.objects.filter(workspace__in=workspaces, action__in=RECORD_ACTIONS)
        .select_related("workspace", "actor_user", "actor_agent", "agent")
        .order_by("-created_at", "-id")[:RECORD_ROWS]
    )
    return {"record": list(events)}


def _page(request: HttpRequest, workspaces: list[Workspace], *, form: dict[str, str] | None = None,
          error: str = "", status: int = 200) -> TemplateResponse:
    context = {
        **_export_context(workspaces, form or {"user": "", "workspace": ""}, error),
        **_record_context(workspaces),
    }
    return TemplateResponse(request, "compliance/index.html", context, status=status)


@login_required
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return _page(request, _workspaces(request))


@login_required
@require_GET
def subject_export(request: HttpRequest) -> HttpResponseBase:
    """The export form's target: the JSON file, or the page with the error."""
    workspaces = _workspaces(request)
    form = {"user": request.GET.get("user", ""), "workspace": request.GET.get("workspace", "")}
    try:
        export = services.export_subject(actor=request.user, user_ref=form["user"],
                                         workspace=form["workspace"] or None)
    except errors.PermissionDenied as exc:
        raise PermissionDenied(exc.detail) from exc
    except errors.DomainError as exc:
        return _page(request, workspaces, form=form, error=exc.detail, status=exc.status)
    response = StreamingHttpResponse(export.chunks, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    response["Cache-Control"] = "no-store"
    return response
