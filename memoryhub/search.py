"""Search over an agent's memory files and one pair's session logs.

Scope is fixed by the SQL, never by the caller: the agent's own agent-scoped
files always; with a user, that pair's USER.md/MEMORY.md and session logs.
One query for files, one for logs (none without a user), merged by score.
A log hit names its `entry`; `read_entry` returns that entry whole, within
the same scope.

Query language (parse_query). Words are letters and digits; everything else
separates them. A word ending in `*` is a prefix (at least two letters
before the star); "double quotes" make a phrase. Words are ORed: a hit needs
one of them, and ranks by how many it has. English, German, Spanish and
French stop words are dropped unless the query has nothing else. Nothing in
a query reaches an engine's own syntax: the terms are rebuilt from words.

Stemming (migration 0004). PostgreSQL keeps each text's tsvector in a
stored column, `search_vector` (GIN-indexed on the log table): the text stemmed by
'english' and word for word by 'simple'; a term matches either half, so "emails" finds "email" and "Kontoeröffnung" or
"vendredi" are still found exactly as written. SQLite tokenises with FTS5's
`porter unicode61`, which stems English and folds case and diacritics in
every script.

Ranking. For a hit with `matched` of the query's `n` terms:

    score = matched + 0.7 × relevance + 0.3 × recency

    relevance = b / (1 + b)                  in [0, 1)
        b: SQLite −bm25() over the FTS5 table; PostgreSQL ts_rank_cd with
        normalisation 1 (divide by 1 + log(length)) — ts_rank_cd's own
        flag 32 gives the same b / (1 + b)
    recency = 1 / (1 + age_days / 30)        in (0, 1]: 0.5 after a month
        age of a log entry, or of a file's current version

Relevance and recency add up to less than 1, so a hit with more of the
query's terms always ranks above one with fewer, and every term above some;
among hits with the same terms BM25 decides, with recency as the tie-break
that grows with age (a fact from today beats the same fact from last year).
The score has no fixed upper bound (it grows with the number of terms).

Backends. `Backend` is the seam for other rankers (an embedding model,
say): each configured backend ranks the same scope, and with more than one
their rankings are fused by reciprocal rank (`fuse`). Only the keyword
backend ships: no sentence-embedding model installs offline here within the
budget (docs/benchmarks.md lists what was tried). MEMORYHUB_SEARCH_BACKENDS
names the backends in use, ("keyword",) by default.

Snippets and entries are untrusted text on their way to a model: they pass
the scanner like served memory does. Logs are not scanned on write, so this
is the only thing between a secret pasted into a log and an agent that
searches for it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils import timezone

from memoryhub import context, errors, services
from memoryhub.models import AGENT_SCOPED, USER_SCOPED, Agent, LogEntry

MAX_QUERY_CHARS = 200
MAX_LIMIT = 50
MIN_PREFIX_CHARS = 2
SNIPPET_CHARS = 200
MARK = "**"
RELEVANCE_WEIGHT = 0.7
RECENCY_WEIGHT = 0.3
RECENCY_HALF_LIFE_DAYS = 30
RRF_K = 60

# A word is what both engines index: letters and digits. PostgreSQL's parser
# and unicode61 both split at "_", so \w (which keeps it) would not do.
_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r'"([^"]*)"\*?|([^\W_]+)(\*?)|(\*)')

# Migration 0004's stored column: to_tsvector('english', content) ||
# to_tsvector('simple', content); GIN-indexed on memoryhub_logentry.
_PG_VECTOR = "{alias}.search_vector"
# ShortWord=0: the default (3) trims words of up to three letters from both
# ends of a headline, and memory is full of short facts ("in EUR", "Bob").
_PG_HEADLINE_OPTIONS = "StartSel=**, StopSel=**, MaxFragments=1, MaxWords=30, MinWords=8, ShortWord=0"

# PostgreSQL's english.stop (what its 'english' configuration drops), and the
# commonest function words of German, Spanish and French, less those that
# are also English content words ("die", "son", "con", "war", "hat").
_STOP_WORDS = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves what which who whom this that these those am is
    are was were be been being have has had having do does did doing a an the and but if or because as until
    while of at by for with about against between into through during before after above below to from up down
    in out on off over under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don should now

    der das den dem des ein eine einen einem einer eines und oder aber ich du er sie es wir ihr mich mir dich
    dir uns euch ist sind bist soll sollte kann wie wer wo von zu zum zur im auf für bei nicht auch noch nur
    als

    el la los las un una unos unas y o de del al en por para que qué como cómo es está están fue se su sus mi
    mis tu lo le les te nos yo él ella hay muy

    le les une des du et ou au aux avec pour par sur dans est sont je il elle nous vous ils elles ce cette ces
    qui quoi comment mon ma mes sa ses ne pas
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True)
class Term:
    """One unit of a query: a word, a prefix (`word*`) or a phrase."""

    words: tuple[str, ...]
    prefix: bool = False

    @property
    def fts5(self) -> str:
        # Words hold no double quote, so each string stays one FTS5 string.
        return f'"{" ".join(self.words)}"' + ("*" if self.prefix else "")

    @property
    def tsquery(self) -> str:
        # Words hold none of to_tsquery's operators (& | ! ( ) : * < > ' \).
        return " <-> ".join(self.words) + (":*" if self.prefix else "")


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(word for term in self.terms for word in term.words)


def parse_query(text: str) -> Query:
    """The query's terms, or Invalid with a sentence saying what to change."""
    if not isinstance(text, str) or not text.strip():
        raise errors.Invalid(f"Pass a search query as ?q=… (1–{MAX_QUERY_CHARS} characters).", field="q")
    if len(text) > MAX_QUERY_CHARS:
        raise errors.Invalid(
            f"The query has {len(text)} characters; keep it to {MAX_QUERY_CHARS} (a few words find more).", field="q"
        )
    if any(unicodedata.category(char) == "Cc" and char not in "\t\n\r" for char in text):
        # PostgreSQL refuses NUL in text outright; no other control character is a word either.
        raise errors.Invalid("The query contains a control character; send plain text.", field="q")
    if text.count('"') % 2:
        # A stray quote (5" screen, a typo) is punctuation, not a phrase: the
        # last one, which pairs with nothing, is read as a space.
        cut = text.rfind('"')
        text = f"{text[:cut]} {text[cut + 1:]}"

    terms: list[Term] = []
    for match in _TOKEN.finditer(text):
        phrase, word, star, lone_star = match.groups()
        if lone_star:
            continue
        if phrase is not None:
            words = tuple(_WORD.findall(phrase))
            if words:
                terms.append(Term(words))
        elif star and len(word) < MIN_PREFIX_CHARS:
            raise errors.Invalid(
                f"A prefix needs at least {MIN_PREFIX_CHARS} letters before the *, like inv*.", field="q"
            )
        else:
            terms.append(Term((word,), prefix=bool(star)))
    if not terms:
        if "*" in text:
            raise errors.Invalid("A * alone matches everything; put a few letters before it, like inv*.", field="q")
        raise errors.Invalid("The query has no words to search for, only punctuation or symbols.", field="q")

    unique: dict[tuple[tuple[str, ...], bool], Term] = {}
    for term in terms:
        unique.setdefault((tuple(w.casefold() for w in term.words), term.prefix), term)
    kept = [t for t in unique.values() if len(t.words) > 1 or t.prefix or t.words[0].casefold() not in STOP_WORDS]
    return Query(tuple(kept or unique.values()))


