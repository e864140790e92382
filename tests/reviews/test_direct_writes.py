"""The Direct writes page: what agents under `direct` wrote without review
since a day, with diffs, and a withhold or a rollback proposal from each row.
Plain and htmx POSTs, roles, other workspaces, bounded queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub import selectors, services
from memoryhub.models import MemoryFile, Proposal, Role, Source, WritePolicy
from tests.clock import later, looking_from
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
PAGE = "/direct-writes/"


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def agent():
    return AgentFactory(slug="fast")  # under direct (tests.factories)


def write_two_versions(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n- lives in Oslo\n",
                          reason="first facts")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes coffee\n- lives in Oslo\n",
                          reason="changed drink")
    return MemoryFile.objects.get(agent=agent, kind="MEMORY.md", user_ref="u1")


@pytest.fixture
def writes(agent):
    return write_two_versions(agent)


def test_it_lists_direct_writes_newest_first_with_their_diff(agent, reviewer, writes):
    page = login(reviewer).get(PAGE).content.decode()
    assert page.count('class="card direct-write"') == 2
    assert page.index("changed drink") < page.index("first facts")
    newest = page.split('class="card direct-write"')[1]
    assert "v2" in newest and "by agent fast" in newest and "served now" in newest
    assert "<mark>tea</mark>" in newest and "<mark>coffee</mark>" in newest
    oldest = page.split('class="card direct-write"')[2]
    assert "since replaced (now v2)" in oldest and "Withhold v1" not in oldest


def test_it_leaves_out_reviewed_writes_other_sources_and_other_workspaces(agent, reviewer, writes):
    careful = AgentFactory(workspace=agent.workspace, slug="careful", write_policy=WritePolicy.REVIEW)
    proposal = services.write_memory(agent=careful, kind="MEMORY.md", user_ref="u1", content="- reviewed fact",
                                     reason="reviewed write").proposal
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    admin = staff(agent.workspace, Role.ADMIN)
    persona = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="soul", reason="persona",
                                            actor_user=admin)
    services.approve_proposal(proposal_id=persona.pk, reviewer=reviewer)
    stranger = AgentFactory(slug="stranger")
    services.write_memory(agent=stranger, kind="MEMORY.md", user_ref="u1", content="- elsewhere", reason="theirs")
    page = login(reviewer).get(PAGE).content.decode()
    assert page.count('class="card direct-write"') == 2
    assert "reviewed write" not in page and "persona" not in page.split('id="direct-writes"')[1]
    assert "theirs" not in page and "stranger" not in page


def test_it_filters_by_day_and_by_agent(agent, reviewer):
    # Written now and looked at ten days later (the database refuses
    # back-dated history rows), with the other writes made that later day.
    services.write_memory(agent=agent, kind="USER.md", user_ref="u2", content="- written long ago")
    with looking_from(later(days=10)):
        write_two_versions(agent)
        other = AgentFactory(workspace=agent.workspace, slug="other")
        services.write_memory(agent=other, kind="MEMORY.md", user_ref="u1", content="- other fact", reason="other's")
        client = login(reviewer)
        check_filters(client)


def check_filters(client: Client) -> None:
    page = client.get(PAGE).content.decode()
    week_ago = (timezone.localdate() - timedelta(days=7)).isoformat()
    assert f'name="since" value="{week_ago}"' in page and "3 direct writes since" in page
    assert "written long ago" not in page
    longer = client.get(PAGE, {"since": (timezone.localdate() - timedelta(days=11)).isoformat()}).content.decode()
    assert "written long ago" in longer and "4 direct writes" in longer
    only_other = client.get(PAGE, {"agent": "other"}, HTTP_HX_TARGET="direct-writes", **HTMX).content.decode()
    assert only_other.lstrip().startswith('<section id="direct-writes"') and "<html" not in only_other
    assert "other&#x27;s" in only_other and "changed drink" not in only_other
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert "No agent wrote directly since" in client.get(PAGE, {"since": tomorrow}).content.decode()
    bad = client.get(PAGE, {"since": "last week"})
    assert bad.status_code == 200 and "not understood" in bad.content.decode() and "3 direct writes" in (
        bad.content.decode())


def test_a_reviewer_withholds_from_a_row_with_a_plain_post(agent, reviewer, writes):
    form = {"action": "withhold", "row": "1", "agent": agent.slug, "file": "MEMORY.md", "user": "u1", "version": "2",
            "reason": "coffee is wrong"}
    client = login(reviewer)
    response = client.post(PAGE + "?agent=fast", form)
    assert response.status_code == 302 and response.url == PAGE + "?agent=fast"
    writes.refresh_from_db()
    assert writes.withheld_version == 2 and writes.withheld_reason == "coffee is wrong"
    page = client.get(response.url).content.decode()
    assert "Withheld: MEMORY.md v2 of fast is no longer served" in page
    assert '<span class="tag status-rejected">withheld</span>' in page


def test_a_reviewer_proposes_a_rollback_from_a_row_over_htmx(agent, reviewer, writes):
    row = selectors.direct_writes(reviewer, since=timezone.localdate()).first()
    form = {"action": "rollback", "row": str(row.history_id), "agent": agent.slug, "file": "MEMORY.md",
            "user": "u1", "version": "2", "reason": "coffee is wrong"}
    response = login(reviewer).post(PAGE, form, **HTMX)
    body = response.content.decode()
    rollback = Proposal.objects.get(source=Source.ROLLBACK)
    assert response.status_code == 200 and body.lstrip().startswith('<section id="direct-writes"')
    assert f"proposed as proposal #{rollback.pk}" in body and f'href="/proposals/{rollback.pk}/"' in body
    assert (rollback.rollback_to, rollback.proposed_content, rollback.author_user) == (
        1, "- likes tea\n- lives in Oslo\n", reviewer)
    writes.refresh_from_db()
    assert writes.version == 2  # nothing served changes until a second reviewer approves
    plain = login(reviewer).post(PAGE, {**form, "reason": "again"})
    assert plain.status_code == 302 and plain.url.startswith("/proposals/")


def test_a_row_action_needs_a_reason_and_shows_the_error_on_its_row(agent, reviewer, writes):
    row = selectors.direct_writes(reviewer, since=timezone.localdate()).first()
    form = {"action": "withhold", "row": str(row.history_id), "agent": agent.slug, "file": "MEMORY.md",
            "user": "u1", "version": "2", "reason": ""}
    fragment = login(reviewer).post(PAGE, form, **HTMX).content.decode()
    card = fragment.split(f'id="write-{row.history_id}"', 1)[1].split("</article>", 1)[0]
    assert "reason is required" in card and "<details open>" in card
    plain = login(reviewer).post(PAGE, form)
    assert plain.status_code == 400
    writes.refresh_from_db()
    assert not writes.is_withheld


def test_an_auditor_reads_the_page_but_cannot_act(agent, writes):
    auditor = staff(agent.workspace, Role.AUDITOR)
    client = login(auditor)
    page = client.get(PAGE).content.decode()
    assert "changed drink" in page and 'value="withhold"' not in page and 'value="rollback"' not in page
    form = {"action": "withhold", "agent": agent.slug, "file": "MEMORY.md", "user": "u1", "version": "2",
            "reason": "x"}
    assert client.post(PAGE, form).status_code == 403
    assert client.post(PAGE, {**form, "action": "rollback"}).status_code == 403
    writes.refresh_from_db()
    assert not writes.is_withheld and not Proposal.objects.exists()


def test_another_workspaces_agent_is_a_404(agent, writes):
    stranger = staff(AgentFactory().workspace, Role.REVIEWER)
    form = {"action": "withhold", "agent": agent.slug, "file": "MEMORY.md", "user": "u1", "version": "2",
            "reason": "x"}
    assert login(stranger).post(PAGE, form).status_code == 404
    assert "changed drink" not in login(stranger).get(PAGE).content.decode()
    writes.refresh_from_db()
    assert not writes.is_withheld


def test_the_page_costs_the_same_queries_for_one_write_or_a_page_of_them(agent, reviewer):
    client = login(reviewer)

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(PAGE).status_code == 200
        return len(ctx.captured_queries)

    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u0", content="- a")
    few = count()
    for i in range(1, 30):
        other = AgentFactory(workspace=agent.workspace)
        services.write_memory(agent=other, kind="MEMORY.md", user_ref=f"u{i}", content=f"- fact {i}")
        services.write_memory(agent=other, kind="MEMORY.md", user_ref=f"u{i}", content=f"- fact {i}, revised")
    assert count() == few
    assert "Page 1 of 3" in client.get(PAGE).content.decode()


def test_pages_need_a_login():
    assert Client().get(PAGE).status_code == 302
    assert Client().get("/changes/").status_code == 302
