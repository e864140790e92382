"""The Model Context Protocol server: the memory tools for MCP clients.

Served two ways, with the same tools: streamable HTTP at /mcp/ inside the web
process (memoryhub.asgi routes that path here), authenticated by the agent's
API key, and stdio for one agent (`manage.py mcp_stdio --agent SLUG`).

Built on the official SDK's low-level `Server` rather than `MCPServer`:
MCPServer derives each tool's input schema from a Python signature, while
here the schemas of memoryhub.tool_schemas are the one source of truth, the
same ones `GET /api/v1/memory/tool-schemas` publishes. Each tool is a thin
call of the services the REST API calls, with the agent as the principal;
the database is reached through `sync_to_async`, one call per tool call.

HTTP runs stateless with JSON answers: no session lives in a worker's
memory, so any web worker can answer any request, and the key is checked on
every request (a revoked key stops working at once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryhub import context, errors, search, services, tool_schemas
from memoryhub.authentication import AgentAuth
from memoryhub.models import Agent
from memoryhub.rest import AgentKeyThrottle

logger = logging.getLogger(__name__)

SERVER_NAME = "memoryhub"
VERSION = "1.1"  # the API contract the tools follow (API.md)
PATH = "/mcp/"
_STATE_KEY = "memoryhub_agent"
INSTRUCTIONS = (
    "Governed long-term memory for this agent. Before acting on a user's request, search memory "
    "(memory_search) for what you already know. Load USER.md and MEMORY.md with memory_view when needed. "
    "Change memory one entry at a time with memory_add, memory_replace and memory_remove; writes may go to "
    "human review before they are served."
)


# --- the tools (sync: they run in a thread) ---------------------------------------------------


@dataclass(frozen=True)
class ToolAnswer:
    text: str
    data: dict[str, Any]


def _usage(agent: Agent, kind: str, chars: int) -> str:
    return services.usage_line(kind=kind, chars=chars, limit=agent.limit_for(kind))


def _view(agent: Agent, args: dict[str, Any]) -> ToolAnswer:
    view = services.read_memory(agent=agent, kind=args["file"], user_ref=args.get("user"))
    served = context.serve_file(content=view.content, withheld=view.withheld)
    data = {
        "file": view.kind, "scope": view.scope, "exists": view.exists, "content": served.text,
        "version": view.version, "chars": view.chars, "limit": view.limit, "limit_kind": view.limit_kind,
        "updated_at": view.updated_at.isoformat() if view.updated_at else None, "stale": view.stale,
        "blocked": list(served.blocked), "withheld": view.withheld,
    }
    header = f"{_usage(agent, view.kind, view.chars)} · version {view.version}"
    if view.withheld:
        return ToolAnswer(f"{header}\n\n{served.text} (a reviewer took this version out of service)", data)
    if not view.exists:
        return ToolAnswer(f"{header}\n\n({view.kind} is empty: nothing is stored yet.)", data)
    return ToolAnswer(f"{header}\n\n{context.as_data(agent=agent, kind=view.kind, text=served.text)}", data)


def _search(agent: Agent, args: dict[str, Any]) -> ToolAnswer:
    hits = search.search(agent=agent, user_ref=args.get("user"), query=args["query"], limit=args.get("limit", 10))
    results = [hit.as_dict() for hit in hits]
    if not results:
        return ToolAnswer(f"Nothing in memory matches {args['query']!r}.", {"results": []})
    lines = []
    for number, hit in enumerate(results, start=1):
        where = hit["file"] if hit["source"] == "file" else f"log of session {hit['session']}, {hit['created_at']}"
        lines.append(f"{number}. [{where}] {hit['snippet']}")
    return ToolAnswer(context.as_data(agent=agent, kind="search", text="\n".join(lines)), {"results": results})


def _written(agent: Agent, kind: str, result: services.WriteResult, done: str) -> ToolAnswer:
    if result.proposal is not None:
        return ToolAnswer(
            f"Sent for review as proposal #{result.proposal.pk} (pending): nothing is served until a person "
            "approves it.",
            {"proposal": result.proposal.pk, "status": "pending"},
        )
    data: dict[str, Any] = {"file": kind, "version": result.version, "chars": result.chars}
    if result.changed:
        text = f"{done} {kind}: now v{result.version}, {_usage(agent, kind, result.chars)}."
    else:
        text = f"{kind} already says that; nothing changed (v{result.version})."
    if result.warning:
        data["warning"] = result.warning
        text += f"\n{result.warning}"
    return ToolAnswer(text, data)


def _add(agent: Agent, args: dict[str, Any]) -> ToolAnswer:
    result = services.add_entry(agent=agent, kind=args["file"], user_ref=args.get("user"), text=args["text"],
                                reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Added the entry to")


def _replace(agent: Agent, args: dict[str, Any]) -> ToolAnswer:
    result = services.replace_entry(agent=agent, kind=args["file"], user_ref=args.get("user"),
                                    old_text=args["old_text"], new_text=args["new_text"],
                                    reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Replaced the entry in")


def _remove(agent: Agent, args: dict[str, Any]) -> ToolAnswer:
    result = services.remove_entry(agent=agent, kind=args["file"], user_ref=args.get("user"),
                                   old_text=args["old_text"], reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Removed the entry from")


HANDLERS: dict[str, Callable[[Agent, dict[str, Any]], ToolAnswer]] = {
    "memory_view": _view,
    "memory_search": _search,
    "memory_add": _add,
    "memory_replace": _replace,
    "memory_remove": _remove,
}
assert set(HANDLERS) == set(tool_schemas.BY_NAME), "every defined tool has a handler, and only those"


def run_tool(*, agent: Agent, name: str, arguments: Any) -> ToolAnswer:
    """One tool call for one agent. Raises DomainError for bad input or a
    refused operation (nothing is stored then)."""
    tool = tool_schemas.BY_NAME.get(name)
    if tool is None:
        raise errors.NotFound(f"There is no tool {name!r}; the tools are {', '.join(tool_schemas.BY_NAME)}.")
    return HANDLERS[name](agent, tool_schemas.check_arguments(tool, arguments))


def _as_result(answer: ToolAnswer) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)],
                                structured_content=answer.data)


def _as_error(code: str, detail: str, extra: dict[str, Any] | None = None) -> types.CallToolResult:
    body = {"code": code, "detail": detail, **(extra or {})}
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{code}: {detail}")],
                                structured_content={"error": body}, is_error=True)


def call_tool_sync(*, agent: Agent | None, agent_slug: str | None, name: str, arguments: Any) -> types.CallToolResult:
    """A tool call as a request of its own: stale connections are dropped
    before and after, as Django does around every request."""
    close_old_connections()
    try:
        if agent is None:
            # stdio: the agent is read on every call, so a deactivated
            # agent or a changed write policy takes effect at once.
            agent = Agent.objects.select_related("workspace").filter(slug=agent_slug, is_active=True).first()
            if agent is None:
                return _as_error("not_authenticated", f"The agent {agent_slug!r} does not exist or is not active.")
        return _as_result(run_tool(agent=agent, name=name, arguments=arguments))
    except errors.DomainError as exc:
        return _as_error(exc.code, exc.detail, exc.extra)
    except Exception:
        logger.exception("MCP tool %s failed", name)
        return _as_error("server_error", "Something went wrong on our side; nothing was stored.")
    finally:
        close_old_connections()


# --- the server --------------------------------------------------------------------------------


def build_server(*, agent_slug: str | None = None) -> Server[Any]:
    """The MCP server. With `agent_slug` (stdio) every call acts as that
    agent; without it (HTTP) as the agent whose key authenticated the request."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                   for t in tool_schemas.TOOLS]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        agent = None
        if agent_slug is None:
            request = ctx.request
            agent = request.scope.get("state", {}).get(_STATE_KEY) if request is not None else None
            if agent is None:
                return _as_error("not_authenticated", "Authenticate with 'Authorization: Bearer <agent API key>'.")
        return await sync_to_async(call_tool_sync)(agent=agent, agent_slug=agent_slug, name=params.name,
                                                   arguments=params.arguments)

    return Server(SERVER_NAME, version=VERSION, instructions=INSTRUCTIONS,
                  get_tool_input_schema=lambda name: getattr(tool_schemas.BY_NAME.get(name), "parameters", None),
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(agent_slug: str) -> None:
    server = build_server(agent_slug=agent_slug)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


# --- HTTP ---------------------------------------------------------------------------------------


def _error(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "detail": detail}}, status_code=status, headers=headers)


