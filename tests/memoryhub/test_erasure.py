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


# --- every free-text column (issue 17, item 1) -------------------------------------------------


def test_it_tombstones_reasons_comments_and_every_other_text_that_names_the_user(world):
    from datetime import timedelta

    from axes.models import AccessAttempt
    from django.contrib.admin.models import CHANGE
    from django.contrib.admin.models import LogEntry as AdminLogEntry
    from django.contrib.contenttypes.models import ContentType
    from django.utils import timezone

    from consolidation.models import ConsolidationPair
    from memoryhub.models import IdempotencyRecord
    from notifications.dispatch import user_pseudonym
    from notifications.models import Webhook, WebhookDelivery

    agent, admin, reviewer = world["agent"], world["admin"], world["reviewer"]
    ref, mark = "cust-7788", "MARKREASON"
    services.write_memory(agent=agent, kind="USER.md", user_ref=ref, content="- likes tea",
                          reason=f"{mark}: {ref} told us")
    rejected = services.propose_change(agent=agent, kind="MEMORY.md", user_ref=ref, content="- a fact",
                                       source=Source.AGENT, author_agent=agent, reason=f"{mark} write reason")
    services.reject_proposal(proposal_id=rejected.pk, reviewer=reviewer, comment=f"{mark} rejection comment")
    services.withhold_file(agent=agent, kind="USER.md", user_ref=ref, actor=reviewer, reason=f"{mark} withheld")
    release = services.request_release(agent=agent, kind="USER.md", user_ref=ref, actor=reviewer,
                                       reason=f"{mark} release reason")
    services.reject_change(change_id=release.pk, actor=world["admin2"], comment=f"{mark} not yet")
    # A change about something else whose reason names the user.
    unrelated = services.update_agent(agent=agent, settings={"limit_memory": 9000}, actor=admin,
                                      reason=f"{ref} needs a longer memory").change
    later = timezone.now() + timedelta(hours=1)
    IdempotencyRecord.objects.create(principal=f"agent:{agent.pk}", key="k", request_hash="h", status_code=201,
                                     body={"id": 1}, headers={"Location": f"/api/v1/sessions/1?user={ref}"},
                                     expires_at=later)
    AccessAttempt.objects.create(user_agent="curl", ip_address="127.0.0.9", username="someone", http_accept="*/*",
                                 path_info="/login/", get_data=f"next=/agents/x/files/USER.md/history/?user={ref}",
                                 post_data="username=someone", failures_since_start=1)
    AdminLogEntry.objects.log_actions(
        user_id=admin.pk, queryset=[MemoryFile.objects.get(agent=agent, user_ref=ref)], action_flag=CHANGE,
        change_message="[]")
    ConsolidationPair.objects.create(agent=agent, user_ref=ref, needs_attention=True, attention_code="guard:x",
                                     attention_reason=f"{mark} quoted", attention_clears_when=f"{mark} fixed")
    hook = Webhook.objects.create(workspace=agent.workspace, url="http://127.0.0.1:9/", events=["proposal.created"],
                                  secret="s")
    WebhookDelivery.objects.create(webhook=hook, event="proposal.created", payload={"user": user_pseudonym(ref)})
    assert ContentType.objects.exists()

    change = _erase(world, ref)

    tomb = f"[REDACTED {change.decided_at:%Y-%m-%d} by change #{change.pk}]"
    assert set(MemoryFile.history.filter(agent=agent, kind="USER.md").values_list("history_change_reason",
                                                                                 flat=True)) == {tomb}
    rejected.refresh_from_db()
    assert (rejected.reason, rejected.decision_comment) == (tomb, tomb)
    assert MemoryFile.objects.get(agent=agent, kind="USER.md").withheld_reason == tomb
    release.refresh_from_db()
    assert (release.reason, release.decision_comment, release.user_ref) == (tomb, tomb, change.user_ref)
    unrelated.refresh_from_db()
    assert unrelated.reason == tomb and unrelated.user_ref == ""
    assert not IdempotencyRecord.objects.exists() and not AccessAttempt.objects.exists()
    assert ref not in AdminLogEntry.objects.get().object_repr
    pair = ConsolidationPair.objects.get(agent=agent)
    assert (pair.user_ref, pair.attention_reason, pair.attention_clears_when) == (change.user_ref, "", "")
    assert WebhookDelivery.objects.get().payload["user"] == change.user_ref
    counts = change.result["counts"]
    assert counts["cached_answers"] == counts["login_throttle"] == counts["admin_log"] == 1
    assert counts["webhook_deliveries"] == counts["pairs"] == 1
    everything = json.dumps([list(m.objects.values()) for m in (Change, Proposal, AuditEvent, MemoryFile)]
                            + [list(MemoryFile.history.values())], default=str)
    assert mark not in everything and ref not in everything


def test_the_reason_and_comment_of_the_erasure_itself_are_tombstoned_when_they_name_the_user(world):
    _traces(world["agent"], "cust-5151", "MARKALICE")
    change = services.request_erasure(actor=world["admin"], user_ref="cust-5151", reason="cust-5151 wrote in")
    services.approve_change(change_id=change.pk, actor=world["admin2"], comment="done for cust-5151")
    change.refresh_from_db()
    assert change.reason.startswith("[REDACTED") and change.decision_comment.startswith("[REDACTED")
    events = AuditEvent.objects.filter(target_type="Change", target_id=str(change.pk))
    assert "cust-5151" not in json.dumps(list(events.values("summary", "details", "user_ref")))
    # A reason that does not name the person is kept for the record.
    _traces(world["agent"], "cust-5252", "MARKBOB")
    kept = services.request_erasure(actor=world["admin"], user_ref="cust-5252", reason="Ticket 4411")
    services.approve_change(change_id=kept.pk, actor=world["admin2"], comment="checked")
    kept.refresh_from_db()
    assert (kept.reason, kept.decision_comment) == ("Ticket 4411", "checked")


