"""The web process's ASGI application: the MCP server (memoryhub.mcp_server)
at /mcp/, and Django for every other path.

One process, one port, one TLS proxy route: an MCP client reaches the memory
tools at the same origin as the REST API, with the same key. `make run`
serves this with uvicorn, the production image with gunicorn's ASGI worker.

Django is served through its WSGI handler on a fixed pool of threads
(a2wsgi), not through its ASGI handler: that one runs every request in a
thread of its own, so no database connection outlives its request (Django's
docs: disable persistent connections under ASGI), and the REST API's hot
path would pay a new connection per request. On long-lived threads each
keeps its connection between requests, exactly as under a gthread worker.
The MCP tools reach the database through `sync_to_async`, on a fixed pool of
long-lived threads of their own (`mcp_server.TOOL_THREADS`,
MEMORYHUB_MCP_THREADS).

This app answers the lifespan protocol itself: at startup it runs the MCP
session manager (which serves every MCP request from its task group), at
shutdown it stops it and closes the database connections its threads hold.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django_application = get_wsgi_application()

# After get_wsgi_application(): it sets Django up, which the MCP server needs.
from a2wsgi import WSGIMiddleware  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connections  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from memoryhub import mcp_server  # noqa: E402

logger = logging.getLogger(__name__)


def _close_connections(executor: ThreadPoolExecutor, threads: int) -> None:
    """Close the database connection of every thread of the pool: one task
    per thread, each held at a barrier until all have run, so no thread
    takes two."""
    barrier = threading.Barrier(threads)

    def close() -> None:
        connections.close_all()
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=5)

    wait([executor.submit(close) for _ in range(threads)], timeout=10)
    executor.shutdown(wait=False)


class Application:
    def __init__(self, *, threads: int | None = None) -> None:
        self.threads = threads or settings.MEMORYHUB_WSGI_THREADS
        self.django = WSGIMiddleware(django_application, workers=self.threads)  # type: ignore[arg-type]
        self.mcp = mcp_server.http_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http" and scope["path"] in (mcp_server.PATH, mcp_server.PATH.rstrip("/")):
            await self.mcp(scope, receive, send)
        else:
            await self.django(scope, receive, send)  # type: ignore[arg-type]

    async def lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        started = False
        try:
            async with self.mcp.manager.run():
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except Exception as exc:
            logger.exception("The MCP session manager failed")
            phase = "shutdown" if started else "startup"
            await send({"type": f"lifespan.{phase}.failed", "message": str(exc)})
            return
        await sync_to_async(connections.close_all)()
        await sync_to_async(_close_connections, thread_sensitive=False)(self.django.executor, self.threads)
        tools, size = mcp_server.TOOL_THREADS.take()
        if tools is not None:
            await sync_to_async(_close_connections, thread_sensitive=False)(tools, size)
        await send({"type": "lifespan.shutdown.complete"})


application = Application()
