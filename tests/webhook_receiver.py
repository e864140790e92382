"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 that
records every POST (path, headers, body) and answers with scripted status
codes in order (200 once the script runs out).

    with WebhookReceiver() as receiver:
        receiver.answer(500)          # first delivery fails, the next succeeds
        ... receiver.url ...
        receiver.wait_for(2)
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: WebhookReceiver


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        owner = self.server.owner
        with owner.lock:
            owner.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status = owner.script.popleft() if owner.script else 200
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class WebhookReceiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.script: deque[int] = deque()
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hook"

    def answer(self, *statuses: int) -> None:
        with self.lock:
            self.script.extend(statuses)

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(f"expected {count} deliveries, got {len(self.received)}")

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
