"""Erasure leaves nothing (issue 17, items 1-4): a marker and an end user's
reference are written through every way in — agent REST writes and
entries, sessions and their logs (with Idempotency-Keys), MCP tools over
HTTP, proposals under review, consolidation, console edits and decisions,
withhold and release, rollback, refused requests (another tenant's
export, a reviewer's erasure, unsafe content, a failed sign-in) — then two
admins erase the user, and every table's text is searched: PostgreSQL
through `pg_dump --data-only` of the test database, SQLite in its file and
WAL (read by a child process, see test_erasure._db_bytes), the staff
sessions decoded, and every Redis key and value when REDIS_URL is set.
Zero hits for either."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client

from consolidation import services as consolidation
from memoryhub import services
from memoryhub.models import EntryVector, LogEntry, Proposal, Role, Source, Strategy, WritePolicy
from memoryhub.search.tasks import embed_scope_task
from notifications.models import EVENTS, Webhook
from tests.api_helpers import agent_client, staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.live import asgi_server
from tests.memoryhub.test_erasure import _db_bytes
from tests.memoryhub.test_mcp import over_http, text_of

pytestmark = pytest.mark.django_db(transaction=True)


def _database_text() -> bytes:
    """Every row of every table, as the database holds it now."""
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
        return subprocess.run(
            ["pg_dump", "--data-only", "--no-owner", "-h", db.get("HOST") or "127.0.0.1", "-p",
             str(db.get("PORT") or 5432), "-U", db.get("USER") or "postgres", db["NAME"]],
            capture_output=True, check=True, timeout=120, env=env).stdout
    return _db_bytes()


def _sessions_text() -> bytes:
    """Staff sessions are stored encoded: decode them."""
    return json.dumps([s.get_decoded() for s in Session.objects.all()], default=str).encode()


def _redis_text() -> bytes:
    """Every key and value of the cache's Redis database (cached contexts,
    throttle counters, broker messages with their base64 bodies decoded)."""
    if not settings.REDIS_URL:
        return b""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    found = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        values: list[bytes] = []
        if kind == "string":
            values = [client.get(key) or b""]
        elif kind == "list":
            values = list(client.lrange(key, 0, -1))
        elif kind == "hash":
            values = [b for pair in client.hgetall(key).items() for b in pair]
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "zset":
            values = list(client.zrange(key, 0, -1))
        found.append(key)
        for value in values:
            found.append(value)
            found += _decoded_bodies(value)
    return b"\n".join(found)


def _decoded_bodies(value: bytes) -> list[bytes]:
    try:
        message = json.loads(value)
    except ValueError:
        return []
    if isinstance(message, list) and message:  # kombu's unacked entries: [message, exchange, routing key]
        message = message[0]
        if isinstance(message, str):
            return _decoded_bodies(message.encode())
    if isinstance(message, dict) and isinstance(message.get("body"), str):
        try:
            return [base64.b64decode(message["body"])]
        except ValueError:
            return []
    return []


def _rows_holding(*needles: str) -> list[str]:
    """Where the needles still are, table by table (for the failure message)."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                text = " ".join(str(value) for value in row).lower()
                if any(needle.lower() in text for needle in needles):
                    found.append(f"{table}: {text[:300]}")
    return found


def _hits(text: bytes, *needles: str) -> dict[str, int]:
    low = text.lower()
    return {needle: low.count(needle.lower().encode()) for needle in needles}


