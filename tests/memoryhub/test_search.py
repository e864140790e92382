from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub import errors, immutability, search, services
from memoryhub.models import LogEntry, MemoryFile
from memoryhub.search import MARK
from tests.api_helpers import agent_client, error_code
from tests.clock import later, looking_from
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

# Built at runtime so no scanner in this repository's pipeline flags the file.
FAKE_AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
FAKE_GITHUB_TOKEN = "ghp_" + "a1B2c3D4" * 5


def log(agent, user_ref, *contents):
    session = services.start_session(agent=agent, user_ref=user_ref)
    services.append_log(session=session, entries=[{"role": "note", "content": c} for c in contents])
    return session


def stored_before_redaction(agent, user_ref, content):
    """A log entry as rows stored before log appends redacted secrets (or
    before a newer rule) look: the secret is in the row, and search must still
    never serve it."""
    session = services.start_session(agent=agent, user_ref=user_ref)
    return LogEntry.objects.create(session=session, agent=agent, user_ref=user_ref, role="note", content=content)


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


def test_it_finds_a_hit_with_only_some_of_the_words(agent):
    log(agent, "u1", "The red car is fast.", "The red bike is slow.", "A green tram.")

    hits = search.search(agent=agent, user_ref="u1", query="red car")

    assert [hit.matched for hit in hits] == [2, 1]
    assert "**car**" in hits[0].snippet and "bike" in hits[1].snippet


def test_it_ranks_a_hit_with_every_word_above_a_stronger_partial_one(agent):
    # The partial match repeats its word (higher BM25) and is newer still.
    log(agent, "u1", "Refund approved for the broken saddle.")
    log(agent, "u1", "saddle saddle saddle: saddle sizes, saddle colours, saddle rails")

    hits = search.search(agent=agent, user_ref="u1", query="saddle refund")

    assert hits[0].snippet.startswith("**Refund**")
    assert hits[0].score > hits[1].score and hits[0].matched == 2 > hits[1].matched


def test_it_ranks_the_newer_of_two_equal_hits_first(agent):
    session = services.start_session(agent=agent, user_ref="u1")
    reference = later(days=400)
    old = aged(session, "Parcel delivered to the neighbour.", days=400, reference=reference)
    new = aged(session, "Parcel delivered to the neighbour.", days=1, reference=reference)

    with looking_from(reference):
        hits = search.search(agent=agent, user_ref="u1", query="parcel")

    assert [hit.entry for hit in hits] == [new.pk, old.pk]
    assert hits[0].score > hits[1].score


def test_it_lets_relevance_outweigh_a_few_days_of_age(agent):
    session = log(agent, "u1", *[f"Filler note {n}." for n in range(8)])
    reference = later(days=5)
    aged(session, "Long note: " + "weather and lunch, " * 30 + "and the gearbox.", days=0, reference=reference)
    focused = aged(session, "Gearbox gearbox: the gearbox slips.", days=5, reference=reference)

    with looking_from(reference):
        hits = search.search(agent=agent, user_ref="u1", query="gearbox")

    assert hits[0].entry == focused.pk


def aged(session, content, *, days, reference):
    """An entry `days` old when seen from `reference` (written now or later:
    the database refuses back-dated rows)."""
    return LogEntry.objects.create(
        session=session, agent=session.agent, user_ref=session.user_ref, role="note", content=content,
        created_at=reference - timedelta(days=days),
    )


def test_it_shapes_hits_for_the_api(agent):
    services.write_memory(agent=agent, kind="SOUL.md", content="I am a patient tutor.")
    session = log(agent, "u1", "The tutor explained fractions.")
    entry = LogEntry.objects.get(session=session)

    hits = {hit.source: hit.as_dict() for hit in search.search(agent=agent, user_ref="u1", query="tutor")}

    assert set(hits["file"]) == {"source", "file", "version", "line", "text", "snippet", "score", "matched", "how",
                                 "created_at"}
    assert set(hits["log"]) == {"source", "session", "entry", "role", "snippet", "score", "matched", "how",
                                "created_at"}
    # A file hit names its entry: the line, and that line's text.
    assert (hits["file"]["line"], hits["file"]["text"]) == (1, "I am a patient tutor.")
    assert hits["file"]["how"] == ["keyword"]
    assert hits["file"]["file"] == "SOUL.md" and hits["file"]["version"] == 1
    assert (hits["log"]["session"], hits["log"]["entry"], hits["log"]["role"]) == (session.pk, entry.pk, "note")
    assert hits["log"]["created_at"].endswith("Z") and "T" in hits["log"]["created_at"]
    assert isinstance(hits["file"]["score"], float)


