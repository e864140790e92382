"""Benchmark: what does an entry operation cost next to a PUT of the same file?

An entry operation reads the file under its row lock and rebuilds it before
the same write path a PUT takes (limits, scanner, version, history row,
audit event), so it should cost little more. This drives both through the
whole Django + DRF stack in process (DRF's test client: middleware, agent-key
authentication, throttle, serializers, the services, the database; no
socket, so the network does not blur the difference) on one MEMORY.md of
~4,500 characters in 70 entries, in pairs that leave the file as it was:

  add    POST entries (one entry) + DELETE entries   vs   PUT with it + PUT without it
  replace PATCH entries X→Y + PATCH entries Y→X       vs   PUT with Y + PUT with X

Pairs run interleaved (entry, PUT, entry, PUT, …, the order flipped every
round) so drift on a shared machine hits both sides alike. It prints the
mean and median per request and the ratio entry/PUT. A benchmark, not a
test: it asserts nothing.

    .venv/bin/python bench/entries.py [--pairs N] [--rounds R]

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

ROOT = Path(__file__).resolve().parent.parent
USER = "u-4711"
ENTRY = "- 2026-11-30: asked for invoices by email, never by post; the accounts team is copied on each one."
URL = f"/api/v1/memory/MEMORY.md?user={USER}"
ENTRIES_URL = f"/api/v1/memory/MEMORY.md/entries?user={USER}"


def memory_file() -> str:
    lines = [f"- 2026-{1 + n % 12:02d}-{1 + n % 28:02d}: fact number {n} about the customer, kept short and dated."
             for n in range(70)]
    return "\n".join(lines) + "\n"


def setup(tmp: Path) -> tuple[object, str]:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'bench.sqlite3'}")
    os.environ["MEMORYHUB_VAR_DIR"] = str(tmp)
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryhub.settings"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    os.environ["MEMORYHUB_AGENT_RATE"] = "100000000/min"
    os.environ["DJANGO_LOG_LEVEL"] = "ERROR"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from memoryhub import services
    from memoryhub.models import Agent, WritePolicy

    call_command("migrate", verbosity=0)
    slug = f"bench-entries-{int(time.time())}"
    workspace, _ = services.ensure_workspace(slug="bench")
    agent = services.create_agent(workspace=workspace, slug=slug, actor=services.SYSTEM, name="Bench")
    # Writes must apply (a review policy would make every request a proposal);
    # set at the shell, as a bench may, not through the four-eyes change.
    Agent.objects.filter(pk=agent.pk).update(write_policy=WritePolicy.DIRECT)
    agent.refresh_from_db()
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref=USER, content=memory_file())
    _, key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client, slug


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    response = call()
    elapsed = time.perf_counter() - start
    status = getattr(response, "status_code", 0)
    if status != 200:
        raise SystemExit(f"unexpected answer {status}: {getattr(response, 'content', b'')[:300]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=150, help="pairs of each kind per round (default 150)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the order flipped each time (default 3)")
    options = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mh-bench-entries-"))
    try:
        client, _ = setup(tmp)
        base = memory_file()
        with_entry = base + ENTRY + "\n"
        old_line = base.splitlines()[35]
        new_line = old_line.replace("kept short", "kept short and checked")
        replaced = base.replace(old_line, new_line)

        def put(content: str) -> Callable[[], object]:
            return lambda: client.put(URL, {"content": content}, format="json")  # type: ignore[attr-defined]

        def entry(method: str, body: dict[str, str]) -> Callable[[], object]:
            return lambda: getattr(client, method)(ENTRIES_URL, body, format="json")

        kinds: dict[str, tuple[list[Callable[[], object]], list[Callable[[], object]]]] = {
            "add + remove": (
                [entry("post", {"text": ENTRY}), entry("delete", {"old_text": ENTRY[2:60]})],
                [put(with_entry), put(base)],
            ),
            "replace twice": (
                [entry("patch", {"old_text": old_line[2:], "new_text": new_line[2:]}),
                 entry("patch", {"old_text": new_line[2:], "new_text": old_line[2:]})],
                [put(replaced), put(base)],
            ),
        }
        samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in kinds}
        for entry_pair, put_pair in kinds.values():  # warm-up, not counted
            for call in (*entry_pair, *put_pair) * 10:
                timed(call)
        for round_number in range(options.rounds):
            for _ in range(options.pairs):
                for name, (entry_pair, put_pair) in kinds.items():
                    sides = [(0, entry_pair), (1, put_pair)]
                    if round_number % 2:
                        sides.reverse()
                    for index, pair in sides:
                        for call in pair:
                            samples[name][index].append(timed(call))
        print(f"MEMORY.md: {len(base):,} chars in {len(base.splitlines())} entries; "
              f"{options.rounds} rounds × {options.pairs} pairs of each kind; "
              f"database {os.environ['DATABASE_URL'].split(':', 1)[0]}; Python {platform.python_version()}")
        print()
        print("| operation | entry mean ms | entry p50 ms | PUT mean ms | PUT p50 ms | ratio (mean) | ratio (p50) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, (entry_times, put_times) in samples.items():
            em, ep = statistics.fmean(entry_times) * 1000, statistics.median(entry_times) * 1000
            pm, pp = statistics.fmean(put_times) * 1000, statistics.median(put_times) * 1000
            print(f"| {name} | {em:.2f} | {ep:.2f} | {pm:.2f} | {pp:.2f} | {em / pm:.2f}× | {ep / pp:.2f}× |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
