"""The app's database role cannot lift the guards: it owns no table, so
disabling or dropping a trigger and replica mode are refused, and it has no
UPDATE or DELETE on the append-only tables. Everything the app does still
works as that role. (The test suite itself runs as the owner.)"""

from __future__ import annotations

import os

import pytest
from django.db import DatabaseError, connection, transaction

from memoryhub import db_roles, services
from memoryhub.models import AuditEvent, MemoryFile, Role, Source
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_app_role():
    """A fresh role granted as DATABASE_APP_ROLE would be, in effect for the
    rest of the test's transaction (rolled back with the role itself)."""
    needs_postgres()
    role = f"mh_app_test_{os.getpid()}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")
    db_roles.grant(connection, role)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {role}")
        cursor.execute("SELECT current_user")
        assert cursor.fetchone() == (role,)
    return role


def refused(sql: str) -> str:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    except DatabaseError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize("sql", [
    "ALTER TABLE memoryhub_auditevent DISABLE TRIGGER ALL",
    "ALTER TABLE memoryhub_memoryfile DISABLE TRIGGER memoryhub_memoryfile_matches_history",
    "DROP TRIGGER memoryhub_historicalmemoryfile_guard ON memoryhub_historicalmemoryfile",
    "DROP FUNCTION memoryhub_guard_memoryhub_proposal() CASCADE",
    "SET session_replication_role = replica",
    "TRUNCATE memoryhub_logentry",
])
def test_the_app_role_cannot_switch_the_guards_off(as_app_role, sql):
    problem = refused(sql)
    assert "must be owner" in problem or "permission denied" in problem


@pytest.mark.parametrize("sql", [
    "UPDATE memoryhub_auditevent SET summary = 'rewritten'",
    "DELETE FROM memoryhub_historicalmemoryfile",
    "UPDATE memoryhub_logentry SET content = 'rewritten'",
    "DELETE FROM memoryhub_memoryfile",
    "DELETE FROM memoryhub_proposal",
])
def test_the_app_role_has_no_update_or_delete_where_history_lives(as_app_role, sql):
    assert "permission denied" in refused(sql)


def test_everything_the_app_does_works_as_the_app_role(as_app_role):
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    proposal = services.propose_change(agent=agent, kind="SOUL.md", content="v2", source=Source.CONSOLIDATION)
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    services.withhold_file(agent=agent, kind="SOUL.md", actor=reviewer, reason="check")
    session = services.start_session(agent=agent, user_ref="u1")
    services.append_log(session=session, entries=[{"role": "user", "content": "hi"}])
    services.end_session(session=session)
    assert MemoryFile.objects.get(agent=agent).version == 2
    assert AuditEvent.objects.filter(action="proposal.approve").exists()


@pytest.fixture
def _fast_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_seed_demo_as_the_app_role_says_it_may_not_open_the_window_and_seeds_nothing(as_app_role, _fast_hashing):
    from django.core.management import CommandError, call_command

    from memoryhub import immutability
    from memoryhub.models import Workspace

    assert immutability.database_is_empty(connection)
    with pytest.raises(CommandError) as caught:
        call_command("seed_demo")
    message = str(caught.value)
    assert f"the database role '{as_app_role}' may not open the seeding window" in message
    assert "already held data" not in message
    assert "Nothing was seeded" in message and "--no-history" in message
    # Still empty, so the owner can seed the history afterwards.
    assert immutability.database_is_empty(connection)
    assert not Workspace.objects.filter(slug="demo").exists()
    assert immutability.seed_window(connection) is None


def test_seed_demo_no_history_seeds_the_demo_as_the_app_role(as_app_role, _fast_hashing):
    from io import StringIO

    from django.core.management import call_command

    from memoryhub import immutability
    from memoryhub.models import Proposal, Workspace

    out = StringIO()
    call_command("seed_demo", "--no-history", stdout=out)
    assert Workspace.objects.filter(slug="demo").exists() and Proposal.objects.exists()
    assert immutability.seed_window(connection) is None
    assert "already held data" not in out.getvalue()
