"""Stemmed full-text indexes for memoryhub.search (replaces 0003's).

Agents search with the words they think of, not the ones a log used:
"emails" must find "email", "invoices" "invoice". Memory is multilingual,
so a German, Spanish or French word must still be found as written.

PostgreSQL: a stored generated column `search_vector` on both tables,
    to_tsvector('english', content) || to_tsvector('simple', content)
with a GIN index on the log table's. The file table loses 0003's GIN index:
a search reads at most five files, through the unique (agent, user, kind)
index, and the planner was better kept from the GIN one. The 'english' half stems (Snowball) and drops
English stop words; the 'simple' half keeps every word exactly as written,
in any language, stop words included. A query term matches either half; a
hit that has the exact form matches both and ranks a little higher.
A stored column rather than 0003's expression index because ranking needs
the vector of every row it ranks, and a search scoped to one pair is
usually served by the pair's btree index, not the GIN one: recomputing two
vectors per row (~60 µs for a short log entry) was most of a search's time
(docs/benchmarks.md). Django does not know the column; it is never written
or selected by the ORM, and PostgreSQL recomputes it when a redaction
rewrites `content`. Caveat: PostgreSQL refuses to change the type of a
column a generated column uses, so a migration that alters `content` must
drop the column first and run this one's `forwards` again.

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

PG_VECTOR = "to_tsvector('english'::regconfig, content) || to_tsvector('simple'::regconfig, content)"


def _pg_forwards(base: str, name: str) -> list[str]:
    # Adding a stored column rewrites the table under a lock, and the index
    # is not built CONCURRENTLY (that needs a non-atomic migration): fine
    # while no deployment has a log table worth a lock-free build.
    statements = [
        f"DROP INDEX IF EXISTS {name};",
        f"ALTER TABLE {base} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({PG_VECTOR}) STORED;",
    ]
    if base == "memoryhub_logentry":
        statements.append(f"CREATE INDEX {name} ON {base} USING GIN (search_vector);")
    return statements


def _pg_backwards(base: str, name: str) -> list[str]:
    return [
        f"DROP INDEX IF EXISTS {name};",
        f"ALTER TABLE {base} DROP COLUMN IF EXISTS search_vector;",
        # Migration 0003's index.
        f"CREATE INDEX {name} ON {base} USING GIN (to_tsvector('simple', content));",
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
            statements += _pg_forwards(base, name) if forwards else _pg_backwards(base, name)
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
