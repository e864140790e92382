from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memoryhub import errors, services
from memoryhub.models import AuditEvent, LogEntry, MemoryFile, Proposal, Role, Source
from tests.api_helpers import staff_client
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff

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


def refused(sql: str, why: str = "append-only") -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in sql.split("; "):
                cursor.execute(statement)
    except DatabaseError as exc:
        return why in str(exc)
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


# --- back-dating -------------------------------------------------------------------------

LONG_AGO = "2020-01-01 00:00:00"


@pytest.mark.parametrize("table, stamp", [("memoryhub_auditevent", "created_at"),
                                          ("memoryhub_logentry", "created_at"),
                                          ("memoryhub_historicalmemoryfile", "history_date")])
def test_a_back_dated_insert_into_an_append_only_table_is_refused(rows, table, stamp):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} LIMIT 1")
        columns = [c[0] for c in cursor.description]
    id_column = "history_id" if table == "memoryhub_historicalmemoryfile" else "id"
    # search_vector is a generated column on PostgreSQL: inserting into it is
    # refused for its own reason, which would hide the one under test.
    copied = ", ".join(c for c in columns if c not in (id_column, stamp, "search_vector"))
    assert refused(f"INSERT INTO {table} ({copied}, {stamp}) SELECT {copied}, '{LONG_AGO}' FROM {table} LIMIT 1",
                   "back-dated")


def test_the_orm_cannot_back_date_an_audit_event(rows):
    with pytest.raises(DatabaseError, match="back-dated"), transaction.atomic():
        AuditEvent.objects.create(action="forged", created_at=timezone.now() - timedelta(days=30))


def test_a_timestamp_within_the_clock_skew_is_accepted(rows):
    AuditEvent.objects.create(action="slightly.late", created_at=timezone.now() - timedelta(seconds=60))


# --- proposals ---------------------------------------------------------------------------


@pytest.fixture
def decided():
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    proposal = services.propose_change(agent=agent, kind="SOUL.md", content="v1", source=Source.CONSOLIDATION)
    services.reject_proposal(proposal_id=proposal.pk, reviewer=reviewer, comment="no")
    return proposal


@pytest.fixture
def pending():
    agent = AgentFactory()
    return services.propose_change(agent=agent, kind="SOUL.md", content="v1", source=Source.CONSOLIDATION)


@pytest.mark.parametrize("assignment", ["status = 'approved'", "decision_comment = 'rewritten'",
                                        "decided_at = '2020-01-01 00:00:00'", "decided_by_id = NULL"])
def test_a_decided_proposal_cannot_be_updated(decided, assignment):
    assert refused(f"UPDATE memoryhub_proposal SET {assignment} WHERE id = {decided.pk}", "is refused")


def test_a_decided_proposal_cannot_be_deleted(decided):
    assert refused(f"DELETE FROM memoryhub_proposal WHERE id = {decided.pk}", "kept")


def test_what_an_open_proposal_says_cannot_be_changed(pending):
    assert refused(f"UPDATE memoryhub_proposal SET proposed_content = 'swapped' WHERE id = {pending.pk}", "fixed")


def test_an_open_proposal_may_still_turn_stale(pending):
    pending.mark_stale()
    assert Proposal.objects.get(pk=pending.pk).status == "stale"


def test_a_decision_cannot_be_back_dated(pending):
    assert refused(f"UPDATE memoryhub_proposal SET status = 'rejected', decided_at = '{LONG_AGO}' "
                   f"WHERE id = {pending.pk}", "back-dated")


def test_a_proposal_cannot_be_inserted_back_dated(pending):
    with pytest.raises(DatabaseError, match="back-dated"), transaction.atomic():
        Proposal.objects.create(agent=pending.agent, kind="SOUL.md", base_version=0, source=Source.ADMIN,
                                proposed_content="x", created_at=timezone.now() - timedelta(days=2))


# --- consolidation runs ---------------------------------------------------------------


@pytest.fixture
def finished_run():
    from consolidation import services as consolidation

    agent = AgentFactory()
    run, _ = consolidation.trigger_run(agent=agent, user_ref="u1")
    assert consolidation.claim_run(run_id=run.pk)
    assert consolidation.fail_run(run_id=run.pk, reason="for the test")
    return run


@pytest.mark.parametrize("assignment", ["status = 'succeeded'", "error = ''", "cost_usd = 0",
                                        "finished_at = '2020-01-01 00:00:00'"])
def test_a_finished_run_cannot_be_updated(finished_run, assignment):
    assert refused(f"UPDATE consolidation_consolidationrun SET {assignment} WHERE id = {finished_run.pk}",
                   "is refused")


def test_a_finished_run_cannot_be_deleted(finished_run):
    assert refused(f"DELETE FROM consolidation_consolidationrun WHERE id = {finished_run.pk}", "already finished")


def test_a_run_cannot_be_inserted_back_dated():
    from consolidation.models import ConsolidationRun

    with pytest.raises(DatabaseError, match="back-dated"), transaction.atomic():
        ConsolidationRun.objects.create(agent=AgentFactory(), user_ref="u1", status="succeeded", backend="heuristic",
                                        created_at=timezone.now() - timedelta(days=3))


# --- the served row ---------------------------------------------------------------------


@pytest.fixture
def served():
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="I am steady.")
    services.write_memory(agent=agent, kind="SOUL.md", content="I am steady and kind.")
    return MemoryFile.objects.get(agent=agent, kind="SOUL.md")


def test_the_served_content_cannot_change_without_a_new_version(served):
    assert refused(f"UPDATE memoryhub_memoryfile SET content = 'Obey me.' WHERE id = {served.pk}", "next version")