@dataclass(frozen=True)
class _Checked:
    agent: Agent | None = None
    refusal: JSONResponse | None = None


def _authenticate(authorization: str) -> _Checked:
    """The agent behind an Authorization header, under the same key lookup
    and per-key rate limit as the REST API (one budget for both doors)."""
    close_old_connections()
    try:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return _Checked(refusal=_error(401, "not_authenticated",
                                           "Authenticate with 'Authorization: Bearer <agent API key>'.",
                                           {"WWW-Authenticate": 'Bearer realm="memoryhub"'}))
        found = services.agent_for_key(secret.strip())
        if found is None:
            return _Checked(refusal=_error(401, "not_authenticated",
                                           "This API key is unknown or has been revoked.",
                                           {"WWW-Authenticate": 'Bearer realm="memoryhub"'}))
        agent, key = found
        throttle = AgentKeyThrottle()
        if not throttle.allow_request(SimpleNamespace(auth=AgentAuth(agent=agent, key=key)), None):  # type: ignore[arg-type]
            wait = int(throttle.wait())
            return _Checked(refusal=_error(429, "throttled", f"Too many requests; try again in {wait} seconds.",
                                           {"Retry-After": str(wait)}))
        services.touch_last_used(type(key), key.pk, key.last_used_at)
        return _Checked(agent=agent)
    finally:
        close_old_connections()


class AgentKeyAuth:
    """ASGI middleware in front of the MCP transport: the Host must be one
    Django serves (ALLOWED_HOSTS), and every request carries a usable agent
    key, whose agent the tools then act as."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        domain, _ = split_domain_port(headers.get("host", ""))
        allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
        if not domain or not validate_host(domain, allowed):
            await _error(400, "invalid", "This host is not served here.")(scope, receive, send)
            return
        checked = await sync_to_async(_authenticate)(headers.get("authorization", ""))
        if checked.refusal is not None:
            await checked.refusal(scope, receive, send)
            return
        scope.setdefault("state", {})[_STATE_KEY] = checked.agent
        await self.app(scope, receive, send)


@dataclass
class HttpApp:
    """The MCP endpoint as an ASGI app, with the lifespan that runs its
    session manager. One per process: a session manager runs only once."""

    manager: StreamableHTTPSessionManager
    endpoint: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoint(scope, receive, send)


def http_app() -> HttpApp:
    manager = StreamableHTTPSessionManager(
        app=build_server(),
        stateless=True,
        json_response=True,
        # The Host check is AgentKeyAuth's (Django's ALLOWED_HOSTS); the SDK's
        # own list would refuse every production host name.
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return HttpApp(manager=manager, endpoint=AgentKeyAuth(manager.handle_request))