# --- stemming, phrases, prefixes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("emails", "Send the email"),
        ("email", "Emails bounce"),
        ("invoice", "resend the invoices"),
        ("telephone call", "Called him on the telephone"),
        ("deliveries", "delivery is late"),
        ("preferences", "prefers tea"),
    ],
)
def test_it_finds_other_forms_of_a_word(agent, query, expected):
    log(agent, "u1", "Send the email to Ana.", "Emails bounce from that domain.", "Please resend the invoices.",
        "Called him on the telephone.", "The delivery is late.", "She prefers tea.", "Unrelated filler.")

    hits = search.search(agent=agent, user_ref="u1", query=query)

    assert any(expected in hit.snippet.replace(MARK, "") for hit in hits), snippets(hits)


def test_it_ranks_the_exact_form_above_another_form(agent):
    log(agent, "u1", "One email arrived.", "Two emails arrived.")

    hits = search.search(agent=agent, user_ref="u1", query="emails")

    assert "emails" in hits[0].snippet and len(hits) == 2


@pytest.mark.parametrize(
    "query",
    ["Rechnungen", "rechnungen", "Kündigung", "cumpleaños", "vendredi", "Geburtstag"],
)
def test_it_finds_german_spanish_and_french_words_as_written(agent, query):
    log(agent, "u1", "Rechnungen bitte per Post, Kündigung zum Monatsende.", "Su cumpleaños es el 3 de mayo.",
        "Rappeler vendredi matin.", "Geburtstag am Freitag.")

    [hit] = search.search(agent=agent, user_ref="u1", query=query)

    assert query.casefold() in hit.snippet.replace(MARK, "").casefold()


def test_it_searches_stop_words_when_there_is_nothing_else(agent):
    log(agent, "u1", "The Who played here.", "A quiet evening.")

    [hit] = search.search(agent=agent, user_ref="u1", query="the who")

    assert "played" in hit.snippet


def test_it_ignores_stop_words_beside_real_words(agent):
    log(agent, "u1", "How should I know what the time is?", "Contact the customer by email.")

    hits = search.search(agent=agent, user_ref="u1", query="how should I contact the customer")

    assert [hit.snippet.startswith("**Contact**") for hit in hits] == [True]


def test_it_matches_a_phrase_only_in_order(agent):
    log(agent, "u1", "The red car is fast.", "The car is red.")

    hits = search.search(agent=agent, user_ref="u1", query='"red car"')

    assert [hit.snippet.replace(MARK, "").rstrip(".") for hit in hits] == ["The red car is fast"]
    assert "car**" in hits[0].snippet


def test_it_counts_a_phrase_as_one_term_beside_words(agent):
    log(agent, "u1", "Book the gravel bike for Tuesday.", "Gravel in the bike shed.", "Tuesday is free.")

    hits = search.search(agent=agent, user_ref="u1", query='"gravel bike" tuesday')

    assert hits[0].matched == 2 and "Book" in hits[0].snippet
    assert {hit.matched for hit in hits[1:]} == {1}


def test_it_matches_a_prefix(agent):
    log(agent, "u1", "Resend the invoices.", "Involve the team.", "Nothing else.")

    hits = search.search(agent=agent, user_ref="u1", query="invoi*")

    assert [hit.snippet.replace(MARK, "").rstrip(".") for hit in hits] == ["Resend the invoices"]
    assert len(search.search(agent=agent, user_ref="u1", query="inv*")) == 2


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("emails", [(("emails",), False)]),
        ("invoi*", [(("invoi",), True)]),
        ('"red car" fast', [(("red", "car"), False), (("fast",), False)]),
        ("how should I contact the customer", [(("contact",), False), (("customer",), False)]),
        ("the who", [(("the",), False), (("who",), False)]),
        ("Car car CAR", [(("Car",), False)]),
        ('foo_bar "x"* ^baz NEAR(qux)', [(("foo",), False), (("bar",), False), (("x",), False), (("baz",), False),
                                         (("NEAR",), False), (("qux",), False)]),
        ("wie soll ich den Kunden erreichen", [(("Kunden",), False), (("erreichen",), False)]),
    ],
)
def test_it_parses_queries_into_terms(query, terms):
    assert [(t.words, t.prefix) for t in search.parse_query(query).terms] == terms


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
        "NEAR(",
        "NEAR(foo bar, 2)",
        "foo*",
        "^foo",
        "content:foo",
        "AND OR NOT",
        "-foo",
        "%s %(x)s % foo",
        "foo\\",
        "foo_",
        "foo 🦄",
        '"foo bar"*',
        "foo:*",
        "foo <-> bar",
        "foo & !bar | (baz)",
        "foo\tbar\nbaz",
    ],
)
def test_it_survives_query_syntax_in_user_input(agent, query):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- foo and bar")
    log(agent, "u1", "foo bar baz")

    hits = search.search(agent=agent, user_ref="u1", query=query)

    assert all(hit.matched >= 1 for hit in hits)
    assert len(search.search(agent=agent, user_ref="u1", query="foo")) == 2


