"""Redaction, the one mutation of history, at the database: the guards let
exactly the tombstone UPDATE through while the redaction flag is held, and
refuse everything else, flag or not (raw SQL, SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os

import pytest
from django.db import DatabaseError, connection, transaction

from memoryhub import db_roles, immutability, services
from memoryhub.models import AuditEvent, LogEntry, MemoryFile, Role, Source
from memoryhub.services import redaction
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

TOMB = "[REDACTED 2026-12-01 by change #7]"
ALIAS = "erased:" + "ab" * 16


@pytest.fixture
def rows():
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    services.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- secret one")
    session = services.start_session(agent=agent, user_ref="u1")
    services.append_log(session=session, entries=[{"role": "user", "content": "secret two"}])
    proposal = services.propose_change(agent=agent, kind="USER.md", user_ref="u1", content="- secret three",
                                       source=Source.CONSOLIDATION)
    services.reject_proposal(proposal_id=proposal.pk, reviewer=reviewer, comment="no")
    return {
        "history": MemoryFile.history.get(agent=agent).history_id,
        "log": LogEntry.objects.get(session=session).pk,
        "proposal": proposal.pk,
        "audit": AuditEvent.objects.filter(user_ref="u1").first().pk,
    }


def flag_sql() -> str:
    if connection.vendor == "postgresql":
        return f"SELECT set_config('{immutability.PG_REDACTING}', 'on', true)"
    return f"INSERT INTO {immutability.SQLITE_FLAG_TABLE} (id) VALUES (1)"


def outcome(*statements: str, params: list | None = None, flagged: bool = True) -> str:
    """'' when the statements ran, else the database's refusal."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if flagged:
                cursor.execute(flag_sql())
            for sql in statements:
                cursor.execute(sql, params)
            raise _RolledBack
    except _RolledBack:
        return ""
    except DatabaseError as exc:
        return str(exc) or "refused"


class _RolledBack(Exception):
    """Every statement ran; undo them."""


def _now() -> str:
    return "CURRENT_TIMESTAMP"


def tombstone_update(table: str, key: str, pk: int, extra: str = "", content: str = TOMB) -> str:
    column = {"memoryhub_auditevent": "summary"}.get(table, "content")
    sets = f"{column} = '{content}', redacted_at = {_now()}, redacted_by = 'change #7'"
    return f"UPDATE {table} SET {sets}{extra} WHERE {key} = {pk}"


CASES = [
    ("memoryhub_historicalmemoryfile", "history_id", "history"),
    ("memoryhub_logentry", "id", "log"),
    ("memoryhub_auditevent", "id", "audit"),
]


@pytest.mark.parametrize("table, key, name", CASES)
def test_the_tombstone_update_passes_while_the_flag_is_held(rows, table, key, name):
    assert outcome(tombstone_update(table, key, rows[name])) == ""


@pytest.mark.parametrize("table, key, name", CASES)
def test_the_same_update_without_the_flag_is_refused(rows, table, key, name):
    assert "append-only" in outcome(tombstone_update(table, key, rows[name]), flagged=False)


@pytest.mark.parametrize("table, key, name", CASES)
@pytest.mark.parametrize("bad", [
    "any other text",
    "[REDACTED 2026-12-01 by change #7] and new words",
    "[REDACTED 2026-12-01 by someone]",
    "[redacted 2026-12-01 by retention]",
])
def test_inside_the_redaction_path_text_becomes_a_tombstone_or_nothing(rows, table, key, name, bad):
    assert "append-only" in outcome(tombstone_update(table, key, rows[name], content=bad))


@pytest.mark.parametrize("table, key, name, extra", [
    ("memoryhub_historicalmemoryfile", "history_id", "history", ", version = 9"),
    ("memoryhub_historicalmemoryfile", "history_id", "history", ", history_change_reason = 'other'"),
    ("memoryhub_historicalmemoryfile", "history_id", "history", ", history_username = 'mallory'"),
    ("memoryhub_historicalmemoryfile", "history_id", "history", ", user_ref = 'someone-else'"),
    ("memoryhub_logentry", "id", "log", ", role = 'note'"),
    ("memoryhub_logentry", "id", "log", ", created_at = '2020-01-01 00:00:00'"),
    ("memoryhub_auditevent", "id", "audit", ", action = 'nothing.happened'"),
    ("memoryhub_auditevent", "id", "audit", ", actor_username = 'mallory'"),
])
def test_inside_the_redaction_path_any_other_column_is_refused(rows, table, key, name, extra):
    assert "append-only" in outcome(tombstone_update(table, key, rows[name], extra=extra))


def test_a_redaction_must_say_when_and_by_what(rows):
    sql = f"UPDATE memoryhub_logentry SET content = '{TOMB}' WHERE id = {rows['log']}"
    assert "append-only" in outcome(sql)


def test_deleting_is_refused_inside_the_redaction_path_too(rows):
    assert "append-only" in outcome(f"DELETE FROM memoryhub_logentry WHERE id = {rows['log']}")
    assert "append-only" in outcome(f"DELETE FROM memoryhub_auditevent WHERE id = {rows['audit']}")