# --- hits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    source: str  # "file" or "log"
    snippet: str
    score: float
    created_at: datetime
    file: str | None = None
    session: int | None = None
    version: int | None = None
    entry: int | None = None
    role: str | None = None
    matched: int = 0

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source}
        if self.file is not None:
            data["file"] = self.file
            data["version"] = self.version
        if self.session is not None:
            data["session"] = self.session
            data["entry"] = self.entry
            data["role"] = self.role
        data["snippet"] = self.snippet
        data["score"] = self.score
        data["matched"] = self.matched
        # The same spelling DRF gives every other timestamp in the API.
        data["created_at"] = _iso(self.created_at)
        return data

    @property
    def key(self) -> tuple[str, Any]:
        """The same hit's identity in every backend's ranking: within one
        scope a file kind is one file, and entry ids are unique."""
        return ("file", self.file) if self.source == "file" else ("log", self.entry)


@dataclass(frozen=True)
class Candidate:
    """A match before its snippet is made safe; `content` is the full text,
    which the scanner needs to judge a snippet cut from it."""

    hit: SearchHit
    content: str
    raw_snippet: str


class Backend(Protocol):
    """A ranker over one scope: the agent's files and, with a user, that
    pair's files and log entries. Best first, at most `limit` of each source."""

    def rank(
        self, *, agent: Agent, user_ref: str | None, query: Query, limit: int, now: datetime
    ) -> list[Candidate]: ...


