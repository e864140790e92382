from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection


def require_services() -> bool:
    """Under CI (MEMORYHUB_REQUIRE_SERVICES=1) a test that needs PostgreSQL
    or Redis must fail when the service is missing, never skip."""
    return bool(settings.MEMORYHUB_REQUIRE_SERVICES)


def needs_postgres() -> None:
    if connection.vendor != "postgresql":
        if require_services():
            pytest.fail("This test needs PostgreSQL: set DATABASE_URL to a PostgreSQL database.")
        pytest.skip("needs PostgreSQL (set DATABASE_URL); runs in CI")


@pytest.fixture(scope="session", autouse=True)
def _flush_around_append_only_triggers() -> Iterator[None]:
    """Transactional tests end with a flush (TRUNCATE on PostgreSQL, DELETE on
    SQLite) that the append-only triggers rightly refuse. Lift them for that
    flush alone: replica mode on PostgreSQL, drop-and-recreate on SQLite."""
    from memoryhub import immutability

    ops_class = type(connection.ops)
    original = ops_class.execute_sql_flush

    def execute_sql_flush(self, sql_list):  # type: ignore[no-untyped-def]
        conn = self.connection
        if conn.vendor == "postgresql":
            with conn.cursor() as cursor:
                cursor.execute("SET session_replication_role = replica")
            try:
                return original(self, sql_list)
            finally:
                _forget_seed_window(conn)
                with conn.cursor() as cursor:
                    cursor.execute("SET session_replication_role = origin")
        immutability.uninstall(conn)
        try:
            return original(self, sql_list)
        finally:
            _forget_seed_window(conn)
            immutability.install(conn)

    ops_class.execute_sql_flush = execute_sql_flush
    yield
    ops_class.execute_sql_flush = original


def _forget_seed_window(conn: Any) -> None:
    """Django's flush empties only its models' tables: the seeding window
    (memoryhub.immutability, not a model) is emptied with them, while its
    guard is lifted, so each test starts from an empty database."""
    from memoryhub import immutability

    with conn.cursor() as cursor:
        if immutability.SEED_WINDOW in conn.introspection.table_names(cursor):
            cursor.execute(f"DELETE FROM {immutability.SEED_WINDOW}")


@pytest.fixture
def agent() -> Any:
    """An agent in a workspace of its own (tests.factories.AgentFactory's
    defaults: write policy `direct`). Modules that need another agent define
    their own, and say how it differs."""
    from tests.factories import AgentFactory

    return AgentFactory()


@pytest.fixture
def reviewer(agent: Any) -> Any:
    """A reviewer of `agent`'s workspace."""
    from memoryhub.models import Role
    from tests.factories import staff

    return staff(agent.workspace, Role.REVIEWER)


@pytest.fixture
def admin(agent: Any) -> Any:
    """An admin of `agent`'s workspace."""
    from memoryhub.models import Role
    from tests.factories import staff

    return staff(agent.workspace, Role.ADMIN)


@pytest.fixture
def key(agent: Any) -> str:
    """A fresh API key of `agent` (whichever `agent` the module uses), as
    the agent would send it."""
    from memoryhub import services

    return services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]


@pytest.fixture
def fast_passwords(settings: Any) -> None:
    """MD5 for password hashing: modules that create many staff users (the
    parity worlds, the demo's users, dozens of sign-ins) would otherwise pay
    PBKDF2's rounds for each. Use with pytest.mark.usefixtures."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    """Row ids repeat across rolled-back SQLite tests, so cached contexts and
    throttle counters keyed by them must not outlive a test. Only the local
    cache is cleared: a Redis cache shares its database with the broker,
    and PostgreSQL never reuses ids."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()
    yield


@pytest.fixture
def scratch_queue(settings: Any) -> Iterator[str]:
    """Transactional tests really dispatch consolidation runs: send them to a
    queue nobody serves, then empty it, so no worker sees these messages."""
    from memoryhub.celery import app as celery_app

    queue = f"test-scratch-{uuid.uuid4().hex[:8]}"
    settings.MEMORYHUB_CONSOLIDATION_QUEUE = queue
    yield queue
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)


os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """A fake OpenAI-compatible endpoint on 127.0.0.1; see tests/openai_server.py."""
    from tests.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server
