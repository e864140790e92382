"""Stemmed full-text indexes for memoryhub.search (replaces 0003's).

Agents search with the words they think of, not the ones a log used:
"emails" must find "email", "invoices" "invoice". Memory is multilingual,
so a German, Spanish or French word must still be found as written.

PostgreSQL: one GIN expression index per table over
    to_tsvector('english', content) || to_tsvector('simple', content)
The 'english' half stems (Snowball) and drops English stop words; the
'simple' half keeps every word exactly as written, in any language, stop
words included. A query term matches either half; a hit that has the exact
form matches both and ranks a little higher. The expression must stay the
one search.py queries, character for character, or the planner cannot use
the index (tests/memoryhub/test_search.py checks the plan).

SQLite: the FTS5 external-content tables of 0003 again, now tokenised by
`porter unicode61` (Porter stemming over unicode61's case and diacritic
folding; a word the stemmer has no rule for, in any script, is indexed as
folded), with prefix indexes for two- and three-letter prefixes so `in*` and
`inv*` do not scan the whole term list. The same triggers keep them in sync;
the migration rebuilds them from the base tables.

The DDL is spelled out here rather than imported, so this migration keeps
doing what it did when search.py changes. 0003's caveat still holds: a later
migration that makes Django's SQLite backend remake memoryhub_memoryfile or
memoryhub_logentry must run this one's `forwards` again.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# (base table, index or FTS table name)
TABLES = (
    ("memoryhub_memoryfile", "memoryhub_memoryfile_fts"),
    ("memoryhub_logentry", "memoryhub_logentry_fts"),
)

PG_STEMMED = "(to_tsvector('english'::regconfig, content) || to_tsvector('simple'::regconfig, content))"
PG_EXACT = "to_tsvector('simple', content)"  # migration 0003's


def _pg(base: str, name: str, expression: str) -> list[str]:
    # Not CONCURRENTLY: that needs a non-atomic migration; a deployment with
    # a large log table can build the new index by hand first (same name,
    # same expression) and this migration then only swaps names.
    return [
        f"DROP INDEX IF EXISTS {name};",
        f"CREATE INDEX {name} ON {base} USING GIN ({expression});",
    ]


def _sqlite(base: str, fts: str, options: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {fts}_ai;",
        f"DROP TRIGGER IF EXISTS {fts}_ad;",
        f"DROP TRIGGER IF EXISTS {fts}_au;",
        f"DROP TABLE IF EXISTS {fts};",
        f"CREATE VIRTUAL TABLE {fts} USING fts5(content, content='{base}', content_rowid='id', {options});",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {base} BEGIN "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END;",
        # An external-content index must be told the old text to forget it;
        # without the delete trigger a flushed table leaves ghost matches.
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {base} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); END;",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {base} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END;",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild');",
    ]


def _run(schema_editor: Any, *, forwards: bool) -> None:
    vendor = schema_editor.connection.vendor
    statements: list[str] = []
    for base, name in TABLES:
        if vendor == "postgresql":
            statements += _pg(base, name, PG_STEMMED if forwards else PG_EXACT)
        elif vendor == "sqlite":
            options = "tokenize='porter unicode61', prefix='2 3'" if forwards else "tokenize='unicode61'"
            statements += _sqlite(base, name, options)
    with schema_editor.connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def forwards(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, forwards=True)


def backwards(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, forwards=False)


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0003_search_indexes")]

    operations = [migrations.RunPython(forwards, backwards)]