def search(*, agent: Agent, user_ref: str | None, query: str, limit: int = 10) -> list[SearchHit]:
    parsed = parse_query(query)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise errors.Invalid(f"limit must be a whole number from 1 to {MAX_LIMIT}.", field="limit")
    if user_ref:
        user_ref = services.validate_user_ref(user_ref)
    now = timezone.now()
    rankings = [
        backend.rank(agent=agent, user_ref=user_ref or None, query=parsed, limit=limit, now=now)
        for backend in configured_backends()
    ]
    if len(rankings) == 1:
        # Newer first among equal scores: the fresher fact is the likelier answer.
        ranked = sorted(rankings[0], key=lambda c: (-c.hit.score, -c.hit.created_at.timestamp()))
    else:
        ranked = fuse(rankings)
    return [_with_safe_snippet(candidate, parsed) for candidate in ranked[:limit]]


def fuse(rankings: Sequence[Sequence[Candidate]], *, k: int = RRF_K) -> list[Candidate]:
    """Reciprocal rank fusion: each hit scores Σ 1 / (k + rank) over the
    rankings that have it (rank from 1, each ranking sorted by its own score),
    so no backend's score scale needs to match another's. The first
    ranking's candidate (snippet, matched terms) represents the hit."""
    fused: dict[tuple[str, Any], float] = {}
    first: dict[tuple[str, Any], Candidate] = {}
    for ranking in rankings:
        ordered = sorted(ranking, key=lambda c: (-c.hit.score, -c.hit.created_at.timestamp()))
        for rank, candidate in enumerate(ordered, start=1):
            key = candidate.hit.key
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
            first.setdefault(key, candidate)
    out = [replace(first[key], hit=replace(first[key].hit, score=score)) for key, score in fused.items()]
    return sorted(out, key=lambda c: (-c.hit.score, -c.hit.created_at.timestamp()))


# --- reading one entry whole -----------------------------------------------------------------


@dataclass(frozen=True)
class EntryView:
    id: int
    session: int
    role: str
    content: str
    created_at: datetime
    blocked: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "entry": self.id,
            "session": self.session,
            "role": self.role,
            "content": self.content,
            "created_at": _iso(self.created_at),
            "blocked": list(self.blocked),
        }


def read_entry(*, agent: Agent, user_ref: str, entry_id: int) -> EntryView:
    """A log entry of this agent and user, whole and re-scanned. Another
    agent's or user's entry is as absent as one that never existed."""
    user_ref = services.validate_user_ref(user_ref)
    # Ids are 64-bit: a larger number names nothing (and would overflow the driver).
    entry = None
    if 1 <= entry_id < 2**63:
        entry = LogEntry.objects.filter(pk=entry_id, agent=agent, user_ref=user_ref).first()
    if entry is None:
        raise errors.NotFound(f"There is no log entry {entry_id} for this agent and user.")
    served = context.serve_untrusted(entry.content)
    return EntryView(
        id=entry.pk, session=entry.session_id, role=entry.role, content=served.text, created_at=entry.created_at,
        blocked=served.blocked,
    )


