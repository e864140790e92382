"""Log retention: entries older than the workspace's log_retention_days are
redacted in bounded batches by a daily task, never ones a pending proposal
cites as evidence; shortening retention is four-eyes."""

from __future__ import annotations

import pytest

from memoryhub import errors, services, tasks
from memoryhub.models import AuditEvent, Change, LogEntry, Role, Source
from memoryhub.services import retention
from tests.clock import later, looking_from
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db


def _log(agent, user_ref, *texts):
    session = services.start_session(agent=agent, user_ref=user_ref)
    services.append_log(session=session, entries=[{"role": "user", "content": t} for t in texts])
    return list(LogEntry.objects.filter(session=session).order_by("id"))


def test_it_redacts_entries_older_than_the_retention_and_keeps_newer_ones():
    agent = AgentFactory()
    agent.workspace.log_retention_days = 30
    agent.workspace.save()
    old = _log(agent, "u1", "old one", "old two")
    with looking_from(later(days=29)):
        assert services.redact_expired_logs(workspace_id=agent.workspace.pk).redacted == 0
    assert [e.content for e in LogEntry.objects.order_by("id")] == ["old one", "old two"]
    with looking_from(later(days=31)):
        batch = services.redact_expired_logs(workspace_id=agent.workspace.pk)
    assert batch.redacted == 2 and batch.remaining == 0
    for entry in old:
        entry.refresh_from_db()
        assert entry.content.endswith(" by retention]") and entry.redacted_by == "retention"
    event = AuditEvent.objects.get(action="retention.redact")
    assert event.details["redacted"] == 2 and event.workspace == agent.workspace


def test_it_never_redacts_an_entry_a_pending_proposal_cites():
    agent = AgentFactory()
    cited, other = _log(agent, "u1", "cited fact", "other fact")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content="- cited fact",
                                       source=Source.CONSOLIDATION,
                                       rationale=[{"kind": "add", "summary": "fact", "reason": "said",
                                                   "evidence": [cited.pk]}])
    with looking_from(later(days=366)):
        batch = services.redact_expired_logs(workspace_id=agent.workspace.pk)
    assert batch.redacted == 1
    assert LogEntry.objects.get(pk=cited.pk).content == "cited fact"
    assert LogEntry.objects.get(pk=other.pk).redacted_at is not None
    # Once decided, the next run takes it.
    services.reject_proposal(proposal_id=proposal.pk, reviewer=staff(agent.workspace, Role.REVIEWER),
                             comment="no")
    with looking_from(later(days=367)):
        assert services.redact_expired_logs(workspace_id=agent.workspace.pk).redacted == 1
    assert LogEntry.objects.get(pk=cited.pk).redacted_at is not None


def test_it_works_in_bounded_batches_that_report_what_remains():
    agent = AgentFactory()
    _log(agent, "u1", *(f"entry {i}" for i in range(5)))
    with looking_from(later(days=400)):
        first = retention.redact_expired_logs(workspace_id=agent.workspace.pk, batch=2)
        assert (first.redacted, first.remaining) == (2, 3)
        second = retention.redact_expired_logs(workspace_id=agent.workspace.pk, batch=2)
        assert (second.redacted, second.remaining) == (2, 1)


def test_an_empty_setting_keeps_logs_forever():
    agent = AgentFactory()
    agent.workspace.log_retention_days = None
    agent.workspace.save()
    _log(agent, "u1", "kept")
    with looking_from(later(days=5000)):
        assert services.redact_expired_logs(workspace_id=agent.workspace.pk).redacted == 0
    assert LogEntry.objects.get().content == "kept"


@pytest.mark.django_db(transaction=True)
def test_the_daily_task_fans_out_per_workspace_and_requeues_until_done(monkeypatch):
    from memoryhub.celery import app

    monkeypatch.setattr(app.conf, "task_always_eager", True)
    monkeypatch.setattr(retention, "RETENTION_BATCH", 2)
    agent = AgentFactory()
    _log(agent, "u1", *(f"entry {i}" for i in range(5)))
    with looking_from(later(days=400)):
        tasks.retention_task()
    assert LogEntry.objects.filter(redacted_at__isnull=True).count() == 0
    assert AuditEvent.objects.filter(action="retention.redact").count() == 3


def test_shortening_retention_needs_a_second_admin_and_lengthening_does_not():
    agent = AgentFactory()
    workspace = agent.workspace
    admin, admin2 = staff(workspace, Role.ADMIN), staff(workspace, Role.ADMIN)
    longer = services.update_workspace(workspace=workspace, settings={"log_retention_days": 730}, actor=admin)
    assert longer.applied == ["log_retention_days"]
    forever = services.update_workspace(workspace=workspace, settings={"log_retention_days": None}, actor=admin)
    assert forever.applied == ["log_retention_days"]
    shorter = services.update_workspace(workspace=workspace, settings={"log_retention_days": 30}, actor=admin)
    assert shorter.applied == [] and shorter.change is not None
    workspace.refresh_from_db()
    assert workspace.log_retention_days is None
    services.approve_change(change_id=shorter.change.pk, actor=admin2)
    workspace.refresh_from_db()
    assert workspace.log_retention_days == 30
    assert Change.objects.get().status == "approved"
    with pytest.raises(errors.Invalid):
        services.update_workspace(workspace=workspace, settings={"log_retention_days": 0}, actor=admin)
