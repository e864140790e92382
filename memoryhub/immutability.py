"""Append-only tables, enforced by the database itself.

The ORM never updates or deletes these rows, but an auditor must not have to
trust the ORM: a trigger refuses UPDATE, DELETE and (on PostgreSQL) TRUNCATE
whatever the client. SQLite has no TRUNCATE and no way to switch a trigger
off, so there the triggers are dropped and recreated around a test flush.
"""

from __future__ import annotations

from typing import Any

APPEND_ONLY_TABLES = (
    "memoryhub_historicalmemoryfile",
    "memoryhub_logentry",
    "memoryhub_auditevent",
)

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION memoryhub_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'memoryhub: % on % is refused: this table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
"""


def _pg_install(table: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};",
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION memoryhub_refuse_change();",
        # Row triggers never see TRUNCATE: it needs its own statement trigger.
        f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_refuse_change();",
    ]


def _sqlite_install(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table} "
        f"BEGIN SELECT RAISE(ABORT, 'memoryhub: UPDATE on {table} is refused: this table is append-only'); END;",
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table} "
        f"BEGIN SELECT RAISE(ABORT, 'memoryhub: DELETE on {table} is refused: this table is append-only'); END;",
    ]


def install_sql(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [_PG_FUNCTION] + [sql for table in APPEND_ONLY_TABLES for sql in _pg_install(table)]
    if vendor == "sqlite":
        return [sql for table in APPEND_ONLY_TABLES for sql in _sqlite_install(table)]
    return []


def uninstall_sql(vendor: str) -> list[str]:
    if vendor == "postgresql":
        statements = []
        for table in APPEND_ONLY_TABLES:
            statements.append(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};")
            statements.append(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};")
        return statements + ["DROP FUNCTION IF EXISTS memoryhub_refuse_change();"]
    if vendor == "sqlite":
        statements = []
        for table in APPEND_ONLY_TABLES:
            statements.append(f"DROP TRIGGER IF EXISTS {table}_no_update;")
            statements.append(f"DROP TRIGGER IF EXISTS {table}_no_delete;")
        return statements
    return []


def install(connection: Any) -> None:
    with connection.cursor() as cursor:
        for sql in install_sql(connection.vendor):
            cursor.execute(sql)


def uninstall(connection: Any) -> None:
    with connection.cursor() as cursor:
        for sql in uninstall_sql(connection.vendor):
            cursor.execute(sql)
