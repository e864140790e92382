from __future__ import annotations

import pytest
from django.db import connection

from memoryhub import errors, immutability, search, services
from memoryhub.models import LogEntry, MemoryFile
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

# Built at runtime so no scanner in this repository's pipeline flags the file.
FAKE_AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
FAKE_GITHUB_TOKEN = "ghp_" + "a1B2c3D4" * 5


@pytest.fixture
def agent():
    return AgentFactory()


def log(agent, user_ref, *contents):
    session = services.start_session(agent=agent, user_ref=user_ref)
    services.append_log(session=session, entries=[{"role": "note", "content": c} for c in contents])
    return session


def snippets(hits):
    return [hit.snippet for hit in hits]


# --- finding and ranking ------------------------------------------------------------


def test_it_finds_a_term_in_memory_and_in_a_log_with_highlight(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Prefers invoices in EUR\n")
    session = log(agent, "u1", "The user asked to resend the invoices for March.")

    hits = search.search(agent=agent, user_ref="u1", query="invoices")

    by_source = {hit.source: hit for hit in hits}
    assert set(by_source) == {"file", "log"}
    memory, entry = by_source["file"], by_source["log"]
    assert (memory.file, memory.version, memory.session) == ("MEMORY.md", 1, None)
    assert "**invoices**" in memory.snippet and "EUR" in memory.snippet
    assert (entry.session, entry.file) == (session.pk, None)
    assert "**invoices**" in entry.snippet and "March" in entry.snippet
    assert all(hit.score > 0 for hit in hits)


def test_it_ranks_the_more_relevant_match_first(agent):
    log(
        agent,
        "u1",
        "We talked about the weather, lunch plans, a holiday in Spain, the new office chairs "
        "and, only in passing, the database migration.",
        "Migration plan: run the migration tonight, verify the migration tomorrow.",
        "Nothing to do with it at all.",
    )

    hits = search.search(agent=agent, user_ref="u1", query="migration")

    assert len(hits) == 2
    assert hits[0].snippet.startswith("**Migration** plan")
    assert hits[0].score > hits[1].score


def test_it_matches_every_word_of_the_query(agent):
    log(agent, "u1", "The red car is fast.", "The red bike is slow.")

    hits = search.search(agent=agent, user_ref="u1", query="red car")

    assert len(hits) == 1 and "**car**" in hits[0].snippet


def test_it_shapes_hits_for_the_api(agent):
    services.write_memory(agent=agent, kind="SOUL.md", content="I am a patient tutor.")
    session = log(agent, "u1", "The tutor explained fractions.")

    hits = {hit.source: hit.as_dict() for hit in search.search(agent=agent, user_ref="u1", query="tutor")}

    assert set(hits["file"]) == {"source", "file", "snippet", "score", "created_at"}
    assert set(hits["log"]) == {"source", "session", "snippet", "score", "created_at"}
    assert hits["file"]["file"] == "SOUL.md" and hits["log"]["session"] == session.pk
    assert hits["log"]["created_at"].endswith("Z") and "T" in hits["log"]["created_at"]
    assert isinstance(hits["file"]["score"], float)


# --- scope ---------------------------------------------------------------------------


@pytest.fixture
def matrix():
    """Agents A and B, users X and Y, every file and log saying zebracorn
    plus a tag naming its owner."""
    a, b = AgentFactory(), AgentFactory()
    for agent, tag in ((a, "a"), (b, "b")):
        services.write_memory(agent=agent, kind="SOUL.md", content=f"zebracorn owner {tag}soul")
        services.write_memory(agent=agent, kind="TOOLS.md", content=f"zebracorn owner {tag}tools")
        for user in ("x", "y"):
            services.write_memory(
                agent=agent, kind="USER.md", user_ref=user, content=f"zebracorn owner {tag}{user}user"
            )
            services.write_memory(
                agent=agent, kind="MEMORY.md", user_ref=user, content=f"zebracorn owner {tag}{user}mem"
            )
            log(agent, user, f"zebracorn owner {tag}{user}log")
    return {"a": a, "b": b}


@pytest.mark.parametrize(
    ("who", "user", "expected"),
    [
        ("a", "x", {"asoul", "atools", "axuser", "axmem", "axlog"}),
        ("a", "y", {"asoul", "atools", "ayuser", "aymem", "aylog"}),
        ("b", "x", {"bsoul", "btools", "bxuser", "bxmem", "bxlog"}),
        ("a", None, {"asoul", "atools"}),
        ("b", None, {"bsoul", "btools"}),
        ("a", "z", {"asoul", "atools"}),
    ],
)
def test_it_never_crosses_agents_or_users(matrix, who, user, expected):
    hits = search.search(agent=matrix[who], user_ref=user, query="zebracorn owner", limit=50)

    owners = {hit.snippet.rsplit(" ", 1)[-1] for hit in hits}
    assert owners == expected
    assert len(hits) == len(expected)


def test_it_searches_only_agent_files_without_a_user(matrix):
    hits = search.search(agent=matrix["a"], user_ref=None, query="zebracorn")

    assert {hit.file for hit in hits} == {"SOUL.md", "TOOLS.md"}
    assert all(hit.source == "file" for hit in hits)


def test_it_never_matches_an_absent_file(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- zebracorn sighting")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="")

    assert search.search(agent=agent, user_ref="u1", query="zebracorn") == []


def test_it_forgets_old_content_after_a_new_version(agent):
    services.write_memory(agent=agent, kind="ABOUT.md", content="Serves the zebracorn team.")
    services.write_memory(agent=agent, kind="ABOUT.md", content="Serves the unicorn team.")

    assert search.search(agent=agent, user_ref=None, query="zebracorn") == []
    [hit] = search.search(agent=agent, user_ref=None, query="unicorn")
    assert hit.version == 2


# --- hostile and invalid input -------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        '"foo" OR -bar (',
        "'; DROP TABLE memoryhub_memoryfile; --",
        "*",
        "NEAR(",
        "NEAR(foo bar, 2)",
        "foo*",
        "^foo",
        "content:foo",
        '"',
        "()",
        "AND OR NOT",
        "-foo",
        "%s %(x)s %",
        "\\",
        "foo\x00bar",
        "_",
        "foo_",
        "🦄",
    ],
)
def test_it_survives_query_syntax_in_user_input(agent, query):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- foo and bar")
    log(agent, "u1", "foo bar baz")

    hits = search.search(agent=agent, user_ref="u1", query=query)

    assert isinstance(hits, list)
    assert len(search.search(agent=agent, user_ref="u1", query="foo")) == 2


