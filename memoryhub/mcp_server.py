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

import json
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ParamSpec, TypedDict, TypeVar, cast

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryhub import context, errors, search, services, tool_schemas
from memoryhub.authentication import AgentAuth
from memoryhub.models import Agent
from memoryhub.rest import AgentKeyThrottle

logger = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")

SERVER_NAME = "memoryhub"
VERSION = "1.1"  # the API contract the tools follow (API.md)
PATH = "/mcp/"
_STATE_KEY = "memoryhub_agent"
INSTRUCTIONS = (
    "Governed long-term memory for this agent. Before acting on a user's request, search memory "
    "(memory_search) for what you already know. Load USER.md and MEMORY.md with memory_view when needed. "
    "Change memory one entry at a time with memory_add, memory_replace and memory_remove; writes may go to "
    "human review before they are served. Before your conversation history is compacted, save what matters "
    "with memory_note."
)


# --- the tools (sync: they run in a thread) ---------------------------------------------------


class ToolArgs(TypedDict, total=False):
    """A tool call's arguments as its JSON Schema let them through
    (tool_schemas.check_arguments): each tool takes some of these."""

    file: str
    user: str
    query: str
    limit: int
    text: str
    old_text: str
    new_text: str
    reason: str
    session: int


@dataclass(frozen=True)
class ToolAnswer:
    text: str
    data: dict[str, object]


def _usage(agent: Agent, kind: str, chars: int) -> str:
    return services.usage_line(kind=kind, chars=chars, limit=agent.limit_for(kind))


def _view(agent: Agent, args: ToolArgs) -> ToolAnswer:
    if args["file"] == tool_schemas.NOTES_FILE:
        return _notes(agent, args)
    answer = _view_file(agent, args)
    return _with_pending(agent, args, answer)


def _with_pending(agent: Agent, args: ToolArgs, answer: ToolAnswer) -> ToolAnswer:
    """The file's answer, and after it, apart and marked, this agent's own
    proposals on the file that wait for review (services.pending)."""
    changes = services.own_pending_changes(agent=agent, kind=args["file"], user_ref=args.get("user"))
    data = {**answer.data, "pending_review": [change.as_dict() for change in changes]}
    if not changes:
        return ToolAnswer(answer.text, data)
    lines = ["", "---", f"PENDING REVIEW — your own changes to {args['file']} that are NOT served yet (a person "
             "must approve them first; they are not part of the file above):"]
    for change in changes:
        lines.append(f"* proposal #{change.proposal}, filed {change.created_at:%Y-%m-%d %H:%M} UTC:")
        lines += [f"  + {entry}" for entry in change.adds]
        lines += [f"  - {entry}" for entry in change.removes]
    pending = context.as_data(agent=agent, kind=args["file"], text="\n".join(lines[3:]))
    return ToolAnswer("\n".join([answer.text, *lines[:3], pending]), data)


def _notes(agent: Agent, args: ToolArgs) -> ToolAnswer:
    if not args.get("user"):
        raise errors.Invalid("Pass `user`: notes belong to one user's conversations.", field="user")
    notes = services.recent_notes(agent=agent, user_ref=args["user"])
    data = {"file": tool_schemas.NOTES_FILE, "days": services.NOTES_DAYS, "notes": [n.as_dict() for n in notes]}
    if not notes:
        return ToolAnswer(f"You saved no notes with this user in the last {services.NOTES_DAYS} days.", data)
    lines = [f"{n.created_at:%Y-%m-%d %H:%M} UTC (session {n.session}): {n.text}" for n in notes]
    header = f"Your notes with this user, last {services.NOTES_DAYS} days (not memory; not in your context):"
    return ToolAnswer(f"{header}\n\n{context.as_data(agent=agent, kind='search', text=chr(10).join(lines))}", data)