# --- backends -----------------------------------------------------------------------------------


class KeywordBackend:
    """Full-text search on the database in use, over migration 0004's indexes."""

    def rank(self, *, agent: Agent, user_ref: str | None, query: Query, limit: int, now: datetime) -> list[Candidate]:
        if connection.vendor == "postgresql":
            rows = _pg_files(agent=agent, user_ref=user_ref, query=query, limit=limit, now=now)
            if user_ref:
                rows += _pg_logs(agent=agent, user_ref=user_ref, query=query, limit=limit, now=now)
        elif connection.vendor == "sqlite":
            rows = _sqlite_files(agent=agent, user_ref=user_ref, query=query, limit=limit, now=now)
            if user_ref:
                rows += _sqlite_logs(agent=agent, user_ref=user_ref, query=query, limit=limit, now=now)
        else:
            raise ImproperlyConfigured(f"Memory search supports PostgreSQL and SQLite, not {connection.vendor}.")
        return rows


BACKENDS: dict[str, Backend] = {"keyword": KeywordBackend()}


def configured_backends() -> list[Backend]:
    names = getattr(settings, "MEMORYHUB_SEARCH_BACKENDS", ("keyword",))
    unknown = [name for name in names if name not in BACKENDS]
    if unknown or not names:
        raise ImproperlyConfigured(
            f"MEMORYHUB_SEARCH_BACKENDS names {unknown or 'nothing'}; the backends are {sorted(BACKENDS)}."
        )
    return [BACKENDS[name] for name in names]


# --- scope ----------------------------------------------------------------------------------


def _file_scope(alias: str, user_ref: str | None) -> tuple[str, list[Any]]:
    """WHERE clause (and its parameters) for the files one agent may search.
    Empty content is an absent file: it never matches."""
    agent_kinds = sorted(AGENT_SCOPED)
    clause = f"({alias}.user_ref = '' AND {alias}.kind IN ({', '.join(['%s'] * len(agent_kinds))}))"
    params: list[Any] = [str(kind) for kind in agent_kinds]
    if user_ref:
        user_kinds = sorted(USER_SCOPED)
        clause += f" OR ({alias}.user_ref = %s AND {alias}.kind IN ({', '.join(['%s'] * len(user_kinds))}))"
        params += [user_ref, *(str(kind) for kind in user_kinds)]
    return f"{alias}.agent_id = %s AND {alias}.content <> '' AND ({clause})", params


def _score_sql(matched: str, relevance: str, age_days: str) -> str:
    return (
        f"({matched}) + {RELEVANCE_WEIGHT} * ({relevance}) "
        f"+ {RECENCY_WEIGHT} / (1.0 + ({age_days}) / {float(RECENCY_HALF_LIFE_DAYS)})"
    )


# --- PostgreSQL -----------------------------------------------------------------------------


def _pg_query(text: str) -> str:
    # One term matches the stemmed half or the exact half of the vector.
    return f"(to_tsquery('english', {text}) || to_tsquery('simple', {text}))"


# A pair with up to this many log entries is searched by reading all of them
# through the pair's btree index (~3 µs an entry with the stored vector);
# a larger one leaves the plan to PostgreSQL, which can use the GIN index.
# Left to itself on a small pair, the planner picks the GIN index for a
# phrase of common words and walks posting lists of ~10⁵ entries: 15 ms
# instead of 0.3 ms over 1,000,000 entries (docs/benchmarks.md).
PAIR_SCAN_MAX = 2000


