"""MCP at scale: 50 concurrent MCP clients over streamable HTTP. (Not bench/mcp.py:
run as a script, that name would shadow the `mcp` package it imports.)

The server is `memoryhub.asgi` under uvicorn exactly as docker-compose's
`mcp` service runs it (`--limit-concurrency 200`, `--timeout-keep-alive 5`).
Each client is the official `mcp` SDK's `ClientSession` with an agent key
of its own (and its own end user), initialised once, then looping for
--seconds over a fixed cycle of what a model does with memory tools:
`memory_view` (2 of 8 calls), `memory_search` (3 of 8) and entry writes
(`memory_add` of a new fact, `memory_replace` of it, `memory_remove` of
it: 3 of 8), so every write is one that must succeed. Any JSON-RPC error,
tool error (`isError`) or broken connection counts as an error. It prints
per-tool counts, p50/p99 and the rate, beside `bench/load.py`'s REST
figures in docs/benchmarks.md. A benchmark, not a test: it asserts nothing
about timings, but it exits 1 if any call failed.

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python bench/mcp_load.py [--clients 50] [--seconds 60]

Run it against a database of its own: it migrates it and adds agents.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"

SEED = r"""
import json, sys
import django
django.setup()
from memoryhub import services
from memoryhub.models import WritePolicy

run, clients = sys.argv[1], int(sys.argv[2])
workspace = services.ensure_workspace(slug="mcp-bench")[0]
out = []
for n in range(clients):
    agent = services.create_agent(actor=services.SYSTEM, workspace=workspace, slug=f"mcp-{run}-{n}",
                                  name=f"MCP {n}", write_policy=WritePolicy.DIRECT)
    user = f"user-{n}"
    services.write_memory(agent=agent, kind="SOUL.md", content=f"I am MCP bench agent {n}. I answer briefly.")
    services.write_memory(agent=agent, kind="USER.md", user_ref=user, content=f"- Name: user {n}\n- Rides a bike\n")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user,
                          content="- Prefers email over phone calls.\n- Orders arrive on Fridays.\n")
    session = services.start_session(agent=agent, user_ref=user)
    services.append_log(session=session, entries=[
        {"role": "user", "content": f"My order {1000 + n} has not arrived, the bike bell is missing."},
        {"role": "assistant", "content": "I am sorry; I will check the delivery of the bell."}])
    services.end_session(session=session)
    _, key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    out.append({"key": key, "user": user})
