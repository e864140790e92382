"""The dashboard's memory-health section: MEMORY.md size per day, duplicates
merged, the staleness rate and spend per agent per day, at a constant
number of queries."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from consolidation.models import ConsolidationRun, RunStatus
from memoryhub import services
from memoryhub.models import Role
from tests.clock import later, looking_from
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


def _agent(workspace: Any, slug: str, cost: str = "0.10") -> Any:
    agent = AgentFactory(workspace=workspace, slug=slug)
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="m" * 400)
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="m" * 600)
    ConsolidationRun.objects.create(agent=agent, user_ref="alice", status=RunStatus.SUCCEEDED, backend="llm",
                                    cost_usd=Decimal(cost), counts={"consolidate": {"by_kind": {"merge": 3}}})
    return agent


def _page(user: Any) -> tuple[str, int]:
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/dashboard/")
    assert response.status_code == 200
    return response.content.decode(), len(ctx.captured_queries)


def test_the_dashboard_shows_memory_health() -> None:
    workspace = WorkspaceFactory()
    reviewer = staff(workspace, Role.REVIEWER)
    _agent(workspace, "teller", cost="0.40")
    elsewhere = _agent(WorkspaceFactory(), "not-yours")
    page, _ = _page(reviewer)
    assert "Memory health" in page
    assert "MEMORY.md size, versions written per day" in page and "Largest" in page and ": 600 chars" in page
    assert "Consolidation spend per agent per day" in page and "teller" in page
    assert elsewhere.slug not in page
    assert '<p class="stat">3</p>' in page  # duplicates merged
    assert '<p class="stat">0.0%</p>' in page
    with looking_from(later(days=100)):
        old_page, _ = _page(reviewer)
    assert '<p class="stat">100.0%</p>' in old_page  # every file is past its 90-day TTL


def test_memory_health_costs_the_same_queries_for_many_agents() -> None:
    workspace = WorkspaceFactory()
    reviewer = staff(workspace, Role.REVIEWER)
    _agent(workspace, "a0")
    _, few = _page(reviewer)
    for i in range(1, 9):
        _agent(workspace, f"a{i}")
    page, many = _page(reviewer)
    assert many == few
    assert "3 other agents" in page  # six lines, the rest summed
