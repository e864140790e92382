"""Full-text search indexes for memoryhub.search.

PostgreSQL: GIN expression indexes. The expression must stay byte-for-byte
the one search.py queries (to_tsvector('simple', content)), or the planner
cannot use them.

SQLite: FTS5 external-content tables (the text lives once, in the base
table) kept in sync by triggers. The DDL is spelled out here rather than
imported, so this migration keeps doing what it did when search.py changes.
Caveat: when a later migration makes Django's SQLite backend remake
memoryhub_memoryfile or memoryhub_logentry (copy, drop, rename), the drop
takes these triggers with it; such a migration must run this one's
`forwards` again.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# (base table, index or FTS table name)
TABLES = (
    ("memoryhub_memoryfile", "memoryhub_memoryfile_fts"),
    ("memoryhub_logentry", "memoryhub_logentry_fts"),
)


def _pg_forwards(base: str, name: str) -> list[str]:
    # Not CONCURRENTLY: that needs a non-atomic migration, and when this was
    # written no deployment had data worth a lock-free build.
    return [f"CREATE INDEX IF NOT EXISTS {name} ON {base} USING GIN (to_tsvector('simple', content));"]


def _pg_backwards(base: str, name: str) -> list[str]:
    return [f"DROP INDEX IF EXISTS {name};"]


def _sqlite_forwards(base: str, fts: str) -> list[str]:
    # unicode61 folds case and diacritics for every script and never stems,
    # the closest match to PostgreSQL's 'simple' configuration.
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5("
        f"content, content='{base}', content_rowid='id', tokenize='unicode61');",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {base} BEGIN "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END;",
        # An external-content index must be told the old text to forget it;
        # without the delete trigger a flushed table leaves ghost matches.
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {base} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); END;",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE ON {base} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, content) VALUES ('delete', old.id, old.content); "
        f"INSERT INTO {fts}(rowid, content) VALUES (new.id, new.content); END;",
        # Index the rows written before this migration.
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild');",
    ]


def _sqlite_backwards(base: str, fts: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {fts}_ai;",
        f"DROP TRIGGER IF EXISTS {fts}_ad;",
        f"DROP TRIGGER IF EXISTS {fts}_au;",
        f"DROP TABLE IF EXISTS {fts};",
    ]


def _run(schema_editor: Any, *, forwards: bool) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        build = _pg_forwards if forwards else _pg_backwards
    elif vendor == "sqlite":
        build = _sqlite_forwards if forwards else _sqlite_backwards
    else:
        # search.py supports PostgreSQL and SQLite only; other backends get
        # no index and search refuses to run there.
        return
    with schema_editor.connection.cursor() as cursor:
        for base, name in TABLES:
            for sql in build(base, name):
                cursor.execute(sql)


def forwards(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, forwards=True)


def backwards(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, forwards=False)


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0002_append_only_triggers")]

    operations = [migrations.RunPython(forwards, backwards)]