BAD_QUERIES = [
    ("", "1–200 characters"),
    ("   ", "1–200 characters"),
    ("x" * 201, "201 characters"),
    ("()", "no words"),
    ("?!…", "no words"),
    ("🦄", "no words"),
    ("_", "no words"),
    ('"', "no words"),
    ("*", "A * alone"),
    ("* **", "A * alone"),
    ("a*", "at least 2 letters"),
    ("foo\x00bar", "control character"),
    ("foo\x1bbar", "control character"),
    ('""', "no words"),
]


@pytest.mark.parametrize(("query", "says"), BAD_QUERIES)
def test_it_refuses_a_query_it_cannot_search_with_a_sentence(agent, query, says):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref=None, query=query)

    assert exc.value.extra["field"] == "q"
    assert says in exc.value.detail and exc.value.detail.endswith(".")


@pytest.mark.parametrize("limit", [0, -1, 51, 10**12])
def test_it_refuses_a_limit_out_of_range(agent, limit):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref=None, query="foo", limit=limit)
    assert exc.value.extra["field"] == "limit"


def test_it_accepts_the_longest_query(agent):
    assert search.search(agent=agent, user_ref=None, query="x" * 200) == []
    assert search.search(agent=agent, user_ref=None, query=" ".join(f"w{n}" for n in range(50))) == []


def test_it_refuses_an_invalid_user(agent):
    with pytest.raises(errors.Invalid) as exc:
        search.search(agent=agent, user_ref="bad\nuser", query="foo")
    assert exc.value.extra["field"] == "user"


# --- untrusted snippets -------------------------------------------------------------------


def test_it_blocks_a_secret_pasted_into_a_log(agent):
    stored_before_redaction(agent, "u1", f"Deploy with access key {FAKE_AWS_KEY} please.")

    for query in ("deploy", FAKE_AWS_KEY):
        [hit] = search.search(agent=agent, user_ref="u1", query=query)
        assert hit.snippet.startswith("[BLOCKED: secret_api_key]")
        assert FAKE_AWS_KEY not in hit.snippet


def test_it_serves_the_clean_part_of_an_entry_beside_a_secret(agent):
    stored_before_redaction(agent, "u1", f"- rotate the billing credentials\n- old key was {FAKE_AWS_KEY}\n")

    [hit] = search.search(agent=agent, user_ref="u1", query="billing")

    assert "**billing**" in hit.snippet
    assert "[BLOCKED: secret_api_key]" in hit.snippet
    assert FAKE_AWS_KEY not in hit.snippet


def test_it_blocks_a_secret_the_highlight_would_split(agent):
    # Both tokenizers split "ghp_…" at the underscore, so a search for "ghp"
    # highlights "**ghp**_…", which no longer looks like a GitHub token.
    stored_before_redaction(agent, "u1", f"token {FAKE_GITHUB_TOKEN}")

    [hit] = search.search(agent=agent, user_ref="u1", query="ghp")

    assert hit.snippet.startswith("[BLOCKED: secret_api_key]")
    assert FAKE_GITHUB_TOKEN[4:] not in hit.snippet


def test_it_keeps_the_scanners_verdict_on_a_text_it_saw(agent):
    text = f"- rotate the billing credentials\n- old key was {FAKE_AWS_KEY}\n"
    first = search._served.serve(text)

    assert search._served.serve(text) is first
    assert first.blocked == ("secret_api_key",) and FAKE_AWS_KEY not in first.text
    assert search._served.serve(text + " ") is not first
    huge = "clean words " * 1000
    assert search._served.serve(huge) is not search._served.serve(huge)