def _console(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_marker_and_the_reference_are_found_nowhere_after_an_erasure(scratch_queue, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    marker = "Qzv" + uuid.uuid4().hex[:10] + "mark"
    ref = "subj-" + uuid.uuid4().hex[:8]
    # `full` injects USER.md and MEMORY.md: the cached context holds their text.
    direct = AgentFactory(write_policy=WritePolicy.DIRECT, strategy=Strategy.FULL)
    workspace = direct.workspace
    review = AgentFactory(workspace=workspace, write_policy=WritePolicy.REVIEW)
    admin, admin2 = staff(workspace, Role.ADMIN), staff(workspace, Role.ADMIN)
    reviewer, reviewer2 = staff(workspace, Role.REVIEWER), staff(workspace, Role.REVIEWER)
    Webhook.objects.create(workspace=workspace, url="http://127.0.0.1:9/hook", events=list(EVENTS), secret="s")
    api, review_api = agent_client(direct), agent_client(review)
    files = f"?user={ref}"

    # Agent REST: whole-file writes and entries.
    assert api.put(f"/api/v1/memory/USER.md{files}", {"content": f"- {marker} likes tea",
                                                      "reason": f"{marker} told us"}, format="json").status_code == 200
    entries = f"/api/v1/memory/MEMORY.md/entries{files}"
    assert api.post(entries, {"text": f"- {marker} rides a bike", "reason": f"{marker} entry"},
                    format="json").status_code == 200
    assert api.patch(entries, {"old_text": f"{marker} rides", "new_text": f"- {marker} rides a red bike",
                               "reason": f"{marker} replaced"}, format="json").status_code == 200
    assert api.post(entries, {"text": f"- {marker} second"}, format="json").status_code == 200
    assert api.delete(entries, {"old_text": f"{marker} second", "reason": f"{marker} removed"},
                      format="json").status_code == 200
    # Sessions and logs, retried with Idempotency-Keys (their answers are stored).
    started = api.post("/api/v1/sessions", {"user": ref, "external_id": f"ext-{marker}"}, format="json",
                       HTTP_IDEMPOTENCY_KEY=f"start-{ref}")
    assert started.status_code == 201, started.content
    session = started.json()["id"]
    logged = api.post(f"/api/v1/sessions/{session}/log",
                      {"entries": [{"role": "user", "content": f"I am {ref}, call me {marker}"},
                                   {"role": "assistant", "content": f"Noted, {marker}."}]},
                      format="json", HTTP_IDEMPOTENCY_KEY=f"log-{marker}")
    assert logged.status_code == 201
    assert api.get("/api/v1/context", {"user": ref, "session": session}).status_code == 200
    assert api.get("/api/v1/context", {"user": ref}).status_code == 200
    assert api.get("/api/v1/memory/search", {"q": marker, "user": ref}).json()["results"]
    assert api.post(f"/api/v1/sessions/{session}/end").status_code == 200
    # Under review: a proposal.
    assert review_api.put(f"/api/v1/memory/USER.md{files}", {"content": f"- {marker} via review",
                                                             "reason": f"{marker} review"},
                          format="json").status_code == 202
    # MCP tools over HTTP, as an agent's client calls them.
    direct_key = services.issue_agent_key(agent=direct, actor=services.SYSTEM)[1]
    review_key = services.issue_agent_key(agent=review, actor=services.SYSTEM)[1]
    with asgi_server() as url:
        added, seen, _ = over_http(url, direct_key,
                                   ("memory_add", {"file": "MEMORY.md", "text": f"- {marker} via mcp", "user": ref,
                                                   "reason": f"{marker} mcp"}),
                                   ("memory_search", {"query": marker, "user": ref}),
                                   ("memory_view", {"file": "MEMORY.md", "user": ref}))
        over_http(url, review_key, ("memory_add", {"file": "MEMORY.md", "text": f"- {marker} mcp review",
                                                   "user": ref, "reason": f"{marker} mcp review"}))
    assert not added.is_error and marker in text_of(seen)
    # Dreaming: a consolidation proposal citing the log, and a run still queued.
    entry = LogEntry.objects.filter(session_id=session).order_by("id").first()
    dreamt = services.propose_change(agent=direct, kind="MEMORY.md", user_ref=ref, source=Source.CONSOLIDATION,
                                     content=f"- {marker} rides a red bike\n- {marker} via mcp\n- {marker} dreamt",
                                     rationale=[{"kind": "add", "summary": f"{marker} dreamt",
                                                 "reason": f"{marker} said so", "evidence": [entry.pk]}])
    consolidation.trigger_run(agent=direct, user_ref=ref)

    # The console: an edit, decisions with comments, withhold, release.
    pending = Proposal.objects.get(agent=review, kind="USER.md", status="pending")
    edited = _console(reviewer).post(f"/proposals/{pending.pk}/", {
        "action": "edit", "content": f"- {marker} edited", "comment": f"{marker} edit comment"})
    assert edited.status_code == 302
    revision = Proposal.objects.get(revises=pending)
    assert _console(reviewer2).post(f"/proposals/{revision.pk}/", {
        "action": "approve", "comment": f"{marker} approved"}).status_code == 302
    assert _console(reviewer).post(f"/proposals/{dreamt.pk}/", {
        "action": "reject", "comment": f"{marker} rejected"}).status_code == 302
    history = f"/agents/{direct.slug}/files/USER.md/history/{files}"
    assert _console(reviewer).post(history, {"action": "withhold", "reason": f"{marker} withheld"}).status_code == 302
    assert _console(reviewer).post(history, {"action": "release", "reason": f"{marker} release"}).status_code == 302
    rollback = staff_client(reviewer2).post(f"/api/v1/agents/{direct.slug}/files/MEMORY.md/rollback{files}",
                                            {"version": 1, "reason": f"{marker} rollback"}, format="json")
    assert rollback.status_code == 202
    assert _console(admin).get(history).status_code == 200

    # Refused requests.
    outsider = staff(WorkspaceFactory(), Role.ADMIN)
    assert staff_client(outsider).get(f"/api/v1/subjects/{ref}/export?workspace={workspace.slug}").status_code == 404
    assert staff_client(reviewer).post(f"/api/v1/subjects/{ref}/erasure", {"reason": f"{marker} please"},
                                       format="json").status_code == 403
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    assert api.put(f"/api/v1/memory/MEMORY.md{files}", {"content": f"{marker} key {secret}"},
                   format="json").status_code == 422
    Client().post(f"/login/?next={history}", {"username": ref, "password": "not-the-password"})
    export = staff_client(admin).get(f"/api/v1/subjects/{ref}/export")
    assert marker in b"".join(export.streaming_content).decode()

    # The semantic index: the worker's task embeds the pair's texts.
    assert embed_scope_task.apply(args=(direct.pk, "log", entry.pk)).get() > 0
    vectors = set(EntryVector.objects.filter(agent=direct, user_ref=ref).values_list("content_hash", flat=True))
    assert vectors

    # The search finds them while they are there (the cached context in Redis too).
    before = _hits(_database_text(), marker, ref)
    assert before[marker] > 0 and before[ref] > 0, before
    if settings.REDIS_URL:
        assert all(_hits(_redis_text(), marker, ref).values())

    requested = staff_client(admin).post(f"/api/v1/subjects/{ref}/erasure",
                                         {"reason": f"Ticket from {ref}"}, format="json")
    assert requested.status_code == 202, requested.content
    assert requested.json()["would_erase"]["log_entries"] == 2
    change = requested.json()["change"]
    approved = _console(admin2).post("/changes/", {"change": change, "action": "approve",
                                                   "comment": f"Checked with {ref}"})
    assert approved.status_code == 302

    left = {
        "database": _hits(_database_text(), marker, ref),
        "sessions": _hits(_sessions_text(), marker, ref),
        "redis": _hits(_redis_text(), marker, ref),
    }
    assert left == {where: {marker: 0, ref: 0} for where in left}, (left, _rows_holding(marker, ref))
    # Vectors are bytes no text search sees: none of the subject's is left, under any reference.
    assert not EntryVector.objects.filter(content_hash__in=vectors).exists()
    assert not EntryVector.objects.filter(user_ref=ref).exists()
