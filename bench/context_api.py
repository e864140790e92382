"""Benchmark: what does GET /api/v1/context cost next to a trivial call?

Runs the real stack — gunicorn serving memoryhub.wsgi on 127.0.0.1 with its
own database — and drives it with one load generator (a pool of Python
threads, each holding one keep-alive connection) against, in turn:

  1. GET /api/v1/tools              the same agent-key auth and throttle, one tiny query
  2. GET /api/v1/context?user=U     a seeded agent and user, served from the cache
  3. GET /api/v1/context?user=<new> a user never seen before on every request: cache misses

and prints requests/s, p50 and p99 latency for each, and the context/trivial
ratios. A benchmark, not a test: it asserts nothing about timings.

    .venv/bin/python bench/context_api.py [--seconds N] [--warmup N] [--concurrency C]

With no DATABASE_URL it builds a fresh SQLite database in a temporary
directory; a caller's DATABASE_URL (and REDIS_URL) is used as given. See
docs/benchmarks.md for what the figures mean.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
USER = "u-4711"
# Set on Ctrl-C or SIGTERM: client threads stop sending at once.
STOP = threading.Event()

# Run in a subprocess with the benchmark's environment, so the seed goes
# through the same services (and the same settings) as the server.
SEED = r"""
import json, sys
import django
django.setup()
from memoryhub import services

