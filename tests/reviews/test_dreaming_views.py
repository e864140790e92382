"""What the console shows of dreaming: pairs that need attention (dashboard
and agent page, with a retry) and per-line evidence in blame."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from consolidation import services as consolidation
from consolidation.models import ConsolidationPair, RunStatus
from memoryhub import services
from memoryhub.models import Role, Source
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db(transaction=True)


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def stuck(scratch_queue, openai_server, settings):
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_TIMEOUT = 5.0
    agent = AgentFactory(consolidation_backend="llm")
    session = services.start_session(agent=agent, user_ref="u1")
    services.append_log(session=session, entries=[{"role": "note", "content": "CI runs on GitHub Actions"}])
    services.end_session(session=session)
    openai_server.reply_status(400, "This model's maximum context length is 8192 tokens.")
    run, _ = consolidation.trigger_run(agent=agent, user_ref="u1")
    assert consolidation.claim_run(run_id=run.pk)
    consolidation.execute_run(run_id=run.pk)
    assert ConsolidationPair.objects.get(agent=agent).needs_attention
    return agent


def test_the_dashboard_and_the_agent_page_show_a_pair_that_needs_attention(stuck):
    reviewer = staff(stuck.workspace, Role.REVIEWER)
    client = login(reviewer)

    dashboard = client.get("/dashboard/").content.decode()
    page = client.get(f"/agents/{stuck.slug}/").content.decode()

    for body in (dashboard, page):
        assert "Consolidation needs attention" in body and "maximum context length" in body
    assert "Retry now" in page


def test_retry_from_the_agent_page_clears_the_flag_and_queues_a_run(stuck):
    reviewer = staff(stuck.workspace, Role.REVIEWER)

    response = login(reviewer).post(f"/agents/{stuck.slug}/consolidate/", {"user": "u1"})

    assert response.status_code == 302
    assert not ConsolidationPair.objects.get(agent=stuck).needs_attention
    assert stuck.consolidation_runs.filter(status=RunStatus.QUEUED).count() == 1
    assert "Every pair is consolidating normally" in login(reviewer).get("/dashboard/").content.decode()


def test_an_auditor_sees_the_flag_but_cannot_retry(stuck):
    auditor = staff(stuck.workspace, Role.AUDITOR)
    page = login(auditor).get(f"/agents/{stuck.slug}/").content.decode()
    assert "maximum context length" in page and "Retry now" not in page


def test_blame_shows_for_each_line_only_what_was_cited_for_it():
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    session = services.start_session(agent=agent, user_ref="u1")
    tea, berlin = services.append_log(session=session, entries=[
        {"role": "user", "content": "I drink green tea."},
        {"role": "user", "content": "I am moving to Berlin."},
    ])
    proposal = services.propose_change(
        agent=agent, kind="USER.md", user_ref="u1", source=Source.CONSOLIDATION,
        content="- Drinks green tea.\n- Moving to Berlin.\n",
        rationale=[
            {"kind": "add", "file": "USER.md", "summary": "tea", "reason": "said so", "evidence": [tea.pk],
             "after": "Drinks green tea."},
            {"kind": "add", "file": "USER.md", "summary": "move", "reason": "said so", "evidence": [berlin.pk],
             "after": "Moving to Berlin."},
        ],
    )
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)

    body = login(reviewer).get(f"/agents/{agent.slug}/files/USER.md/blame/?user=u1").content.decode()

    tea_row = body[body.rindex("<tr", 0, body.index("Drinks green tea.")):body.index("</tr>", body.index("Drinks"))]
    berlin_row = body[body.rindex("<tr", 0, body.index("Moving to Berlin.")):body.index("</tr>",
                                                                                        body.index("Moving to"))]
    assert f"#{tea.pk}<" in tea_row and f"#{berlin.pk}<" not in tea_row
    assert f"#{berlin.pk}<" in berlin_row and f"#{tea.pk}<" not in berlin_row
