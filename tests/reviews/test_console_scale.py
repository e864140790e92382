"""The queue, proposal and dashboard pages cost the same number of queries
with 10 pending proposals as with 1,000 (issue 14): every list is joined and
annotated in SQL, no row fetches another."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memoryhub import services
from memoryhub.models import Membership, Proposal, Role, Source
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db

TAGS = [[], ["deletions"], ["numbers_changed", "large_change"], ["persona_file"], ["agent_directed"]]


def add_pending(agents, claimers, count: int, start: int = 0) -> None:
    """`count` pending proposals spread over agents, files and users; every
    fifth shares its file with the one before (related work), every third
    is claimed. Made with one INSERT: a proposal is not a history-tracked row,
    and making 1,000 through the service would only test the service."""
    rows = []
    for i in range(start, start + count):
        agent = agents[i % len(agents)]
        rows.append(Proposal(
            agent=agent, user_ref=f"u{i - (i % 5 == 1)}", kind="MEMORY.md", base_version=0, base_content="",
            proposed_content=f"- fact {i}\n", diff=f"+- fact {i}", source=Source.AGENT, author_agent=agent,
            reason=f"Remember fact {i}", rationale=[{"kind": "add", "summary": f"fact {i}", "evidence": []}],
            risk_tags=TAGS[i % len(TAGS)], risk_level=min(2, len(TAGS[i % len(TAGS)])),
            claimed_by=claimers[i % len(claimers)] if i % 3 == 0 else None,
            claimed_by_username=claimers[i % len(claimers)].username if i % 3 == 0 else "",
        ))
    Proposal.objects.bulk_create(rows)


@pytest.fixture
def world():
    workspaces = [WorkspaceFactory(), WorkspaceFactory()]
    agents = [AgentFactory(workspace=ws) for ws in workspaces for _ in range(3)]
    reviewer = staff(workspaces[0], Role.ADMIN)
    staff_users = [reviewer, staff(workspaces[0], Role.REVIEWER)]
    Membership.objects.create(user=reviewer, workspace=workspaces[1], role=Role.REVIEWER)
    # A few decided proposals, for the dashboard's time to decision.
    for i in range(3):
        proposal = services.propose_change(agent=agents[0], kind="USER.md", user_ref=f"d{i}", content=f"- d {i}",
                                           source=Source.CONSOLIDATION)
        services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, reason_code="accurate")
    return {"agents": agents, "reviewer": reviewer, "claimers": staff_users}


PAGES = {
    "queue": lambda first: "/",
    "queue sorted by risk, mine": lambda first: "/?sort=risk&claimed=mine",
    "queue page 2": lambda first: "/?page=2",
    "proposal": lambda first: f"/proposals/{first}/",
    "dashboard": lambda first: "/dashboard/",
}


@pytest.mark.parametrize("name", PAGES)
def test_a_console_page_costs_the_same_queries_for_10_and_1000_pending(world, name):
    client = Client()
    client.force_login(world["reviewer"])
    add_pending(world["agents"], world["claimers"], 10)
    # The proposal looked at has related work: its file has another pending proposal.
    first = Proposal.objects.filter(user_ref="u0", kind="MEMORY.md").order_by("pk").first().pk
    assert Proposal.objects.filter(user_ref="u0", kind="MEMORY.md").count() == 2
    url = PAGES[name](first)

    def queries() -> tuple[int, list[str]]:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
            assert response.status_code == 200
        return len(ctx.captured_queries), [q["sql"] for q in ctx.captured_queries]

    few, _ = queries()
    add_pending(world["agents"], world["claimers"], 990, start=10)
    assert Proposal.objects.filter(status="pending").count() == 1000
    many, sql = queries()
    assert many == few, "\n".join(itertools.islice(sql, 0, 60))
