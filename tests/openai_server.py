"""A fake OpenAI-compatible server for tests: `POST /v1/chat/completions`.

openai 3.x talks through httpx2, which respx and pytest-httpx cannot intercept
(PITFALLS.md), so tests drive the real client against a real socket instead.
Replies are scripted in order with `reply`, `reply_status` and `reply_raw`
(or computed from each request by `respond_with`); every request body is
recorded in `requests`. The server listens on
127.0.0.1 with an ephemeral port, so a Celery worker in another process can
reach it through `url` just like the test itself.

    with OpenAIServer() as server:
        server.reply('{"operations": []}')
        client = openai.OpenAI(base_url=server.url, api_key="x")
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class _Scripted:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # Seconds over which the body is sent a byte at a time (a server that
    # never stalls long enough for a read timeout, yet never finishes).
    trickle: float = 0.0


def _error_body(message: str, *, type_: str, code: str | None = None) -> dict[str, Any]:
    # The shape OpenAI uses, so the client's error classes carry the message.
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class _Server(ThreadingHTTPServer):
    # Handler threads may be asleep in a long `delay` (a worker blocked
    # mid-call until it is SIGKILLed): they must never keep the test process
    # alive nor make server_close() wait for them.
    daemon_threads = True
    block_on_close = False
    owner: OpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, killed worker) closes the socket
        # before a delayed answer is written; that is the test working.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?", 1)[0] != CHAT_COMPLETIONS_PATH:
            body = _error_body(
                f"The fake OpenAI server only serves POST {CHAT_COMPLETIONS_PATH}, not {self.path}.",
                type_="invalid_request_error",
                code="unknown_url",
            )
            self._send(_Scripted(404, json.dumps(body).encode()))
            return
        try:
            payload = json.loads(raw or b"null")
        except ValueError:
            payload = {"_unparseable_body": raw.decode("utf-8", "replace")}
        scripted = self.server.owner._received(payload, {k.lower(): v for k, v in self.headers.items()})
        if scripted.delay and self.server.owner._stopping.wait(scripted.delay):
            self.close_connection = True  # stopped while sleeping: hang up unanswered
            return
        self._send(scripted)

    def do_GET(self) -> None:
        body = _error_body(
            f"The fake OpenAI server only serves POST {CHAT_COMPLETIONS_PATH}.",
            type_="invalid_request_error",
            code="unknown_url",
        )
        self._send(_Scripted(404, json.dumps(body).encode()))

    def _send(self, scripted: _Scripted) -> None:
        try:
            self.send_response(scripted.status)
            self.send_header("Content-Type", scripted.content_type)
            self.send_header("Content-Length", str(len(scripted.body)))
            for name, value in scripted.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if scripted.trickle:
                pause = scripted.trickle / max(1, len(scripted.body))
                for index in range(len(scripted.body)):
                    self.wfile.write(scripted.body[index:index + 1])
                    self.wfile.flush()
                    if self.server.owner._stopping.wait(pause):
                        self.close_connection = True
                        return
            else:
                self.wfile.write(scripted.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class OpenAIServer:
    """A scripted chat-completions endpoint on 127.0.0.1 (see module docstring)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.url = ""
        self.requests: list[dict[str, Any]] = []  # JSON bodies received, in order
        self.request_headers: list[dict[str, str]] = []  # with lower-cased names
        self._queue: deque[_Scripted] = deque()
        self._responder: Callable[[dict[str, Any]], str] | None = None
        self._responder_usage: dict[str, int] = {}
        self._honour_max_tokens = False
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> OpenAIServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self.host, 0), _Handler)
        server.owner = self
        self._server = server
        port = server.server_address[1]
        self.url = f"http://{self.host}:{port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-openai-{port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        # Wake handlers sleeping in a delay first, so none answers after stop.
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- scripting ---------------------------------------------------------------

    def reply(
        self,
        content: str | None,
        *,
        prompt_tokens: int = 120,
        completion_tokens: int = 40,
        finish_reason: str = "stop",
        delay: float = 0.0,
        model: str = "fake-model",
        refusal: str | None = None,
        trickle: float = 0.0,
    ) -> None:
        """Enqueue a normal completion whose message content is `content`."""
        self._enqueue(_Scripted(200, _completion(content, prompt_tokens=prompt_tokens,
                                                 completion_tokens=completion_tokens, finish_reason=finish_reason,
                                                 model=model, refusal=refusal), delay=delay, trickle=trickle))

    def respond_with(
        self, responder: Callable[[dict[str, Any]], str] | None, *, prompt_tokens: int = 120,
        completion_tokens: int = 40, honour_max_tokens: bool = False,
    ) -> None:
        """Answer every request not otherwise scripted with a completion whose
        content is `responder(request body)`: a scripted model that reads the
        prompt (e.g. resolves entry indexes and log ids), for scenario tests.
        With `honour_max_tokens` the reported completion tokens never exceed
        the request's `max_tokens`, as a well-behaved server's."""
        with self._cond:
            self._responder = responder
            self._responder_usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            self._honour_max_tokens = honour_max_tokens

    def reply_tool_calls(self, *calls: tuple[str, dict[str, Any]], content: str | None = None) -> None:
        """Enqueue a completion whose message calls tools: (name, arguments) each."""
        body = {
            "id": f"chatcmpl-fake-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "tool_calls": [
                            {"id": f"call_{n}_{uuid.uuid4().hex[:8]}", "type": "function",
                             "function": {"name": name, "arguments": json.dumps(arguments)}}
                            for n, (name, arguments) in enumerate(calls)
                        ],
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 30, "total_tokens": 230},
        }
        self._enqueue(_Scripted(200, json.dumps(body).encode()))

    def reply_json(self, body: dict[str, Any], *, status: int = 200, delay: float = 0.0) -> None:
        """Enqueue an arbitrary JSON body (e.g. a completion with no choices)."""
        self._enqueue(_Scripted(status, json.dumps(body).encode(), delay=delay))

    def reply_status(
        self,
        status: int,
        body: dict[str, Any] | str | None = None,
        *,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Enqueue an HTTP error, e.g. `reply_status(429, headers={"Retry-After": "0"})`."""
        if body is None:
            body = _error_body(f"Scripted HTTP {status} from the fake OpenAI server.", type_=_error_type(status))
        elif isinstance(body, str):
            body = _error_body(body, type_=_error_type(status))
        self._enqueue(_Scripted(status, json.dumps(body).encode(), headers=dict(headers or {}), delay=delay))

    def reply_raw(
        self, status: int, raw_body: bytes, *, delay: float = 0.0, content_type: str = "application/json"
    ) -> None:
        """Enqueue exact bytes, e.g. a body that is not JSON at all."""
        self._enqueue(_Scripted(status, raw_body, content_type=content_type, delay=delay))

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._cond:
            return len(self._queue)

    def wait_for_requests(self, count: int = 1, *, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until `count` requests have arrived (they are recorded before
        any delay), e.g. to SIGKILL a worker while it waits for its answer."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= count, timeout=timeout):
                raise TimeoutError(
                    f"The fake OpenAI server received {len(self.requests)} request(s) in {timeout} s, expected {count}."
                )
            return list(self.requests)

    # --- internals ---------------------------------------------------------------

    def _enqueue(self, scripted: _Scripted) -> None:
        with self._cond:
            self._queue.append(scripted)

    def _received(self, payload: Any, headers: dict[str, str]) -> _Scripted:
        with self._cond:
            self.requests.append(payload)
            self.request_headers.append(headers)
            self._cond.notify_all()
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
            usage = dict(self._responder_usage)
            number = len(self.requests)
            if getattr(self, "_honour_max_tokens", False) and isinstance(payload, dict) and payload.get("max_tokens"):
                usage["completion_tokens"] = min(usage["completion_tokens"], int(payload["max_tokens"]))
        if responder is not None:
            return _Scripted(200, _completion(responder(payload), **usage))
        # Under-scripted tests fail loudly rather than hang or pass by accident.
        body = _error_body(
            f"The fake OpenAI server has no scripted reply for request #{number}: "
            "call server.reply(...) once per expected request.",
            type_="server_error",
            code="no_scripted_reply",
        )
        # x-should-retry: false keeps a client with retries from hammering the
        # empty queue and burying this message under backoff.
        return _Scripted(500, json.dumps(body).encode(), headers={"x-should-retry": "false"})


def _completion(
    content: str | None,
    *,
    prompt_tokens: int = 120,
    completion_tokens: int = 40,
    finish_reason: str = "stop",
    model: str = "fake-model",
    refusal: str | None = None,
) -> bytes:
    body = {
        "id": f"chatcmpl-fake-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return json.dumps(body).encode()


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    if status in (401, 403):
        return "authentication_error"
    return "invalid_request_error"