def test_a_secret_appended_today_is_never_stored_so_search_finds_only_its_redaction(agent):
    log(agent, "u1", f"Deploy with access key {FAKE_AWS_KEY} please.")

    [hit] = search.search(agent=agent, user_ref="u1", query="deploy")

    assert "[REDACTED:secret_api_key]" in hit.snippet
    assert search.search(agent=agent, user_ref="u1", query=FAKE_AWS_KEY) == []


def test_it_blocks_a_secret_in_every_search_not_just_the_first(agent):
    stored_before_redaction(agent, "u1", f"Deploy with access key {FAKE_AWS_KEY} please.")

    for _ in range(3):
        [hit] = search.search(agent=agent, user_ref="u1", query="deploy")
        assert hit.snippet.startswith("[BLOCKED: secret_api_key]")


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


def test_it_uses_one_query_for_files_one_for_logs_and_one_for_vectors(agent, django_assert_num_queries):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- zebracorn")
    log(agent, "u1", "zebracorn")

    with django_assert_num_queries(3):
        assert len(search.search(agent=agent, user_ref="u1", query="zebracorn")) == 2
    # Without a user and with no agent file: the files query alone.
    with django_assert_num_queries(1):
        search.search(agent=agent, user_ref=None, query="zebracorn")
    with django_assert_num_queries(0), pytest.raises(errors.Invalid):
        search.search(agent=agent, user_ref="u1", query="*** ???")


# --- the indexes themselves ------------------------------------------------------------------


def test_the_full_text_index_serves_the_query_and_stays_in_sync(agent, monkeypatch):
    """Each database has its own index: a stored tsvector column (GIN on the
    log table) on PostgreSQL, FTS5 tables kept by triggers on SQLite."""
    if connection.vendor == "postgresql":
        check_pg_vector_and_plans(agent, monkeypatch)
    else:
        check_sqlite_index_stays_in_sync(agent)


def check_pg_vector_and_plans(agent, monkeypatch):
    session = log(agent, "u1", "Two emails about zebracorns", "nothing here")
    with connection.cursor() as cursor:
        cursor.execute("SELECT search_vector::text FROM memoryhub_logentry WHERE session_id = %s ORDER BY id",
                       [session.pk])
        vector = cursor.fetchone()[0]
    # Stemmed by 'english' and word for word by 'simple'.
    assert {"'email'", "'emails'", "'zebracorn'", "'zebracorns'", "'two'"} <= set(re.findall(r"'[^']+'", vector))



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


# --- reading a hit whole ------------------------------------------------------------------


def test_it_reads_a_log_hit_whole(agent):
    long_text = "The customer called about the parcel. " + "Details follow. " * 40 + "The end."
    log(agent, "u1", long_text)
    [hit] = search.search(agent=agent, user_ref="u1", query="parcel")

    entry = search.read_entry(agent=agent, user_ref="u1", entry_id=hit.entry)

    assert len(hit.snippet) < len(long_text)
    assert (entry.id, entry.session, entry.role, entry.content) == (hit.entry, hit.session, "note", long_text)
    assert entry.blocked == ()


def test_it_reads_an_entry_through_the_scanner(agent):
    stored_before_redaction(agent, "u1", f"- rotate the billing credentials\n- old key was {FAKE_AWS_KEY}\n")
    [hit] = search.search(agent=agent, user_ref="u1", query="billing")

    entry = search.read_entry(agent=agent, user_ref="u1", entry_id=hit.entry)

    assert FAKE_AWS_KEY not in entry.content
    assert entry.content == "- rotate the billing credentials\n[BLOCKED: secret_api_key]\n"
    assert entry.blocked == ("secret_api_key",)


def test_it_reads_no_other_agents_or_users_entry(matrix):
    [mine] = [h for h in search.search(agent=matrix["a"], user_ref="x", query="axlog") if h.source == "log"]

    assert search.read_entry(agent=matrix["a"], user_ref="x", entry_id=mine.entry).content.endswith("axlog")
    for agent, user in ((matrix["a"], "y"), (matrix["b"], "x"), (matrix["b"], "y")):
        with pytest.raises(errors.NotFound):
            search.read_entry(agent=agent, user_ref=user, entry_id=mine.entry)
    for missing in (mine.entry + 10_000, 0, 2**63, 10**30):
        with pytest.raises(errors.NotFound):
            search.read_entry(agent=matrix["a"], user_ref="x", entry_id=missing)


# --- the API -----------------------------------------------------------------------------