@pytest.mark.parametrize("query", ["", "   ", "x" * 201])
def test_it_refuses_an_empty_or_too_long_query(agent, query):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref=None, query=query)
    assert exc.value.extra["field"] == "q"


@pytest.mark.parametrize("limit", [0, -1, 51])
def test_it_refuses_a_limit_out_of_range(agent, limit):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref=None, query="foo", limit=limit)
    assert exc.value.extra["field"] == "limit"


def test_it_accepts_the_longest_query(agent):
    assert search.search(agent=agent, user_ref=None, query="x" * 200) == []


def test_it_refuses_an_invalid_user(agent):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref="bad\nuser", query="foo")
    assert exc.value.extra["field"] == "user"


# --- untrusted snippets -------------------------------------------------------------------


def test_it_blocks_a_secret_pasted_into_a_log(agent):
    log(agent, "u1", f"Deploy with access key {FAKE_AWS_KEY} please.")

    for query in ("deploy", FAKE_AWS_KEY):
        [hit] = search.search(agent=agent, user_ref="u1", query=query)
        assert hit.snippet.startswith("[BLOCKED: secret_api_key]")
        assert FAKE_AWS_KEY not in hit.snippet


def test_it_serves_the_clean_part_of_an_entry_beside_a_secret(agent):
    log(agent, "u1", f"- rotate the billing credentials\n- old key was {FAKE_AWS_KEY}\n")

    [hit] = search.search(agent=agent, user_ref="u1", query="billing")

    assert "**billing**" in hit.snippet
    assert "[BLOCKED: secret_api_key]" in hit.snippet
    assert FAKE_AWS_KEY not in hit.snippet


def test_it_blocks_a_secret_the_highlight_would_split(agent):
    # Both tokenizers split "ghp_…" at the underscore, so a search for "ghp"
    # highlights "**ghp**_…", which no longer looks like a GitHub token.
    log(agent, "u1", f"token {FAKE_GITHUB_TOKEN}")

    [hit] = search.search(agent=agent, user_ref="u1", query="ghp")

    assert hit.snippet.startswith("[BLOCKED: secret_api_key]")
    assert FAKE_GITHUB_TOKEN[4:] not in hit.snippet


