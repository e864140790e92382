"""Servers and processes that tests start for real: the ASGI application
(Django plus the MCP endpoint) under uvicorn in a thread, and the test
database as a DATABASE_URL for a subprocess (a worker, `mcp_stdio`, an
example script). Tests using them need `django_db(transaction=True)`, so
what they write is committed and visible to the other side."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.db import connection


def database_url_for_subprocess() -> str:
    """The test database as a DATABASE_URL, for a process of our own."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@contextmanager
def asgi_server(**config: Any) -> Iterator[str]:
    """memoryhub.asgi's application under uvicorn on 127.0.0.1, with its
    lifespan (the MCP session manager); yields the base URL. `config` goes
    to uvicorn (e.g. `limit_concurrency`, as docker-compose sets it)."""
    import uvicorn

    from memoryhub.asgi import Application

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Application(), lifespan="on", log_level="warning", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"asgi-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("The ASGI test server did not start.")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def run_async(function: Any, *args: Any) -> Any:
    """anyio.run(function, *args) in a thread of its own: a session-scoped
    Playwright fixture keeps an event loop running in the test thread, and
    a second loop cannot start there."""
    import concurrent.futures

    import anyio

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, function, *args).result()