def _note(agent: Agent, args: ToolArgs) -> ToolAnswer:
    saved = services.add_note(agent=agent, user_ref=args["user"], text=args["text"], session_id=args.get("session"))
    data = {"entry": saved.entry.pk, "session": saved.session.pk, "created_at": saved.entry.created_at.isoformat(),
            "redacted": saved.redacted, "redacted_rules": saved.redacted_rules}
    text = f"Noted in session {saved.session.pk}'s log (entry {saved.entry.pk})."
    if saved.redacted:
        text += f" {saved.redacted} secret(s) were replaced by [REDACTED:…] before storing."
    return ToolAnswer(text, data)


def _view_file(agent: Agent, args: ToolArgs) -> ToolAnswer:
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


def _search(agent: Agent, args: ToolArgs) -> ToolAnswer:
    hits = search.search(agent=agent, user_ref=args.get("user"), query=args["query"], limit=args.get("limit", 10))
    results = [hit.as_dict() for hit in hits]
    if not results:
        return ToolAnswer(f"Nothing in memory matches {args['query']!r}.", {"results": []})
    lines = []
    for number, hit in enumerate(results, start=1):
        where = (f"{hit['file']} line {hit['line']}" if hit["source"] == "file"
                 else f"log entry {hit['entry']} of session {hit['session']}, {hit['created_at']}")
        lines.append(f"{number}. [{where}] {hit['snippet']}")
    return ToolAnswer(context.as_data(agent=agent, kind="search", text="\n".join(lines)), {"results": results})


def _written(agent: Agent, kind: str, result: services.WriteResult, done: str) -> ToolAnswer:
    if result.proposal is not None:
        if result.duplicate:
            return ToolAnswer(
                f"The same change is already waiting for review as proposal #{result.proposal.pk} (pending); "
                "nothing new was filed. Nothing is served until a person approves it.",
                {"proposal": result.proposal.pk, "status": "pending", "duplicate": True},
            )
        return ToolAnswer(
            f"Sent for review as proposal #{result.proposal.pk} (pending): nothing is served until a person "
            "approves it.",
            {"proposal": result.proposal.pk, "status": "pending"},
        )
    data: dict[str, object] = {"file": kind, "version": result.version, "chars": result.chars}
    if result.changed:
        text = f"{done} {kind}: now v{result.version}, {_usage(agent, kind, result.chars)}."
    else:
        text = f"{kind} already says that; nothing changed (v{result.version})."
    if result.warning:
        data["warning"] = result.warning
        text += f"\n{result.warning}"
    return ToolAnswer(text, data)


def _add(agent: Agent, args: ToolArgs) -> ToolAnswer:
    result = services.add_entry(agent=agent, kind=args["file"], user_ref=args.get("user"), text=args["text"],
                                reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Added the entry to")


def _replace(agent: Agent, args: ToolArgs) -> ToolAnswer:
    result = services.replace_entry(agent=agent, kind=args["file"], user_ref=args.get("user"),
                                    old_text=args["old_text"], new_text=args["new_text"],
                                    reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Replaced the entry in")


def _remove(agent: Agent, args: ToolArgs) -> ToolAnswer:
    result = services.remove_entry(agent=agent, kind=args["file"], user_ref=args.get("user"),
                                   old_text=args["old_text"], reason=args.get("reason", ""))
    return _written(agent, args["file"], result, "Removed the entry from")


HANDLERS: dict[str, Callable[[Agent, ToolArgs], ToolAnswer]] = {
    "memory_view": _view,
    "memory_search": _search,
    "memory_add": _add,
    "memory_replace": _replace,
    "memory_remove": _remove,
    "memory_note": _note,
}
assert set(HANDLERS) == set(tool_schemas.BY_NAME), "every defined tool has a handler, and only those"


def run_tool(*, agent: Agent, name: str, arguments: object) -> ToolAnswer:
    """One tool call for one agent. Raises DomainError for bad input or a
    refused operation (nothing is stored then)."""
    tool = tool_schemas.BY_NAME.get(name)
    if tool is None:
        raise errors.NotFound(f"There is no tool {name!r}; the tools are {', '.join(tool_schemas.BY_NAME)}.")
    # The tool's schema checked the names and types: these are its arguments.
    return HANDLERS[name](agent, cast(ToolArgs, tool_schemas.check_arguments(tool, arguments)))


def _as_result(answer: ToolAnswer) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)],
                                structured_content=answer.data)


