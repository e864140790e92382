"""A scripted server speaking Anthropic's Messages protocol: `POST
/v1/messages`, for tests that drive the real `anthropic` SDK over a real
socket (its transport is httpx2, which respx cannot intercept; see
tests/openai_server.py for the same idea on OpenAI's protocol).

Replies are scripted in order with `reply_text` and `reply_tool_use`;
every request body and its headers (lower-cased names) are recorded. An
unscripted request gets a 500 naming what is missing, so an under-scripted
test fails loudly instead of hanging.

    with AnthropicServer() as server:
        server.reply_tool_use("memory", {"command": "view", "path": "/memories"})
        server.reply_text("Done.")
        client = anthropic.Anthropic(base_url=server.url, api_key="x")
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MESSAGES_PATH = "/v1/messages"


def _error(status: int, message: str, type_: str) -> tuple[int, bytes]:
    # The shape Anthropic uses, so the SDK's error classes carry the message.
    return status, json.dumps({"type": "error", "error": {"type": type_, "message": message}}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: AnthropicServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?", 1)[0] != MESSAGES_PATH:
            self._send(*_error(404, f"This fake Anthropic server serves only POST {MESSAGES_PATH}.",
                               "not_found_error"))
            return
        try:
            payload = json.loads(raw or b"null")
        except ValueError:
            payload = {"_unparseable_body": raw.decode("utf-8", "replace")}
        self._send(*self.server.owner._received(payload, {k.lower(): v for k, v in self.headers.items()}))

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if status >= 500:
                self.send_header("x-should-retry", "false")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class AnthropicServer:
    """A scripted Messages endpoint on 127.0.0.1 (see module docstring)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.url = ""
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self._queue: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> AnthropicServer:
        server = _Server((self.host, 0), _Handler)
        server.owner = self
        self._server = server
        self.url = f"http://{self.host}:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> AnthropicServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def reply_text(self, text: str) -> None:
        """A final answer (`stop_reason: end_turn`)."""
        self._enqueue([{"type": "text", "text": text}], "end_turn")

    def reply_tool_use(self, name: str, tool_input: dict[str, Any], *, text: str | None = None) -> None:
        """A turn that calls one tool (`stop_reason: tool_use`)."""
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name,
                        "input": tool_input})
        self._enqueue(content, "tool_use")

    def _enqueue(self, content: list[dict[str, Any]], stop_reason: str) -> None:
        with self._lock:
            self._queue.append({"content": content, "stop_reason": stop_reason})

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _received(self, payload: Any, headers: dict[str, str]) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append(payload)
            self.request_headers.append(headers)
            if not self._queue:
                return _error(500, f"No scripted reply for request #{len(self.requests)}: call reply_text or "
                              "reply_tool_use once per expected request.", "api_error")
            scripted = self._queue.popleft()
        model = payload.get("model", "fake-model") if isinstance(payload, dict) else "fake-model"
        body = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant", "model": model,
                "content": scripted["content"], "stop_reason": scripted["stop_reason"], "stop_sequence": None,
                "usage": {"input_tokens": 200, "output_tokens": 30}}
        return 200, json.dumps(body).encode()