@dataclass(frozen=True)
class _Source:
    """Where one branch of the ranking reads rows: a FROM item aliased `t`
    and a condition, each with its parameters."""

    from_sql: str
    from_params: list[Any]
    where_sql: str = "TRUE"
    where_params: tuple[Any, ...] = ()


def _pg_ranked(
    *, columns: Sequence[str], sources: Sequence[_Source], stamp: str, order: str, query: Query, limit: int,
    now: datetime, prelude: str = "", prelude_params: Sequence[Any] = (),
) -> tuple[str, list[Any]]:
    """The ranking SQL shared by files and logs; rows come back as
    (*columns, content, matched, score, headline). ts_headline parses the
    whole text again, so it runs after the LIMIT. The tsqueries are written
    out at each use rather than shared through a CTE: with literal arguments
    PostgreSQL folds them into constants when it plans."""
    vector = _PG_VECTOR.format(alias="t")
    any_term = " | ".join(f"({term.tsquery})" for term in query.terms)
    matched = " + ".join(f"({vector} @@ {_pg_query('%s')})::int" for _ in query.terms)
    age_days = f"greatest(extract(epoch from (%s - t.{stamp})), 0) / 86400.0"
    score = _score_sql(matched, f"ts_rank_cd({vector}, {_pg_query('%s')}, 1|32)", age_days)
    per_term = [p for term in query.terms for p in (term.tsquery, term.tsquery)]
    selects: list[str] = []
    params: list[Any] = list(prelude_params)
    for source in sources:
        selects.append(
            f"SELECT {', '.join(f't.{c}' for c in columns)}, t.content, {matched} AS matched, {score} AS score "
            f"FROM {source.from_sql} WHERE {source.where_sql} AND {vector} @@ {_pg_query('%s')}"
        )
        # `matched` appears twice: as a column and inside the score.
        params += [*per_term, *per_term, any_term, any_term, now, *source.from_params, *source.where_params,
                   any_term, any_term]
    union = "\n            UNION ALL\n            ".join(selects)
    sql = f"""
        WITH {prelude}ranked AS (
            {union}
            ORDER BY score DESC, id {order}
            LIMIT %s
        )
        SELECT {", ".join(columns)}, content, matched, score,
               ts_headline('english', content, {_pg_query('%s')}, %s)
        FROM ranked
        ORDER BY score DESC, id {order}
    """
    return sql, [*params, limit, any_term, any_term, _PG_HEADLINE_OPTIONS]


def _pg_files(*, agent: Agent, user_ref: str | None, query: Query, limit: int, now: datetime) -> list[Candidate]:
    scope, scope_params = _file_scope("f", user_ref)
    # A scope has at most five files, read by the unique (agent, user, kind)
    # index; OFFSET 0 keeps the planner from filtering them any other way.
    files = _Source(f"(SELECT * FROM memoryhub_memoryfile AS f WHERE {scope} OFFSET 0) AS t", [agent.pk, *scope_params])
    sql, params = _pg_ranked(
        columns=("id", "kind", "version", "updated_at"), sources=[files], stamp="updated_at", order="ASC",
        query=query, limit=limit, now=now,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_file_candidate(*row[1:]) for row in cursor.fetchall()]


def _pg_logs_sql(*, agent: Agent, user_ref: str, query: Query, limit: int, now: datetime) -> tuple[str, list[Any]]:
    # Both branches are planned; the one whose pair-size condition is false
    # is never executed (a one-time filter on the CTE's count).
    pair = [agent.pk, user_ref]
    size = (
        "size AS MATERIALIZED (SELECT count(*) AS n FROM (SELECT 1 FROM memoryhub_logentry "
        f"WHERE agent_id = %s AND user_ref = %s LIMIT {PAIR_SCAN_MAX + 1}) AS s),\n        "
    )
    small = _Source(
        "(SELECT * FROM memoryhub_logentry WHERE agent_id = %s AND user_ref = %s OFFSET 0) AS t", pair,
        f"(SELECT n FROM size) <= {PAIR_SCAN_MAX}",
    )
    large = _Source(
        "memoryhub_logentry AS t", [],
        f"(SELECT n FROM size) > {PAIR_SCAN_MAX} AND t.agent_id = %s AND t.user_ref = %s", tuple(pair),
    )
    return _pg_ranked(
        columns=("id", "session_id", "role", "created_at"), sources=[small, large], stamp="created_at",
        order="DESC", query=query, limit=limit, now=now, prelude=size, prelude_params=pair,
    )


