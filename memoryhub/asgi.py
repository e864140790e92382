"""The web process's ASGI application: Django for every path, and the MCP
server (memoryhub.mcp_server) at /mcp/.

One process, one port, one TLS proxy route: an MCP client reaches the memory
tools at the same origin as the REST API, with the same key. `make run` and
the production image both serve this with uvicorn; Django's sync views run in
its thread as under WSGI, and the MCP tools reach the database the same way.

Django's ASGI handler speaks only HTTP, so this app answers the lifespan
protocol itself: at startup it runs the MCP session manager (which serves
every MCP request from its task group), at shutdown it stops it and closes the
database connections that its thread opened.
"""

from __future__ import annotations

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django_application = get_asgi_application()

# After get_asgi_application(): it sets Django up, which the MCP server needs.
from asgiref.sync import sync_to_async  # noqa: E402
from django.db import connections  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from memoryhub import mcp_server  # noqa: E402

logger = logging.getLogger(__name__)


class Application:
    def __init__(self) -> None:
        self.mcp = mcp_server.http_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http" and scope["path"] in (mcp_server.PATH, mcp_server.PATH.rstrip("/")):
            await self.mcp(scope, receive, send)
        else:
            # Django's stubs spell the ASGI types more narrowly than ASGI does.
            await django_application(scope, receive, send)  # type: ignore[arg-type]

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
        await send({"type": "lifespan.shutdown.complete"})


application = Application()
