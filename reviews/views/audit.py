"""The audit log (`audit/`): filters that name what they did not
understand, pages of events linked to their targets, CSV/JSON export.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import JsonResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from memoryhub import errors, selectors, services
from memoryhub.models import AuditEvent
from reviews import audit_export, forms
from reviews.forms import AUDIT_FILTERS, AUDIT_FORMATS
from reviews.http import HtmxHttpRequest, page_or_fragment

AUDIT_PAGE_SIZE = 50
# Not filters, but understood: which page, which export.
AUDIT_OTHER_PARAMS = ("page", "format")
AUDIT_TEXT_MAX = 200


@dataclass(frozen=True)
class AuditProblem:
    code: str  # unknown_parameter or invalid
    param: str
    message: str


def filtered_events(request: HtmxHttpRequest,
                    form: forms.AuditFilterForm) -> tuple[QuerySet[AuditEvent], dict[str, str], list[AuditProblem]]:
    """The events the query string asks for, and what in it was not
    understood: an unknown parameter or a value that is not one is named,
    never silently taken for "everything" (the page shows it, the export
    refuses with it)."""
    params = form.filters()
    problems = [AuditProblem("unknown_parameter", name, f"{name!r} is not a filter here; it was ignored. The "
                             f"filters are {', '.join(AUDIT_FILTERS)}.")
                for name in request.GET if name not in AUDIT_FILTERS + AUDIT_OTHER_PARAMS]
    problems += [AuditProblem("invalid", name, message if name == "format" else
                              f"{name}: {message} The filter was ignored.")
                 for name, message in form.problems()]
    user = params["user"]
    if user:
        try:
            user = services.validate_user_ref(user)
        except errors.Invalid as exc:
            problems.append(AuditProblem("invalid", "user", f"User: {exc.detail} The filter was ignored."))
            user = ""
    text = params["q"]
    if len(text) > AUDIT_TEXT_MAX:
        problems.append(AuditProblem("invalid", "q", f"Search text has at most {AUDIT_TEXT_MAX} characters; it was "
                                     "ignored."))
        text = ""
    start = _date_param(params, "date_from", "From", problems)
    end = _date_param(params, "date_to", "To", problems)
    events = selectors.audit_events(
        services.workspace_ids_for(request.user),
        action=params["action"],
        agent=params["agent"],
        actor=params["actor"],
        user=user,
        text=text,
        start=start,
        end=end,
    )
    return events, params, problems


def _date_param(params: dict[str, str], name: str, label: str, problems: list[AuditProblem]) -> date | None:
    value = params[name]
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        problems.append(AuditProblem("invalid", name, f"{label} must be a date like 2026-01-31; ignored {value!r}."))
        return None


@login_required
@require_GET
def audit(request: HtmxHttpRequest) -> HttpResponseBase:
    if not services.workspace_ids_for(request.user):
        raise PermissionDenied("You have no role in any workspace.")
    form = forms.AuditFilterForm(request.GET)
    events, params, problems = filtered_events(request, form)
    fmt = form.fmt
    if fmt in AUDIT_FORMATS:
        if problems:
            # A file of every event would pass for the filtered set: refuse.
            first = problems[0]
            return JsonResponse({"error": {"code": first.code, "detail": " ".join(p.message for p in problems),
                                           "field": first.param, "params": [p.param for p in problems]}},
                                status=400)
        return audit_export.export(events, fmt)
    page = Paginator(
        events, AUDIT_PAGE_SIZE
    ).get_page(request.GET.get("page"))
    actions = selectors.audit_actions(services.workspace_ids_for(request.user))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("format", None)
    events_on_page = list(page.object_list)
    page.object_list = events_on_page
    return page_or_fragment(request, "reviews/admin/audit.html", {
        "page": page,
        "params": params,
        "problems": problems,
        "actions": actions,
        "agents": services.visible_agents(request.user).values_list("slug", flat=True),
        "query": query.urlencode(),
        "links": audit_target_links(events_on_page),
    }, fragments=("results",))


def audit_target_links(events: list[AuditEvent]) -> dict[int, str]:
    """Event id → the console page of its target, where there is one (one
    query for the memory files on the page, none for the rest)."""
    files = selectors.files_by_id(
        [int(e.target_id) for e in events if e.target_type == "MemoryFile" and e.target_id.isdigit()]
    )
    links: dict[int, str] = {}
    for event in events:
        target, pk = event.target_type, event.target_id
        if not pk.isdigit():
            continue
        if target == "Proposal":
            links[event.pk] = reverse("proposal", args=[int(pk)])
        elif target == "AgentSession":
            links[event.pk] = reverse("session", args=[int(pk)])
        elif target == "Change":
            links[event.pk] = f"{reverse('changes')}#change-{pk}"
        elif target == "Agent" and event.agent is not None:
            links[event.pk] = reverse("agent", args=[event.agent.slug])
        elif target == "MemoryFile" and int(pk) in files:
            file = files[int(pk)]
            url = reverse("file-history", args=[file.agent.slug, file.kind])
            links[event.pk] = f"{url}?{urlencode({'user': file.user_ref})}" if file.user_ref else url
    return links
