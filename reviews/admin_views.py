"""Admin and audit pages: agents, persona, tools, policies, keys, context
preview, audit log and dashboard.

Function views returning TemplateResponse; one view serves the full page and
its htmx fragment (`template_name += "#fragment"`). A plain POST redirects
with a message; an htmx POST re-renders its fragment. Objects come through
the scoped lookups in memoryhub.services (another workspace's agent is a
404); writes go through the services (wrong role is a 403); any other
domain error is shown next to the form it came from. Read queries live in
memoryhub.selectors. Messages are plain text or format_html over constants
and ids: never markup built from what an agent or user typed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from consolidation import services as consolidation
from memoryhub import context, errors, selectors, services
from memoryhub.models import (
    AGENT_SCOPED,
    Agent,
    AuditEvent,
    Backend,
    FileKind,
    HighRiskApproval,
    ProposalStatus,
    Role,
    Strategy,
    Workspace,
    WritePolicy,
)
from memoryhub.services.agents import MAX_RETENTION_DAYS, MAX_SLA_HOURS, governed_settings
from memoryhub.services.limits import PII_POLICIES
from memoryhub.tokens import ENCODING_NAMES
from reviews import audit_export, charts, forms, once
from reviews.http import HtmxHttpRequest, page_or_fragment

PERSONA_FILES = (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS)
AUDIT_PAGE_SIZE = 50
DASHBOARD_DAYS = 14


# --- helpers ----------------------------------------------------------------------------


def _agent_or_404(request: HttpRequest, slug: str) -> Agent:
    try:
        return services.get_agent_for_user(request.user, slug)
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc


def _is_admin(request: HttpRequest, workspace_id: int) -> bool:
    return services.role_in(user=request.user, workspace=workspace_id) in services.ADMIN_ROLES


def _forbidden(exc: errors.PermissionDenied) -> PermissionDenied:
    return PermissionDenied(exc.detail)


def _error_status(request: HttpRequest, status: int) -> int:
    """The refusal's own status, as every console page and the API answer
    it (tests/test_parity.py); htmx 2 does not swap 4xx responses by
    default, so there the fragment carries the error with a 200."""
    return 200 if request.htmx else status  # type: ignore[attr-defined]


# --- home ----------------------------------------------------------------------------


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Auditors land on the audit log; reviewers and admins on the queue."""
    review_ws = services.workspace_ids_for(request.user, services.REVIEW_ROLES)
    audit_ws = services.workspace_ids_for(request.user, {Role.AUDITOR})
    if audit_ws and not review_ws:
        return redirect("audit")
    return redirect("/")


# --- agents list -----------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def agents(request: HttpRequest) -> HttpResponse:
    admin_workspaces = selectors.admin_workspaces(request.user)
    form: dict[str, Any] = {"strategy": Strategy.HYBRID_V2, "write_policy": WritePolicy.REVIEW,
                            "backend": Backend.HEURISTIC}
    error, error_status = "", 200
    template_name = "reviews/admin/agents.html"
    if request.method == "POST":
        form = {k: request.POST.get(k, "") for k in ("slug", "name", "workspace", "strategy", "write_policy",
                                                       "backend")}
        try:
            workspace_id = int(form["workspace"])
        except ValueError:
            workspace_id = 0
        try:
            workspace = selectors.workspace(workspace_id)
            if workspace is None:
                raise errors.PermissionDenied("Choose a workspace where you are an admin.")
            agent = services.create_agent(
                actor=request.user,
                workspace=workspace,
                slug=form["slug"],
                name=form["name"],
                strategy=form["strategy"],
                write_policy=form["write_policy"],
                backend=form["backend"],
            )
        except errors.PermissionDenied as exc:
            raise _forbidden(exc) from exc
        except errors.DomainError as exc:
            error, error_status = exc.detail, exc.status
        else:
            messages.success(request, f"Agent {agent.slug} created.")
            url = reverse("agent", args=[agent.slug])
            if request.htmx:  # type: ignore[attr-defined]
                return HttpResponseClientRedirect(url)
            return HttpResponseRedirect(url)
        if request.htmx:  # type: ignore[attr-defined]
            template_name += "#create-agent"

    return TemplateResponse(
        request,
        template_name,
        {
            "agents": selectors.agents_overview(request.user),
            "admin_workspaces": admin_workspaces,
            "workspaces": selectors.user_workspaces(request.user),
            "form": form,
            "error": error,
            "strategies": Strategy.choices,
            "write_policies": WritePolicy.choices,
            "backends": Backend.choices,
        },
        status=_error_status(request, error_status) if error else 200,
    )


