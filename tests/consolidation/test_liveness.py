"""Liveness: no pair is stuck and none is re-run for nothing. Permanent
failures mark the pair for a person, transient ones back off (honouring
Retry-After), a hung endpoint frees the worker, over-cap files are
compressed, and a near-cap file that could not shrink is not re-run until it
changes."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation import services
from consolidation.backends.base import BackendError
from consolidation.models import ConsolidationPair, ConsolidationRun, RunStatus
from consolidation.tasks import consolidate_task
from memoryhub import errors
from memoryhub import services as core
from memoryhub.models import AgentSession, LogEntry, Proposal, Role
from tests.api_helpers import staff_client
from tests.factories import AgentFactory, WorkspaceFactory, staff
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db


def log(agent: Any, user_ref: str, *entries: tuple[str, str], ended_at: Any = None) -> list[LogEntry]:
    session = AgentSession.objects.create(agent=agent, user_ref=user_ref, ended_at=ended_at or timezone.now())
    return LogEntry.objects.bulk_create(
        LogEntry(session=session, agent=agent, user_ref=user_ref, role=role, content=content)
        for role, content in entries
    )


def sessions(agent: Any, user_ref: str, count: int, ended_at: Any) -> None:
    for i in range(count):
        log(agent, user_ref, ("note", f"Session {i} went fine"), ended_at=ended_at)


def run_now(agent: Any, user_ref: str = "u1", **kwargs: Any) -> ConsolidationRun:
    run, _ = services.trigger_run(agent=agent, user_ref=user_ref, **kwargs)
    assert services.claim_run(run_id=run.pk)
    services.execute_run(run_id=run.pk)
    run.refresh_from_db()
    return run


def answer(*operations: dict[str, Any]) -> str:
    return json.dumps({"operations": list(operations)})


def due(now: Any) -> list[tuple[int, str]]:
    return [(pair.agent_id, pair.user_ref) for pair in services.eligible_pairs(now=now)]


@pytest.fixture
def llm(settings: Any, openai_server: OpenAIServer) -> OpenAIServer:
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_MODEL = "gpt-test"
    settings.OPENAI_TIMEOUT = 5.0
    return openai_server


# --- permanent failures: needs attention, not re-queued until something changes --------------


def test_a_permanent_llm_error_marks_the_pair_and_the_gate_leaves_it_alone(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    start = timezone.now() - timedelta(days=3)
    sessions(agent, "u1", 5, ended_at=start)
    llm.reply_status(400, "This model's maximum context length is 8192 tokens.")

    run = run_now(agent)

    assert (run.status, run.failure) == (RunStatus.FAILED, "permanent")
    pair = ConsolidationPair.objects.get(agent=agent, user_ref="u1")
    assert pair.needs_attention and pair.attention_run_id == run.pk
    assert "HTTP 400" in pair.attention_reason and "maximum context length" in pair.attention_reason
    assert "a new session of the pair ends" in pair.attention_clears_when
    # Today's hole: every gate period re-queued it, forever.
    assert due(timezone.now() + timedelta(days=2)) == []
    assert due(timezone.now() + timedelta(days=30)) == []


def test_a_new_session_lets_the_gate_try_a_pair_that_needs_attention_again(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    sessions(agent, "u1", 5, ended_at=timezone.now() - timedelta(days=3))
    llm.reply_status(400, "Bad request.")
    run_now(agent)

    log(agent, "u1", ("user", "Remember that I live in Lisbon."), ended_at=timezone.now() + timedelta(seconds=1))

    assert due(timezone.now() + timedelta(days=2)) == [(agent.pk, "u1")]


def test_a_file_change_lets_the_gate_try_a_pair_that_needs_attention_again(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    sessions(agent, "u1", 5, ended_at=timezone.now() - timedelta(days=3))
    llm.reply_status(400, "Bad request.")
    run_now(agent)

    core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Repo uses pytest\n")

    assert due(timezone.now() + timedelta(days=2)) == [(agent.pk, "u1")]


def test_a_reviewer_retries_a_pair_that_needs_attention(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    [note] = log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply_status(400, "Bad request.")
    run_now(agent)
    reviewer = staff(agent.workspace, Role.REVIEWER)
    assert [p.user_ref for p in services.pairs_needing_attention(workspace_ids=[agent.workspace_id])] == ["u1"]

    retried = services.retry_pair(agent=agent, user_ref="u1", user=reviewer)

    pair = ConsolidationPair.objects.get(agent=agent, user_ref="u1")
    assert not pair.needs_attention and pair.cleared_by == reviewer
    assert retried.status == RunStatus.QUEUED and retried.triggered_by == reviewer
    assert list(services.pairs_needing_attention(workspace_ids=[agent.workspace_id])) == []
    llm.reply(answer({"op": "add", "file": "MEMORY.md", "text": "CI runs on GitHub Actions.", "reason": "Noted.",
                      "evidence": [note.pk]}))
    assert services.claim_run(run_id=retried.pk)
    services.execute_run(run_id=retried.pk)
    retried.refresh_from_db()
    assert retried.status == RunStatus.SUCCEEDED


def test_only_reviewers_and_admins_may_retry_a_pair() -> None:
    agent = AgentFactory()
    auditor = staff(agent.workspace, Role.AUDITOR)
    outsider = staff(WorkspaceFactory(), Role.ADMIN)

    for user in (auditor, outsider):
        with pytest.raises(errors.PermissionDenied):
            services.retry_pair(agent=agent, user_ref="u1", user=user)
    assert not ConsolidationRun.objects.exists()


def test_the_run_api_shows_the_pair_state(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply_status(400, "Bad request.")
    run = run_now(agent)

    body = staff_client(staff(agent.workspace, Role.AUDITOR)).get(f"/api/v1/consolidation-runs/{run.pk}").json()

    assert body["failure"] == "permanent"
    assert body["pair"]["needs_attention"] is True
    assert "HTTP 400" in body["pair"]["reason"] and body["pair"]["clears_when"]


def test_a_guard_failure_needs_attention_and_a_success_clears_it(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    [note] = log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply(answer({"op": "add", "file": "MEMORY.md", "text": "x y", "reason": "r", "evidence": []}))
    first = run_now(agent)
    assert ConsolidationPair.objects.get(agent=agent).needs_attention

    llm.reply(answer({"op": "add", "file": "MEMORY.md", "text": "CI runs on GitHub Actions.", "reason": "Noted.",
                      "evidence": [note.pk]}))
    second = run_now(agent, user=staff(agent.workspace, Role.REVIEWER))

    assert (first.status, second.status) == (RunStatus.FAILED, RunStatus.SUCCEEDED)
    assert not ConsolidationPair.objects.get(agent=agent).needs_attention


# --- transient failures: backoff, Retry-After ---------------------------------------------------


def test_the_task_waits_at_least_as_long_as_retry_after(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply_status(429, "Slow down.", headers={"Retry-After": "120"})
    run, _ = services.trigger_run(agent=agent, user_ref="u1")
    before = timezone.now()

    consolidate_task.apply(args=[run.pk])

    run.refresh_from_db()
    # Requeued not before the server's 120 s (the task's own backoff is 15 s);
    # the eager retry finds it too early and leaves it queued.
    assert run.status == RunStatus.QUEUED
    assert run.retry_at is not None and run.retry_at >= before + timedelta(seconds=119)
    assert len(llm.requests) == 1
    assert not services.claim_run(run_id=run.pk)
    assert services.claim_run(run_id=run.pk, now=run.retry_at + timedelta(seconds=1))


def test_a_retry_after_longer_than_a_lease_ends_the_run_and_holds_the_pair(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    sessions(agent, "u1", 5, ended_at=timezone.now() - timedelta(days=3))
    llm.reply_status(503, "Maintenance.", headers={"Retry-After": "7200"})
    run, _ = services.trigger_run(agent=agent, user_ref="u1")

    consolidate_task.apply(args=[run.pk])

    run.refresh_from_db()
    assert (run.status, run.failure) == (RunStatus.FAILED, "transient")
    pair = ConsolidationPair.objects.get(agent=agent, user_ref="u1")
    assert not pair.needs_attention and pair.transient_failures == 1
    assert pair.next_attempt_at >= timezone.now() + timedelta(seconds=7100)
    assert due(timezone.now() + timedelta(hours=1)) == []
    assert due(timezone.now() + timedelta(days=1, hours=1)) == [(agent.pk, "u1")]


def test_transient_failures_back_off_exponentially(settings: Any) -> None:
    settings.CONSOLIDATION_BACKOFF_BASE_SECONDS = 900
    settings.CONSOLIDATION_BACKOFF_MAX_SECONDS = 86_400

    delays = [services.pair_backoff(n).total_seconds() for n in range(1, 9)]

    assert delays == [900, 1800, 3600, 7200, 14400, 28800, 57600, 86400]
    assert services.pair_backoff(1, retry_after=5000).total_seconds() == 5000


def test_a_hung_endpoint_frees_the_worker_within_twice_the_timeout(llm: OpenAIServer, settings: Any) -> None:
    # A server that sends a byte every few tenths of a second never trips a
    # read timeout; only a deadline on the whole call frees the worker.
    settings.OPENAI_TIMEOUT = 0.5
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply(answer(), trickle=30)
    run, _ = services.trigger_run(agent=agent, user_ref="u1")
    assert services.claim_run(run_id=run.pk)
    started = time.monotonic()

    with pytest.raises(BackendError) as caught:
        services.execute_run(run_id=run.pk)

    elapsed = time.monotonic() - started
    assert caught.value.retryable  # the task retries later; the worker is free meanwhile
    assert "did not answer within 0.5 s" in caught.value.reason
    assert elapsed < 2 * 0.5 + 1.5  # not the 30 s the server would take


def test_finished_at_is_when_the_run_finished(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    [note] = log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply(answer({"op": "add", "file": "MEMORY.md", "text": "CI runs on GitHub Actions.", "reason": "Noted.",
                      "evidence": [note.pk]}), delay=0.4)

    run = run_now(agent)

    assert run.finished_at - run.started_at >= timedelta(seconds=0.4)


# --- the cap --------------------------------------------------------------------------------------


def test_a_memory_file_far_over_its_cap_is_compressed_not_stuck() -> None:
    # An agent may write MEMORY.md up to twice its soft cap. Today such a
    # file failed every run: cutting the oldest entries lost more than a
    # quarter of them.
    agent = AgentFactory(limit_memory=300)
    verbose = [
        "Deploys happen on Fridays, because the team wants the weekend to watch the metrics.",
        "Staging listens on port 5433; production uses the default port after the migration.",
        "Invoices go to ops@example.com (finance moved to the new shared mailbox last spring).",
        "The repo uses pytest 8, which the team chose because its fixtures are easy to read.",
        "Releases are tagged v2.x, since semantic versioning keeps the customers informed.",
        "Deploys happen on Fridays.",
    ]
    core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="".join(f"- {e}\n" for e in verbose))
    log(agent, "u1", ("note", "Code review happens on Tuesdays"))

    run = run_now(agent)

    assert run.status == RunStatus.SUCCEEDED, run.error
    [proposal] = run.proposals.all()
    assert len(proposal.proposed_content) <= 300
    for kept in ("Fridays", "5433", "ops@example.com", "pytest 8", "v2.x", "Tuesdays"):
        assert kept in proposal.proposed_content
    assert {c["kind"] for c in proposal.rationale} >= {"add", "compress", "merge"}


def test_a_user_file_that_cannot_fit_its_hard_cap_needs_attention_instead_of_losing_facts() -> None:
    agent = AgentFactory(limit_user=60)
    core.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- Lives in Lisbon\n- Works at Acme\n")
    log(agent, "u1", ("user", "Remember that my timezone is CET."), ("user", "Call me Dana."))

    run = run_now(agent)

    assert run.status == RunStatus.FAILED and run.counts["prune"] == {"guard": "cap"}
    pair = ConsolidationPair.objects.get(agent=agent, user_ref="u1")
    assert pair.needs_attention and pair.attention_code == "guard:cap"
    assert "shortens the file or raises its limit" in pair.attention_clears_when
    assert not Proposal.objects.exists()


def test_a_near_cap_file_that_did_not_change_is_not_run_again() -> None:
    agent = AgentFactory(limit_memory=100)
    core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- " + "x" * 84 + "\n")
    assert due(timezone.now()) == [(agent.pk, "u1")]

    run = run_now(agent)

    assert run.status == RunStatus.NO_CHANGE
    # Today's hole: the gate queued a no_change run every gate period.
    assert due(timezone.now() + timedelta(days=2)) == []
    core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- " + "y" * 84 + "\n")
    assert due(timezone.now() + timedelta(days=2)) == [(agent.pk, "u1")]


# --- backlogs: read to the end, never waiting for new sessions ----------------------------------------


def backlog(agent: Any, user_ref: str, entries: int) -> list[LogEntry]:
    """`entries` log entries of chat and tool output, with facts at the start,
    the middle and the very end."""
    rows: list[tuple[str, str]] = [("user", "Remember that I prefer Markdown tables for reports.")]
    for i in range(entries - 3):
        rows.append(("tool", f"report {i}: 312 rows") if i % 2 else ("user", f"Next one: report {i}, please."))
        if len(rows) == entries // 2:
            rows.append(("note", "Nightly ETL job runs at 02:00 UTC"))
    rows.append(("user", "Remember that my team lead is Marta Ruiz."))
    return log(agent, user_ref, *rows)


def test_a_thousand_entry_backlog_is_read_in_one_run_that_makes_one_proposal_per_file() -> None:
    # Today's hole: 500 read, then the pair waited for 5 more sessions.
    agent = AgentFactory()
    rows = backlog(agent, "u1", 1000)

    run = run_now(agent)

    assert run.status == RunStatus.SUCCEEDED and run.counts["gather"]["entries"] == 1000
    assert run.high_water_mark == rows[-1].pk and "unread_left" not in run.counts
    proposals = {p.kind: p.proposed_content for p in run.proposals.all()}
    assert proposals == {"USER.md": "- Prefers Markdown tables for reports.\n- Team lead is Marta Ruiz.\n",
                         "MEMORY.md": "- Nightly ETL job runs at 02:00 UTC.\n"}
    assert not ConsolidationRun.objects.filter(status=RunStatus.QUEUED).exists()


def test_queries_per_run_do_not_grow_with_the_log(django_assert_max_num_queries: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counted = []
    for size in (40, 1000):
        agent = AgentFactory()
        backlog(agent, "u1", size)
        run, _ = services.trigger_run(agent=agent, user_ref="u1")
        assert services.claim_run(run_id=run.pk)
        with CaptureQueriesContext(connection) as queries:
            services.execute_run(run_id=run.pk)
        counted.append(len(queries.captured_queries))
    assert counted[0] == counted[1], counted


def test_a_backlog_longer_than_a_run_holds_is_continued_at_once(monkeypatch: Any) -> None:
    from consolidation import pipeline

    monkeypatch.setattr(pipeline, "MAX_SIGNALS_PER_RUN", 100)
    agent = AgentFactory()
    rows = backlog(agent, "u1", 250)

    first = run_now(agent)

    assert first.status == RunStatus.SUCCEEDED and first.counts["gather"] == {**first.counts["gather"],
                                                                            "entries": 100, "backlog": True}
    assert "more than 100 log entries" in first.counts["unread_left"]
    [follow] = ConsolidationRun.objects.filter(status=RunStatus.QUEUED)
    assert (follow.trigger, follow.user_ref) == ("gate", "u1")
    assert services.claim_run(run_id=follow.pk)
    services.execute_run(run_id=follow.pk)
    [last] = ConsolidationRun.objects.filter(status=RunStatus.QUEUED)
    assert services.claim_run(run_id=last.pk)
    services.execute_run(run_id=last.pk)
    last.refresh_from_db()
    assert last.high_water_mark == rows[-1].pk and "unread_left" not in last.counts
    # One live proposal per file: each run built on the one before.
    pending = Proposal.objects.filter(agent=agent).pending()
    assert {p.kind for p in pending} == {"USER.md", "MEMORY.md"} and pending.count() == 2
    assert "Marta Ruiz" in pending.get(kind="USER.md").proposed_content
    assert "Markdown tables" in pending.get(kind="USER.md").proposed_content
