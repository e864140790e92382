"""The gate: which (agent, user) pairs are due for a consolidation run."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation import services
from consolidation.models import ConsolidationRun, RunStatus, Trigger
from memoryhub import services as core
from memoryhub.models import AgentSession
from tests.clock import looking_from
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def now() -> datetime:
    """The gate is asked a week ahead: the database refuses back-dated runs
    (memoryhub.immutability), so the past is made by moving `now` forward."""
    return timezone.now() + timedelta(days=7)


def ended_sessions(agent: Any, user_ref: str, count: int, at: datetime) -> None:
    AgentSession.objects.bulk_create(
        AgentSession(agent=agent, user_ref=user_ref, started_at=at - timedelta(minutes=5), ended_at=at)
        for _ in range(count)
    )


def past_run(agent: Any, user_ref: str, at: datetime, status: str = RunStatus.SUCCEEDED) -> ConsolidationRun:
    return ConsolidationRun.objects.create(agent=agent, user_ref=user_ref, status=status, backend="heuristic",
                                           created_at=at, started_at=at, finished_at=at)


def due(now: datetime) -> list[tuple[int, str]]:
    return [(pair.agent_id, pair.user_ref) for pair in services.eligible_pairs(now=now)]


def test_it_needs_five_ended_sessions_not_four(now: datetime) -> None:
    four, five = AgentFactory(), AgentFactory()
    ended_sessions(four, "u1", 4, now - timedelta(hours=1))
    ended_sessions(five, "u1", 5, now - timedelta(hours=1))

    assert due(now) == [(five.pk, "u1")]


def test_sessions_still_open_do_not_count(now: datetime) -> None:
    agent = AgentFactory()
    ended_sessions(agent, "u1", 4, now - timedelta(hours=1))
    AgentSession.objects.create(agent=agent, user_ref="u1")

    assert due(now) == []


def test_it_waits_24_hours_after_the_last_run_not_23(now: datetime) -> None:
    recent, older = AgentFactory(), AgentFactory()
    past_run(recent, "u1", now - timedelta(hours=23))
    past_run(older, "u1", now - timedelta(hours=24))
    ended_sessions(recent, "u1", 5, now - timedelta(hours=1))
    ended_sessions(older, "u1", 5, now - timedelta(hours=1))

    assert due(now) == [(older.pk, "u1")]


def test_a_failed_run_also_starts_the_wait(now: datetime) -> None:
    agent = AgentFactory()
    past_run(agent, "u1", now - timedelta(hours=2), status=RunStatus.FAILED)
    ended_sessions(agent, "u1", 5, now - timedelta(hours=1))

    assert due(now) == []


def test_only_sessions_ended_since_the_last_consuming_run_count(now: datetime) -> None:
    agent = AgentFactory()
    last = past_run(agent, "u1", now - timedelta(hours=30))
    ended_sessions(agent, "u1", 3, last.created_at - timedelta(hours=1))
    ended_sessions(agent, "u1", 4, now - timedelta(hours=1))

    assert due(now) == []
    ended_sessions(agent, "u1", 1, now - timedelta(minutes=1))
    assert due(now) == [(agent.pk, "u1")]


def test_it_follows_each_agents_own_gate_settings(now: datetime) -> None:
    agent = AgentFactory(gate_sessions=2, gate_hours=1)
    past_run(agent, "u1", now - timedelta(hours=1, minutes=1))
    ended_sessions(agent, "u1", 2, now - timedelta(minutes=30))

    assert due(now) == [(agent.pk, "u1")]


def test_pairs_are_separate(now: datetime) -> None:
    agent = AgentFactory()
    ended_sessions(agent, "u1", 3, now - timedelta(hours=1))
    ended_sessions(agent, "u2", 5, now - timedelta(hours=1))

    assert due(now) == [(agent.pk, "u2")]


@pytest.mark.parametrize("kind, limit_field", [("USER.md", "limit_user"), ("MEMORY.md", "limit_memory")])
def test_a_file_past_80_percent_of_its_cap_is_due_without_sessions(now: datetime, kind: str,
                                                                   limit_field: str) -> None:
    at_80, past_80 = AgentFactory(**{limit_field: 100}), AgentFactory(**{limit_field: 100})
    core.write_memory(agent=at_80, kind=kind, user_ref="u1", content="x" * 80)
    core.write_memory(agent=past_80, kind=kind, user_ref="u1", content="x" * 81)

    [pair] = services.eligible_pairs(now=now)

    assert (pair.agent_id, pair.user_ref) == (past_80.pk, "u1")
    assert pair.reasons == (f"{kind} is past 80% of its cap",)


def test_the_cap_trigger_still_runs_at_most_once_per_gate_window(now: datetime) -> None:
    agent = AgentFactory(limit_user=100)
    with looking_from(now - timedelta(hours=1)):  # the file grew after the last run
        core.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="x" * 95)
    past_run(agent, "u1", now - timedelta(hours=2), status=RunStatus.NO_CHANGE)

    assert due(now) == []
    assert due(now + timedelta(hours=22)) == [(agent.pk, "u1")]


def test_it_skips_pairs_with_an_active_run_and_inactive_agents(now: datetime) -> None:
    busy, inactive = AgentFactory(), AgentFactory(is_active=False)
    ConsolidationRun.objects.create(agent=busy, user_ref="u1", status=RunStatus.RUNNING, backend="heuristic",
                                    created_at=now - timedelta(days=3))
    ended_sessions(busy, "u1", 5, now - timedelta(hours=1))
    ended_sessions(inactive, "u1", 5, now - timedelta(hours=1))

    assert due(now) == []


def test_the_gate_queues_one_run_per_pair(now: datetime) -> None:
    agent = AgentFactory()
    ended_sessions(agent, "u1", 5, now - timedelta(hours=1))
    ended_sessions(agent, "u2", 6, now - timedelta(hours=1))

    first = services.run_gate(now=now)
    again = services.run_gate(now=now)

    assert sorted(run.user_ref for run in first) == ["u1", "u2"]
    assert all((run.status, run.trigger, run.backend) == (RunStatus.QUEUED, Trigger.GATE, "heuristic")
               for run in first)
    assert again == []
    assert ConsolidationRun.objects.count() == 2


def test_the_gate_costs_the_same_few_queries_for_many_pairs(now: datetime, django_assert_num_queries: Any) -> None:
    agents = [AgentFactory(limit_memory=100) for _ in range(2)]
    for agent in agents:
        for user_ref in ("u1", "u2", "u3"):
            ended_sessions(agent, user_ref, 5, now - timedelta(hours=1))
        past_run(agent, "u1", now - timedelta(days=2))
        core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u4", content="x" * 90)

    # Sessions, near-cap files, run history, pair states, gate hours.
    with django_assert_num_queries(5):
        pairs = services.eligible_pairs(now=now)

    assert len(pairs) == 8