def test_it_keeps_other_users_and_text_that_only_resembles_the_reference(world):
    agent = world["agent"]
    _traces(agent, "ann", "MARKANN")
    services.write_memory(agent=agent, kind="USER.md", user_ref="joanna", content="- x", reason="joanna said")
    change = _erase(world, "ann")
    assert change.result["counts"]["versions"] == 5
    assert MemoryFile.history.get(user_ref="joanna").history_change_reason == "joanna said"


# --- rows outside the workspace (item 2) -------------------------------------------------------


def test_it_pseudonymises_refusals_recorded_under_no_workspace_and_leaves_other_tenants_alone(world):
    agent = world["agent"]
    ref = "cust-3030"
    _traces(agent, ref, "MARKALICE")
    outsider = staff(WorkspaceFactory(), Role.ADMIN)
    refused = staff_client(outsider).get(f"/api/v1/subjects/{ref}/export?workspace={agent.workspace.slug}")
    assert refused.status_code == 404
    stray = AuditEvent.objects.get(action="subject.refused", workspace__isnull=True)
    assert stray.user_ref == ref
    # The same reference in another tenant is another person.
    other = AgentFactory(write_policy=WritePolicy.DIRECT)
    services.write_memory(agent=other, kind="USER.md", user_ref=ref, content="- other tenant's customer")

    change = _erase(world, ref)

    stray.refresh_from_db()
    assert stray.user_ref == change.user_ref and stray.details == {"redacted": stray.details["redacted"]}
    assert stray.details["redacted"].startswith("[REDACTED")
    assert MemoryFile.objects.get(agent=other, user_ref=ref).content == "- other tenant's customer"
    assert AuditEvent.objects.filter(workspace=other.workspace, user_ref=ref).exists()


# --- erasure of nobody (item 15) ---------------------------------------------------------------


def test_it_refuses_to_erase_a_reference_nothing_names(world):
    _traces(world["agent"], "cust-1042", "MARKALICE")
    with pytest.raises(services.NothingToErase) as refused:
        services.request_erasure(actor=world["admin"], user_ref="cust-1024", reason="Customer asked")
    assert refused.value.status == 422 and refused.value.code == "nothing_to_erase"
    assert "cust-1024" in refused.value.detail and "matched exactly" in refused.value.detail
    assert not Change.objects.exists()
    api = staff_client(world["admin"]).post("/api/v1/subjects/cust-1024/erasure", {"reason": "Customer asked"},
                                            format="json")
    assert api.status_code == 422 and error_code(api) == "nothing_to_erase"
    assert api.json()["error"]["counts"]["files"] == 0
    console = Client()
    console.force_login(world["admin"])
    page = console.post("/compliance/erasure/", {"user": "cust-1024", "workspace": world["agent"].workspace.slug,
                                                 "reason": "Customer asked"})
    assert page.status_code == 422 and "names the user" in page.content.decode()
    assert not Change.objects.exists() and not AuditEvent.objects.filter(user_ref="cust-1024").exists()


def test_it_shows_what_would_be_erased_when_requested_and_counts_again_for_the_approver(world):
    agent = world["agent"]
    _traces(agent, "cust-6060", "MARKALICE")
    requested = staff_client(world["admin"]).post("/api/v1/subjects/cust-6060/erasure", {"reason": "Asked"},
                                                  format="json")
    assert requested.status_code == 202
    would = requested.json()["would_erase"]
    assert {k: would[k] for k in ("files", "versions", "proposals", "sessions", "log_entries", "runs")} == {
        "files": 2, "versions": 3, "proposals": 1, "sessions": 2, "log_entries": 2, "runs": 1}
    change_id = requested.json()["change"]
    services.write_memory(agent=world["second"], kind="USER.md", user_ref="cust-6060", content="- more")

    listed = staff_client(world["admin2"]).get("/api/v1/changes", {"status": "pending"}).json()
    assert listed[0]["would_erase"]["files"] == 3 and listed[0]["would_erase"]["versions"] == 4
    console = Client()
    console.force_login(world["admin2"])
    page = console.get("/changes/").content.decode()
    assert f'id="would-erase-{change_id}"' in page and "3 files · 4 versions" in page
    assert "3 files" in console.get("/compliance/").content.decode()

    approved = staff_client(world["admin2"]).post(f"/api/v1/changes/{change_id}/approve", {}, format="json").json()
    assert approved["result"]["planned"]["files"] == 3 and approved["erased"]["files"] == 3
    assert "would_erase" not in approved


def test_an_approval_that_would_erase_nothing_is_refused_and_leaves_the_change_pending(world):
    from datetime import timedelta

    from django.utils import timezone

    from memoryhub.models import IdempotencyRecord

    agent = world["agent"]
    IdempotencyRecord.objects.create(principal=f"agent:{agent.pk}", key="k", request_hash="h", status_code=201,
                                     body={"user": "cust-0909"}, expires_at=timezone.now() + timedelta(hours=1))
    change = services.request_erasure(actor=world["admin"], user_ref="cust-0909", reason="Asked")
    assert change.payload["counts"]["cached_answers"] == 1
    IdempotencyRecord.objects.all().delete()  # expired and purged meanwhile
    with pytest.raises(services.NothingToErase):
        services.approve_change(change_id=change.pk, actor=world["admin2"])
    change.refresh_from_db()
    assert change.status == ChangeStatus.PENDING and not ErasureRecord.objects.exists()
