"""Redaction: the one mutation of history.

History rows, log entries, audit events and decided proposals are never
changed (memoryhub.immutability) — except that their text may be replaced by
a tombstone, `[REDACTED <YYYY-MM-DD> by change #<id>]` or `[REDACTED
<YYYY-MM-DD> by retention]`, and the end user's reference by a pseudonym
(`erased:` + 32 hex digits). Free text typed about the row (a version's
reason, a proposal's reason and decision comment, a withhold reason) is
text too. Version numbers, authors, sources, times and the audit rows
themselves stay. Everything here runs inside the caller's transaction,
which also writes the audit event that says why. Which columns of which
tables an erasure sends here is one table, services.sweep.

`redact()` is the only code that sets the database's redaction flag:

- PostgreSQL: it calls `memoryhub_redact()`, a SECURITY DEFINER function
  owned by the tables' owner, which sets `memoryhub.redacting` for its own
  fixed UPDATE statement and clears it again;
- SQLite: it inserts the one row of `memoryhub_redacting`, runs the same
  UPDATE, and deletes the row before returning, inside the transaction.

In both the triggers check each UPDATE themselves: every column other than
the tombstone fields unchanged, the text exactly a tombstone. A bug here
cannot write anything else.

What else held the text is the caller's to purge in the same transaction
(services.erasure, services.retention): the search index follows the rows
(PostgreSQL's generated column, SQLite's FTS triggers — `optimize_search()`
then merges FTS5 segments so deleted terms leave the file), cached
contexts (`context.purge_cached_contexts`) and frozen session contexts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memoryhub import immutability
from memoryhub.search import embedding

# Rows per UPDATE: well under SQLite's bound-parameter limit.
BATCH = 500

# What redact() can reach, and the table and key column of each.
TARGETS = {
    "history": (immutability.HISTORY, "history_id"),
    "log": (immutability.LOG, "id"),
    "proposal": (immutability.PROPOSAL, "id"),
    "audit": (immutability.AUDIT, "id"),
    "audit_summary": (immutability.AUDIT, "id"),
    "run": (immutability.RUN, "id"),
    "served": (immutability.SERVED, "id"),
}


def tombstone(*, by: str, at: datetime | None = None) -> str:
    """`by` is `change #<id>` or `retention` (the guards accept nothing else)."""
    return f"{immutability.TOMBSTONE_PREFIX}{(at or timezone.now()):%Y-%m-%d} by {by}]"


def is_tombstone(text: str) -> bool:
    return text.startswith(immutability.TOMBSTONE_PREFIX) and text.endswith("]")


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), BATCH):
        yield list(ids[start:start + BATCH])


@contextmanager
def _sqlite_flag() -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {immutability.SQLITE_FLAG_TABLE} (id) VALUES (1)")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {immutability.SQLITE_FLAG_TABLE}")


def _redacted_rationale(rationale: object, text: str) -> list[dict[str, object]]:
    items = rationale if isinstance(rationale, list) else []
    return [{"kind": item.get("kind") if isinstance(item, dict) else None,
             "evidence": (item.get("evidence") or []) if isinstance(item, dict) else [],
             "summary": text, "reason": text} for item in items]


def _sqlite_update(what: str, ids: list[int], text: str, by: str, pseudonym: str | None, now: str | None) -> int:
    table, key = TARGETS[what]
    marks = ", ".join("%s" for _ in ids)
    stamps = "redacted_at = %s, redacted_by = %s"
    keep_empty = "CASE WHEN {c} = '' THEN '' ELSE %s END"
    keep_null = "CASE WHEN coalesce({c}, '') = '' THEN {c} ELSE %s END"
    user = "COALESCE(%s, user_ref)"
    with connection.cursor() as cursor:
        if what == "history":
            cursor.execute(f"UPDATE {table} SET content = {keep_empty.format(c='content')}, "
                           f"history_change_reason = {keep_null.format(c='history_change_reason')}, "
                           f"user_ref = {user}, {stamps} WHERE {key} IN ({marks})",
                           [text, text, pseudonym, now, by, *ids])
        elif what == "log":
            cursor.execute(f"UPDATE {table} SET content = %s, user_ref = {user}, {stamps} WHERE {key} IN ({marks})",
                           [text, pseudonym, now, by, *ids])
        elif what in ("audit", "audit_summary"):
            summary = "summary = %s, " if what == "audit_summary" else ""
            params: list[Any] = [text] if what == "audit_summary" else []
            cursor.execute(
                f"UPDATE {table} SET {summary}user_ref = CASE WHEN user_ref = '' THEN '' ELSE {user} END, "
                f"details = %s, {stamps} WHERE {key} IN ({marks})",
                [*params, pseudonym, json.dumps({"redacted": text}), now, by, *ids])
        elif what == "proposal":
            cursor.execute(f"SELECT id, rationale FROM {table} WHERE id IN ({marks})", ids)
            for pk, rationale in cursor.fetchall():
                new = json.dumps(_redacted_rationale(json.loads(rationale or "[]"), text))
                cursor.execute(
                    f"UPDATE {table} SET base_content = {keep_empty.format(c='base_content')}, "
                    f"proposed_content = {keep_empty.format(c='proposed_content')}, "
                    f"diff = {keep_empty.format(c='diff')}, reason = {keep_empty.format(c='reason')}, "
                    f"decision_comment = {keep_empty.format(c='decision_comment')}, "
                    f"rationale = %s, pii = '[]', user_ref = {user}, {stamps} WHERE id = %s",
                    [text, text, text, text, text, new, pseudonym, now, by, pk])
            return len(ids)
        elif what == "run":
            cursor.execute(f"UPDATE {table} SET error = {keep_empty.format(c='error')}, user_ref = {user} "
                           f"WHERE {key} IN ({marks})", [text, pseudonym, *ids])
        elif what == "served":
            cursor.execute(f"UPDATE {table} SET user_ref = {user}, "
                           f"withheld_reason = {keep_empty.format(c='withheld_reason')} WHERE {key} IN ({marks})",
                           [pseudonym, text, *ids])
        else:
            raise ValueError(what)
        return int(cursor.rowcount)


def redact(*, what: str, ids: Iterable[int], by: str, pseudonym: str | None = None,
           at: datetime | None = None) -> int:
    """Replace the text of rows `ids` of `what` (see TARGETS) by the
    tombstone of `by`, and their user reference by `pseudonym` when given.
    Runs in the caller's transaction; returns how many rows changed."""
    if not connection.in_atomic_block:
        raise RuntimeError("redact() runs inside the transaction that records why")
    if what not in TARGETS:
        raise ValueError(what)
    ids = sorted({int(i) for i in ids})
    if not ids:
        return 0
    at = at or timezone.now()
    text = tombstone(by=by, at=at)
    count = 0
    if what in ("log", "served"):
        # The semantic index goes with the text (vectors are not history).
        embedding.forget_redacted(what, ids)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for chunk in _chunks(ids):
                cursor.execute(f"SELECT {immutability.REDACT_FUNCTION}(%s, %s::bigint[], %s, %s, %s)",
                               [what, chunk, text, by, pseudonym])
                count += int(cursor.fetchone()[0])
        return count
    now = connection.ops.adapt_datetimefield_value(at)
    with transaction.atomic(), _sqlite_flag():
        for chunk in _chunks(ids):
            count += _sqlite_update(what, chunk, text, by, pseudonym, now)
    return count


def optimize_search() -> None:
    """SQLite's FTS5 tables forget a row's terms by writing a delete marker
    into a new segment: the old segment keeps the words until a merge.
    `optimize` merges every segment into one, so redacted words leave the
    index (and, with secure_delete and the VACUUM after commit, the file).
    PostgreSQL's index is a generated column of the row itself."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for table in (immutability.SERVED, immutability.LOG):
            fts = f"{table}_fts"
            cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")


def compact_sqlite() -> None:
    """After the transaction commits: rebuild the SQLite file without the
    freed pages and empty the WAL, so the old text is gone from disk too.
    Skipped inside a transaction (VACUUM cannot run there, e.g. in tests
    that wrap each test in one) and on PostgreSQL (docs/compliance.md)."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
