"""The MCP endpoint under a hostile or careless client: event streams
bounded per key, in all and in time (so held streams cannot starve other
agents under the ASGI server's concurrency limit), JSON-RPC ids that are no
ids refused with -32600, a 401 an MCP client can show without starting an
OAuth flow, and `mcp_stdio` answering a tool call that is still running
when its stdin closes. The official SDK's client where a client is involved;
raw HTTP where the point is what a client must never send."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from django.conf import settings
from django.db import transaction
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memoryhub import services
from memoryhub.models import MemoryFile
from tests.factories import AgentFactory
from tests.live import asgi_server, database_url_for_subprocess, run_async

pytestmark = pytest.mark.django_db(transaction=True)

BASE_DIR = Path(settings.BASE_DIR)
STREAM = {"Accept": "text/event-stream"}
RPC = {"Accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture
def server() -> Iterator[str]:
    with asgi_server() as url:
        yield url


def _key(agent: Any = None) -> str:
    return services.issue_agent_key(agent=agent or AgentFactory(), actor=services.SYSTEM)[1]


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _open(client: httpx.AsyncClient, url: str, key: str, held: list[Any]) -> int:
    """Open one event stream and keep it open (in `held`); its status."""
    request = client.build_request("GET", f"{url}/mcp/", headers={**STREAM, **_auth(key)})
    response = await client.send(request, stream=True)
    if response.status_code == 200:
        held.append(response)
    else:
        await response.aread()
        await response.aclose()
    return response.status_code


def _tools_over_sdk(url: str, key: str) -> tuple[list[str], Any]:
    async def run() -> Any:
        async with (
            create_mcp_http_client(headers=_auth(key)) as http,
            streamable_http_client(f"{url}/mcp/", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            with anyio.fail_after(20):
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                added = await session.call_tool("memory_add", {"file": "MEMORY.md", "user": "u1",
                                                               "text": "Prefers e-mail."})
            return tools, added

    return run_async(run)  # type: ignore[no-any-return]


# --- event streams ---------------------------------------------------------------------------


def test_a_key_may_hold_only_so_many_event_streams(server: str, settings: Any) -> None:
    settings.MEMORYHUB_MCP_STREAMS_PER_KEY = 2
    key, other = _key(), _key()

    async def run() -> tuple[list[int], dict[str, Any], int, int]:
        held: list[Any] = []
        async with httpx.AsyncClient(timeout=10) as client:
            statuses = [await _open(client, server, key, held) for _ in range(3)]
            refused = await client.get(f"{server}/mcp/", headers={**STREAM, **_auth(key)})
            others = await _open(client, server, other, held)
            await held[0].aclose()  # one of the key's two
            await anyio.sleep(0.3)
            again = await _open(client, server, key, held)
            for response in held:
                await response.aclose()
        return statuses, {"status": refused.status_code, "body": refused.json(),
                          "retry": refused.headers.get("Retry-After")}, others, again

    statuses, refused, others, again = run_async(run)
    assert statuses == [200, 200, 429]
    assert refused["status"] == 429 and refused["retry"]
    error = refused["body"]["error"]
    assert error["data"]["code"] == "too_many_streams"
    assert "already holds 2 open event streams" in error["message"]
    assert others == 200  # another key is not affected
    assert again == 200  # a closed stream frees its place


def test_200_held_streams_cannot_starve_other_agents(settings: Any) -> None:
    # docker-compose runs the MCP server with --limit-concurrency 200: with
    # no bound, 200 held streams would leave every other agent a 503.
    victim = AgentFactory()
    victim_key = _key(victim)
    hostile = [_key() for _ in range(50)]
    with asgi_server(limit_concurrency=200) as url:

        async def run() -> tuple[list[int], list[str], Any, int, int]:
            held: list[Any] = []
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
            async with httpx.AsyncClient(timeout=30, limits=limits) as client:
                statuses = [await _open(client, url, key, held) for key in hostile for _ in range(4)]
                tools, added = await anyio.to_thread.run_sync(_tools_over_sdk, url, victim_key)
                context = await client.get(f"{url}/api/v1/context?user=u1", headers=_auth(victim_key))
                extra = await client.get(f"{url}/mcp/", headers={**STREAM, **_auth(hostile[0])})
                for response in held:
                    await response.aclose()
            return statuses, tools, added, context.status_code, extra.status_code

        statuses, tools, added, context_status, extra = run_async(run)
    assert "memory_add" in tools and not added.is_error
    assert context_status == 200
    assert "Prefers e-mail." in services.read_memory(agent=victim, kind="MEMORY.md", user_ref="u1").content
    # 25 keys hold their four each (the process's 100); the rest are told so.
    assert settings.MEMORYHUB_MCP_STREAMS_MAX == 100 and settings.MEMORYHUB_MCP_STREAMS_PER_KEY == 4
    assert statuses == [200] * 100 + [503] * 100
    assert extra == 429


def test_an_event_stream_ends_after_its_lifetime_and_frees_its_place(server: str, settings: Any) -> None:
    settings.MEMORYHUB_MCP_STREAM_MAX_SECONDS = 1
    settings.MEMORYHUB_MCP_STREAMS_PER_KEY = 1
    key = _key()

    async def run() -> tuple[float, int]:
        async with httpx.AsyncClient(timeout=10) as client:
            started = time.monotonic()
            async with client.stream("GET", f"{server}/mcp/", headers={**STREAM, **_auth(key)}) as response:
                assert response.status_code == 200
                with anyio.fail_after(8):
                    async for _ in response.aiter_bytes():
                        pass  # ends cleanly: no error, just the end of the stream
            took = time.monotonic() - started
            held: list[Any] = []
            again = await _open(client, server, key, held)
            for response in held:
                await response.aclose()
        return took, again

    took, again = run_async(run)
    assert 0.9 <= took < 8
    assert again == 200


def test_the_process_wide_limit_refuses_a_stream_but_not_a_tool_call(server: str, settings: Any) -> None:
    settings.MEMORYHUB_MCP_STREAMS_MAX = 2
    keys = [_key(), _key(), _key()]

    async def run() -> tuple[list[int], dict[str, Any], int]:
        held: list[Any] = []
        async with httpx.AsyncClient(timeout=10) as client:
            statuses = [await _open(client, server, k, held) for k in keys]
            refused = await client.get(f"{server}/mcp/", headers={**STREAM, **_auth(keys[2])})
            call = await client.post(f"{server}/mcp/", json=LIST, headers={**RPC, **_auth(keys[2])})
            for response in held:
                await response.aclose()
        return statuses, refused.json(), call.status_code

    statuses, refused, call = run_async(run)
    assert statuses == [200, 200, 503]
    assert refused["error"]["data"]["code"] == "unavailable"
    assert call == 200


# --- JSON-RPC ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id, kind", [({"a": 1}, "an object"), ([1], "an array"), (True, "a boolean"),
                                          (None, "null"), (1.5, "a fractional number")])
def test_a_request_whose_id_is_no_id_answers_invalid_request(server: str, bad_id: Any, kind: str) -> None:
    answer = httpx.post(f"{server}/mcp/", json={**LIST, "id": bad_id}, headers={**RPC, **_auth(_key())})
    assert answer.status_code == 400
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    assert f"id is {kind}" in body["error"]["message"]


def test_string_and_integer_ids_are_answered(server: str) -> None:
    key = _key()
    for good in ("call-1", 7):
        answer = httpx.post(f"{server}/mcp/", json={**LIST, "id": good}, headers={**RPC, **_auth(key)})
        assert answer.status_code == 200 and answer.json()["id"] == good


def test_an_oversized_body_is_refused(server: str, settings: Any) -> None:
    settings.MEMORYHUB_MCP_MAX_BODY_BYTES = 1000
    answer = httpx.post(f"{server}/mcp/", content=json.dumps({**LIST, "params": {"x": "y" * 2000}}),
                        headers={**RPC, **_auth(_key()), "Content-Type": "application/json"})
    assert answer.status_code == 413 and answer.json()["error"]["data"]["code"] == "too_large"


# --- no key ------------------------------------------------------------------------------------


def test_a_request_without_a_key_is_a_plain_401_the_client_shows(server: str) -> None:
    answer = httpx.post(f"{server}/mcp/", json=LIST, headers=RPC)
    assert answer.status_code == 401
    # A Bearer challenge sends MCP clients into OAuth discovery, which this
    # server does not offer.
    assert "www-authenticate" not in answer.headers
    assert answer.json()["error"]["data"]["code"] == "not_authenticated"
    assert httpx.get(f"{server}/.well-known/oauth-protected-resource").status_code == 404

    async def run() -> str:
        async with (
            create_mcp_http_client() as http,
            streamable_http_client(f"{server}/mcp/", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            try:
                with anyio.fail_after(20):
                    await session.initialize()
            except Exception as exc:  # the SDK raises its error type with the server's message
                return str(exc)
        return "initialized"

    shown = run_async(run)
    assert "needs an agent API key" in shown and "Authorization: Bearer" in shown


# --- stdio -------------------------------------------------------------------------------------


def test_mcp_stdio_answers_a_tool_call_still_running_when_stdin_closes() -> None:
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Likes tea.\n")
    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "DJANGO_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen([sys.executable, "manage.py", "mcp_stdio", "--agent", agent.slug], cwd=BASE_DIR,
                               env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}})
        assert json.loads(process.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # The file's row is locked, so the write waits in the database...
        with transaction.atomic():
            MemoryFile.objects.select_for_update().get(agent=agent, kind="MEMORY.md", user_ref="u1")
            send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "memory_add",
                             "arguments": {"file": "MEMORY.md", "user": "u1", "text": "Likes jazz."}}})
            time.sleep(1.0)
            process.stdin.close()  # ...while the client hangs up
            process.stdin = None  # (communicate() would flush the closed pipe)
            time.sleep(1.0)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    answers = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert [a.get("id") for a in answers] == [2], err.decode()[-2000:]
    assert answers[0]["result"]["isError"] is False
    assert process.returncode == 0
    assert services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content == (
        "- Likes tea.\n- Likes jazz.\n")