def _pg_logs(*, agent: Agent, user_ref: str, query: Query, limit: int, now: datetime) -> list[Candidate]:
    sql, params = _pg_logs_sql(agent=agent, user_ref=user_ref, query=query, limit=limit, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_log_candidate(*row) for row in cursor.fetchall()]


# --- SQLite ---------------------------------------------------------------------------------


def _sqlite_ranked(
    *, table: str, columns: Sequence[str], scope: str, scope_params: list[Any], stamp: str, order: str,
    query: Query, limit: int, now: datetime,
) -> tuple[str, list[Any]]:
    """The same ranking on FTS5; rows come back as (*columns, content,
    matched, score, snippet). FTS5 cannot say which phrases of an OR query
    a row matched, so each term is one more MATCH of the index."""
    fts = f"{table}_fts"
    any_term = " OR ".join(term.fts5 for term in query.terms)
    matched = " + ".join(f"(t.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s))" for _ in query.terms)
    # bm25() is lower-is-better; negated so both databases rank higher-is-better.
    relevance = f"-bm25({fts}) / (1.0 - bm25({fts}))"
    age_days = f"max(julianday(%s) - julianday(t.{stamp}), 0)"
    sql = f"""
        SELECT {", ".join(f"t.{c}" for c in columns)}, t.content, {matched} AS matched,
               {_score_sql(matched, relevance, age_days)} AS score,
               snippet({fts}, 0, '**', '**', '…', 24)
        FROM {fts}
        JOIN {table} AS t ON t.id = {fts}.rowid
        WHERE {fts} MATCH %s AND {scope}
        ORDER BY score DESC, {order}
        LIMIT %s
    """
    per_term = [term.fts5 for term in query.terms]
    # Raw cursors skip Django's adapters: SQLite stores naive UTC text.
    stamp_param = now.astimezone(UTC).replace(tzinfo=None).isoformat(" ")
    return sql, [*per_term, *per_term, stamp_param, any_term, *scope_params, limit]


def _sqlite_files(*, agent: Agent, user_ref: str | None, query: Query, limit: int, now: datetime) -> list[Candidate]:
    scope, scope_params = _file_scope("t", user_ref)
    sql, params = _sqlite_ranked(
        table="memoryhub_memoryfile", columns=("kind", "version", "updated_at"), scope=scope,
        scope_params=[agent.pk, *scope_params], stamp="updated_at", order="t.id", query=query, limit=limit, now=now,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_file_candidate(*row) for row in cursor.fetchall()]


def _sqlite_logs(*, agent: Agent, user_ref: str, query: Query, limit: int, now: datetime) -> list[Candidate]:
    sql, params = _sqlite_ranked(
        table="memoryhub_logentry", columns=("id", "session_id", "role", "created_at"),
        scope="t.agent_id = %s AND t.user_ref = %s", scope_params=[agent.pk, user_ref], stamp="created_at",
        order="t.id DESC", query=query, limit=limit, now=now,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_log_candidate(*row) for row in cursor.fetchall()]


# --- rows and snippets ----------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _as_datetime(value: datetime | str) -> datetime:
    # Raw cursors skip Django's converters: SQLite hands back the stored text,
    # which is naive UTC under USE_TZ.
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _file_candidate(
    kind: str, version: int, updated_at: Any, content: str, matched: int, score: float, snippet: str
) -> Candidate:
    hit = SearchHit(
        source="file", snippet="", score=float(score), created_at=_as_datetime(updated_at), file=kind,
        version=version, matched=int(matched),
    )
    return Candidate(hit=hit, content=content, raw_snippet=snippet)


