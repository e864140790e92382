"""The sync and async clients. Both describe each API call the same way (a
`_Call`: method, path, query, body, headers and how to read the answer) and
differ only in how they send it, so the two can never drift apart.

What both do around every call: a 429 `throttled` or a 503 `unavailable` is
retried after the server's Retry-After (up to `max_retries` times; nothing
was changed by the refused attempt), and a connection error or timeout is
raised as `ConnectionFailed` / `TimedOut`, never as an httpx exception.
Writes take an `idempotency_key`, sent as the `Idempotency-Key` header, so a
write whose answer was lost can be sent again and is applied once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memoryhub_client.errors import ConnectionFailed, MemoryHubError, ServerError, TimedOut, error_for
from memoryhub_client.models import (
    ClaudeMemoryResult,
    Context,
    FileVersion,
    LogAppended,
    LogEntry,
    MemoryFile,
    Note,
    NoteSaved,
    SearchEntry,
    SearchHit,
    Session,
    SessionEnded,
    Tool,
    Unchanged,
    WriteOutcome,
    _time,
)

T = TypeVar("T")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
# A Retry-After above this is not waited for: the error is raised at once.
MAX_RETRY_WAIT = 60.0
USER_AGENT = "memoryhub-client/0.1.0"


@dataclass(frozen=True)
class _Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _raise_for(response: httpx.Response) -> None:
    if response.status_code >= 400 or response.status_code < 200:
        raise error_for(response.status_code, _body(response))


def _json(response: httpx.Response) -> dict[str, Any]:
    body = _body(response)
    if not isinstance(body, dict):
        raise ServerError(f"Expected a JSON object, got HTTP {response.status_code}.", status=response.status_code)
    return body


def _file_path(file: str, suffix: str = "") -> str:
    return f"/api/v1/memory/{quote(file, safe='')}{suffix}"


def _user(user: str | None) -> dict[str, Any]:
    return {"user": user} if user is not None else {}


def _if_match(version: int | None) -> dict[str, str]:
    return {"If-Match": f'"{version}"'} if version is not None else {}


def _write(response: httpx.Response) -> WriteOutcome:
    return WriteOutcome.from_json(_json(response), response.status_code)


def _idempotency(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key} if key is not None else {}


def _write_call(method: str, path: str, user: str | None, body: dict[str, Any], if_match: int | None,
                idempotency_key: str | None) -> _Call[WriteOutcome]:
    return _Call(method, path, _write, params=_user(user), json=body,
                 headers={**_if_match(if_match), **_idempotency(idempotency_key)})


class _Calls:
    """Every API call an agent makes, described once."""

    @staticmethod
    def context(user: str, session: int | None) -> _Call[Context]:
        params: dict[str, Any] = {"user": user}
        if session is not None:
            params["session"] = session
        return _Call("GET", "/api/v1/context", lambda r: Context.from_json(_json(r), r.headers.get("ETag", "")),
                     params=params)

    @staticmethod
    def read(file: str, user: str | None) -> _Call[MemoryFile]:
        return _Call("GET", _file_path(file), lambda r: MemoryFile.from_json(_json(r)), params=_user(user))

    @staticmethod
    def write(file: str, content: str, user: str | None, reason: str, if_match: int | None,
              idempotency_key: str | None) -> _Call[WriteOutcome]:
        return _write_call("PUT", _file_path(file), user, {"content": content, "reason": reason}, if_match,
                           idempotency_key)

    @staticmethod
    def add_entry(file: str, text: str, user: str | None, reason: str, if_match: int | None,
                  idempotency_key: str | None) -> _Call[WriteOutcome]:
        return _write_call("POST", _file_path(file, "/entries"), user, {"text": text, "reason": reason}, if_match,
                           idempotency_key)

    @staticmethod
    def replace_entry(file: str, old_text: str, new_text: str, user: str | None, reason: str,
                      if_match: int | None, idempotency_key: str | None) -> _Call[WriteOutcome]:
        return _write_call("PATCH", _file_path(file, "/entries"), user,
                           {"old_text": old_text, "new_text": new_text, "reason": reason}, if_match, idempotency_key)

    @staticmethod
    def remove_entry(file: str, old_text: str, user: str | None, reason: str,
                     if_match: int | None, idempotency_key: str | None) -> _Call[WriteOutcome]:
        return _write_call("DELETE", _file_path(file, "/entries"), user, {"old_text": old_text, "reason": reason},
                           if_match, idempotency_key)

    @staticmethod
    def search(query: str, user: str | None, limit: int) -> _Call[list[SearchHit]]:
        return _Call("GET", "/api/v1/memory/search",
                     lambda r: [SearchHit.from_json(hit) for hit in _json(r)["results"]],
                     params={"q": query, "limit": limit, **_user(user)})

    @staticmethod
    def tool_schemas(format: str, strict: bool = False) -> _Call[list[dict[str, Any]]]:
        return _Call("GET", "/api/v1/memory/tool-schemas", lambda r: list(_json(r)["tools"]),
                     params={"format": format, **({"strict": "true"} if strict else {})})

    # notes (memory_note): separate calls, so merges elsewhere leave them be
    @staticmethod
    def note(text: str, user: str, session: int | None, idempotency_key: str | None) -> _Call[NoteSaved]:
        body: dict[str, Any] = {"text": text, "user": user}
        if session is not None:
            body["session"] = int(session)
        return _Call("POST", "/api/v1/memory/notes", lambda r: NoteSaved.from_json(_json(r)), json=body,
                     headers=_idempotency(idempotency_key))

    @staticmethod
    def notes(user: str) -> _Call[list[Note]]:
        return _Call("GET", "/api/v1/memory/notes", lambda r: [Note.from_json(n) for n in _json(r)["notes"]],
                     params={"user": user})

    @staticmethod
    def start_session(user: str, external_id: str, idempotency_key: str | None) -> _Call[Session]:
        return _Call("POST", "/api/v1/sessions", lambda r: Session.from_json(_json(r)),
                     json={"user": user, "external_id": external_id}, headers=_idempotency(idempotency_key))

    @staticmethod
    def log(session: int, entries: Iterable[LogEntry | dict[str, str]],
            idempotency_key: str | None) -> _Call[LogAppended]:
        body = {"entries": [e.as_json() if isinstance(e, LogEntry) else dict(e) for e in entries]}

        def parse(response: httpx.Response) -> LogAppended:
            data = _json(response)
            return LogAppended(appended=data["appended"], last_id=data["last_id"])

        return _Call("POST", f"/api/v1/sessions/{int(session)}/log", parse, json=body,
                     headers=_idempotency(idempotency_key))

    @staticmethod
    def end_session(session: int, note: str | None = None) -> _Call[SessionEnded]:
        def parse(response: httpx.Response) -> SessionEnded:
            data = _json(response)
            return SessionEnded(id=data["id"], ended_at=_time(data.get("ended_at")))

        return _Call("POST", f"/api/v1/sessions/{int(session)}/end", parse,
                     json={"note": note} if note is not None else None)

    @staticmethod
    def claude_memory(command: Mapping[str, Any], user: str | None, if_match: int | None,
                      idempotency_key: str | None) -> _Call[ClaudeMemoryResult]:
        return _Call("POST", "/api/v1/memory/claude-memory", lambda r: ClaudeMemoryResult.from_json(_json(r)),
                     params=_user(user), json=dict(command),
                     headers={**_if_match(if_match), **_idempotency(idempotency_key)})

    @staticmethod
    def context_if_changed(user: str, etag: str, session: int | None) -> _Call[Context | Unchanged]:
        tag = etag if etag.startswith(('"', "W/")) else f'"{etag}"'

        def parse(response: httpx.Response) -> Context | Unchanged:
            if response.status_code == 304:
                return Unchanged(etag=response.headers.get("ETag", tag))
            return Context.from_json(_json(response), response.headers.get("ETag", ""))

        call = _Calls.context(user, session)
        return _Call("GET", call.path, parse, params=call.params, headers={"If-None-Match": tag})

    @staticmethod
    def versions(file: str, user: str | None) -> _Call[list[FileVersion]]:
        return _Call("GET", _file_path(file, "/versions"),
                     lambda r: [FileVersion.from_json(v) for v in _json(r)["versions"]], params=_user(user))

    @staticmethod
    def search_entry(entry: int, user: str) -> _Call[SearchEntry]:
        return _Call("GET", f"/api/v1/memory/search/{int(entry)}", lambda r: SearchEntry.from_json(_json(r)),
                     params={"user": user})

    @staticmethod
    def tools() -> _Call[list[Tool]]:
        return _Call("GET", "/api/v1/tools", lambda r: [Tool.from_json(t) for t in _json(r)["tools"]])

    @staticmethod
    def replace_tools(tools: Iterable[Tool | Mapping[str, Any]]) -> _Call[list[Tool]]:
        body = {"tools": [t.as_json() if isinstance(t, Tool) else dict(t) for t in tools]}
        return _Call("PUT", "/api/v1/tools", lambda r: [Tool.from_json(t) for t in _json(r)["tools"]], json=body)


def _retryable(response: httpx.Response) -> bool:
    """A refusal that changed nothing and names when to come back: 429
    `throttled`, or 503 `unavailable` (the database is down or too slow)."""
    if response.status_code == 429:
        return True
    if response.status_code != 503:
        return False
    body = _body(response)
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == "unavailable"


def _transport_error(exc: httpx.TransportError, call: _Call[Any]) -> ConnectionFailed:
    """Our exception for httpx's: what happened, to which call, and whether
    the request may have reached the server."""
    what = f"{call.method} {call.path}"
    if isinstance(exc, httpx.ConnectTimeout):
        return TimedOut(f"{what}: the server did not accept the connection in time ({exc}).", may_have_arrived=False)
    if isinstance(exc, httpx.TimeoutException):
        return TimedOut(f"{what}: no answer in time ({exc}); the request may have been applied.",
                        may_have_arrived=True)
    if isinstance(exc, httpx.ConnectError):
        return ConnectionFailed(f"{what}: could not connect to the server ({exc}).", may_have_arrived=False)
    return ConnectionFailed(f"{what}: the connection failed ({type(exc).__name__}: {exc}); the request may have "
                            "been applied.", may_have_arrived=True)


def _retry_wait(response: httpx.Response, attempt: int) -> float:
    """Seconds to wait before retrying a 429 or 503: the server's
    Retry-After, or a short exponential backoff when it sent none."""
    header = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(header))
    except ValueError:
        return float(min(MAX_RETRY_WAIT, 0.5 * 2**attempt))


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": USER_AGENT}


class MemoryHub:
    """The agent API, synchronously. Authenticates with the agent's API key;
    retries a 429 or a 503 `unavailable` up to `max_retries` times after its
    Retry-After; raises `ConnectionFailed` (or `TimedOut`) when no answer
    came."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES, http_client: httpx.Client | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._http = http_client or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self._owns_http = http_client is None
        self._headers = _headers(api_key)
        self.max_retries = max_retries
        self._sleep = sleep

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, params=call.params or None, json=call.json,
                                              headers={**self._headers, **call.headers})
            except httpx.TransportError as exc:
                raise _transport_error(exc, call) from exc
            if _retryable(response) and attempt < self.max_retries:
                wait = _retry_wait(response, attempt)
                if wait <= MAX_RETRY_WAIT:
                    attempt += 1
                    self._sleep(wait)
                    continue
            _raise_for(response)
            return call.parse(response)

    def context(self, user: str, *, session: int | None = None) -> Context:
        return self._run(_Calls.context(user, session))

    def read(self, file: str, *, user: str | None = None) -> MemoryFile:
        return self._run(_Calls.read(file, user))

    def write(self, file: str, content: str, *, user: str | None = None, reason: str = "",
              if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return self._run(_Calls.write(file, content, user, reason, if_match, idempotency_key))

    def add_entry(self, file: str, text: str, *, user: str | None = None, reason: str = "",
                  if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return self._run(_Calls.add_entry(file, text, user, reason, if_match, idempotency_key))

    def replace_entry(self, file: str, old_text: str, new_text: str, *, user: str | None = None, reason: str = "",
                      if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return self._run(_Calls.replace_entry(file, old_text, new_text, user, reason, if_match, idempotency_key))

    def remove_entry(self, file: str, old_text: str, *, user: str | None = None, reason: str = "",
                     if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return self._run(_Calls.remove_entry(file, old_text, user, reason, if_match, idempotency_key))

    def search(self, query: str, *, user: str | None = None, limit: int = 10) -> list[SearchHit]:
        return self._run(_Calls.search(query, user, limit))

    def tool_schemas(self, format: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        """The memory tools as function definitions; `strict` for OpenAI
        structured outputs / Anthropic strict tool use."""
        return self._run(_Calls.tool_schemas(format, strict))

    def note(self, text: str, *, user: str, session: int | None = None,
             idempotency_key: str | None = None) -> NoteSaved:
        """Save a short note in a session log (default: the pair's open one)."""
        return self._run(_Calls.note(text, user, session, idempotency_key))

    def notes(self, *, user: str) -> list[Note]:
        """The pair's notes of the last two days, oldest first."""
        return self._run(_Calls.notes(user))

    def start_session(self, user: str, *, external_id: str = "", idempotency_key: str | None = None) -> Session:
        return self._run(_Calls.start_session(user, external_id, idempotency_key))

    def log(self, session: int, entries: Iterable[LogEntry | dict[str, str]], *,
            idempotency_key: str | None = None) -> LogAppended:
        return self._run(_Calls.log(session, entries, idempotency_key))

    def end_session(self, session: int, *, note: str | None = None) -> SessionEnded:
        return self._run(_Calls.end_session(session, note))

    def claude_memory(self, command: Mapping[str, Any], *, user: str | None = None, if_match: int | None = None,
                      idempotency_key: str | None = None) -> ClaudeMemoryResult:
        """One command of Claude's memory tool (`{"command": "view", "path": "/memories"}`…), as the
        model sent it; `memoryhub_client.claude.MemoryHubMemoryTool` wraps it for the anthropic SDK."""
        return self._run(_Calls.claude_memory(command, user, if_match, idempotency_key))

    def context_if_changed(self, user: str, etag: str, *, session: int | None = None) -> Context | Unchanged:
        """The context again only if it changed since `etag` (a Context's
        `etag`): `Unchanged` when the server answers 304."""
        return self._run(_Calls.context_if_changed(user, etag, session))

    def versions(self, file: str, *, user: str | None = None) -> list[FileVersion]:
        """When and how one of the agent's files changed, oldest first (no contents)."""
        return self._run(_Calls.versions(file, user))

    def search_entry(self, entry: int, *, user: str) -> SearchEntry:
        """A log entry in full, as a search hit's `raw["entry"]` names it."""
        return self._run(_Calls.search_entry(entry, user))

    def tools(self) -> list[Tool]:
        return self._run(_Calls.tools())

    def replace_tools(self, tools: Iterable[Tool | Mapping[str, Any]]) -> list[Tool]:
        return self._run(_Calls.replace_tools(tools))


class AsyncMemoryHub:
    """The agent API for asyncio code; the same methods as `MemoryHub`."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES, http_client: httpx.AsyncClient | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._http = http_client or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._owns_http = http_client is None
        self._headers = _headers(api_key)
        self.max_retries = max_retries
        self._sleep = sleep

    async def __aenter__(self) -> AsyncMemoryHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = await self._http.request(call.method, call.path, params=call.params or None,
                                                    json=call.json, headers={**self._headers, **call.headers})
            except httpx.TransportError as exc:
                raise _transport_error(exc, call) from exc
            if _retryable(response) and attempt < self.max_retries:
                wait = _retry_wait(response, attempt)
                if wait <= MAX_RETRY_WAIT:
                    attempt += 1
                    await self._sleep(wait)
                    continue
            _raise_for(response)
            return call.parse(response)

    async def context(self, user: str, *, session: int | None = None) -> Context:
        return await self._run(_Calls.context(user, session))

    async def read(self, file: str, *, user: str | None = None) -> MemoryFile:
        return await self._run(_Calls.read(file, user))

    async def write(self, file: str, content: str, *, user: str | None = None, reason: str = "",
                    if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return await self._run(_Calls.write(file, content, user, reason, if_match, idempotency_key))

    async def add_entry(self, file: str, text: str, *, user: str | None = None, reason: str = "",
                        if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return await self._run(_Calls.add_entry(file, text, user, reason, if_match, idempotency_key))

    async def replace_entry(self, file: str, old_text: str, new_text: str, *, user: str | None = None,
                            reason: str = "", if_match: int | None = None,
                            idempotency_key: str | None = None) -> WriteOutcome:
        return await self._run(_Calls.replace_entry(file, old_text, new_text, user, reason, if_match,
                                                    idempotency_key))

    async def remove_entry(self, file: str, old_text: str, *, user: str | None = None, reason: str = "",
                           if_match: int | None = None, idempotency_key: str | None = None) -> WriteOutcome:
        return await self._run(_Calls.remove_entry(file, old_text, user, reason, if_match, idempotency_key))

    async def search(self, query: str, *, user: str | None = None, limit: int = 10) -> list[SearchHit]:
        return await self._run(_Calls.search(query, user, limit))

    async def tool_schemas(self, format: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        return await self._run(_Calls.tool_schemas(format, strict))

    async def note(self, text: str, *, user: str, session: int | None = None,
                   idempotency_key: str | None = None) -> NoteSaved:
        return await self._run(_Calls.note(text, user, session, idempotency_key))

    async def notes(self, *, user: str) -> list[Note]:
        return await self._run(_Calls.notes(user))

    async def start_session(self, user: str, *, external_id: str = "",
                            idempotency_key: str | None = None) -> Session:
        return await self._run(_Calls.start_session(user, external_id, idempotency_key))

    async def log(self, session: int, entries: Iterable[LogEntry | dict[str, str]], *,
                  idempotency_key: str | None = None) -> LogAppended:
        return await self._run(_Calls.log(session, entries, idempotency_key))

    async def end_session(self, session: int, *, note: str | None = None) -> SessionEnded:
        return await self._run(_Calls.end_session(session, note))

    async def claude_memory(self, command: Mapping[str, Any], *, user: str | None = None,
                            if_match: int | None = None, idempotency_key: str | None = None) -> ClaudeMemoryResult:
        return await self._run(_Calls.claude_memory(command, user, if_match, idempotency_key))

    async def context_if_changed(self, user: str, etag: str, *, session: int | None = None) -> Context | Unchanged:
        return await self._run(_Calls.context_if_changed(user, etag, session))

    async def versions(self, file: str, *, user: str | None = None) -> list[FileVersion]:
        return await self._run(_Calls.versions(file, user))

    async def search_entry(self, entry: int, *, user: str) -> SearchEntry:
        return await self._run(_Calls.search_entry(entry, user))

    async def tools(self) -> list[Tool]:
        return await self._run(_Calls.tools())

    async def replace_tools(self, tools: Iterable[Tool | Mapping[str, Any]]) -> list[Tool]:
        return await self._run(_Calls.replace_tools(tools))


__all__ = ["AsyncMemoryHub", "MemoryHub", "MemoryHubError"]