# --- one agent --------------------------------------------------------------------------

POLICY_INPUTS = services.POLICY_FIELDS


def _agent_context(request: HttpRequest, agent: Agent) -> dict[str, Any]:
    files, user_files = selectors.agent_files(agent)
    persona = [
        {
            "kind": str(kind),
            "slug": kind.removesuffix(".md").lower(),
            "content": files[kind].content if kind in files else "",
            "version": files[kind].version if kind in files else 0,
            "limit": agent.limit_for(kind),
            "chars": len(files[kind].content) if kind in files else 0,
        }
        for kind in PERSONA_FILES
    ]
    tools = selectors.agent_tools(agent)
    governed = governed_settings()
    tools_json = json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools], indent=2
    )
    return {
        "agent": agent,
        "is_admin": _is_admin(request, agent.workspace_id),
        "can_consolidate": services.role_in(user=request.user, workspace=agent.workspace_id) in services.REVIEW_ROLES,
        "user_refs": selectors.known_user_refs(agent),
        # Pairs dreaming stopped retrying; "Run consolidation" clears the flag.
        "attention": list(consolidation.pairs_needing_attention(workspace_ids=[agent.workspace_id])
                          .filter(agent=agent)[:50]),
        "persona": persona,
        "agent_files": [files[k] for k in PERSONA_FILES if k in files and files[k].content],
        "user_files": user_files,
        "tools": tools,
        "tools_json": tools_json,
        "keys": selectors.agent_keys(agent),
        "pending": selectors.pending_proposal_count_for(agent),
        "pending_changes": selectors.pending_changes_for(request.user, agent),
        "governed": governed,
        "policy": {field: getattr(agent, field) for field in POLICY_INPUTS},
        "strategies": Strategy.choices,
        "write_policies": WritePolicy.choices,
        "backends": Backend.choices,
        "encodings": ENCODING_NAMES,
        "limit_fields": [(f"limit_{k}", f"{k.upper()}.md", governed.get(f"limit_{k}", ""))
                         for k in ("soul", "about", "tools", "user", "memory")],
        "errors": {},
        "notice": "",
        "notice_for": "",
        "raw_key": "",
    }


