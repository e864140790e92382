"""Faults of the platform: a database that is down or hanging costs a
request a 503 `unavailable` with Retry-After (JSON on the API, a plain page
in the console), never a 500 or a hang; /healthz stays up, /readyz says 503."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection, connections
from django.test import Client

from memoryhub import services
from memoryhub.models import MemoryFile, Role
from tests.api_helpers import agent_client, error_code
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff


@contextmanager
def database_down() -> Iterator[None]:
    """Point the default connection at a database that is not there: a
    closed port on PostgreSQL, a file in a missing folder on SQLite."""
    conn = connections["default"]
    saved = dict(conn.settings_dict)
    conn.close()
    if conn.vendor == "postgresql":
        conn.settings_dict.update(HOST="127.0.0.1", PORT="1")
    else:
        conn.settings_dict["NAME"] = "/nonexistent-memoryhub-dir/db.sqlite3"
    try:
        yield
    finally:
        conn.close()
        conn.settings_dict.clear()
        conn.settings_dict.update(saved)


@pytest.mark.django_db(transaction=True)
def test_an_api_request_gets_a_json_503_while_the_database_is_down():
    client = agent_client(AgentFactory())
    with database_down():
        response = client.get("/api/v1/context?user=u1")
    assert response.status_code == 503 and error_code(response) == "unavailable"
    assert response["Retry-After"] == "5" and response.json()["error"]["retry_after"] == 5


@pytest.mark.django_db(transaction=True)
def test_an_anonymous_api_request_gets_a_json_503_too():
    with database_down():
        response = Client().post("/api/v1/sessions", {"user": "u1"}, content_type="application/json",
                                 HTTP_AUTHORIZATION="Bearer mh_whatever_secret")
    assert response.status_code == 503 and error_code(response) == "unavailable"


@pytest.mark.django_db(transaction=True)
def test_the_console_gets_a_plain_503_page_while_the_database_is_down():
    agent = AgentFactory()
    # As a browser sees it: the test client would re-raise the error instead.
    client = Client(raise_request_exception=False)
    client.force_login(staff(agent.workspace, Role.REVIEWER))
    with database_down():
        response = client.get("/")
    assert response.status_code == 503 and response["Content-Type"].startswith("text/plain")
    assert b"unavailable" in response.content and response["Retry-After"]


@pytest.mark.django_db(transaction=True)
def test_healthz_is_liveness_and_readyz_fails_while_the_database_is_down():
    with database_down():
        live = Client().get("/healthz")
        ready = Client().get("/readyz")
    assert live.status_code == 200 and live.content == b"ok"
    assert ready.status_code == 503 and ready.json()["checks"]["database"].startswith("down")
    assert ready["Retry-After"]


@pytest.mark.django_db
def test_readyz_is_ready_when_database_and_broker_answer():
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok", "cache": "ok"}


@pytest.mark.django_db
def test_readyz_fails_while_the_broker_is_down(settings):
    from memoryhub.celery import app

    saved = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = Client().get("/readyz")
    finally:
        app.conf.broker_url = saved
    assert response.status_code == 503 and response.json()["checks"]["broker"].startswith("down")


@pytest.mark.django_db
def test_readyz_reports_a_cache_outage_without_failing(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0",
                                   "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["status"] == "degraded" and response.json()["checks"]["cache"].startswith("down")


@pytest.mark.django_db(transaction=True)
def test_connections_carry_the_statement_lock_and_connect_timeouts():
    needs_postgres()
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        statement = cursor.fetchone()[0]
        cursor.execute("SHOW lock_timeout")
        lock = cursor.fetchone()[0]
    assert (statement, lock) == ("10s", "5s")
    assert connection.settings_dict["OPTIONS"]["connect_timeout"] == 5


@pytest.mark.django_db(transaction=True)
def test_a_write_stuck_behind_a_lock_hits_the_timeout_and_answers_503():
    needs_postgres()
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    client = agent_client(agent)
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT id FROM memoryhub_memoryfile WHERE agent_id = %s FOR UPDATE", [agent.pk])
                locked.set()
                release.wait(30)
                cursor.execute("ROLLBACK")
        finally:
            other.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:  # what a hung database looks like, in half a second
            cursor.execute("SET statement_timeout = 500")
            cursor.execute("SET lock_timeout = 0")
        response = client.put("/api/v1/memory/SOUL.md", {"content": "v2"}, format="json")
    finally:
        release.set()
        holder.join(30)
        connection.close()
    assert response.status_code == 503 and error_code(response) == "unavailable"
    assert MemoryFile.objects.get(agent=agent).content == "v1"


@pytest.mark.django_db
def test_a_write_during_a_cache_outage_is_seen_by_every_node_after_it(settings):
    """Node A cached the context; node B writes while its cache is down (so
    no invalidation could reach the cache). Node A, its cache healthy, must
    still serve the new version: the key comes from the rows read."""
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="I am v1.")
    client = agent_client(agent)
    before = client.get("/api/v1/context?user=u1").json()
    assert "I am v1." in before["system_prompt"]

    healthy = settings.CACHES
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0",
                                   "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    written = client.put("/api/v1/memory/SOUL.md", {"content": "I am v2."}, format="json")
    during = client.get("/api/v1/context?user=u1")
    settings.CACHES = healthy

    after = client.get("/api/v1/context?user=u1").json()
    assert written.status_code == 200 and during.status_code == 200
    assert "I am v2." in after["system_prompt"] and after["etag"] != before["etag"]
