"""The agents list with its create form (`agents/`) and the agent page
(`agents/<slug>/`, GET), whose forms each post to their own URL: persona,
tools, policies, consolidate, key create, key revoke.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from consolidation import services as consolidation
from memoryhub import errors, selectors, services
from memoryhub.models import Agent, Backend, FileKind, Strategy, WritePolicy
from memoryhub.services.agents import governed_settings
from memoryhub.tokens import ENCODING_NAMES
from reviews import forms, once
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import agent_or_404, forbidden, is_admin, refusal_status

PERSONA_FILES = (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS)


# --- agents list -----------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def agents(request: HtmxHttpRequest) -> HttpResponse:
    admin_workspaces = selectors.admin_workspaces(request.user)
    form: dict[str, str] = {"strategy": Strategy.HYBRID_V2, "write_policy": WritePolicy.REVIEW,
                            "backend": Backend.HEURISTIC}
    error, error_status = "", 200
    template_name = "reviews/admin/agents.html"
    if request.method == "POST":
        posted = forms.CreateAgentForm(request.POST)
        form = posted.shown()
        try:
            forms.valid(posted)
            workspace = selectors.workspace(posted.workspace_id)
            if workspace is None:
                raise errors.PermissionDenied("Choose a workspace where you are an admin.")
            agent = services.create_agent(
                actor=request.user,
                workspace=workspace,
                slug=posted.value("slug"),
                name=posted.value("name"),
                strategy=posted.value("strategy"),
                write_policy=posted.value("write_policy"),
                backend=posted.value("backend"),
            )
        except errors.PermissionDenied as exc:
            raise forbidden(exc) from exc
        except errors.DomainError as exc:
            error, error_status = exc.detail, exc.status
        else:
            messages.success(request, f"Agent {agent.slug} created.")
            url = reverse("agent", args=[agent.slug])
            if request.htmx:
                return HttpResponseClientRedirect(url)
            return HttpResponseRedirect(url)

    context = {
        "agents": selectors.agents_overview(request.user),
        "admin_workspaces": admin_workspaces,
        "workspaces": selectors.user_workspaces(request.user),
        "form": form,
        "error": error,
        "strategies": Strategy.choices,
        "write_policies": WritePolicy.choices,
        "backends": Backend.choices,
    }
    if error:
        return page_or_fragment(request, template_name, context, fragments=("create-agent",),
                                status=refusal_status(request, error_status))
    return TemplateResponse(request, template_name, context)


# --- one agent --------------------------------------------------------------------------

POLICY_INPUTS = services.POLICY_FIELDS


def _agent_context(request: HtmxHttpRequest, agent: Agent) -> dict[str, object]:
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
        "is_admin": is_admin(request, agent.workspace_id),
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
def agent_detail(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The agent page; each of its forms posts to its own URL below."""
    agent = agent_or_404(request, slug)
    return TemplateResponse(request, "reviews/admin/agent.html", _agent_context(request, agent))


# What an action on the agent page does: it fills `overrides` (what the page
# shows again next to an error) and returns the notice, or its own response.
AgentAction = Callable[[HtmxHttpRequest, Agent, dict[str, object]], "str | HttpResponse"]


def _agent_action(request: HtmxHttpRequest, slug: str, fragment: str, act: AgentAction) -> HttpResponse:
    """Run one action of the agent page. A plain POST redirects to the page
    with a message; an htmx POST re-renders the action's fragment. A wrong
    role is a 403, an unknown object a 404, any other refusal is shown in
    the fragment with its status."""
    agent = agent_or_404(request, slug)
    overrides: dict[str, object] = {}
    error, error_status = "", 200
    notice: str = ""
    try:
        result = act(request, agent, overrides)
        if isinstance(result, HttpResponse):
            return result
        notice = result
    except errors.PermissionDenied as exc:
        raise forbidden(exc) from exc
    except errors.NotFound as exc:
        raise Http404(exc.detail) from exc
    except errors.DomainError as exc:
        error, error_status = exc.detail, exc.status
        overrides.setdefault("errors", {fragment: error})

    if not error and not request.htmx:
        messages.success(request, notice)
        return HttpResponseRedirect(reverse("agent", args=[agent.slug]) + f"#{fragment}")
    agent.refresh_from_db()
    ctx = _agent_context(request, agent)
    ctx.update(overrides)
    if not error:
        ctx["notice"], ctx["notice_for"] = notice, fragment
    return page_or_fragment(request, "reviews/admin/agent.html", ctx, fragments=(fragment,),
                            status=refusal_status(request, error_status) if error else 200)


def _persona(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object]) -> str:
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


def _tools(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object]) -> str:
    form = forms.ToolsForm(request.POST)
    overrides["tools_json"] = form.raw
    rows = services.replace_tools(agent=agent, tools=forms.valid(form).tools_value, actor=request.user)
    return f"Tool registry set to {len(rows)} tool(s)."


def _policies(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object]) -> str:
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


def _consolidate(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object]) -> str:
    form = forms.valid(forms.ConsolidateForm(request.POST))
    run, created = consolidation.trigger_run(agent=agent, user_ref=form.user_ref, user=request.user)
    return (
        f"Consolidation run #{run.pk} queued for {run.user_ref}; its proposals will appear in the queue."
        if created
        else f"Consolidation run #{run.pk} for {run.user_ref} is already {run.status}."
    )


def _key_create(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object]) -> HttpResponse:
    form = forms.valid(forms.KeyCreateForm(request.POST))
    once.consume(request)
    key, raw_key = services.issue_agent_key(agent=agent, name=form.name_value, actor=request.user)
    # The raw key is shown in this response only: never stored, never
    # in a redirect or the message storage.
    ctx = _agent_context(request, agent)
    ctx.update(raw_key=raw_key, new_key=key, notice_for="keys",
               notice=f"Key {key.prefix}… created. Copy it now: it will not be shown again.")
    response = page_or_fragment(request, "reviews/admin/agent.html", ctx, fragments=("keys",))
    response["Cache-Control"] = "no-store"
    return response


def _key_revoke(request: HtmxHttpRequest, agent: Agent, overrides: dict[str, object], key_id: int) -> str:
    forms.valid(forms.KeyRevokeForm(request.POST))
    key = services.revoke_agent_key(key=services.get_agent_key(agent=agent, key_id=key_id), actor=request.user)
    return f"Key {key.prefix}… revoked; requests with it are refused from now on."


def _agent_view(fragment: str, act: Callable[..., str | HttpResponse]) -> Callable[..., HttpResponse]:
    """The POST-only view of one action; the URL's other arguments (a key's
    id) go to the action."""

    @login_required
    @require_POST
    def view(request: HtmxHttpRequest, slug: str, **url: int) -> HttpResponse:
        return _agent_action(request, slug, fragment, lambda r, agent, overrides: act(r, agent, overrides, **url))

    view.__name__ = view.__qualname__ = "agent" + act.__name__
    return view


agent_persona = _agent_view("persona", _persona)
agent_tools = _agent_view("tools", _tools)
agent_policies = _agent_view("policies", _policies)
agent_consolidate = _agent_view("files", _consolidate)
agent_key_create = _agent_view("keys", _key_create)
agent_key_revoke = _agent_view("keys", _key_revoke)