def test_the_api_answers_hits_that_open_whole(agent):
    session = log(agent, "u1", "Ana prefers emails to telephone calls. " + "More detail. " * 30)
    client = agent_client(agent)

    [hit] = client.get("/api/v1/memory/search", {"q": "email", "user": "u1"}).json()["results"]
    response = client.get(f"/api/v1/memory/search/{hit['entry']}", {"user": "u1"})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"entry", "session", "role", "content", "created_at", "blocked"}
    assert (body["entry"], body["session"], body["role"]) == (hit["entry"], session.pk, "note")
    assert body["content"].startswith("Ana prefers emails") and body["content"].endswith("More detail. ")
    assert body["created_at"] == hit["created_at"]


def test_the_api_answers_404_for_another_agents_or_users_entry(matrix):
    [hit] = [h for h in search.search(agent=matrix["a"], user_ref="x", query="axlog") if h.source == "log"]
    own, other = agent_client(matrix["a"]), agent_client(matrix["b"])

    assert own.get(f"/api/v1/memory/search/{hit.entry}?user=x").status_code == 200
    for client, user in ((own, "y"), (other, "x")):
        response = client.get(f"/api/v1/memory/search/{hit.entry}?user={user}")
        assert response.status_code == 404 and error_code(response) == "not_found"
        assert "axlog" not in response.content.decode()
    response = own.get(f"/api/v1/memory/search/{10**30}?user=x")
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_the_api_needs_the_user_to_read_an_entry(agent):
    session = log(agent, "u1", "zebracorn")
    entry = LogEntry.objects.get(session=session)

    response = agent_client(agent).get(f"/api/v1/memory/search/{entry.pk}")

    assert response.status_code == 400 and error_code(response) == "invalid"
    assert response.json()["error"]["field"] == "user"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        *[({"q": query}, "q") for query, _ in BAD_QUERIES if "\x00" not in query],
        ({}, "q"),
        ({"q": "foo", "limit": "1000000000000000000000"}, "limit"),
        ({"q": "foo", "limit": "lots"}, "limit"),
        ({"q": "foo", "limit": "0"}, "limit"),
    ],
)
def test_the_api_answers_400_with_a_sentence_for_bad_input(agent, params, field):
    log(agent, "u1", "foo")

    response = agent_client(agent).get("/api/v1/memory/search", {**params, "user": "u1"})

    assert response.status_code == 400 and error_code(response) == "invalid"
    error = response.json()["error"]
    assert error["field"] == field and error["detail"].endswith(".")


def test_the_api_answers_400_for_nul_in_the_query(agent):
    response = agent_client(agent).get("/api/v1/memory/search?q=foo%00bar&user=u1")

    # Refused before it reaches search: a NUL has no business in any URL.
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert "NUL" in response.json()["error"]["detail"]


# --- fusion --------------------------------------------------------------------------------


def _candidate(entry: int, how: str) -> search.Candidate:

    hit = search.SearchHit(source="log", snippet="", score=0.0, created_at=timezone.now(), session=1, entry=entry,
                           role="note", how=(how,))
    return search.Candidate(hit=hit, content=str(entry))


def test_it_fuses_rankings_by_weighted_reciprocal_rank():
    keyword = [_candidate(1, "keyword"), _candidate(2, "keyword")]
    vector = [_candidate(2, "semantic"), _candidate(3, "semantic")]

    fused = search.fuse([keyword, vector], weights=(1.0, 0.5))

    assert [c.hit.entry for c in fused] == [2, 1, 3]
    assert fused[0].hit.score == pytest.approx(1 / (search.RRF_K + 2) + 0.5 / (search.RRF_K + 1))
    assert fused[1].hit.score == pytest.approx(1 / (search.RRF_K + 1))
    assert fused[2].hit.score == pytest.approx(0.5 / (search.RRF_K + 2))
    assert fused[0].hit.how == ("keyword", "semantic")


@pytest.mark.parametrize("query", ['5" screen', '"screen', 'screen "', 'the "5 inch" screen "'])
def test_a_stray_double_quote_is_searched_literally_not_refused(agent, query):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Wants a 5 inch screen.\n")
    hits = search.search(agent=agent, user_ref="u1", query=query)
    assert hits and hits[0].file == "MEMORY.md"


def test_the_api_searches_a_query_with_a_stray_quote(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Wants a 5 inch screen.\n")
    answer = agent_client(agent).get("/api/v1/memory/search", {"q": '5" screen', "user": "u1"})
    assert answer.status_code == 200, answer.content
    assert [hit["file"] for hit in answer.json()["results"]] == ["MEMORY.md"]
