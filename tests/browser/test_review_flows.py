"""The review console in real Chromium: what a reviewer and an admin do,
end to end, and what the agent is served afterwards."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from memoryhub import services
from memoryhub.models import MemoryFile, Proposal, ProposalStatus, Role, Source, Strategy
from tests.browser.conftest import screenshot, sign_in
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory


@pytest.fixture
def world() -> dict[str, Any]:
    workspace = WorkspaceFactory(slug="acme", name="Acme Bank")
    agent = AgentFactory(workspace=workspace, slug="support-bot", name="Support bot", strategy=Strategy.FULL)
    services.write_memory(agent=agent, kind="SOUL.md", content="I am Penny, Acme Bank's careful support assistant.")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7", content="- Prefers email over phone.")
    session = services.start_session(agent=agent, user_ref="cust-7")
    entries = services.append_log(
        session=session,
        entries=[
            {"role": "user", "content": "Remember that I am moving to Berlin in March."},
            {"role": "note", "content": "Customer is moving to Berlin in March; update the address then."},
        ],
    )
    services.end_session(session=session)
    _, key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    return {
        "workspace": workspace,
        "agent": agent,
        "key": key,
        "evidence": [e.pk for e in entries],
        "admin": staff(workspace, Role.ADMIN, username="alice-admin"),
        "reviewer": staff(workspace, Role.REVIEWER, username="rita-reviewer"),
        "reviewer2": staff(workspace, Role.REVIEWER, username="rob-reviewer"),
    }


def consolidation_proposal(world: dict[str, Any]) -> Proposal:
    return services.propose_change(
        agent=world["agent"],
        kind="MEMORY.md",
        user_ref="cust-7",
        content="- Prefers email over phone.\n- Moving to Berlin in March; update the address then.",
        source=Source.CONSOLIDATION,
        reason="Consolidated from 1 session.",
        rationale=[{"kind": "add", "summary": "Add: moving to Berlin in March",
                    "reason": "The customer said so and the agent noted it.", "evidence": world["evidence"]}],
    )


def served_context(live_server: Any, key: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{live_server.url}/api/v1/context?user=cust-7", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_a_reviewer_approves_a_consolidation_proposal_and_the_agent_is_served_it(page, live_server, world):
    proposal = consolidation_proposal(world)
    assert "Berlin" not in served_context(live_server, world["key"])["system_prompt"]

    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name=f"Open proposal {proposal.pk}").click()
    page.wait_for_url(f"**/proposals/{proposal.pk}/")
    body = page.locator("main")
    assert "Moving to Berlin in March" in body.inner_text()  # the diff
    assert "Remember that I am moving to Berlin in March." in body.inner_text()  # the evidence

    page.get_by_role("button", name="Approve and serve").click()
    page.locator(".status .status-approved").wait_for()
    screenshot(page, "proposal-approved")
    assert page.console_errors == []  # no CSP violation, no script error

    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.APPROVED
    assert "Moving to Berlin in March" in served_context(live_server, world["key"])["system_prompt"]


def test_a_reviewer_rejects_with_a_comment(page, live_server, world):
    proposal = consolidation_proposal(world)
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    page.get_by_role("button", name="Reject", exact=True).click()  # the browser keeps an empty required comment back
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.PENDING
    page.get_by_label("Why reject?").fill("The move date is not confirmed yet.")
    page.get_by_role("button", name="Reject", exact=True).click()
    page.locator(".status .status-rejected").wait_for()
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decision_comment) == ("rejected", "The move date is not confirmed yet.")
    assert "Berlin" not in served_context(live_server, world["key"])["system_prompt"]


def test_a_reviewer_proposes_a_rollback_and_a_second_reviewer_approves_it(page, live_server, world):
    agent = world["agent"]
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7", content="- Prefers phone.",
                          reason="agent changed its mind")
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/agents/{agent.slug}/files/MEMORY.md/history/?user=cust-7")
    screenshot(page, "file-history")
    page.get_by_role("link", name="propose rollback to v1…").click()
    page.get_by_label("Reason").fill("The customer never asked for phone calls.")
    page.get_by_role("button", name="Propose rollback to v1").click()
    page.get_by_text("Another reviewer has to approve it").first.wait_for()
    rollback = Proposal.objects.get(source=Source.ROLLBACK)
    # One person's word changes nothing served.
    file = MemoryFile.objects.get(agent=agent, kind="MEMORY.md", user_ref="cust-7")
    assert (file.version, file.content) == (2, "- Prefers phone.")
    page.get_by_role("link", name=f"Open proposal #{rollback.pk} →").click()
    page.wait_for_url(f"**/proposals/{rollback.pk}/")
    assert page.get_by_role("button", name="Approve and serve").count() == 0
    assert page.get_by_role("button", name="Withdraw").count() == 1
    assert page.console_errors == []
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, live_server, "rob-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{rollback.pk}/")
    page.get_by_role("button", name="Approve and serve").click()
    page.locator(".status .status-approved").wait_for()
    file.refresh_from_db()
    assert (file.version, file.content) == (3, "- Prefers email over phone.")
    assert "Prefers email over phone." in served_context(live_server, world["key"])["system_prompt"]
    assert page.console_errors == []


def test_an_admin_edits_soul_and_a_different_reviewer_approves_it(page, live_server, world):
    agent = world["agent"]
    sign_in(page, live_server, "alice-admin", PASSWORD)
    page.goto(f"{live_server.url}/agents/{agent.slug}/")
    soul = page.get_by_label("Content of SOUL.md")
    soul.fill("I am Penny, Acme Bank's careful and warm support assistant.")
    page.locator("#persona").get_by_label("Reason for the change").first.fill("Warmer tone, per brand review.")
    page.get_by_role("button", name="Propose change to SOUL.md").click()
    page.get_by_text("another reviewer must approve it").wait_for()
    proposal = Proposal.objects.get(kind="SOUL.md", status=ProposalStatus.PENDING)
    assert (proposal.source, proposal.author_user) == (Source.ADMIN, world["admin"])

    # The author sees no Approve or Reject on their own change, only Withdraw.
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    page.get_by_text("someone else approves or rejects it (four-eyes rule)").wait_for()
    assert page.get_by_role("button", name="Approve and serve").count() == 0
    assert page.get_by_role("button", name="Reject", exact=True).count() == 0
    assert page.get_by_role("button", name="Withdraw").is_visible()
    assert "careful and warm" not in served_context(live_server, world["key"])["system_prompt"]
    assert page.console_errors == []
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, live_server, "rob-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    page.get_by_role("button", name="Approve and serve").click()
    page.locator(".status .status-approved").wait_for()
    assert "careful and warm" in served_context(live_server, world["key"])["system_prompt"]


def test_the_main_pages_render_with_the_demo_data(page, live_server):
    """Walks the demo as `make run` seeds it and saves the README screenshots."""
    from consolidation import services as consolidation
    from memoryhub.demo import seed_demo
    from memoryhub.models import Agent

    seed_demo()
    agent = Agent.objects.get(slug="support-bot")
    run, _ = consolidation.trigger_run(agent=agent, user_ref="cust-1042")
    assert consolidation.claim_run(run_id=run.pk)
    consolidation.execute_run(run_id=run.pk)

    sign_in(page, live_server, "reviewer", "demo-reviewer-pass")
    page.goto(f"{live_server.url}/")
    screenshot(page, "queue")
    oldest = Proposal.objects.filter(status=ProposalStatus.PENDING).order_by("created_at").first()
    page.goto(f"{live_server.url}/proposals/{oldest.pk}/")
    screenshot(page, "proposal")
    assert page.console_errors == []
    page.get_by_role("button", name="Sign out").click()

    sign_in(page, live_server, "admin", "demo-admin-pass")
    for path, name in [
        ("/agents/", "agents"),
        (f"/agents/{agent.slug}/", "agent"),
        (f"/agents/{agent.slug}/preview/?user=cust-1042", "context-preview"),
        (f"/agents/{agent.slug}/files/MEMORY.md/blame/?user=cust-1042", "file-blame"),
        ("/audit/", "audit"),
        ("/dashboard/", "dashboard"),
        ("/changes/", "changes"),
        ("/direct-writes/", "direct-writes"),
    ]:
        page.goto(f"{live_server.url}{path}")
        page.locator("main h1").first.wait_for()
        screenshot(page, name)
    assert page.console_errors == []