run, strategy = sys.argv[1], sys.argv[2]
SOUL = '''You are Pedalpal, the support agent of Kettle & Chain, a bike shop with a workshop.
Be warm and brief: one or two short paragraphs, then a concrete next step.
Never guess prices or stock: look them up with the tools, and say when you could not.
Safety first: for brakes, forks or carbon damage, tell the rider to stop riding and book the workshop.
Do not diagnose from photos alone; ask for the symptom, the bike model and when it started.
Refunds and warranty decisions belong to a human: collect the facts, then hand over with escalate_to_human.
Speak the customer's language; default to English. Use metric units unless the customer uses imperial.
If the customer is upset, acknowledge it once, then fix the problem; never argue about policy.
Keep what you learn about a customer in USER.md (who they are) and MEMORY.md (what happened),
one fact per line, dated, and drop facts that are no longer true.'''
ABOUT = '''Kettle & Chain sells city, gravel and e-bikes and runs a workshop in Leeds (UK).
Opening hours: Mon-Fri 09:00-18:00, Sat 10:00-16:00, closed Sunday and bank holidays.
Workshop: standard service GBP 65 (about 2 days), full service GBP 120 (about 4 days), e-bike diagnostics GBP 40.
Orders ship in 1-2 working days with Royal Mail; free delivery over GBP 50; returns within 30 days, unused.
Warranty: frames 5 years, components 2 years, e-bike batteries 2 years or 500 charge cycles.
Brands stocked: Genesis, Ribble, Brompton, Tern, Shimano, SRAM, Schwalbe, Continental.
Click & collect orders wait 14 days at the shop counter. Trade-ins are valued in the shop only.'''
TOOLS = '''lookup_order takes the order number as printed on the receipt (KC- and 6 digits).
check_stock needs the SKU, not the product name; search_catalog finds the SKU first.
book_workshop offers slots for the next 14 days only; the customer must confirm the slot.
escalate_to_human opens a ticket; tell the customer a person answers within one working day.
Never call book_workshop twice for the same bike in one conversation.'''
USER_MD = '''- Name: Alex Moreau (prefers "Alex"), customer since 2023-04
- Rides: Genesis Croix de Fer 20 (gravel, 2022), Tern GSD S10 (cargo e-bike, 2024)
- Commutes 14 km each way, all year; rides a 200 km audax most months
- Contact: email only, no phone calls; English, replies in the evening
- Size: 56 cm frame, 172.5 mm cranks; uses SPD pedals
- Has a loyalty card (10 % off workshop labour)
- Allergic to latex: no latex inner tubes'''
TOOL_DEFS = [
    {"name": "lookup_order", "description": "Find an order by its number.",
     "parameters": {"type": "object", "properties": {"order": {"type": "string", "pattern": "^KC-[0-9]{6}$"}},
                    "required": ["order"]}},
    {"name": "check_stock", "description": "Stock level of one SKU in the shop and the warehouse.",
     "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}},
    {"name": "search_catalog", "description": "Search products by words; returns SKUs and prices.",
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["q"]}},
    {"name": "book_workshop", "description": "Offer or book a workshop slot for a service.",
     "parameters": {"type": "object", "properties": {
         "service": {"type": "string", "enum": ["standard", "full", "ebike"]},
         "date": {"type": "string", "format": "date"}}, "required": ["service"]}},
    {"name": "escalate_to_human", "description": "Open a ticket for a person in the shop.",
     "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}},
]


def memory(n):
    lines = [f"- 2025-{1 + i % 12:02d}-{1 + i % 27:02d}: note {i}: asked about "
             f"{['tubeless setup', 'brake pads', 'a chain', 'the GSD battery', 'a workshop slot'][i % 5]}; "
             f"{['resolved', 'ordered parts', 'booked a service', 'sent a how-to link'][i % 4]}"
             for i in range(n)]
    return "\n".join(lines)


workspace, _ = services.ensure_workspace(slug=f"bench-{run}")
agent = services.create_agent(workspace=workspace, slug=f"pedalpal-{run}", name="Pedalpal", strategy=strategy,
                              write_policy="direct", actor=services.SYSTEM)
services.write_memory(agent=agent, kind="SOUL.md", content=SOUL)
services.write_memory(agent=agent, kind="ABOUT.md", content=ABOUT)
services.write_memory(agent=agent, kind="TOOLS.md", content=TOOLS)
services.replace_tools(agent=agent, tools=TOOL_DEFS, actor=services.SYSTEM)
services.write_memory(agent=agent, kind="USER.md", user_ref=sys.argv[3], content=USER_MD)
# 51 writes: the current MEMORY.md has 50 older versions behind it.
for n in range(51):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref=sys.argv[3],
                          content=f"# After session {n}\n" + memory(20 + n // 2), reason=f"session {n}")
for i in range(20):
    other = services.create_agent(workspace=workspace, slug=f"other-{i}-{run}", write_policy="direct",
                                  actor=services.SYSTEM)
    services.write_memory(agent=other, kind="SOUL.md", content=f"You are helper number {i}. " + SOUL[:600])
    services.write_memory(agent=other, kind="ABOUT.md", content=ABOUT)
    for u in range(3):
        services.write_memory(agent=other, kind="USER.md", user_ref=f"user-{u}", content=USER_MD)
        services.write_memory(agent=other, kind="MEMORY.md", user_ref=f"user-{u}", content=memory(20))
_, key = services.issue_agent_key(agent=agent, name="benchmark", actor=services.SYSTEM)
print(json.dumps({"key": key, "agent": agent.slug}))
"""


@dataclass
class Result:
    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    round_rps: list[float] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def add(self, other: Result) -> None:
        self.seconds += other.seconds
        self.latencies += other.latencies
        self.failures.update(other.failures)
        self.round_rps.append(other.rps)

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def run_checked(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:3])} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@contextmanager
def gunicorn(env: dict[str, str], port: int, workers: int, threads: int, log: Path) -> Iterator[None]:
    with log.open("w") as out:
        # Its own session: Ctrl-C reaches only us, and we stop it in order.
        server = subprocess.Popen(
            [str(BIN / "gunicorn"), "memoryhub.wsgi:application", "-b", f"{HOST}:{port}",
             "-w", str(workers), "--threads", str(threads), "--keep-alive", "30"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            wait_healthy(port, server, log)
            yield
        finally:
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait(timeout=5)


def wait_healthy(port: int, server: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"gunicorn did not answer /healthz within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def load(
    name: str, port: int, headers: dict[str, str], next_path: Callable[[], str], *,
    concurrency: int, warmup: float, seconds: float,
) -> Result:
    """Every thread sends requests back to back on one keep-alive connection;
    only requests that start after the warm-up and end before the deadline
    count."""
    result = Result(name=name, seconds=seconds)
    lock = threading.Lock()
    start = time.perf_counter()
    measure_from, deadline = start + warmup, start + warmup + seconds

    def client() -> None:
        latencies: list[float] = []
        failures: Counter[str] = Counter()
        conn = http.client.HTTPConnection(HOST, port, timeout=10)
        while (began := time.perf_counter()) < deadline and not STOP.is_set():
            try:
                conn.request("GET", next_path(), headers=headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as exc:
                failures[type(exc).__name__] += 1
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=10)
                continue
            ended = time.perf_counter()
            if began >= measure_from and ended <= deadline:
                if response.status == 200:
                    latencies.append(ended - began)
                else:
                    failures[f"HTTP {response.status}"] += 1
            if response.will_close:
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=10)
        conn.close()
        with lock:
            result.latencies.extend(latencies)
            result.failures.update(failures)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=warmup + seconds + 30)
    if STOP.is_set():
        raise KeyboardInterrupt
    return result


def check_once(port: int, headers: dict[str, str], path: str) -> bytes:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        sys.exit(f"GET {path} answered {response.status}: {body[:500]!r}")
    return body


def report(results: list[Result], trivial: Result, header: str) -> str:
    lines = [header, ""]
    lines.append(f"{'endpoint':<46} {'requests':>9} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}  "
                 f"{'req/s by round':<20} failures")
    for r in results:
        failures = ", ".join(f"{k}: {v}" for k, v in r.failures.items()) or "0"
        rounds = " ".join(f"{x:.0f}" for x in r.round_rps)
        lines.append(f"{r.name:<46} {len(r.latencies):>9} {r.rps:>9.1f} {r.percentile(50):>8.2f} "
                     f"{r.percentile(99):>8.2f}  {rounds:<20} {failures}")
    lines += ["", f"{'ratio to ' + trivial.name:<46} {'':>9} {'req/s':>9} {'p50':>8} {'p99':>8}"]
    for r in results:
        if r is trivial:
            continue
        p50, p99 = r.percentile(50) / trivial.percentile(50), r.percentile(99) / trivial.percentile(99)
        lines.append(f"{r.name:<46} {'':>9} {r.rps / trivial.rps:>8.2f}x {p50:>7.2f}x {p99:>7.2f}x")
    return "\n".join(lines)


def interrupt(signum: int, frame: object) -> None:
    if STOP.is_set():
        return  # a second Ctrl-C must not cut the cleanup short
    STOP.set()
    raise KeyboardInterrupt


def main() -> None:
    # Also when started in the background, where SIGINT arrives ignored.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10, help="measured seconds per endpoint (default 10)")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per endpoint (default 2)")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads (default 8)")
    parser.add_argument("--rounds", type=int, default=1, help="run the endpoints in turn this many times; "
                        "figures pool all rounds, which evens out a busy machine (default 1)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker (default 4)")
    parser.add_argument("--strategy", default="full", choices=["full", "hybrid_v1", "hybrid_v2", "on_demand"],
                        help="the agent's context strategy (default full: all five files injected)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (database, logs)")
    args = parser.parse_args()
    if not (0 < args.seconds <= 600 and 0 <= args.warmup <= 60 and 1 <= args.concurrency <= 256
            and 1 <= args.rounds <= 20):
        parser.error("keep --seconds in (0, 600], --warmup in [0, 60], --concurrency in [1, 256], --rounds in [1, 20]")

    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "MEMORYHUB_VAR_DIR": str(tmp),
        "DJANGO_ALLOWED_HOSTS": HOST,
        "DJANGO_DEBUG": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    # Never throttled, but the throttle still runs (one counter per window).
    env.setdefault("MEMORYHUB_AGENT_RATE", "1000000/min")
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'bench.sqlite3'}")
    try:
        database = env["DATABASE_URL"].split(":", 1)[0]
        cache = "Redis (REDIS_URL)" if env.get("REDIS_URL") else "LocMem, one per gunicorn worker"
        print(f"database: {database}, cache: {cache}, temp dir: {tmp}", flush=True)
        print("migrating and seeding…", flush=True)
        run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env)
        run = secrets.token_hex(3)
        seeded = json.loads(run_checked([sys.executable, "-c", SEED, run, args.strategy, USER], env).splitlines()[-1])
        headers = {"Authorization": f"Bearer {seeded['key']}", "Accept": "application/json"}
        port = free_port()
        with gunicorn(env, port, args.workers, args.threads, tmp / "gunicorn.log"):
            cold_users = (f"cold-{run}-{n}" for n in itertools.count())
            scenarios: list[tuple[str, Callable[[], str]]] = [
                ("GET /api/v1/tools (trivial)", lambda: "/api/v1/tools"),
                ("GET /api/v1/context (warm cache)", lambda: f"/api/v1/context?user={USER}"),
                ("GET /api/v1/context (cold: new user each time)", lambda: f"/api/v1/context?user={next(cold_users)}"),
            ]
            for _, next_path in scenarios:
                check_once(port, headers, next_path())
            served = json.loads(check_once(port, headers, f"/api/v1/context?user={USER}"))
            size = (f"context of {USER}: {len(served['system_prompt']):,} characters, {served['tokens']:,} tokens "
                    f"({served['token_counter'].get('encoding')}), {len(served['sections'])} sections")
            print(size, flush=True)
            # Fresh workers load code, encodings and pages on first use:
            # give every endpoint that once, so no row pays for it alone.
            print(f"warming the server up ({len(scenarios)} × {args.warmup:g} s)…", flush=True)
            for name, next_path in scenarios:
                load(name, port, headers, next_path, concurrency=args.concurrency, warmup=args.warmup, seconds=0)
            results = {name: Result(name=name) for name, _ in scenarios}
            for round_no in range(1, args.rounds + 1):
                # Every other round in reverse, so no endpoint always follows the same one.
                for name, next_path in scenarios if round_no % 2 else scenarios[::-1]:
                    print(f"[{round_no}/{args.rounds}] {name}: {args.warmup:g} s warm-up + {args.seconds:g} s…",
                          flush=True)
                    results[name].add(load(name, port, headers, next_path, concurrency=args.concurrency,
                                           warmup=args.warmup, seconds=args.seconds))
        header = (
            f"MemoryHub context API benchmark — {platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPUs; gunicorn {args.workers} workers × {args.threads} threads; "
            f"{args.concurrency} client threads; {args.rounds} × {args.seconds:g} s per row, each after "
            f"{args.warmup:g} s warm-up; "
            f"database {database}; cache {cache}; strategy {args.strategy}\n{size}"
        )
        print()
        print(report(list(results.values()), results[scenarios[0][0]], header))
    except KeyboardInterrupt:
        STOP.set()
        sys.exit("interrupted; gunicorn stopped")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
