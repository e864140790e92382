"""Full-text search over an agent's memory files and one pair's session logs.

Scope is fixed by the SQL, never by the caller: the agent's own agent-scoped
files always; with a user, that pair's USER.md/MEMORY.md and session logs.
One query for files, one for logs (none without a user), merged by score.

PostgreSQL ranks with ts_rank_cd over the GIN expression indexes of
migration 0003; SQLite with FTS5 bm25 over the external-content tables of
the same migration. Both use word-level, stemming-free tokenisation
('simple' / unicode61), so any language is searchable.

Snippets are untrusted text on their way to a model: they pass the scanner
like served memory does. Logs are not scanned on write, so this is the only
thing between a secret pasted into a log and an agent that searches for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from memoryhub import context, errors, services
from memoryhub.models import AGENT_SCOPED, USER_SCOPED, Agent

MAX_QUERY_CHARS = 200
MAX_LIMIT = 50
SNIPPET_CHARS = 200
MARK = "**"

_WORD = re.compile(r"\w+")

# The expression must stay the one indexed in migration 0003, character for
# character, or PostgreSQL cannot use the GIN indexes.
_PG_VECTOR = "to_tsvector('simple', {col})"
# ShortWord=0: the default (3) trims words of up to three letters from both
# ends of a headline, and memory is full of short facts ("in EUR", "Bob").
_PG_HEADLINE_OPTIONS = "StartSel=**, StopSel=**, MaxFragments=1, MaxWords=30, MinWords=8, ShortWord=0"


@dataclass(frozen=True)
class SearchHit:
    source: str  # "file" or "log"
    snippet: str
    score: float
    created_at: datetime
    file: str | None = None
    session: int | None = None
    version: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source}
        if self.file is not None:
            data["file"] = self.file
        if self.session is not None:
            data["session"] = self.session
        data["snippet"] = self.snippet
        data["score"] = self.score
        # The same spelling DRF gives every other timestamp in the API.
        data["created_at"] = self.created_at.isoformat().replace("+00:00", "Z")
        return data


@dataclass(frozen=True)
class _Row:
    """A match before its snippet is made safe; `content` is the full text,
    which the scanner needs to judge a snippet cut from it."""

    hit: SearchHit
    content: str
    raw_snippet: str


def search(*, agent: Agent, user_ref: str | None, query: str, limit: int = 10) -> list[SearchHit]:
    # Control characters are never words, and PostgreSQL refuses NUL in
    # text outright: read them as spaces.
    query = "".join(char if char.isprintable() else " " for char in query).strip()
    if not 1 <= len(query) <= MAX_QUERY_CHARS:
        raise errors.Invalid(f"Pass a search query as ?q=… (1–{MAX_QUERY_CHARS} characters).", field="q")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise errors.Invalid(f"limit must be a whole number from 1 to {MAX_LIMIT}.", field="limit")
    if user_ref:
        user_ref = services.validate_user_ref(user_ref)
    terms = _WORD.findall(query)
    if not terms:
        # Only punctuation: nothing any tokenizer would index, so nothing can match.
        return []

    if connection.vendor == "postgresql":
        rows = _pg_files(agent=agent, user_ref=user_ref, query=query, limit=limit)
        if user_ref:
            rows += _pg_logs(agent=agent, user_ref=user_ref, query=query, limit=limit)
    elif connection.vendor == "sqlite":
        match = _fts5_match(terms)
        rows = _sqlite_files(agent=agent, user_ref=user_ref, match=match, limit=limit)
        if user_ref:
            rows += _sqlite_logs(agent=agent, user_ref=user_ref, match=match, limit=limit)
    else:
        raise ImproperlyConfigured(f"Memory search supports PostgreSQL and SQLite, not {connection.vendor}.")

    # Newer first among equal scores: the fresher fact is the likelier answer.
    rows.sort(key=lambda row: (-row.hit.score, -row.hit.created_at.timestamp()))
    return [_with_safe_snippet(row, terms) for row in rows[:limit]]


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


# --- PostgreSQL -----------------------------------------------------------------------------


def _pg_files(*, agent: Agent, user_ref: str | None, query: str, limit: int) -> list[_Row]:
    scope, scope_params = _file_scope("f", user_ref)
    vector = _PG_VECTOR.format(col="f.content")
    # score > 0 drops rows that only satisfy a negation ("-word" alone matches
    # every row without that word): a hit must contain a searched word.
    # ts_headline is costly; PostgreSQL evaluates it after the LIMIT.
    sql = f"""
        SELECT kind, version, updated_at, content, score,
               ts_headline('simple', content, tsq, %s)
        FROM (
            SELECT f.id, f.kind, f.version, f.updated_at, f.content, q.tsq,
                   ts_rank_cd({vector}, q.tsq) AS score
            FROM memoryhub_memoryfile AS f, websearch_to_tsquery('simple', %s) AS q(tsq)
            WHERE {vector} @@ q.tsq AND {scope}
        ) AS matched
        WHERE score > 0
        ORDER BY score DESC, id
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [_PG_HEADLINE_OPTIONS, query, agent.pk, *scope_params, limit])
        return [_file_row(*row) for row in cursor.fetchall()]