@login_required
@require_GET
def agent_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The agent page; each of its forms posts to its own URL below."""
    agent = _agent_or_404(request, slug)
    return TemplateResponse(request, "reviews/admin/agent.html", _agent_context(request, agent))


# What an action on the agent page does: it fills `overrides` (what the page
# shows again next to an error) and returns the notice, or its own response.
AgentAction = Callable[[HttpRequest, Agent, dict[str, Any]], "str | HttpResponse"]


def _agent_action(request: HttpRequest, slug: str, fragment: str, act: AgentAction) -> HttpResponse:
    """Run one action of the agent page. A plain POST redirects to the page
    with a message; an htmx POST re-renders the action's fragment. A wrong
    role is a 403, an unknown object a 404, any other refusal is shown in
    the fragment with its status."""
    agent = _agent_or_404(request, slug)
    overrides: dict[str, Any] = {}
    error, error_status = "", 200
    notice: str = ""
    try:
        result = act(request, agent, overrides)
        if isinstance(result, HttpResponse):
            return result
        notice = result
    except errors.PermissionDenied as exc:
        raise _forbidden(exc) from exc
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc
    except errors.DomainError as exc:
        error, error_status = exc.detail, exc.status
        overrides.setdefault("errors", {fragment: error})

    if not error and not request.htmx:  # type: ignore[attr-defined]
        messages.success(request, notice)
        return HttpResponseRedirect(reverse("agent", args=[agent.slug]) + f"#{fragment}")
    agent.refresh_from_db()
    ctx = _agent_context(request, agent)
    ctx.update(overrides)
    if not error:
        ctx["notice"], ctx["notice_for"] = notice, fragment
    template = "reviews/admin/agent.html"
    if request.htmx:  # type: ignore[attr-defined]
        template += f"#{fragment}"
    return TemplateResponse(request, template, ctx, status=_error_status(request, error_status) if error else 200)


def _persona(request: HttpRequest, agent: Agent, overrides: dict[str, Any]) -> str:
    form = forms.PersonaForm(request.POST)
    try:
        forms.valid(form)
        # A double-submitted form would make two proposals.
        once.consume(request)
        proposal = services.propose_persona_edit(agent=agent, kind=form.kind_value, content=form.content_value,
                                                 reason=form.reason_value, actor_user=request.user)
    except errors.PermissionDenied:
        raise
    except errors.DomainError as exc:
        overrides["persona_edit"] = shown = form.shown()
        kind = shown["kind"]
        overrides["errors"] = {kind: exc.detail}
        raise
    return format_html(
        'Proposal <a href="{}">#{}</a> created; another reviewer must approve it.',
        reverse("proposal", args=[proposal.pk]), proposal.pk,
    )


def _tools(request: HttpRequest, agent: Agent, overrides: dict[str, Any]) -> str:
    form = forms.ToolsForm(request.POST)
    overrides["tools_json"] = form.raw
    rows = services.replace_tools(agent=agent, tools=forms.valid(form).tools_value, actor=request.user)
    return f"Tool registry set to {len(rows)} tool(s)."


def _policies(request: HttpRequest, agent: Agent, overrides: dict[str, Any]) -> str:
    form = forms.valid(forms.PoliciesForm(request.POST))
    try:
        update = services.update_agent(agent=agent, settings=form.settings, actor=request.user,
                                       reason=form.reason_value)
    except errors.PermissionDenied:
        raise
    except errors.DomainError:
        overrides["policy"] = form.settings
        raise
    if update.change is not None:
        return format_html(
            'Saved as <a href="{}#change-{}">change #{}</a>: it weakens the gate, so another admin has to '
            "approve it on the Changes page before it takes effect. Nothing has changed yet.",
            reverse("changes"), update.change.pk, update.change.pk,
        )
    if update.applied:
        return f"Policies saved: {', '.join(update.applied)} changed."
    return "Nothing changed."


def _consolidate(request: HttpRequest, agent: Agent, overrides: dict[str, Any]) -> str:
    form = forms.valid(forms.ConsolidateForm(request.POST))
    run, created = consolidation.trigger_run(agent=agent, user_ref=form.user_ref, user=request.user)
    return (
        f"Consolidation run #{run.pk} queued for {run.user_ref}; its proposals will appear in the queue."
        if created
        else f"Consolidation run #{run.pk} for {run.user_ref} is already {run.status}."
    )


def _key_create(request: HttpRequest, agent: Agent, overrides: dict[str, Any]) -> HttpResponse:
    form = forms.valid(forms.KeyCreateForm(request.POST))
    once.consume(request)
    key, raw_key = services.issue_agent_key(agent=agent, name=form.name_value, actor=request.user)
    # The raw key is shown in this response only: never stored, never
    # in a redirect or the message storage.
    ctx = _agent_context(request, agent)
    ctx.update(raw_key=raw_key, new_key=key, notice_for="keys",
               notice=f"Key {key.prefix}… created. Copy it now: it will not be shown again.")
    template = "reviews/admin/agent.html" + ("#keys" if request.htmx else "")  # type: ignore[attr-defined]
    response = TemplateResponse(request, template, ctx)
    response["Cache-Control"] = "no-store"
    return response


def _key_revoke(request: HttpRequest, agent: Agent, overrides: dict[str, Any], key_id: int) -> str:
    forms.valid(forms.KeyRevokeForm(request.POST))
    key = services.revoke_agent_key(key=services.get_agent_key(agent=agent, key_id=key_id), actor=request.user)
    return f"Key {key.prefix}… revoked; requests with it are refused from now on."


def _agent_view(fragment: str, act: Callable[..., str | HttpResponse]) -> Callable[..., HttpResponse]:
    """The POST-only view of one action; the URL's other arguments (a key's
    id) go to the action."""

    @login_required
    @require_POST
    def view(request: HttpRequest, slug: str, **url: int) -> HttpResponse:
        return _agent_action(request, slug, fragment, lambda r, agent, overrides: act(r, agent, overrides, **url))

    view.__name__ = view.__qualname__ = "agent" + act.__name__
    return view


agent_persona = _agent_view("persona", _persona)
agent_tools = _agent_view("tools", _tools)
agent_policies = _agent_view("policies", _policies)
agent_consolidate = _agent_view("files", _consolidate)
agent_key_create = _agent_view("keys", _key_create)
agent_key_revoke = _agent_view("keys", _key_revoke)


# --- context preview -------------------------------------------------------------------


@login_required
@require_GET
def context_preview(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    agent = _agent_or_404(request, slug)
    user_ref = request.GET.get("user", "").strip()
    strategy = request.GET.get("strategy", "") or agent.strategy
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


# --- audit -------------------------------------------------------------------------------




AUDIT_FILTERS = ("action", "agent", "actor", "user", "q", "date_from", "date_to")
# Not filters, but understood: which page, which export.
AUDIT_OTHER_PARAMS = ("page", "format")
AUDIT_FORMATS = ("csv", "json")
AUDIT_TEXT_MAX = 200


@dataclass(frozen=True)
class AuditProblem:
    code: str  # unknown_parameter or invalid
    param: str
    message: str


def filtered_events(request: HttpRequest) -> tuple[QuerySet[AuditEvent], dict[str, str], list[AuditProblem]]:
    """The events the query string asks for, and what in it was not
    understood: an unknown parameter or a value that is not one is named,
    never silently taken for "everything" (the page shows it, the export
    refuses with it)."""
    params = {k: request.GET.get(k, "").strip() for k in AUDIT_FILTERS}
    problems = [AuditProblem("unknown_parameter", name, f"{name!r} is not a filter here; it was ignored. The "
                             f"filters are {', '.join(AUDIT_FILTERS)}.")
                for name in request.GET if name not in AUDIT_FILTERS + AUDIT_OTHER_PARAMS]
    fmt = request.GET.get("format", "")
    if fmt and fmt not in AUDIT_FORMATS:
        problems.append(AuditProblem("invalid", "format", f"format must be csv or json; {fmt[:20]!r} was ignored."))
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
    events, params, problems = filtered_events(request)
    fmt = request.GET.get("format", "")
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


# --- dashboard ---------------------------------------------------------------------------


def _day_labels(days: list[date]) -> list[str]:
    return [d.strftime("%b %d") for d in days]


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    workspace_ids = services.workspace_ids_for(request.user)
    if not workspace_ids:
        raise PermissionDenied("You have no role in any workspace.")
    now = timezone.now()
    today = timezone.localdate()
    days = [today - timedelta(days=DASHBOARD_DAYS - 1 - i) for i in range(DASHBOARD_DAYS)]
    since = now - timedelta(days=DASHBOARD_DAYS)
    runs_by_status, spend = consolidation.run_figures(workspace_ids, since=since)
    figures = selectors.dashboard(workspace_ids, since=since, runs_by_status=runs_by_status, spend=spend)
    per_day = figures.decided
    decisions_chart = charts.bar_chart(
        title=f"Decisions per day, last {DASHBOARD_DAYS} days",
        labels=_day_labels(days),
        series=[
            charts.Series("Approved", [per_day.get((d, ProposalStatus.APPROVED), 0) for d in days], "#009E73"),
            charts.Series("Rejected", [per_day.get((d, ProposalStatus.REJECTED), 0) for d in days], "#D55E00"),
        ],
        empty_message="No decisions yet",
    ) if per_day else charts.bar_chart(title="Decisions per day", labels=[], series=[],
                                       empty_message="No decisions in the last 14 days")

    runs_chart = tokens_chart = cost_chart = None
    if figures.run_total:
        by_status = figures.runs_by_status or {}
        spend = figures.spend
        runs_chart = charts.bar_chart(
            title="Consolidation runs by outcome",
            labels=[s.replace("_", " ") for s in selectors.RUN_STATUSES],
            series=[charts.Series("Runs", [by_status.get(s, 0) for s in selectors.RUN_STATUSES])],
        )
        tokens_chart = charts.line_chart(
            title="Consolidation tokens per day",
            labels=_day_labels(days),
            series=[
                charts.Series("Tokens in", [spend[d]["tin"] or 0 if d in spend else 0 for d in days]),
                charts.Series("Tokens out", [spend[d]["tout"] or 0 if d in spend else 0 for d in days]),
            ],
            unit="tokens",
        )
        cost_chart = charts.bar_chart(
            title="Consolidation cost per day",
            labels=_day_labels(days),
            series=[charts.Series("Cost", [float(spend[d]["cost"] or 0) if d in spend else 0 for d in days])],
            unit="USD",
        )

    trends = _trend_charts(workspace_ids, days, since=now - timedelta(days=DASHBOARD_DAYS), now=now)
    agents_qs = services.visible_agents(request.user)
    near = list(selectors.near_cap_files(agents_qs)[:50])
    for row in near:
        row.percent = round(100 * row.chars / row.cap) if row.cap else 0  # type: ignore[attr-defined]
    stale = list(selectors.stale_files(agents_qs, now)[:50])
    return TemplateResponse(
        request,
        "reviews/admin/dashboard.html",
        {
            "queue": {"size": figures.queue_size, "oldest": figures.oldest},
            "oldest_age": (now - figures.oldest) if figures.oldest else None,
            "stale_count": figures.stale_count,
            "overdue": figures.overdue,
            "due": figures.due,
            "median_decision": figures.median_decision,
            "decisions_timed": figures.decisions_timed,
            "decisions_chart": decisions_chart,
            "runs_chart": runs_chart,
            "run_total": figures.run_total,
            "tokens_chart": tokens_chart,
            "cost_chart": cost_chart,
            "near_cap": near,
            "stale_files": stale,
            "near_cap_percent": selectors.NEAR_CAP_PERCENT,
            "agent_scoped": AGENT_SCOPED,
            "attention": list(consolidation.pairs_needing_attention(workspace_ids=workspace_ids)[:50]),
            "trends": trends,
        },
    )


# Agents drawn as their own line in "spend per agent per day"; the rest are summed.
SPEND_AGENTS = 6


def _trend_charts(workspace_ids: list[int], days: list[date], *, since: Any, now: Any) -> dict[str, Any]:
    figures = selectors.trends(workspace_ids, since=since, now=now)
    labels = _day_labels(days)
    # A day without a new version keeps the size the files had.
    average: list[float] = []
    largest: list[float] = []
    for d in days:
        avg, top = figures.memory_size.get(d, (average[-1] if average else 0, largest[-1] if largest else 0))
        average.append(round(avg))
        largest.append(top)
    size_chart = charts.line_chart(
        title="MEMORY.md size, versions written per day",
        labels=labels,
        series=[charts.Series("Average", average), charts.Series("Largest", largest)],
        unit="chars",
    ) if figures.memory_size else None
    totals: dict[str, float] = {}
    for (slug, _day), usd in figures.spend.items():
        totals[slug] = totals.get(slug, 0.0) + usd
    shown = sorted(totals, key=lambda slug: (-totals[slug], slug))[:SPEND_AGENTS]
    series = [charts.Series(slug, [figures.spend.get((slug, d), 0.0) for d in days]) for slug in shown]
    others = [slug for slug in totals if slug not in shown]
    if others:
        series.append(charts.Series(f"{len(others)} other agents",
                                    [sum(figures.spend.get((slug, d), 0.0) for slug in others) for d in days]))
    spend_chart = charts.line_chart(title="Consolidation spend per agent per day", labels=labels, series=series,
                                    unit="USD") if series else None
    return {"figures": figures, "size_chart": size_chart, "spend_chart": spend_chart}


# --- workspace settings ---------------------------------------------------------------

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


def _setting_text(field: str, value: Any) -> str:
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


def _workspace_settings_context(request: HttpRequest, workspace: Workspace,
                                typed: dict[str, str] | None = None, error: str = "") -> dict[str, Any]:
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
        "is_admin": _is_admin(request, workspace.pk),
        "pending_changes": selectors.pending_workspace_settings_changes(request.user, workspace),
        "reason": (typed or {}).get("reason", ""),
        "error": error,
    }


@login_required
@require_http_methods(["GET", "POST"])
def workspace_settings(request: HttpRequest, slug: str) -> HttpResponse:
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

    typed = {field: request.POST[field] for field in services.WORKSPACE_SETTINGS if field in request.POST}
    reason = request.POST.get("reason", "").strip()
    changed = {field: value for field, value in typed.items()
               if not _same_text(field, value, _setting_text(field, getattr(workspace, field)))}
    try:
        # The service's own role check, before the form token is spent.
        services.require_admin(user=request.user, workspace=workspace.pk, action="change workspace settings")
        if not reason:
            raise errors.Invalid("Say why you change the workspace settings.", field="reason")
        # A double-submitted form would request the same change twice.
        once.consume(request)
        update = services.update_workspace(workspace=workspace, actor=request.user, settings=changed,
                                           reason=reason)
    except errors.PermissionDenied as exc:
        raise _forbidden(exc) from exc
    except errors.DomainError as exc:
        ctx = _workspace_settings_context(request, workspace, {**typed, "reason": reason}, exc.detail)
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