print(json.dumps(out))
"""

# One cycle of calls per client: (tool, arguments builder). `n` is the
# client's cycle number, so each fact it adds is new and then changed and
# removed again: every write must succeed.
CYCLE = ("view", "search", "add", "search", "view", "replace", "search", "remove")


def arguments(step: str, user: str, client: int, n: int) -> tuple[str, dict[str, Any]]:
    fact = f"Fact {n} of client {client}: asked about delivery."
    if step == "view":
        return "memory_view", {"file": "MEMORY.md" if n % 2 else "USER.md", "user": user}
    if step == "search":
        return "memory_search", {"query": ("bike bell", "delivery order", "email")[n % 3], "user": user, "limit": 5}
    if step == "add":
        return "memory_add", {"file": "MEMORY.md", "user": user, "text": fact, "reason": "bench"}
    if step == "replace":
        return "memory_replace", {"file": "MEMORY.md", "user": user, "old_text": fact,
                                  "new_text": f"Fact {n} of client {client}: delivery confirmed.", "reason": "bench"}
    return "memory_remove", {"file": "MEMORY.md", "user": user, "old_text": f"Fact {n} of client {client}:",
                             "reason": "bench"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def client_loop(url: str, agent: dict[str, Any], client: int, deadline: float,
                      latencies: dict[str, list[float]], errors: list[str]) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    user = agent["user"]
    try:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {agent['key']}"}) as http,
            streamable_http_client(f"{url}/mcp/", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            n = 0
            while time.monotonic() < deadline:
                for step in CYCLE:
                    if time.monotonic() >= deadline:
                        break
                    tool, args = arguments(step, user, client, n)
                    started = time.perf_counter()
                    try:
                        result = await session.call_tool(tool, args)
                    except Exception as exc:  # a JSON-RPC error or a broken connection
                        errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                        continue
                    latencies[tool].append((time.perf_counter() - started) * 1000)
                    if result.is_error:
                        text = " ".join(getattr(part, "text", "") for part in result.content)
                        errors.append(f"{tool}: tool error: {text[:120]}")
                n += 1
    except Exception as exc:
        errors.append(f"session: {type(exc).__name__}: {exc}")


async def run_clients(url: str, agents: list[dict[str, Any]], seconds: float) -> tuple[dict[str, list[float]],
                                                                                     list[str], float]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    started = time.monotonic()
    await asyncio.gather(*(client_loop(url, agent, i, started + seconds, latencies, errors)
                           for i, agent in enumerate(agents)))
    return latencies, errors, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database of this benchmark's own (and REDIS_URL).")

    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "PYTHONPATH": str(ROOT),
           # Each client stays far under the default 1,200 calls/min per key.
           "MEMORYHUB_AGENT_RATE": os.environ.get("MEMORYHUB_AGENT_RATE", "1200/min")}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    run = str(int(time.time()))
    seeded = subprocess.run([sys.executable, "-c", SEED, run, str(args.clients)], cwd=ROOT, env=env, check=True,
                            capture_output=True, text=True)
    agents = json.loads(seeded.stdout.strip().splitlines()[-1])

    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "bench-mcp-uvicorn.log", "w")  # noqa: SIM115
    # docker-compose.yml's `mcp` service, on a free port.
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "memoryhub.asgi:application", "--host", HOST,
                               "--port", str(port), "--timeout-keep-alive", "5", "--limit-concurrency", "200",
                               "--no-server-header", "--no-access-log"], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        for _ in range(150):
            try:
                conn = http.client.HTTPConnection(HOST, port, timeout=2)
                conn.request("GET", "/readyz", headers={"Host": "localhost"})
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        else:
            sys.exit("uvicorn did not become ready; see var/bench-mcp-uvicorn.log")
        cpu_before = time.process_time()
        latencies, errors, elapsed = asyncio.run(run_clients(f"http://{HOST}:{port}", agents, args.seconds))
        client_cpu = time.process_time() - cpu_before
        server_cpu = cpu_seconds(server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        log.close()

    everything = [v for values in latencies.values() for v in values]
    print(f"{len(agents)} MCP clients (mcp SDK, streamable HTTP), {elapsed:.0f} s, uvicorn memoryhub.asgi "
          f"(1 process, MEMORYHUB_WSGI_THREADS={os.environ.get('MEMORYHUB_WSGI_THREADS', 'default')}), "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"database {os.environ['DATABASE_URL'].split(':', 1)[0]}, "
          f"cache {'Redis' if os.environ.get('REDIS_URL') else 'LocMem'}")
    print("| tool | calls | p50 ms | p99 ms |\n|---|---:|---:|---:|")
    for tool in ("memory_view", "memory_search", "memory_add", "memory_replace", "memory_remove"):
        values = latencies.get(tool, [])
        print(f"| {tool} | {len(values):,} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} |")
    print(f"| all | {len(everything):,} | {percentile(everything, 50):.1f} | {percentile(everything, 99):.1f} |")
    print(f"throughput {len(everything) / elapsed:.0f} calls/s; errors {len(errors)}")
    print(f"CPU: server {server_cpu:.0f} s (uvicorn, whole run incl. start-up), load generator {client_cpu:.0f} s "
          f"(the 50 SDK clients), of {elapsed * (os.cpu_count() or 1):.0f} s available")
    for problem, count in Counter(errors).most_common(10):
        print(f"  {count} × {problem}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
