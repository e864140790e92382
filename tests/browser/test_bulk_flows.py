"""Bulk decisions in real Chromium (issue 14): a reviewer ticks proposals in
the queue, one of them their own, and approves them with one reason code."""

from __future__ import annotations

import pytest

from memoryhub import services
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from tests.browser.conftest import screenshot, sign_in
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory


def test_a_bulk_approve_with_one_own_proposal_approves_the_rest_and_lists_the_refused_one(page, live_server):
    workspace = WorkspaceFactory(slug="acme")
    agent = AgentFactory(workspace=workspace, slug="support-bot")
    reviewer = staff(workspace, Role.REVIEWER, username="rita-reviewer")
    others = []
    for user in ("cust-1", "cust-2", "cust-3"):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user, content="- Prefers email.")
        others.append(services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user, source=Source.AGENT,
                                              content=f"- Prefers email.\n- Account manager for {user}: Dana.",
                                              author_agent=agent, reason="The customer said so."))
    own = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="cust-4", source=Source.REVIEWER,
                                  content="- Prefers phone.", author_user=reviewer, reason="Rita's own edit.")

    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    for proposal in [*others, own]:
        page.get_by_label(f"Select proposal {proposal.pk}").check()
    page.get_by_label("Reason code").select_option("accurate")
    page.get_by_label("Comment").fill("Checked against the tickets.")
    page.get_by_role("button", name="Approve ticked").click()
    page.wait_for_url("**/queue/bulk/")

    results = page.locator("#bulk-results")
    assert "3 approved, 1 refused" in results.inner_text()
    decided = page.locator(".bulk-done li")
    assert decided.count() == 3 and all("approved" in decided.nth(i).inner_text() for i in range(3))
    refused = page.locator(".bulk-refused li")
    assert refused.count() == 1
    assert f"Proposal #{own.pk}" in refused.inner_text() and "four_eyes" in refused.inner_text()
    assert "someone else has to decide it" in refused.inner_text()
    screenshot(page, "bulk-results")

    assert [Proposal.objects.get(pk=p.pk).status for p in others] == [ProposalStatus.APPROVED] * 3
    assert Proposal.objects.get(pk=own.pk).status == ProposalStatus.PENDING
    assert {Proposal.objects.get(pk=p.pk).reason_code for p in others} == {"accurate"}
    assert page.console_errors == []
