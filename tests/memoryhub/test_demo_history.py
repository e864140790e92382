"""seed_demo's 14 days of history: spread over the days, both outcomes,
runs with spend, idempotent — and written without weakening the guard
against back-dated rows (the one-time seeding window)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models.functions import TruncDate
from django.utils import timezone

from consolidation.models import ConsolidationRun, RunStatus
from memoryhub import demo, demo_history, immutability, services
from memoryhub.models import AgentSession, AuditEvent, LogEntry, Proposal, ProposalStatus

pytestmark = pytest.mark.django_db


def days(queryset, field: str) -> set:
    return set(queryset.annotate(day=TruncDate(field)).values_list("day", flat=True))


def test_the_first_seed_spreads_fourteen_days_of_use() -> None:
    report = demo.seed_demo()
    now = timezone.now()
    horizon = now - timedelta(days=demo_history.HISTORY_DAYS + 1)

    decided = Proposal.objects.filter(decided_at__isnull=False)
    assert decided.filter(status=ProposalStatus.APPROVED).exists()
    assert decided.filter(status=ProposalStatus.REJECTED).exists()
    assert len(days(decided, "decided_at")) >= 12
    runs = ConsolidationRun.objects.all()
    assert len(days(runs, "created_at")) >= 12
    assert {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.NO_CHANGE} <= set(runs.values_list("status", flat=True))
    assert sum(run.cost_usd for run in runs) > 0 and all(r.finished_at >= r.started_at for r in runs)
    assert len(days(AgentSession.objects.all(), "started_at")) >= 12
    assert len(days(LogEntry.objects.all(), "created_at")) >= 12
    for model, field in ((Proposal, "created_at"), (AuditEvent, "created_at"), (ConsolidationRun, "created_at")):
        stamps = model.objects.values_list(field, flat=True)
        assert min(stamps) > horizon and max(stamps) <= now
    # Every run has its audit event, at the run's time.
    run = runs.filter(status=RunStatus.FAILED).first()
    event = AuditEvent.objects.get(action="consolidation.failed", target_id=str(run.pk))
    assert abs(event.created_at - run.created_at) < timedelta(seconds=1)
    # The freshly seeded queue is of today.
    assert Proposal.objects.filter(status=ProposalStatus.PENDING, created_at__gte=now - timedelta(hours=1)).count() >= 3
    assert report.created["history runs"] > 0

    opened, closed, note = immutability.seed_window(connection)
    assert closed is not None and "14 days" in note


def test_seeding_again_adds_nothing_and_back_dating_stays_refused() -> None:
    demo.seed_demo()
    counts = (Proposal.objects.count(), ConsolidationRun.objects.count(), AuditEvent.objects.count())
    report = demo.seed_demo()
    assert (Proposal.objects.count(), ConsolidationRun.objects.count(), AuditEvent.objects.count()) == counts
    assert not report.created and not report.skipped
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.create(action="forged", created_at=timezone.now() - timedelta(days=2))


def test_the_window_opens_only_on_an_empty_database() -> None:
    services.ensure_workspace(slug="real-bank", name="Real Bank")
    report = demo.seed_demo()
    assert any("14 days of history" in skipped for skipped in report.skipped)
    assert immutability.seed_window(connection) is None
    assert not ConsolidationRun.objects.exists()
    oldest = AuditEvent.objects.order_by("created_at").first()
    assert oldest is not None and oldest.created_at > timezone.now() - timedelta(minutes=10)


def test_a_window_is_only_ever_closed() -> None:
    demo.seed_demo()
    table = immutability.SEED_WINDOW
    for sql in (f"UPDATE {table} SET closed_at = NULL", f"UPDATE {table} SET note = 'other'",
                f"DELETE FROM {table}", f"INSERT INTO {table} (id, note) VALUES (2, 'again')"):
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    assert not immutability.open_seed_window(connection, note="again")


def test_a_window_that_is_not_committed_leaves_nothing_behind() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        assert immutability.open_seed_window(connection, note="interrupted")
        raise RuntimeError("seeding failed half way")
    assert immutability.seed_window(connection) is None
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.create(action="forged", created_at=timezone.now() - timedelta(days=2))


def test_the_demo_clock_stamps_rows_at_the_seeded_moment() -> None:
    moment = timezone.now() - timedelta(days=3)
    with transaction.atomic():
        assert immutability.open_seed_window(connection, note="clock test")
        with demo_history.demo_clock(moment):
            event = services.record_event(action="demo.check")
        immutability.close_seed_window(connection)
    assert abs(event.created_at - moment) < timedelta(seconds=5)
    assert abs(timezone.now() - moment) > timedelta(days=2)