def test_it_cuts_a_snippet_out_of_one_enormous_word(agent):
    log(agent, "u1", "blob " + "Q" * 15_000 + " zebracorn " + "Z" * 4000)

    [hit] = search.search(agent=agent, user_ref="u1", query="zebracorn")

    assert "**zebracorn**" in hit.snippet
    assert len(hit.snippet) <= search.SNIPPET_CHARS + 10


# --- limits, languages, queries ----------------------------------------------------------


def test_it_respects_the_limit_across_files_and_logs(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- zebracorn in memory")
    log(agent, "u1", *[f"zebracorn sighting {n}" for n in range(6)])

    assert len(search.search(agent=agent, user_ref="u1", query="zebracorn", limit=3)) == 3
    assert len(search.search(agent=agent, user_ref="u1", query="zebracorn", limit=1)) == 1
    assert len(search.search(agent=agent, user_ref="u1", query="zebracorn", limit=50)) == 7


@pytest.mark.parametrize(
    ("query", "highlight"),
    [
        ("Kontoeröffnung", "**Kontoeröffnung**"),
        ("kontoeröffnung", "**Kontoeröffnung**"),
        ("вклад", "**вклад**"),
        ("ВКЛАД", "**вклад**"),
        ("预算", "**预算**"),
    ],
)
def test_it_finds_non_english_text(agent, query, highlight):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Kontoeröffnung am Montag geplant")
    log(agent, "u1", "Клиент открыл вклад в рублях", "项目 预算 已 批准")

    [hit] = search.search(agent=agent, user_ref="u1", query=query)

    assert highlight in hit.snippet


def test_it_uses_one_query_for_files_and_one_for_logs(agent, django_assert_num_queries):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- zebracorn")
    log(agent, "u1", "zebracorn")

    with django_assert_num_queries(2):
        assert len(search.search(agent=agent, user_ref="u1", query="zebracorn")) == 2
    with django_assert_num_queries(1):
        search.search(agent=agent, user_ref=None, query="zebracorn")
    with django_assert_num_queries(0):
        assert search.search(agent=agent, user_ref="u1", query="*** ???") == []


# --- the indexes themselves ------------------------------------------------------------------


def test_the_full_text_index_serves_the_query_and_stays_in_sync(agent):
    """Each database has its own index: GIN expression indexes on PostgreSQL,
    FTS5 tables kept by triggers on SQLite."""
    if connection.vendor == "postgresql":
        check_gin_indexes_are_used()
    else:
        check_sqlite_index_stays_in_sync(agent)


def check_gin_indexes_are_used():
    with connection.cursor() as cursor:
        # A table this small is always scanned; forbid that to see the index is usable.
        cursor.execute("SET LOCAL enable_seqscan = off")
        for table, index in (
            ("memoryhub_memoryfile", "memoryhub_memoryfile_fts"),
            ("memoryhub_logentry", "memoryhub_logentry_fts"),
        ):
            vector = search._PG_VECTOR.format(col="t.content")
            cursor.execute(
                f"EXPLAIN SELECT t.id FROM {table} AS t, websearch_to_tsquery('simple', %s) AS q(tsq) "
                f"WHERE {vector} @@ q.tsq",
                ["zebracorn"],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert index in plan, plan


def check_sqlite_index_stays_in_sync(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- zebracorn")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- unicorn")
    log(agent, "u1", "zebracorn log")

    def check() -> None:
        with connection.cursor() as cursor:
            # rank=1 compares the index with the content table, row by row.
            for fts in ("memoryhub_memoryfile_fts", "memoryhub_logentry_fts"):
                cursor.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")

    check()
    # What a test flush does: lift the append-only triggers and delete everything.
    # SQLite DDL is transactional, so the test's rollback reinstates them.
    immutability.uninstall(connection)
    LogEntry.objects.all().delete()
    MemoryFile.objects.all().delete()
    check()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memoryhub_logentry_fts WHERE memoryhub_logentry_fts MATCH 'zebracorn'")
        assert cursor.fetchone() == (0,)
