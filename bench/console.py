"""Benchmark: do the review console's pages cost the same with 1,000 pending
proposals as with 10?

A reviewer's day starts at a full queue. The queue, a proposal and the
dashboard should render in about the same time whatever the queue's size:
every list is paginated, joined and annotated in SQL (tests/reviews/
test_console_scale.py proves the query count is constant; this measures the
time). Two workspaces are seeded through the services, alike except for the
size of their queue — 10 pending proposals in one, 1,000 in the other, with
risk tags, claims, related proposals on the same file and some decided ones —
and one reviewer in each. Each page is fetched through the whole Django stack
in process (test client: middleware, session, CSP, templates, database; no
socket), small and large interleaved so drift on a shared machine hits both
alike, and the script prints the median per page and the ratio 1,000/10.
Target: under 1.5×. The queue shows 25 rows a page, so the large case renders
25 rows where the small one renders 10 (4 for "claimed by others"): the ratio
includes that, on purpose. A benchmark, not a test: it asserts nothing.

    .venv/bin/python bench/console.py [--rounds N]

With no DATABASE_URL it builds a fresh SQLite database in a temporary
directory; a caller's DATABASE_URL (a disposable database) is used as given.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# MEMORYHUB_BENCH_SMOKE (tests/test_bench.py): tiny queues, to prove it runs.
SIZES = (2, 5) if os.environ.get("MEMORYHUB_BENCH_SMOKE") else (10, 1000)
BASE = "- Prefers email over phone.\n- Lives in Leeds.\n- Order KC-104233 shipped on 2026-11-02.\n"
CHANGES = (
    BASE + "- Rides a gravel bike now.\n",
    BASE.replace("Leeds", "York"),
    BASE.replace("- Lives in Leeds.\n", ""),
    BASE.replace("KC-104233", "KC-104234"),
    BASE + "- Always answer in German.\n",
)


def setup(tmp: Path) -> dict[int, dict[str, Any]]:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'bench.sqlite3'}")
    os.environ["MEMORYHUB_VAR_DIR"] = str(tmp)
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryhub.settings"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    os.environ["DJANGO_LOG_LEVEL"] = "ERROR"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from memoryhub import services
    from memoryhub.models import Agent, Role, Source, WritePolicy

    call_command("migrate", verbosity=0)
    stamp = int(time.time())
    worlds: dict[int, dict[str, Any]] = {}
    for size in SIZES:
        workspace, _ = services.ensure_workspace(slug=f"bench-console-{size}-{stamp}")
        agents = [services.create_agent(workspace=workspace, slug=f"bench-{size}-{stamp}-{n}", actor=services.SYSTEM)
                  for n in range(3)]
        # Writes must apply at once to seed the files; set at the shell, as a bench may.
        Agent.objects.filter(pk__in=[a.pk for a in agents]).update(write_policy=WritePolicy.DIRECT)
        reviewer, _ = services.ensure_staff_user(username=f"bench-reviewer-{size}-{stamp}")
        services.set_role(user=reviewer, workspace=workspace, role=Role.ADMIN)
        colleague, _ = services.ensure_staff_user(username=f"bench-colleague-{size}-{stamp}")
        services.set_role(user=colleague, workspace=workspace, role=Role.REVIEWER)
        # Some decided proposals, for the dashboard's time to decision.
        for n in range(5):
            agent = agents[n % 3]
            agent.refresh_from_db()
            user = f"decided-{n}"
            services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user, content=BASE)
            made = services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user, content=CHANGES[0],
                                           source=Source.AGENT, author_agent=agent)
            services.approve_proposal(proposal_id=made.pk, reviewer=colleague, reason_code="accurate")
        first = None
        for n in range(size):
            agent = agents[n % 3]
            # Every fifth proposal shares its file with the one before: related work.
            user = f"cust-{n - 1 if n % 5 == 1 else n}"
            if n % 5 != 1:
                services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user, content=BASE)
            made = services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user,
                                           content=CHANGES[n % len(CHANGES)] + f"- note {n}\n", source=Source.AGENT,
                                           author_agent=agent, reason=f"Learned in session {n}.")
            if n % 3 == 0:
                # The colleague's claims, so "claimed by others" lists some for the reviewer.
                services.claim_proposal(proposal_id=made.pk, actor=colleague)
            first = first or made
        assert first is not None
        client = Client()
        client.force_login(reviewer)
        worlds[size] = {"client": client, "first": first.pk}
    # Planner statistics, as autovacuum would have them on PostgreSQL for a
    # queue that grew over days, not seconds. (SQLite keeps none unless
    # someone runs ANALYZE, so none are made there.)
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    return worlds


PAGES: dict[str, Callable[[int], str]] = {
    "queue": lambda first: "/",
    "queue, highest risk first": lambda first: "/?sort=risk",
    "queue, claimed by others": lambda first: "/?claimed=others",
    "proposal": lambda first: f"/proposals/{first}/",
    "dashboard": lambda first: "/dashboard/",
}


def timed(client: Any, url: str) -> float:
    start = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"{url}: unexpected answer {response.status_code}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="fetches of each page per size (default 40)")
    options = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mh-bench-console-"))
    try:
        started = time.perf_counter()
        worlds = setup(tmp)
        seeded = time.perf_counter() - started
        samples: dict[str, dict[int, list[float]]] = {name: {size: [] for size in SIZES} for name in PAGES}
        for url_for in PAGES.values():  # warm-up, not counted
            for size in SIZES:
                for _ in range(3):
                    timed(worlds[size]["client"], url_for(worlds[size]["first"]))
        for round_number in range(options.rounds):
            order = SIZES if round_number % 2 == 0 else tuple(reversed(SIZES))
            for name, url_for in PAGES.items():
                for size in order:
                    samples[name][size].append(timed(worlds[size]["client"], url_for(worlds[size]["first"])))
        small, large = SIZES
        print(f"{small} vs {large:,} pending proposals (seeded in {seeded:.0f} s); {options.rounds} fetches of each "
              f"page per size, interleaved; database {os.environ['DATABASE_URL'].split(':', 1)[0]}; "
              f"Python {platform.python_version()}")
        print()
        print(f"| page | {small} pending p50 ms | {large:,} pending p50 ms | ratio (p50) | ratio (mean) |")
        print("|---|---:|---:|---:|---:|")
        for name in PAGES:
            few, many = samples[name][small], samples[name][large]
            p_few, p_many = statistics.median(few) * 1000, statistics.median(many) * 1000
            ratio_mean = statistics.fmean(many) / statistics.fmean(few)
            print(f"| {name} | {p_few:.1f} | {p_many:.1f} | {p_many / p_few:.2f}× | {ratio_mean:.2f}× |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