# The services' sentences name the REST API's query parameters; a tool's
# caller knows only the tool's arguments (memoryhub.tool_schemas).
REST_TO_TOOL_FIELDS = {"q": "query"}
REST_TO_TOOL_WORDS = (("as ?q=…", "as `query`"), ("pass ?user=<user_ref>", "pass `user`"))


def _in_tool_words(detail: str, extra: dict[str, object]) -> tuple[str, dict[str, object]]:
    for rest, tool in REST_TO_TOOL_WORDS:
        detail = detail.replace(rest, tool)
    field = extra.get("field")
    if isinstance(field, str) and field in REST_TO_TOOL_FIELDS:
        extra = {**extra, "field": REST_TO_TOOL_FIELDS[field]}
    return detail, extra


def _as_error(code: str, detail: str, extra: dict[str, object] | None = None) -> types.CallToolResult:
    detail, extra = _in_tool_words(detail, extra or {})
    body = {"code": code, "detail": detail, **extra}
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{code}: {detail}")],
                                structured_content={"error": body}, is_error=True)


def call_tool_sync(*, agent: Agent | None, agent_slug: str | None, name: str,
                   arguments: object) -> types.CallToolResult:
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


class ToolThreads:
    """The threads tool calls (and key checks) run on: a fixed pool of
    MEMORYHUB_MCP_THREADS, each keeping its database connection between
    calls. One shared thread (sync_to_async's default) serialised every
    tool call of the process: 50 concurrent clients queued on it
    (docs/benchmarks.md, "MCP: 50 clients")."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None

    @property
    def size(self) -> int:
        return max(1, int(settings.MEMORYHUB_MCP_THREADS))

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.size, thread_name_prefix="mcp-tools")
        return self._pool

    def run(self, function: Callable[_P, _R]) -> Callable[_P, Awaitable[_R]]:
        return sync_to_async(function, thread_sensitive=False, executor=self.pool)

    def take(self) -> tuple[ThreadPoolExecutor | None, int]:
        """The pool (to close its threads' connections) and its size; the
        next call starts a new one."""
        pool, self._pool = self._pool, None
        return pool, self.size


TOOL_THREADS = ToolThreads()


def build_server(*, agent_slug: str | None = None) -> Server[object]:
    """The MCP server. With `agent_slug` (stdio) every call acts as that
    agent; without it (HTTP) as the agent whose key authenticated the request."""

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                   for t in tool_schemas.TOOLS]
        )

    async def call_tool(ctx: ServerRequestContext[object], params: types.CallToolRequestParams) -> types.CallToolResult:
        agent = None
        if agent_slug is None:
            request = ctx.request
            agent = request.scope.get("state", {}).get(_STATE_KEY) if request is not None else None
            if agent is None:
                return _as_error("not_authenticated", "Authenticate with 'Authorization: Bearer <agent API key>'.")
        return await TOOL_THREADS.run(call_tool_sync)(agent=agent, agent_slug=agent_slug, name=params.name,
                                                   arguments=params.arguments)

    return Server(SERVER_NAME, version=VERSION, instructions=INSTRUCTIONS,
                  get_tool_input_schema=lambda name: getattr(tool_schemas.BY_NAME.get(name), "parameters", None),
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(agent_slug: str) -> None:
    server = build_server(agent_slug=agent_slug)
    async with stdio_server() as (stdin, stdout):
        await serve_until_answered(server, stdin, stdout)


async def serve_until_answered(server: Server[object], stdin: Any, stdout: Any) -> None:
    """Run the server between stdin and stdout, and when stdin closes, keep
    it running until every request already read has its answer written.

    A client that sends `tools/call` and then closes its end of the pipe
    (a shell `echo … | manage.py mcp_stdio`, a runtime shutting down) would
    otherwise see the server cancel the call midway: the SDK ends its loop,
    and cancels what is in flight, the moment the read side closes. A write
    already in the database commits or rolls back in its own transaction
    either way; this makes sure the answer reaches the client too.
    MEMORYHUB_MCP_STDIO_DRAIN_SECONDS bounds the wait."""
    to_server, server_reads = anyio.create_memory_object_stream[Any](0)
    server_writes, from_server = anyio.create_memory_object_stream[Any](0)
    waiting: set[Any] = set()
    answered = anyio.Event()

    async def pump_in() -> None:
        nonlocal answered
        async with to_server:
            async for item in stdin:
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCRequest):
                    waiting.add(message.id)
                await to_server.send(item)
            with anyio.move_on_after(settings.MEMORYHUB_MCP_STDIO_DRAIN_SECONDS):
                while waiting:
                    await answered.wait()
                    answered = anyio.Event()
            if waiting:
                logger.warning("stdin closed; %d request(s) still unanswered after %s s", len(waiting),
                               settings.MEMORYHUB_MCP_STDIO_DRAIN_SECONDS)

    async def pump_out() -> None:
        async with from_server, stdout:
            async for item in from_server:
                await stdout.send(item)
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id in waiting:
                    waiting.discard(message.id)
                    answered.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        async with server_writes:
            await server.run(server_reads, server_writes, server.create_initialization_options())


# --- HTTP ---------------------------------------------------------------------------------------


# JSON-RPC error codes of our own, in the implementation-defined band
# (-32000 and -32001 are the SDK's).
RPC_NOT_AUTHENTICATED = -32010
RPC_LIMITED = -32011
RPC_UNAVAILABLE = -32012


def _error(status: int, code: str, detail: str, headers: dict[str, str] | None = None, *,
           rpc_code: int = types.INVALID_REQUEST) -> JSONResponse:
    """A refusal an MCP client can show: a JSON-RPC error (the SDK's client
    surfaces its `message`) carrying our machine code and sentence in `data`,
    as the REST API's error body carries them."""
    body = {"jsonrpc": "2.0", "id": None,
            "error": {"code": rpc_code, "message": detail, "data": {"code": code, "detail": detail}}}
    return JSONResponse(body, status_code=status, headers=headers)


@dataclass(frozen=True)
class _Checked:
    agent: Agent | None = None
    key_id: int | None = None
    refusal: JSONResponse | None = None


def _authenticate(authorization: str) -> _Checked:
    """The agent behind an Authorization header, under the same key lookup
    and per-key rate limit as the REST API (one budget for both doors).

    A 401 here carries no `WWW-Authenticate: Bearer` challenge: MCP clients
    read one as "this server speaks OAuth" and start a discovery and login
    flow that MemoryHub does not offer (keys are issued by an admin), ending
    in an error that hides the real one. The body says what to send."""
    close_old_connections()
    try:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return _Checked(refusal=_error(
                401, "not_authenticated", "This MCP server needs an agent API key: send 'Authorization: Bearer "
                "<agent API key>' (an admin issues keys with `manage.py issue_agent_key` or in the console).",
                rpc_code=RPC_NOT_AUTHENTICATED))
        found = services.agent_for_key(secret.strip())
        if found is None:
            return _Checked(refusal=_error(401, "not_authenticated", "This API key is unknown or has been revoked.",
                                           rpc_code=RPC_NOT_AUTHENTICATED))
        agent, key = found
        throttle = AgentKeyThrottle()
        if not throttle.allow_request(SimpleNamespace(auth=AgentAuth(agent=agent, key=key)), None):  # type: ignore[arg-type]
            wait = int(throttle.wait())
            return _Checked(refusal=_error(429, "throttled", f"Too many requests; try again in {wait} seconds.",
                                           {"Retry-After": str(wait)}, rpc_code=RPC_LIMITED))
        services.touch_last_used(type(key), key.pk, key.last_used_at)
        return _Checked(agent=agent, key_id=key.pk)
    finally:
        close_old_connections()


def _bad_id(message: object) -> str | None:
    """What is wrong with a message's id, if anything: JSON-RPC 2.0 allows a
    string or a number, MCP narrows it to a string or an integer, never
    null. A bad id made the SDK take a request for a notification and answer
    202 with nothing, so the client waited forever."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    kind = {dict: "an object", list: "an array", bool: "a boolean", float: "a fractional number",
            type(None): "null"}.get(type(value), type(value).__name__)
    return f"The request's id is {kind}; an id must be a string or an integer."


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when it is over the limit."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class StreamLimits:
    """Open `GET /mcp/` event streams in this process, per key and in all.
    Touched only from the event loop's thread, so plain counters suffice."""

    def __init__(self) -> None:
        self.per_key: dict[int, int] = {}
        self.total = 0

    def refusal(self, key_id: int) -> JSONResponse | None:
        per_key = settings.MEMORYHUB_MCP_STREAMS_PER_KEY
        most = settings.MEMORYHUB_MCP_STREAMS_MAX
        lifetime = int(settings.MEMORYHUB_MCP_STREAM_MAX_SECONDS)
        if self.per_key.get(key_id, 0) >= per_key:
            return _error(429, "too_many_streams",
                          f"This key already holds {per_key} open event streams (GET /mcp/), the most one key may "
                          f"hold; close one first. Each stream ends after {lifetime} seconds.",
                          {"Retry-After": str(max(1, min(lifetime, 60)))}, rpc_code=RPC_LIMITED)
        if self.total >= most:
            return _error(503, "unavailable",
                          f"The server holds its most open event streams ({most}); try again shortly. Tool "
                          "calls (POST /mcp/) are not affected.", {"Retry-After": "5"}, rpc_code=RPC_UNAVAILABLE)
        return None

    def open(self, key_id: int) -> None:
        self.per_key[key_id] = self.per_key.get(key_id, 0) + 1
        self.total += 1

    def close(self, key_id: int) -> None:
        left = self.per_key.get(key_id, 1) - 1
        if left > 0:
            self.per_key[key_id] = left
        else:
            self.per_key.pop(key_id, None)
        self.total -= 1


class AgentKeyAuth:
    """ASGI middleware in front of the MCP transport: the Host must be one
    Django serves (ALLOWED_HOSTS), and every request carries a usable agent
    key, whose agent the tools then act as. An event stream counts against
    its key's and the process's limits and ends after its lifetime; a POST's
    body is read here (bounded) so a bad JSON-RPC id is refused with -32600."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.streams = StreamLimits()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        domain, _ = split_domain_port(headers.get("host", ""))
        allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
        if not domain or not validate_host(domain, allowed):
            await _error(400, "invalid", "This host is not served here.")(scope, receive, send)
            return
        checked = await TOOL_THREADS.run(_authenticate)(headers.get("authorization", ""))
        if checked.refusal is not None:
            await checked.refusal(scope, receive, send)
            return
        assert checked.key_id is not None
        scope.setdefault("state", {})[_STATE_KEY] = checked.agent
        method = scope.get("method", "")
        if method == "GET":
            await self._stream(checked.key_id, scope, receive, send)
            return
        if method == "POST":
            body = await _read_body(receive, settings.MEMORYHUB_MCP_MAX_BODY_BYTES)
            if body is None:
                await _error(413, "too_large", f"The request body is over "
                             f"{settings.MEMORYHUB_MCP_MAX_BODY_BYTES} bytes.")(scope, receive, send)
                return
            problem = self._id_problem(body)
            if problem is not None:
                await _error(400, "invalid", problem)(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    @staticmethod
    def _id_problem(body: bytes) -> str | None:
        try:
            parsed = json.loads(body)
        except ValueError:
            return None  # the SDK answers a parse error (-32700) itself
        messages = parsed if isinstance(parsed, list) else [parsed]
        return next((problem for problem in map(_bad_id, messages) if problem), None)

    async def _stream(self, key_id: int, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self.streams.refusal(key_id)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self.streams.open(key_id)
        started = finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            with anyio.move_on_after(settings.MEMORYHUB_MCP_STREAM_MAX_SECONDS):
                await self.app(scope, receive, tracked)
            if started and not finished:
                # The lifetime ran out: end the stream cleanly; an MCP
                # client opens a new one when it needs it.
                with anyio.CancelScope(shield=True):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.streams.close(key_id)


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