def _log_candidate(
    entry_id: int, session_id: int, role: str, created_at: Any, content: str, matched: int, score: float, snippet: str
) -> Candidate:
    hit = SearchHit(
        source="log", snippet="", score=float(score), created_at=_as_datetime(created_at), session=session_id,
        entry=entry_id, role=role, matched=int(matched),
    )
    return Candidate(hit=hit, content=content, raw_snippet=snippet)


class _ServedCache:
    """The scanner's verdict on a text, by the text's digest. The scanner
    costs ~1.3 ms per 1,000 characters, and the same files come back in
    search after search (an agent's SOUL/ABOUT/TOOLS for every user, a
    pair's MEMORY.md in every search of a session): most of a search's time
    before this cache. A verdict depends on the text and the scanner's rules
    alone, and the rules change only with the code, so it holds for the life
    of the process; nothing scoped is in the key or the value beyond the
    text the caller already holds. Texts over MAX_CHARS are not kept, which
    bounds the memory to about SIZE × MAX_CHARS characters."""

    SIZE = 2048
    MAX_CHARS = 10_000

    def __init__(self) -> None:
        self._items: OrderedDict[bytes, context.Served] = OrderedDict()
        self._lock = threading.Lock()

    def serve(self, text: str) -> context.Served:
        if len(text) > self.MAX_CHARS:
            return context.serve_untrusted(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            served = self._items.get(key)
            if served is not None:
                self._items.move_to_end(key)
                return served
        served = context.serve_untrusted(text)
        with self._lock:
            self._items[key] = served
            if len(self._items) > self.SIZE:
                self._items.popitem(last=False)
        return served


_served = _ServedCache()


def _with_safe_snippet(candidate: Candidate, query: Query) -> SearchHit:
    """Judge the whole text, not just the snippet: a snippet can hold part of
    a secret the scanner only recognises whole (a key block cut by the
    window), or a highlight marker can split a token the scanner looks for.
    So when the text has a blocked entry, the snippet is cut again from the
    served text, where that entry already reads [BLOCKED: rule]."""
    served = _served.serve(candidate.content)
    snippet = _window(served.text, query) if served.blocked else _clip(candidate.raw_snippet, query)
    return replace(candidate.hit, snippet=context.serve_untrusted(snippet).text)


def _clip(snippet: str, query: Query) -> str:
    # Both engines cut snippets by words; one pasted blob can be a single
    # 20,000-character "word". Re-cut those by characters.
    if len(snippet) <= 2 * SNIPPET_CHARS:
        return snippet
    return _window(snippet.replace(MARK, ""), query)


def _window(text: str, query: Query) -> str:
    """About SNIPPET_CHARS of text around the first searched word (or the
    first blocked entry when no searched word survived serving), searched
    words wrapped in **. Words are matched as written or as the start of a
    longer word, a rough stand-in for the engines' stemming."""
    stems = sorted({_rough_stem(word) for word in query.words}, key=len, reverse=True)
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(stem)}\w*" for stem in stems), re.IGNORECASE)
    found = pattern.search(text)
    anchor = found.start() if found else max(text.find("[BLOCKED:"), 0)
    start = max(0, anchor - SNIPPET_CHARS // 3)
    end = min(len(text), start + SNIPPET_CHARS)
    # Move the cuts to whitespace so no word is shown in part.
    if start > 0 and (space := text.find(" ", start, anchor)) != -1:
        start = space + 1
    if end < len(text) and (space := text.rfind(" ", anchor, end)) > anchor:
        end = space
    piece = pattern.sub(lambda m: f"{MARK}{m.group(0)}{MARK}", text[start:end])
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")


def _rough_stem(word: str) -> str:
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if word.lower().endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
