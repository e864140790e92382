"""gunicorn's worker for MemoryHub (gunicorn.conf.py names it).

gunicorn's gthread worker reads a request's headers and body with blocking
reads and no timeout: a client that sends half a request and stops holds a
thread until it disconnects, and a few such clients stall the worker. This
worker puts a kernel receive and send timeout (SO_RCVTIMEO/SO_SNDTIMEO,
GUNICORN_IO_TIMEOUT seconds) on every connection, so a stalled read or write
fails and frees the thread. (A client trickling one byte just inside the
timeout is the job of a buffering proxy in front; see docs/operations.md.)

The requests gunicorn refuses itself — a request line over its limit,
malformed HTTP — get the API's JSON error body instead of its HTML page.
The app refuses over-long URLs and headers below gunicorn's limits
(memoryhub.middleware), so this is the last line only.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

IO_TIMEOUT_SECONDS = float(os.environ.get("GUNICORN_IO_TIMEOUT", "10"))

_CODES = {400: "invalid", 403: "permission_denied", 414: "uri_too_long", 417: "invalid", 431: "headers_too_large",
          500: "server_error", 501: "not_implemented"}


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


def set_io_timeouts(sock: socket.socket, seconds: float = IO_TIMEOUT_SECONDS) -> None:
    if seconds > 0:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(seconds))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(seconds))


def write_json_error(sock: object, status_int: int, reason: str, mesg: str) -> None:
    body = json.dumps({"error": {"code": _CODES.get(status_int, "invalid"),
                                 "detail": f"{reason}: {mesg}" if mesg else reason}}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


class MemoryHubWorker(ThreadWorker):
    def handle(self, conn: Any) -> object:
        set_io_timeouts(conn.sock)
        return super().handle(conn)

    def handle_error(self, req: object, client: object, addr: object, exc: object) -> None:
        # gunicorn's base worker writes its refusal through util.write_error.
        original = util.write_error
        util.write_error = write_json_error
        try:
            super().handle_error(req, client, addr, exc)
        finally:
            util.write_error = original
