"""Load test: 50 agents at once against gunicorn as deployed (gunicorn.conf.py).

Each simulated agent has its own key, user and session and loops, for
--seconds, over a mix of what agents do: read its context (half of the
calls), rewrite MEMORY.md with PUT (a quarter; the entries API lands later)
and append to its session log (a quarter). One keep-alive connection per
agent. It prints per-operation counts, errors, p50/p99 and the overall
rate. A benchmark, not a test: it asserts nothing about timings, but it
exits 1 if any call failed (a non-2xx answer or a broken connection).

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python bench/load.py [--agents 50] [--seconds 60]

Run it against a database of its own: it migrates it and adds agents.
Results and what they mean: docs/benchmarks.md, "Load: 50 agents".
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
STOP = threading.Event()

SEED = r"""
import json, sys, secrets
import django
django.setup()
from memoryhub import services
from memoryhub.models import WritePolicy

run, agents = sys.argv[1], int(sys.argv[2])
out = []
for n in range(agents):
    agent = services.create_agent(actor=services.SYSTEM, workspace=services.ensure_workspace(slug="load")[0],
                                  slug=f"load-{run}-{n}", name=f"Load {n}", write_policy=WritePolicy.DIRECT)
    services.write_memory(agent=agent, kind="SOUL.md", content=f"I am load agent {n}. I answer briefly.")
    services.write_memory(agent=agent, kind="USER.md", user_ref=f"user-{n}", content=f"- Name: user {n}\n")
    _, key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    session = services.start_session(agent=agent, user_ref=f"user-{n}")
    out.append({"key": key, "user": f"user-{n}", "session": session.pk})
print(json.dumps(out))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def agent_loop(port: int, agent: dict[str, object], deadline: float, seed: int,
               latencies: dict[str, list[float]], errors: list[str], lock: threading.Lock) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Bearer {agent['key']}", "Host": "localhost", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    user, session, n = agent["user"], agent["session"], 0
    local: dict[str, list[float]] = defaultdict(list)
    local_errors: list[str] = []
    while time.monotonic() < deadline and not STOP.is_set():
        n += 1
        roll = rng.random()
        if roll < 0.5:
            op, method, path, body = "context", "GET", f"/api/v1/context?user={user}", None
        elif roll < 0.75:
            op, method, path = "write", "PUT", f"/api/v1/memory/MEMORY.md?user={user}"
            body = json.dumps({"content": f"- fact {n} learned at {time.time():.3f}\n", "reason": "load"})
        else:
            op, method, path = "log", "POST", f"/api/v1/sessions/{session}/log"
            body = json.dumps({"entries": [{"role": "user", "content": f"message {n}"},
                                           {"role": "assistant", "content": f"answer {n}"}]})
        started = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            local_errors.append(f"{op}: {type(exc).__name__}: {exc}")
            conn.close()
            conn = http.client.HTTPConnection(HOST, port, timeout=30)
            continue
        local[op].append((time.perf_counter() - started) * 1000)
        if not 200 <= status < 300:
            local_errors.append(f"{op}: HTTP {status}")
    conn.close()
    with lock:
        for op, values in local.items():
            latencies[op].extend(values)
        errors.extend(local_errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (WEB_CONCURRENCY)")
    parser.add_argument("--threads", type=int, default=8, help="gunicorn threads per worker")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database of this benchmark's own (and REDIS_URL).")

    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "PYTHONPATH": str(ROOT),
           "GUNICORN_BIND": f"{HOST}:{port}", "WEB_CONCURRENCY": str(args.workers),
           "GUNICORN_THREADS": str(args.threads), "GUNICORN_ACCESS_LOG": "/dev/null",
           # Fifty agents at several calls a second each stay under the default
           # 1,200/min per key; the staff rate is not involved.
           "MEMORYHUB_AGENT_RATE": os.environ.get("MEMORYHUB_AGENT_RATE", "1200/min")}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    run = str(int(time.time()))
    seeded = subprocess.run([sys.executable, "-c", SEED, run, str(args.agents)], cwd=ROOT, env=env, check=True,
                            capture_output=True, text=True)
    agents = json.loads(seeded.stdout.strip().splitlines()[-1])

    log = open(ROOT / "var" / "bench-load-gunicorn.log", "w")  # noqa: SIM115
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                               "memoryhub.wsgi:application"], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    signal.signal(signal.SIGINT, lambda *_: STOP.set())
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
            sys.exit("gunicorn did not become ready; see var/bench-load-gunicorn.log")

        latencies: dict[str, list[float]] = defaultdict(list)
        errors: list[str] = []
        lock = threading.Lock()
        started = time.monotonic()
        deadline = started + args.seconds
        threads = [threading.Thread(target=agent_loop, args=(port, agent, deadline, i, latencies, errors, lock))
                   for i, agent in enumerate(agents)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        log.close()

    everything = [v for values in latencies.values() for v in values]
    print(f"{len(agents)} agents, {elapsed:.0f} s, gunicorn {args.workers} workers × {args.threads} threads "
          f"(gthread), {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"database {os.environ['DATABASE_URL'].split(':', 1)[0]}, "
          f"cache {'Redis' if os.environ.get('REDIS_URL') else 'LocMem'}")
    print("| operation | calls | p50 ms | p99 ms |\n|---|---:|---:|---:|")
    for op in ("context", "write", "log"):
        values = latencies.get(op, [])
        print(f"| {op} | {len(values):,} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} |")
    print(f"| all | {len(everything):,} | {percentile(everything, 50):.1f} | {percentile(everything, 99):.1f} |")
    print(f"throughput {len(everything) / elapsed:.0f} calls/s; errors {len(errors)}")
    for problem, count in Counter(errors).most_common(10):
        print(f"  {count} × {problem}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
