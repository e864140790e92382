"""The app's database role: everything it needs, nothing that lifts a guard.

Migrations run as the tables' owner (MIGRATE_DATABASE_URL); the web, worker
and beat connect as a narrower role (DATABASE_URL) that owns nothing. Only an
owner or a superuser can `ALTER TABLE … DISABLE TRIGGER`, drop a trigger or
`SET session_replication_role = replica`, so the app — or whoever steals its
password — cannot switch the guards of memoryhub.immutability off. On top of
the triggers, the app role has no UPDATE or DELETE on the append-only tables
and no DELETE on the served rows, proposals and runs.

The one UPDATE the app may still make there is a redaction, through
`memoryhub_redact()`, which it may EXECUTE (memoryhub.immutability).

`grant(connection, role)` runs after every migrate when DATABASE_APP_ROLE is
set (apps.py), so tables added later are granted too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memoryhub import immutability

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

# Never deleted by the app: an absent file is empty content; decided
# proposals and finished runs are kept (open ones are never deleted either).
NO_DELETE = (immutability.SERVED, immutability.PROPOSAL, immutability.RUN)


def grant_sql(role: str, tables: list[str], quote: Callable[[str], str]) -> list[str]:
    name = quote(role)
    statements = [
        f"GRANT USAGE ON SCHEMA public TO {name}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {name}",
    ]
    statements += [f"REVOKE UPDATE, DELETE ON {t} FROM {name}" for t in immutability.APPEND_ONLY_TABLES if t in tables]
    statements += [f"REVOKE DELETE ON {t} FROM {name}" for t in NO_DELETE if t in tables]
    # Only the owner (seed_demo at install time) may open the seeding window.
    if immutability.SEED_WINDOW in tables:
        statements.append(f"REVOKE INSERT, UPDATE, DELETE ON {immutability.SEED_WINDOW} FROM {name}")
    return statements


# Redaction (services.redaction) goes through this SECURITY DEFINER function
# of the tables' owner: the app may turn text into tombstones, nothing else.
REDACT_SIGNATURE = f"{immutability.REDACT_FUNCTION}(text, bigint[], text, text, text)"


def grant(connection: BaseDatabaseWrapper, role: str) -> None:
    if connection.vendor != "postgresql" or not role:
        return
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        for sql in grant_sql(role, tables, connection.ops.quote_name):
            cursor.execute(sql)
        cursor.execute("SELECT to_regprocedure(%s) IS NOT NULL", [REDACT_SIGNATURE])
        if cursor.fetchone()[0]:
            cursor.execute(f"GRANT EXECUTE ON FUNCTION {REDACT_SIGNATURE} TO {connection.ops.quote_name(role)}")