def test_a_decided_proposal_takes_tombstones_and_nothing_else(rows):
    pk = rows["proposal"]
    ok = (f"UPDATE memoryhub_proposal SET proposed_content = '{TOMB}', diff = '{TOMB}', user_ref = '{ALIAS}', "
          f"redacted_at = CURRENT_TIMESTAMP, redacted_by = 'change #7' WHERE id = {pk}")
    assert outcome(ok) == ""
    assert "refused" in outcome(ok, flagged=False)
    changed_status = ok.replace(" WHERE", ", status = 'approved' WHERE")
    assert outcome(changed_status) != ""
    bad_rationale = ok.replace(" WHERE", f", rationale = '{json.dumps([{'summary': 'new words'}])}' WHERE")
    if connection.vendor == "postgresql":
        bad_rationale = bad_rationale.replace("' WHERE", "'::jsonb WHERE")
    assert outcome(bad_rationale) != ""


def test_the_served_row_may_change_its_user_only_to_a_pseudonym(rows):
    file = MemoryFile.objects.get(user_ref="u1")
    assert outcome(f"UPDATE memoryhub_memoryfile SET user_ref = '{ALIAS}' WHERE id = {file.pk}") == ""
    assert outcome(f"UPDATE memoryhub_memoryfile SET user_ref = 'u2' WHERE id = {file.pk}") != ""
    assert outcome(f"UPDATE memoryhub_memoryfile SET user_ref = '{ALIAS}' WHERE id = {file.pk}",
                   flagged=False) != ""


def test_the_service_redacts_and_leaves_numbers_authors_and_reasons(rows):
    before = MemoryFile.history.get(history_id=rows["history"])
    # The served row must equal its latest history row (checked at commit
    # on PostgreSQL): an erasure first makes the file absent, then redacts.
    services.write_memory(agent=before.agent, kind="USER.md", user_ref="u1", content="")
    with transaction.atomic():
        assert redaction.redact(what="history", ids=[rows["history"]], by="change #7", pseudonym=ALIAS) == 1
        assert redaction.redact(what="log", ids=[rows["log"]], by="retention") == 1
    after = MemoryFile.history.get(history_id=rows["history"])
    assert after.content.startswith("[REDACTED ") and after.content.endswith(" by change #7]")
    assert (after.version, after.history_user_id, after.history_change_reason, after.history_date) == (
        before.version, before.history_user_id, before.history_change_reason, before.history_date)
    assert after.user_ref == ALIAS and after.redacted_by == "change #7" and after.redacted_at is not None
    log = LogEntry.objects.get(pk=rows["log"])
    assert log.content.endswith(" by retention]") and log.user_ref == "u1"


def test_the_flag_does_not_outlive_the_redaction(rows):
    with transaction.atomic():
        redaction.redact(what="log", ids=[rows["log"]], by="retention")
        # Still in the same transaction: a plain UPDATE is refused again.
        assert "append-only" in outcome(tombstone_update("memoryhub_auditevent", "id", rows["audit"]),
                                        flagged=False)


@pytest.mark.django_db(transaction=True)
def test_redacting_outside_a_transaction_is_a_bug(rows):
    with pytest.raises(RuntimeError):
        redaction.redact(what="log", ids=[rows["log"]], by="retention")


# --- PostgreSQL: the SECURITY DEFINER function and the app role --------------------------------


def test_the_function_refuses_anything_but_a_tombstone(rows):
    needs_postgres()
    for args in (["log", "anything", "change #7", None], ["log", TOMB, "", None], ["log", TOMB, "x", "alice"],
                 ["drop", TOMB, "x", None]):
        what, text, by, alias = args
        problem = outcome("SELECT memoryhub_redact(%s, ARRAY[%s]::bigint[], %s, %s, %s)",
                          params=[what, rows["log"], text, by, alias], flagged=False)
        assert "memoryhub:" in problem


def test_the_app_role_redacts_only_through_the_function(rows):
    needs_postgres()
    role = f"mh_app_redact_{os.getpid()}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")
    db_roles.grant(connection, role)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {role}")
    # Setting the flag itself does not help: no UPDATE on the table.
    assert "permission denied" in outcome(tombstone_update("memoryhub_logentry", "id", rows["log"]))
    with transaction.atomic():
        assert redaction.redact(what="log", ids=[rows["log"]], by="change #7") == 1
    assert LogEntry.objects.get(pk=rows["log"]).content.endswith("by change #7]")


def test_the_flag_is_down_again_when_redact_returns(rows):
    with transaction.atomic():
        redaction.redact(what="log", ids=[rows["log"]], by="retention")
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"SELECT coalesce(current_setting('{immutability.PG_REDACTING}', true), '')")
                assert cursor.fetchone()[0] != "on"
            else:
                cursor.execute(f"SELECT count(*) FROM {immutability.SQLITE_FLAG_TABLE}")
                assert cursor.fetchone() == (0,)


def test_deleted_text_is_zeroed_on_sqlite_and_redaction_runs_as_the_owner_on_postgresql():
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA secure_delete")
            assert cursor.fetchone() == (1,)
        else:
            cursor.execute("SELECT prosecdef FROM pg_proc WHERE proname = %s", [immutability.REDACT_FUNCTION])
            assert cursor.fetchone() == (True,)