def _pg_logs(*, agent: Agent, user_ref: str, query: str, limit: int) -> list[_Row]:
    vector = _PG_VECTOR.format(col="l.content")
    sql = f"""
        SELECT session_id, created_at, content, score,
               ts_headline('simple', content, tsq, %s)
        FROM (
            SELECT l.id, l.session_id, l.created_at, l.content, q.tsq,
                   ts_rank_cd({vector}, q.tsq) AS score
            FROM memoryhub_logentry AS l, websearch_to_tsquery('simple', %s) AS q(tsq)
            WHERE {vector} @@ q.tsq AND l.agent_id = %s AND l.user_ref = %s
        ) AS matched
        WHERE score > 0
        ORDER BY score DESC, id DESC
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [_PG_HEADLINE_OPTIONS, query, agent.pk, user_ref, limit])
        return [_log_row(*row) for row in cursor.fetchall()]


# --- SQLite ---------------------------------------------------------------------------------


def _fts5_match(terms: Sequence[str]) -> str:
    """Each word token as a quoted FTS5 string, implicitly ANDed. A token
    from \\w+ cannot contain a double quote, so no input can reach FTS5's
    operators (OR, NOT, NEAR, *, ^, column filters)."""
    return " ".join(f'"{term}"' for term in terms)


def _sqlite_files(*, agent: Agent, user_ref: str | None, match: str, limit: int) -> list[_Row]:
    scope, scope_params = _file_scope("f", user_ref)
    # bm25() is lower-is-better; negated so both backends rank higher-is-better.
    sql = f"""
        SELECT f.kind, f.version, f.updated_at, f.content,
               -bm25(memoryhub_memoryfile_fts) AS score,
               snippet(memoryhub_memoryfile_fts, 0, '**', '**', '…', 24)
        FROM memoryhub_memoryfile_fts
        JOIN memoryhub_memoryfile AS f ON f.id = memoryhub_memoryfile_fts.rowid
        WHERE memoryhub_memoryfile_fts MATCH %s AND {scope}
        ORDER BY score DESC, f.id
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, agent.pk, *scope_params, limit])
        return [_file_row(*row) for row in cursor.fetchall()]


def _sqlite_logs(*, agent: Agent, user_ref: str, match: str, limit: int) -> list[_Row]:
    sql = """
        SELECT l.session_id, l.created_at, l.content,
               -bm25(memoryhub_logentry_fts) AS score,
               snippet(memoryhub_logentry_fts, 0, '**', '**', '…', 24)
        FROM memoryhub_logentry_fts
        JOIN memoryhub_logentry AS l ON l.id = memoryhub_logentry_fts.rowid
        WHERE memoryhub_logentry_fts MATCH %s AND l.agent_id = %s AND l.user_ref = %s
        ORDER BY score DESC, l.id DESC
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, agent.pk, user_ref, limit])
        return [_log_row(*row) for row in cursor.fetchall()]


# --- rows and snippets ----------------------------------------------------------------------


def _as_datetime(value: datetime | str) -> datetime:
    # Raw cursors skip Django's converters: SQLite hands back the stored text,
    # which is naive UTC under USE_TZ.
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _file_row(kind: str, version: int, updated_at: Any, content: str, score: float, snippet: str) -> _Row:
    hit = SearchHit(
        source="file", snippet="", score=float(score), created_at=_as_datetime(updated_at), file=kind, version=version
    )
    return _Row(hit=hit, content=content, raw_snippet=snippet)


def _log_row(session_id: int, created_at: Any, content: str, score: float, snippet: str) -> _Row:
    hit = SearchHit(
        source="log", snippet="", score=float(score), created_at=_as_datetime(created_at), session=session_id
    )
    return _Row(hit=hit, content=content, raw_snippet=snippet)


def _with_safe_snippet(row: _Row, terms: Sequence[str]) -> SearchHit:
    """Judge the whole text, not just the snippet: a snippet can hold part of
    a secret the scanner only recognises whole (a key block cut by the
    window), or a highlight marker can split a token the scanner looks for.
    So when the text has a blocked entry, the snippet is cut again from the
    served text, where that entry already reads [BLOCKED: rule]."""
    served = context.serve_untrusted(row.content)
    snippet = _window(served.text, terms) if served.blocked else _clip(row.raw_snippet, terms)
    return replace(row.hit, snippet=context.serve_untrusted(snippet).text)


def _clip(snippet: str, terms: Sequence[str]) -> str:
    # Both engines cut snippets by words; one pasted blob can be a single
    # 20,000-character "word". Re-cut those by characters.
    if len(snippet) <= 2 * SNIPPET_CHARS:
        return snippet
    return _window(snippet.replace(MARK, ""), terms)


def _window(text: str, terms: Sequence[str]) -> str:
    """About SNIPPET_CHARS of text around the first searched word (or the
    first blocked entry when no searched word survived serving), searched
    words wrapped in **."""
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(term)}(?!\w)" for term in terms), re.IGNORECASE)
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
