"""Subject erasure, four-eyes: one admin requests it, another approves it,
and every trace of the end user is gone from the API, the console, the
exports and the database file."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from consolidation import services as consolidation
from memoryhub import errors, services
from memoryhub.models import (
    AgentSession,
    AuditEvent,
    Change,
    ChangeStatus,
    ErasureRecord,
    LogEntry,
    MemoryFile,
    Proposal,
    Role,
    Source,
    WritePolicy,
)
from tests.api_helpers import agent_client, error_code, staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


def _traces(agent, user_ref, marker):
    """Several versions of USER.md and MEMORY.md, a proposal citing a log
    entry as evidence, a session log, an open session."""
    services.write_memory(agent=agent, kind="USER.md", user_ref=user_ref, content=f"- {marker} one")
    services.write_memory(agent=agent, kind="USER.md", user_ref=user_ref, content=f"- {marker} two")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user_ref, content=f"- {marker} memory")
    session = services.start_session(agent=agent, user_ref=user_ref)
    services.append_log(session=session, entries=[{"role": "user", "content": f"I am {marker} and I said hello"},
                                                  {"role": "assistant", "content": f"hello {marker}"}])
    entry = LogEntry.objects.filter(session=session).order_by("id").first()
    services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user_ref,
                            content=f"- {marker} memory\n- {marker} proposed", source=Source.CONSOLIDATION,
                            rationale=[{"kind": "add", "summary": f"{marker} proposed", "reason": f"{marker} said",
                                        "evidence": [entry.pk]}])
    services.start_session(agent=agent, user_ref=user_ref)  # left open: erasure ends it
    consolidation.trigger_run(agent=agent, user_ref=user_ref)
    return session


@pytest.fixture
def world():
    agent = AgentFactory(write_policy=WritePolicy.DIRECT)
    workspace = agent.workspace
    return {
        "agent": agent,
        "second": AgentFactory(workspace=workspace, write_policy=WritePolicy.DIRECT),
        "admin": staff(workspace, Role.ADMIN),
        "admin2": staff(workspace, Role.ADMIN),
        "reviewer": staff(workspace, Role.REVIEWER),
        "auditor": staff(workspace, Role.AUDITOR),
    }


def _erase(world, user_ref, reason="Subject access request #4411 asked for erasure"):
    change = services.request_erasure(actor=world["admin"], user_ref=user_ref, reason=reason)
    return services.approve_change(change_id=change.pk, actor=world["admin2"])


def test_it_erases_every_version_log_entry_and_proposal_of_the_user(world):
    agent, second = world["agent"], world["second"]
    _traces(agent, "alice", "MARKALICE")
    _traces(second, "alice", "MARKALICE")
    _traces(agent, "bob", "MARKBOB")

    change = _erase(world, "alice")

    assert change.status == ChangeStatus.APPROVED
    assert change.result["erased"] == {"files": 4, "versions": 10, "log_entries": 4, "proposals": 2}
    everything = json.dumps([
        list(MemoryFile.objects.values_list("content", "user_ref")),
        list(MemoryFile.history.values_list("content", "user_ref")),
        list(LogEntry.objects.values_list("content", "user_ref")),
        list(Proposal.objects.values_list("base_content", "proposed_content", "diff", "rationale", "user_ref")),
        list(AuditEvent.objects.values_list("summary", "details", "user_ref")),
        list(AgentSession.objects.values_list("user_ref", "context", "parts")),
        list(Change.objects.values_list("summary", "user_ref", "payload")),
    ])
    assert "MARKALICE" not in everything and "alice" not in everything
    assert "MARKBOB" in everything  # another user of the same agents is untouched
    # Numbers and authors stay; the text and the reasons are tombstones.
    rows = MemoryFile.history.filter(agent=agent, kind="USER.md").order_by("history_id")
    assert [r.version for r in rows if r.redacted_at] == [1, 2, 3]
    tombstone = f"[REDACTED {change.decided_at:%Y-%m-%d} by change #{change.pk}]"
    assert rows.first().content == tombstone
    assert rows.last().content == "" and rows.last().history_change_reason == tombstone


def test_it_ends_sessions_withdraws_open_proposals_and_keeps_evidence_ids(world):
    agent = world["agent"]
    _traces(agent, "alice", "MARKALICE")
    cited = list(Proposal.objects.get(agent=agent, user_ref="alice").rationale[0]["evidence"])

    change = _erase(world, "alice")

    alias = change.user_ref
    assert alias.startswith("erased:") and len(alias) == 39
    assert not AgentSession.objects.filter(user_ref=alias, ended_at__isnull=True).exists()
    proposal = Proposal.objects.get(agent=agent, user_ref=alias)
    assert proposal.status == "withdrawn" and proposal.redacted_by == f"change #{change.pk}"
    assert proposal.rationale[0]["evidence"] == cited and proposal.pii == []


def test_the_record_names_the_subject_by_a_salted_hash(world, settings):
    _traces(world["agent"], "alice", "MARKALICE")
    change = _erase(world, "alice")

    record = ErasureRecord.objects.get(change=change)
    assert record.subject_hash == services.subject_hash(workspace=world["agent"].workspace, user_ref="alice")
    assert record.requested_by == world["admin"] and record.approved_by == world["admin2"]
    assert record.counts["versions"] == 5 and record.counts["log_entries"] == 2
    event = AuditEvent.objects.get(action="subject.erase")
    assert "alice" not in json.dumps([event.summary, event.details, event.user_ref])
    # The hash depends on SECRET_KEY: without it, nobody can test a guess.
    settings.SECRET_KEY = "another-" + "k" * 50
    assert services.subject_hash(workspace=world["agent"].workspace, user_ref="alice") != record.subject_hash


def test_the_requester_cannot_approve_their_own_erasure(world):
    _traces(world["agent"], "alice", "MARKALICE")
    change = services.request_erasure(actor=world["admin"], user_ref="alice", reason="Asked by the customer")
    with pytest.raises(errors.FourEyes):
        services.approve_change(change_id=change.pk, actor=world["admin"])
    assert MemoryFile.objects.get(agent=world["agent"], kind="USER.md").content == "- MARKALICE two"


@pytest.mark.parametrize("role", ["reviewer", "auditor"])
def test_only_admins_request_or_approve_an_erasure(world, role):
    with pytest.raises(errors.PermissionDenied):
        services.request_erasure(actor=world[role], user_ref="alice", reason="Asked by the customer")
    change = services.request_erasure(actor=world["admin"], user_ref="alice", reason="Asked by the customer")
    with pytest.raises(errors.PermissionDenied):
        services.approve_change(change_id=change.pk, actor=world[role])


def test_the_request_and_its_audit_event_do_not_name_the_user_in_clear(world):
    services.write_memory(agent=world["agent"], kind="USER.md", user_ref="alice", content="- likes tea")
    change = services.request_erasure(actor=world["admin"], user_ref="alice", reason="Asked by the customer")
    event = AuditEvent.objects.get(action="change.request", target_id=str(change.pk))
    assert "alice" not in json.dumps([event.summary, event.details, event.user_ref])
    assert "alice" not in change.summary
    with pytest.raises(errors.Invalid):  # one pending erasure per subject
        services.request_erasure(actor=world["admin2"], user_ref="alice", reason="Again")


def test_a_rejected_erasure_erases_nothing(world):
    _traces(world["agent"], "alice", "MARKALICE")
    change = services.request_erasure(actor=world["admin"], user_ref="alice", reason="Asked by the customer")
    services.reject_change(change_id=change.pk, actor=world["admin2"], comment="Legal hold")
    assert MemoryFile.objects.get(agent=world["agent"], kind="USER.md").content == "- MARKALICE two"
    assert not ErasureRecord.objects.exists()


# --- the REST API ------------------------------------------------------------------------------


def test_it_erases_through_the_api_with_two_admins(world):
    _traces(world["agent"], "alice@example.com", "MARKALICE")
    requested = staff_client(world["admin"]).post("/api/v1/subjects/alice@example.com/erasure",
                                                  {"reason": "Customer asked"}, format="json")
    assert requested.status_code == 202, requested.content
    change = requested.json()["change"]
    own = staff_client(world["admin"]).post(f"/api/v1/changes/{change}/approve", {}, format="json")
    assert own.status_code == 403 and error_code(own) == "four_eyes"
    approved = staff_client(world["admin2"]).post(f"/api/v1/changes/{change}/approve", {}, format="json")
    assert approved.status_code == 200, approved.content
    assert approved.json()["erased"] == {"files": 2, "versions": 5, "log_entries": 2, "proposals": 1}
    assert "alice" not in approved.content.decode()


def test_the_api_refuses_a_reviewer_with_403_and_another_workspace_with_404(world):
    reviewer = staff_client(world["reviewer"]).post("/api/v1/subjects/alice/erasure", {"reason": "x"},
                                                    format="json")
    assert reviewer.status_code == 403
    outsider = staff(WorkspaceFactory(), Role.ADMIN)
    other = staff_client(outsider).post(f"/api/v1/subjects/alice/erasure?workspace={world['agent'].workspace.slug}",
                                        {"reason": "x"}, format="json")
    assert other.status_code == 404
    missing = staff_client(world["admin"]).post("/api/v1/subjects/alice/erasure", {}, format="json")
    assert missing.status_code == 400
    assert not Change.objects.exists()


# --- the marker, nowhere ------------------------------------------------------------------------


def _db_bytes() -> bytes:
    """The SQLite file and its WAL, read by a child process. Closing any file
    descriptor on the database drops every POSIX lock this process holds on
    it, SQLite's shared lock included (sqlite.org/howtocorrupt.html, 2.2);
    another process closing its connection would then think itself the last
    one and delete the WAL and shared memory under our open connections."""
    name = Path(connection.settings_dict["NAME"])
    read = ("import pathlib, sys; db = pathlib.Path(sys.argv[1]); wal = pathlib.Path(sys.argv[1] + '-wal'); "
            "sys.stdout.buffer.write(db.read_bytes() + (wal.read_bytes() if wal.exists() else b''))")
    return subprocess.run([sys.executable, "-c", read, str(name)], capture_output=True, check=True,
                          timeout=60).stdout


@pytest.mark.django_db(transaction=True)
def test_the_marker_is_found_nowhere_after_an_erasure(world, scratch_queue):
    marker = "Qzv" + uuid.uuid4().hex[:10] + "marker"
    agent, second = world["agent"], world["second"]
    user = "cust-" + uuid.uuid4().hex[:6]
    _traces(agent, user, marker)
    _traces(second, user, marker)
    agent_api = agent_client(agent)
    found = agent_api.get("/api/v1/memory/search", {"q": marker, "user": user}).json()
    assert found["results"], found  # searchable before
    assert agent_api.get("/api/v1/context", {"user": user}).status_code == 200  # cached
    if connection.vendor == "sqlite":
        assert _db_bytes().lower().count(marker.lower().encode()) > 0

    admin_api = staff_client(world["admin"])
    change = admin_api.post(f"/api/v1/subjects/{user}/erasure", {"reason": "Customer asked"}, format="json").json()
    approved = staff_client(world["admin2"]).post(f"/api/v1/changes/{change['change']}/approve", {}, format="json")
    assert approved.status_code == 200, approved.content

    alias = approved.json()["user"]
    assert alias.startswith("erased:")
    seen: list[str] = []
    # The agent API, under the old reference and the pseudonym: files,
    # context, search, each log entry by id.
    for ref in (user, alias):
        for kind in ("USER.md", "MEMORY.md"):
            seen.append(agent_api.get(f"/api/v1/memory/{kind}", {"user": ref}).content.decode())
        seen.append(agent_api.get("/api/v1/context", {"user": ref}).content.decode())
        seen.append(agent_api.get("/api/v1/memory/search", {"q": marker, "user": ref}).content.decode())
        for entry in LogEntry.objects.filter(agent=agent).values_list("id", flat=True):
            seen.append(agent_api.get(f"/api/v1/memory/search/{entry}", {"user": ref}).content.decode())
        # The staff API: every version of each file.
        for kind in ("USER.md", "MEMORY.md"):
            seen.append(admin_api.get(f"/api/v1/agents/{agent.slug}/files/{kind}/versions", {"user": ref})
                        .content.decode())
    seen.append(admin_api.get("/api/v1/changes").content.decode())
    # Exports: the subject export and the audit CSV.
    export = admin_api.get(f"/api/v1/subjects/{user}/export")
    seen.append(b"".join(export.streaming_content).decode())
    console = Client()
    console.force_login(world["admin"])
    audit_csv = console.get("/audit/", {"format": "csv"})
    seen.append(b"".join(audit_csv.streaming_content).decode() if audit_csv.streaming else audit_csv.content.decode())
    # Console pages: the queue, proposals, sessions, history, audit, compliance.
    pages = ["/", "/changes/", "/audit/", "/compliance/", "/direct-writes/",
             *(f"/proposals/{pk}/" for pk in Proposal.objects.values_list("pk", flat=True)),
             *(f"/sessions/{pk}/" for pk in AgentSession.objects.values_list("pk", flat=True)),
             *(f"/agents/{a.slug}/files/{k}/history/?user={alias}" for a in (agent, second)
               for k in ("USER.md", "MEMORY.md"))]
    for url in pages:
        response = console.get(url)
        assert response.status_code == 200, url
        seen.append(response.content.decode())

    text = "\n".join(seen)
    assert marker not in text and marker.lower() not in text.lower()
    if connection.vendor == "sqlite":
        left = _db_bytes().lower().count(marker.lower().encode())
        assert left == 0, f"the marker is still {left} times in the database file or its WAL"


def test_the_erasure_record_is_append_only(world):
    _traces(world["agent"], "alice", "MARKALICE")
    record = ErasureRecord.objects.get(change=_erase(world, "alice"))
    for sql in (f"UPDATE memoryhub_erasurerecord SET counts = '{{}}' WHERE id = {record.pk}",
                f"DELETE FROM memoryhub_erasurerecord WHERE id = {record.pk}"):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)


def test_cached_contexts_and_replayable_answers_of_the_user_are_dropped(world, django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    from memoryhub import context
    from memoryhub.models import IdempotencyRecord

    agent = world["agent"]
    _traces(agent, "alice", "MARKALICE")
    context.cached_context(agent=agent, user_ref="alice")
    key = context.cache_key(agent=agent, user_ref="alice", files=context.load_rows(agent=agent, user_ref="alice"))
    assert "alice" in json.dumps(cache.get(key))  # the cached context names its user
    IdempotencyRecord.objects.create(principal=f"agent:{agent.pk}", key="k1", request_hash="h", status_code=201,
                                     body={"user": "alice", "context": "MARKALICE"},
                                     expires_at=timezone.now() + timedelta(hours=1))
    IdempotencyRecord.objects.create(principal=f"agent:{agent.pk}", key="k2", request_hash="h", status_code=201,
                                     body={"user": "bob"}, expires_at=timezone.now() + timedelta(hours=1))

    with django_capture_on_commit_callbacks(execute=True):
        change = _erase(world, "alice")

    assert cache.get(key) is None
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["k2"]
    assert change.result["counts"]["cached_answers"] == 1


def test_a_user_who_comes_back_can_be_erased_again(world):
    _traces(world["agent"], "alice", "MARKALICE")
    first = _erase(world, "alice")
    services.write_memory(agent=world["agent"], kind="USER.md", user_ref="alice", content="- MARKAGAIN")
    second = _erase(world, "alice", reason="Asked again")
    assert second.result["erased"]["versions"] == 2  # the new one and the empty one the erasure wrote
    records = ErasureRecord.objects.order_by("id")
    assert [r.change_id for r in records] == [first.pk, second.pk]
    assert records[0].subject_hash == records[1].subject_hash
    assert records[0].pseudonym != records[1].pseudonym == second.user_ref
    assert not MemoryFile.objects.filter(user_ref="alice").exists()
    assert "MARKAGAIN" not in json.dumps(list(MemoryFile.history.values_list("content", flat=True)))


def test_a_run_in_flight_for_the_user_writes_nothing_after_the_erasure(world):
    from consolidation.models import ConsolidationRun, RunStatus

    agent = world["agent"]
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="cust-9", content="- likes trains")
    run, _ = consolidation.trigger_run(agent=agent, user_ref="cust-9")
    assert consolidation.claim_run(run_id=run.pk)
    in_flight = ConsolidationRun.objects.select_related("agent__workspace").get(pk=run.pk)  # what the worker holds

    _erase(world, "cust-9")

    with transaction.atomic():
        finished = consolidation._finish(in_flight, status=RunStatus.SUCCEEDED)
    assert not finished  # the fence matched nothing: no proposal is written after it
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error.startswith("[REDACTED")
    assert not Proposal.objects.filter(agent=agent, user_ref="cust-9").exists()
