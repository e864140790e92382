"""Benchmark: memory search on PostgreSQL over 1,000,000 log entries.

Loads 1,000,000 log entries spread over 10,000 (agent, user) pairs — 100
agents × 100 users, 100 entries each over ten sessions and a year — into
the PostgreSQL database named by DATABASE_URL (bulk-loaded with COPY, the
indexes of migration 0004 built afterwards), then times
`memoryhub.search.search()` in process, each query scoped to one random pair,
and prints p50/p95/p99 by kind of query. Target: p95 ≤ 50 ms at 100,000 entries, ≤ 100 ms at 1,000,000. A benchmark,
not a test: it asserts nothing.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mh_search_bench \\
        .venv/bin/python bench/search.py [--queries N] [--entries N] [--pairs N] [--reload] [--direct-vectors]

Without --direct-vectors the semantic index is made by the worker's own task
over every pair (~17 min of a core at 1,000,000 entries); with it, a few
thousand distinct texts are embedded once and their vectors written for
every text by COPY (write_vectors_directly; the output says so).

The database must be a disposable one: the first run migrates it and loads
the data (a few minutes on two cores); later runs reuse the data when it
matches --entries and --pairs, or reload it with --reload. The text is
drawn from a support vocabulary plus generated words with a Zipf
distribution, so common words are in most of a pair's entries and rare ones
in a handful of the whole table. What is timed is the service function —
two SQL queries (files, logs), ranking, headlines and the scanner — not
HTTP; docs/benchmarks.md has the figures and what they mean.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

WORKSPACE = "search-bench"
SESSIONS_PER_PAIR = 10

# The words a bike shop's support history is made of, commonest first; the
# generated words after them make the long tail.
_COMMON = """
the customer bike order service invoice email delivery refund brake tyre chain workshop booked
sent asked please thanks price quote warranty parts repair gears saddle wheel battery ebike phone
call payment card charged twice parcel tracking late arrived collect shop counter stock size helmet
lock lights mudguards frame fork cassette derailleur pads rotor spokes rim tape puncture tube
pump saturday monday friday week month today tomorrow morning afternoon ticket manager discount
loyalty voucher complaint apology review newsletter unsubscribe address postcode number receipt
model brompton genesis tern shimano sram schwalbe continental gravel city folding cargo commute
towpath canal rain winter summer grease clean squeal skip slip loose tight bent broken replaced
fitted adjusted checked confirmed cancelled reserved returned exchanged upgraded measured tested
"""
COMMON = _COMMON.split()
TAIL_WORDS = 30_000


def pseudo_words(count: int, rng: random.Random) -> list[str]:
    onsets = ["b", "br", "d", "dr", "f", "g", "gr", "k", "kl", "l", "m", "n", "p", "pl", "r", "s", "st", "t",
              "tr", "v", "z"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    codas = ["", "n", "r", "s", "t", "l", "m", "nd", "rk"]
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.randint(2, 4)
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(syllables)))
    return sorted(words)


def setup_django(database_url: str) -> None:
    if not database_url.startswith(("postgres://", "postgresql://")):
        sys.exit("bench/search.py measures PostgreSQL: set DATABASE_URL to a disposable PostgreSQL database.")
    os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


def loaded(entries: int, pairs: int) -> bool:
    from memoryhub.models import Agent, LogEntry

    agents = Agent.objects.filter(workspace__slug=WORKSPACE)
    return agents.count() * 100 == pairs and LogEntry.objects.filter(agent__in=agents).count() == entries


def load(*, entries: int, pairs: int, seed: int) -> None:
    from django.db import connection, transaction

    from memoryhub.models import Agent, LogEntry, Workspace

    rng = random.Random(seed)
    agents_count, users_count = pairs // 100, 100
    per_pair = entries // pairs
    vocabulary = COMMON + pseudo_words(TAIL_WORDS, rng)
    weights = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(vocabulary))))
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        # Append-only tables refuse DELETE/TRUNCATE and back-dated rows through
        # triggers; a bench database is disposable, so lift them for this load's
        # transaction only (a year of history has to be dated in the past).
        cursor.execute("SET LOCAL session_replication_role = replica")
        # Loading a million rows is one long COPY: no per-statement timeout here.
        cursor.execute("SET LOCAL statement_timeout = 0")
        cursor.execute(
            "TRUNCATE memoryhub_logentry, memoryhub_agentsession RESTART IDENTITY CASCADE"
        )
        cursor.execute(
            "DELETE FROM memoryhub_memoryfile WHERE agent_id IN (SELECT a.id FROM memoryhub_agent a "
            "JOIN memoryhub_workspace w ON w.id = a.workspace_id WHERE w.slug = %s)",
            [WORKSPACE],
        )
        workspace, _ = Workspace.objects.get_or_create(slug=WORKSPACE, defaults={"name": "Search bench"})
        existing = {a.slug: a for a in Agent.objects.filter(workspace=workspace)}
        agents = [
            existing.get(f"bench-{n}") or Agent.objects.create(workspace=workspace, slug=f"bench-{n}",
                                                                name=f"Bench {n}")
            for n in range(agents_count)
        ]
        cursor.execute("DROP INDEX IF EXISTS memoryhub_logentry_fts")
        cursor.execute("DROP INDEX IF EXISTS logentry_pair_id")
        now = datetime.now(UTC)
        cursor.execute(
            """
            INSERT INTO memoryhub_agentsession
                (agent_id, user_ref, external_id, started_at, ended_at, snapshot, context, parts)
            SELECT a.id, 'user-' || u, '', %s - (s * interval '36 days'), %s - (s * interval '36 days'),
                   '{}', '{}', '[]'
            FROM unnest(%s::bigint[]) AS a(id), generate_series(0, %s - 1) AS u, generate_series(0, %s - 1) AS s
            ORDER BY a.id, u, s
            """,
            [now, now, [a.pk for a in agents], users_count, SESSIONS_PER_PAIR],
        )
        cursor.execute("SELECT id, agent_id, user_ref FROM memoryhub_agentsession ORDER BY id")
        sessions: dict[tuple[int, str], list[int]] = defaultdict(list)
        for session_id, agent_id, user_ref in cursor.fetchall():
            sessions[(agent_id, user_ref)].append(session_id)
        def lines(count: int) -> str:
            return "".join(
                "- " + " ".join(rng.choices(vocabulary, cum_weights=weights, k=rng.randint(5, 12))) + "\n"
                for _ in range(count)
            )

        # The files a search also ranks: each agent's three, each pair's two.
        with cursor.cursor.copy(  # type: ignore[attr-defined]
            "COPY memoryhub_memoryfile (agent_id, user_ref, kind, content, version, updated_at, revoked_versions,"
            " withheld_reason) FROM STDIN"
        ) as copy:
            for agent in agents:
                for kind in ("SOUL.md", "ABOUT.md", "TOOLS.md"):
                    copy.write_row((agent.pk, "", kind, lines(15), 1, now, "[]", ""))
                for user in range(users_count):
                    copy.write_row((agent.pk, f"user-{user}", "USER.md", lines(12), 1, now, "[]", ""))
                    copy.write_row((agent.pk, f"user-{user}", "MEMORY.md", lines(40), 1, now, "[]", ""))
        roles = ["user", "assistant", "note", "tool"]
        copied = 0
        with cursor.cursor.copy(  # type: ignore[attr-defined]
            "COPY memoryhub_logentry (session_id, agent_id, user_ref, role, content, created_at) FROM STDIN"
        ) as copy:
            for (agent_id, user_ref), session_ids in sessions.items():
                lengths = [rng.randint(8, 40) for _ in range(per_pair)]
                words = rng.choices(vocabulary, cum_weights=weights, k=sum(lengths))
                offset = 0
                for n, length in enumerate(lengths):
                    text = " ".join(words[offset:offset + length]).capitalize() + "."
                    offset += length
                    created = now - timedelta(days=365 * (per_pair - n) / per_pair, seconds=rng.random() * 3600)
                    session_id = session_ids[n * len(session_ids) // per_pair]
                    copy.write_row((session_id, agent_id, user_ref, rng.choice(roles), text, created))
                copied += per_pair
                if copied % 100_000 == 0:
                    print(f"  copied {copied:,} log entries ({time.perf_counter() - started:.0f} s)", flush=True)
    # After the commit: Django's foreign keys are deferred, and PostgreSQL
    # builds no index on a table with constraint checks still pending.
    print(f"  building indexes ({time.perf_counter() - started:.0f} s)", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute("SET statement_timeout = 0")
        cursor.execute("CREATE INDEX logentry_pair_id ON memoryhub_logentry (agent_id, user_ref, id)")
        cursor.execute("CREATE INDEX memoryhub_logentry_fts ON memoryhub_logentry USING GIN (search_vector)")
        cursor.execute("RESET maintenance_work_mem")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memoryhub_memoryfile")
        cursor.execute("VACUUM ANALYZE memoryhub_logentry")
        cursor.execute("VACUUM ANALYZE memoryhub_agentsession")
    print(f"  loaded {LogEntry.objects.count():,} log entries in {time.perf_counter() - started:.0f} s", flush=True)


def queries(rng: random.Random) -> dict[str, list[str]]:
    tail = pseudo_words(TAIL_WORDS, random.Random(1))
    return {
        "one common word": ["invoice", "refund", "brake", "delivery", "warranty", "email"],
        "two words": ["refund card", "brake pads", "parcel tracking", "chain cassette", "saddle size"],
        "a sentence": ["how should I contact the customer", "when was the brake repaired",
                       "did the parcel arrive late", "which tyres did we recommend"],
        '"a phrase"': ['"brake pads"', '"parcel tracking"', '"loyalty discount"'],
        "prefix*": ["deliv*", "warrant*", "refun*", "casset*"],
        "a rare word": rng.sample(tail[-10_000:], 20),
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


DISTINCT_VECTORS = 4096


def write_vectors_directly(texts: list[str]) -> None:
    """The semantic index without the worker's hours: embed a few thousand
    distinct log texts once, then give every text of every pair (each log
    entry, each file line) one of those vectors, chosen by the text's digest,
    in rows shaped exactly as `embedding.embed_scope` writes them (one per
    (agent, user_ref, digest), int8-packed), loaded with COPY. A search reads
    and scores the same number of vectors of the same size; only which
    neighbours it finds differs, which a latency figure does not look at."""
    from django.db import connection, transaction

    from memoryhub.models import Agent, LogEntry, MemoryFile
    from memoryhub.search import index, semantic

    started = time.perf_counter()
    distinct = list(dict.fromkeys(texts))
    packed = [semantic.pack(vector) for vector in semantic.embed(distinct)]
    agent_ids = list(Agent.objects.filter(workspace__slug=WORKSPACE).values_list("pk", flat=True))
    now = datetime.now(UTC)
    written = 0

    def rows(agent_id: int) -> list[tuple[int, str, str]]:
        # One agent's (user_ref, digest) pairs, each once: its files (its own
        # under user_ref "") and its pairs' log entries.
        keys: dict[tuple[int, str, str], None] = {}
        for owner, content in (MemoryFile.objects.filter(agent_id=agent_id).exclude(content="")
                               .values_list("user_ref", "content")):
            for _, body in index.file_entries(content):
                keys[(agent_id, owner, semantic.content_hash(body))] = None
        for owner, content in (LogEntry.objects.filter(agent_id=agent_id).exclude(content="")
                               .values_list("user_ref", "content").iterator(chunk_size=20_000)):
            keys[(agent_id, owner, semantic.content_hash(content))] = None
        return list(keys)

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 0")
            cursor.execute("DELETE FROM memoryhub_entryvector WHERE agent_id = ANY(%s)", [agent_ids])
        for agent_id in agent_ids:
            batch = rows(agent_id)  # read before the COPY: a connection does one thing at a time
            with connection.cursor() as cursor, cursor.cursor.copy(  # type: ignore[attr-defined]
                "COPY memoryhub_entryvector (agent_id, user_ref, content_hash, vector, created_at) FROM STDIN"
            ) as copy:
                for _, owner, digest in batch:
                    copy.write_row((agent_id, owner, digest, packed[int(digest[:8], 16) % len(packed)], now))
            written += len(batch)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memoryhub_entryvector")
    print(f"semantic index WRITTEN DIRECTLY, not by the worker: {len(distinct):,} distinct log texts embedded "
          f"once, their vectors reused for {written:,} (agent, user, text) rows by digest "
          f"({time.perf_counter() - started:.0f} s)", flush=True)


def run(*, count: int, seed: int, direct_vectors: bool = False, target_ms: float = 50) -> None:

    from memoryhub import search
    from memoryhub.models import Agent

    rng = random.Random(seed)
    agents = list(Agent.objects.filter(workspace__slug=WORKSPACE))
    kinds = queries(rng)
    # The semantic index: what the worker's task does for each pair, timed
    # (the embedding alone and the whole task with its reads and inserts).
    from memoryhub.models import EntryVector
    from memoryhub.search import embedding, index, semantic

    if EntryVector.objects.count() < 100:
        texts = list(index.LogEntry.objects.values_list("content", flat=True)[:20_000])
        semantic.embed(texts[:10])
        start = time.perf_counter()
        semantic.embed(texts)
        print(f"embedding throughput: {len(texts) / (time.perf_counter() - start):,.0f} entries/s on one core "
              f"(all-MiniLM-L6-v2 {semantic.DIM}-d, {len(texts):,} generated log entries, ~62 tokens each)")
        # The generated text's made-up product words split into many word
        # pieces; the relevance history's notes are the length of real
        # memory entries (~19 tokens).
        from tests.memoryhub.search_relevance import history

        notes = [content for _, _, content in history.LOGS]
        notes = (notes * 20)[: max(200, min(2_000, len(texts)))]
        start = time.perf_counter()
        semantic.embed(notes)
        print(f"embedding throughput on real short notes: {len(notes) / (time.perf_counter() - start):,.0f} "
              f"entries/s on one core ({len(notes):,} of the relevance history's notes, ~19 tokens each)")
        if direct_vectors:
            write_vectors_directly(texts[:DISTINCT_VECTORS])
        start, made = time.perf_counter(), 0
        for agent in agents if not direct_vectors else ():
            for user in range(100):
                made += embedding.embed_scope(agent=agent, user_ref=f"user-{user}")
        if made:
            print(f"worker task over every pair: {made / (time.perf_counter() - start):,.0f} entries/s "
                  f"({made:,} vectors, reads and inserts included)")

    writes(rounds=max(200, count // 5))

    # Reading the scope (the SQL of a search), timed by wrapping it.
    ranking: list[float] = []
    read_scope = index.scope_docs

    def timed_scope(**kwargs: Any) -> list[index.Doc]:
        start = time.perf_counter()
        try:
            return read_scope(**kwargs)
        finally:
            ranking.append((time.perf_counter() - start) * 1000)

    index.scope_docs = timed_scope  # type: ignore[assignment]

    cpu: list[float] = []

    def one(agent: object, user: str, kind: str) -> tuple[float, float, int]:
        query = rng.choice(kinds[kind])
        start, start_cpu = time.perf_counter(), time.process_time()
        hits = search.search(agent=agent, user_ref=user, query=query, limit=10)  # type: ignore[arg-type]
        cpu.append((time.process_time() - start_cpu) * 1000)
        return (time.perf_counter() - start) * 1000, ranking[-1], len(hits)

    def random_pair() -> tuple[object, str]:
        return rng.choice(agents), f"user-{rng.randrange(100)}"

    for kind in kinds:  # warm connections and the planner's caches
        for _ in range(20):
            one(*random_pair(), kind)

    names = list(kinds)
    # Cold: a new pair for every search, so none of its texts was scanned before.
    # A session: one pair searching once with each kind of query, in turn.
    modes = {
        "cold (a new pair every search)": [(*random_pair(), names[n % len(names)]) for n in range(count)],
        "sessions (one pair, 6 searches)": [
            (agent, user, kind)
            for agent, user in (random_pair() for _ in range(count // len(names)))
            for kind in rng.sample(names, len(names))
        ],
    }
    for mode, plan_of_searches in modes.items():
        timings: dict[str, list[float]] = defaultdict(list)
        sql: list[float] = []
        cpu.clear()
        found: dict[str, list[int]] = defaultdict(list)
        for agent, user, kind in plan_of_searches:
            elapsed, ranked, hits = one(agent, user, kind)
            timings[kind].append(elapsed)
            sql.append(ranked)
            found[kind].append(hits)
        everything = [t for values in timings.values() for t in values]
        print(f"\n{mode}: {len(everything):,} searches scoped to one pair, limit 10 "
              f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)\n")
        print("| query | searches | hits (mean) | p50 ms | p95 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|")
        for kind, values in timings.items():
            print(f"| {kind} | {len(values):,} | {statistics.mean(found[kind]):.1f} | "
                  f"{percentile(values, 0.5):.2f} | {percentile(values, 0.95):.2f} | {percentile(values, 0.99):.2f} |")
        print(f"| **all, end to end** | {len(everything):,} | | {percentile(everything, 0.5):.2f} | "
              f"{percentile(everything, 0.95):.2f} | {percentile(everything, 0.99):.2f} |")
        print(f"| of which reading the scope (SQL) | {len(sql):,} | | {percentile(sql, 0.5):.2f} | "
              f"{percentile(sql, 0.95):.2f} | {percentile(sql, 0.99):.2f} |")
        print(f"| Python CPU of the search | {len(cpu):,} | | {percentile(cpu, 0.5):.2f} | "
              f"{percentile(cpu, 0.95):.2f} | {percentile(cpu, 0.99):.2f} |")
        p95 = percentile(everything, 0.95)
        print(f"\np95 {p95:.2f} ms end to end against a target of {target_ms:.0f} ms: "
              f"{'met' if p95 <= target_ms else 'NOT met'}")


def writes(*, rounds: int) -> None:
    """Log appends side by side, alternating in one run: to a pair whose
    texts all have vectors and that was searched (so the index is live for
    it), and to a pair the index has never seen. The write path does no
    index work (vectors are the worker's), so the ratio shows what the
    index costs a write: nothing beyond noise."""
    from memoryhub import search, services
    from memoryhub.models import Agent, Workspace
    from memoryhub.search import embedding

    workspace, _ = Workspace.objects.get_or_create(slug="search-bench-writes", defaults={"name": "Search writes"})
    agent = Agent.objects.filter(workspace=workspace).first() or Agent.objects.create(
        workspace=workspace, slug="bench-writes", name="bench writes")
    batch = [{"role": "note", "content": f"Customer asked about brake pads and invoice {n}."} for n in range(10)]
    times: dict[str, list[float]] = {"indexed pair": [], "pair without index": []}
    for n in range(rounds):
        pairs = [("indexed pair", "indexed"), ("pair without index", "plain")]
        for label, user in pairs if n % 2 else pairs[::-1]:  # each goes first every other round
            session = services.start_session(agent=agent, user_ref=user)
            start = time.perf_counter()
            services.append_log(session=session, entries=batch)
            times[label].append((time.perf_counter() - start) * 1000)
        if n == 0:
            embedding.embed_scope(agent=agent, user_ref="indexed")
            search.search(agent=agent, user_ref="indexed", query="brake invoice")
    a, b = (statistics.median(v) for v in times.values())
    print(f"\nlog appends of 10 entries, {rounds} rounds alternating: indexed pair {a:.2f} ms, "
          f"pair without index {b:.2f} ms (median); ratio {a / b:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=10_000, help="a multiple of 100 (100 users per agent)")
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--reload", action="store_true", help="load the data again even when it is there")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--direct-vectors", action="store_true",
                        help=f"write the semantic index directly ({DISTINCT_VECTORS:,} distinct texts embedded once, "
                             "their vectors reused) instead of running the worker's task over every pair")
    args = parser.parse_args()
    if args.pairs % 100 or args.entries % args.pairs:
        sys.exit("--pairs must be a multiple of 100, and --entries a multiple of --pairs.")
    setup_django(os.environ.get("DATABASE_URL", ""))
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    print(f"PostgreSQL {server}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    if args.reload or not loaded(args.entries, args.pairs):
        print(f"loading {args.entries:,} log entries over {args.pairs:,} pairs …", flush=True)
        load(entries=args.entries, pairs=args.pairs, seed=args.seed)
    print(f"uptime: {os.popen('uptime').read().strip()} (a shared machine)")
    run(count=args.queries, seed=args.seed, direct_vectors=args.direct_vectors,
        target_ms=100 if args.entries >= 1_000_000 else 50)


if __name__ == "__main__":
    main()