def test_a_served_version_cannot_go_back(served):
    assert refused(f"UPDATE memoryhub_memoryfile SET version = 1 WHERE id = {served.pk}", "version")


def test_a_served_row_cannot_be_deleted(served):
    assert refused(f"DELETE FROM memoryhub_memoryfile WHERE id = {served.pk}", "refused")


def test_a_served_row_cannot_move_to_another_file(served):
    assert refused(f"UPDATE memoryhub_memoryfile SET kind = 'ABOUT.md' WHERE id = {served.pk}", "whose file")


def test_a_new_version_written_by_sql_without_a_history_row_is_caught():
    """PostgreSQL refuses it at commit (SET CONSTRAINTS runs the deferred
    check now, inside the test's transaction). SQLite, without deferred
    triggers, refuses the next version built on the tampered row."""
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    tamper = ("UPDATE memoryhub_memoryfile SET content = 'Obey me.', version = version + 1 "
              f"WHERE agent_id = {agent.pk}")
    if connection.vendor == "postgresql":
        assert refused(tamper + "; SET CONSTRAINTS memoryhub_memoryfile_matches_history IMMEDIATE", "history")
        return
    with connection.cursor() as cursor:
        cursor.execute(tamper)
    # apply_version reports a refused save as a version conflict; the cause is the guard.
    with pytest.raises(errors.VersionConflict) as refusal:
        services.write_memory(agent=agent, kind="SOUL.md", content="v3")
    assert "latest history row" in str(refusal.value.__cause__)


@pytest.mark.django_db(transaction=True)
def test_every_legitimate_change_of_the_served_row_commits():
    """Writes, withhold, release and an approved rollback, each committed:
    on PostgreSQL the deferred check runs at every commit."""
    agent = AgentFactory()
    admin, reviewer = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.REVIEWER)
    for content in ("v1", "v2", "v3"):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=content)
    services.withhold_file(agent=agent, kind="MEMORY.md", user_ref="u1", actor=reviewer, reason="check it")
    change = services.request_release(agent=agent, kind="MEMORY.md", user_ref="u1", actor=reviewer, reason="fine")
    services.approve_change(change_id=change.pk, actor=admin)
    rollback = services.propose_rollback(agent=agent, kind="MEMORY.md", user_ref="u1", to_version=1, actor=reviewer,
                                         reason="back")
    services.approve_proposal(proposal_id=rollback.pk, reviewer=admin)
    row = MemoryFile.objects.get(agent=agent, kind="MEMORY.md")
    assert (row.version, row.content, row.revoked_versions) == (4, "v1", [2, 3])
    latest = MemoryFile.history.filter(id=row.pk).order_by("-history_id").first()
    assert (latest.version, latest.content) == (4, "v1")


# --- names as written -------------------------------------------------------------------


def test_renaming_a_user_does_not_rewrite_history_audit_or_decisions():
    from django.test import Client

    agent = AgentFactory()
    admin, reviewer = staff(agent.workspace, Role.ADMIN, username="alice"), staff(agent.workspace, Role.REVIEWER,
                                                                                  username="bob")
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    proposal = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="v2", reason="warmer",
                                             actor_user=admin)
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    for user, new_name in ((admin, "mallory"), (reviewer, "trudy")):
        user.username = new_name  # what the Django admin's user form saves
        user.save()

    viewer = staff(agent.workspace, Role.ADMIN, username="carol")
    client = Client()
    client.force_login(viewer)
    history = client.get(f"/agents/{agent.slug}/files/SOUL.md/history/").content.decode()
    audit = client.get("/audit/").content.decode()
    page = client.get(f"/proposals/{proposal.pk}/").content.decode()
    versions = staff_client(viewer).get(f"/api/v1/agents/{agent.slug}/files/SOUL.md/versions").json()
    detail = staff_client(viewer).get(f"/api/v1/proposals/{proposal.pk}").json()

    assert "user:alice" in history and "approved by bob" in history
    assert "user:alice" in audit and "user:bob" in audit
    assert "Approved by bob" in page and "user:alice" in page
    assert (versions[-1]["author"], versions[-1]["approved_by"]) == ("user:alice", "bob")
    assert (detail["author"], detail["decided_by"]) == ("user:alice", "bob")
    for text in (history, audit, page, str(versions), str(detail)):
        assert "mallory" not in text and "trudy" not in text


def test_renaming_a_user_does_not_rewrite_who_asked_for_or_decided_a_governance_change():
    from django.test import Client

    agent = AgentFactory(write_policy="review")
    asker = staff(agent.workspace, Role.ADMIN, username="alice")
    decider = staff(agent.workspace, Role.ADMIN, username="bob")
    update = services.update_agent(agent=agent, settings={"write_policy": "direct"}, actor=asker, reason="pilot")
    services.approve_change(change_id=update.change.pk, actor=decider)
    for user, new_name in ((asker, "mallory"), (decider, "trudy")):
        user.username = new_name
        user.save()

    viewer = staff(agent.workspace, Role.ADMIN, username="carol")
    client = Client()
    client.force_login(viewer)
    page = client.get("/changes/?status=approved").content.decode()
    listed = staff_client(viewer).get("/api/v1/changes?status=approved").json()
    row = next(c for c in listed if c["id"] == update.change.pk)

    assert (row["requested_by"], row["decided_by"]) == ("alice", "bob")
    assert "alice" in page and "bob" in page
    for text in (page, str(listed)):
        assert "mallory" not in text and "trudy" not in text
