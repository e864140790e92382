from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from memoryhub import services
from memoryhub.models import AuditEvent, LogEntry, MemoryFile
from tests.conftest import needs_postgres
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

TABLES = ["memoryhub_historicalmemoryfile", "memoryhub_logentry", "memoryhub_auditevent"]


@pytest.fixture
def rows():
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="I am steady.")
    session = services.start_session(agent=agent, user_ref="u1")
    services.append_log(session=session, entries=[{"role": "user", "content": "hello"}])
    services.record_event(action="test.event", agent=agent, summary="for the trigger test")
    assert MemoryFile.history.exists() and LogEntry.objects.exists() and AuditEvent.objects.exists()


def refused(sql: str) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    except DatabaseError as exc:
        return "append-only" in str(exc)
    return False


@pytest.mark.parametrize("table", TABLES)
def test_raw_sql_cannot_update_an_append_only_table(rows, table):
    column = {"memoryhub_historicalmemoryfile": "content", "memoryhub_logentry": "content"}.get(table, "summary")
    assert refused(f"UPDATE {table} SET {column} = 'rewritten'")


@pytest.mark.parametrize("table", TABLES)
def test_raw_sql_cannot_delete_from_an_append_only_table(rows, table):
    assert refused(f"DELETE FROM {table}")


# transaction=True: the rows must be committed, or PostgreSQL refuses the
# TRUNCATE for its pending FK trigger events before ours can speak.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("table", TABLES)
def test_truncate_is_refused_on_postgresql(rows, table):
    needs_postgres()
    assert refused(f"TRUNCATE {table} CASCADE")


def test_the_orm_cannot_delete_a_log_entry_either(rows):
    with pytest.raises(DatabaseError), transaction.atomic():
        LogEntry.objects.all().delete()
    assert LogEntry.objects.count() == 1


def test_inserting_still_works(rows):
    services.record_event(action="test.again")
    assert AuditEvent.objects.count() >= 2
