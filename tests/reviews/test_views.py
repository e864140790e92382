"""The review console pages: roles, four-eyes, stale proposals, rollback,
plain and htmx POSTs, CSP, and bounded queries on the queue."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memoryhub import services
from memoryhub.models import MemoryFile, Proposal, ProposalStatus, Role, Source
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

BASE = "# Memory\n- likes tea\n- lives in Oslo\n"
HTMX = {"HTTP_HX_REQUEST": "true"}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def auditor(agent):
    return staff(agent.workspace, Role.AUDITOR)


@pytest.fixture
def evidence(agent):
    session = services.start_session(agent=agent, user_ref="u1")
    return services.append_log(session=session, entries=[
        {"role": "user", "content": "I switched to green tea last month."},
    ])


@pytest.fixture
def proposal(agent, evidence):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE)
    return services.propose_change(
        agent=agent, kind="MEMORY.md", user_ref="u1", source=Source.CONSOLIDATION, reason="Tea preference changed",
        content=BASE.replace("likes tea", "likes green tea"),
        rationale=[{"kind": "update", "summary": "Tea preference", "reason": "The user said so.",
                    "evidence": [evidence[0].pk]}],
    )


@pytest.fixture
def other_workspace_proposal():
    other = AgentFactory()
    services.write_memory(agent=other, kind="SOUL.md", content="other soul")
    return services.propose_change(agent=other, kind="SOUL.md", content="secret change", source=Source.CONSOLIDATION)


def url(proposal: Proposal) -> str:
    return f"/proposals/{proposal.pk}/"


def status_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.status


# --- sign-in, layout, CSP -------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_the_login_page():
    response = Client().get("/")
    assert response.status_code == 302 and response.url.startswith("/login/")
    assert Client().get("/login/").status_code == 200


def test_it_signs_in_with_a_password_and_out_with_a_post_only(reviewer):
    client = Client()
    response = client.post("/login/", {"username": reviewer.username, "password": "pw-for-tests-1"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_it_sends_a_strict_content_security_policy(settings, reviewer, proposal):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "reviews.middleware.ContentSecurityPolicyMiddleware"]
    response = client_for(reviewer).get(url(proposal))
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    body = response.content.decode()
    assert "<script>" not in body and "style=" not in body
    assert '"includeIndicatorStyles": false' in body and 'hx-headers=\'{"x-csrftoken": "' in body
    assert '"allowScriptTags": false' in body and '"selfRequestsOnly": true' in body
    assert "{#" not in body and "#}" not in body  # a template comment that leaked would end <head> early


def test_it_shows_the_pending_count_badge(reviewer, proposal):
    response = client_for(reviewer).get("/queue/badge/")
    assert response.status_code == 200 and "1" in response.content.decode()


# --- queue ---------------------------------------------------------------------------------


def test_it_lists_pending_proposals_oldest_first_with_counts(agent, reviewer, proposal):
    services.write_memory(agent=agent, kind="SOUL.md", content="soul v1")
    second = services.propose_change(agent=agent, kind="SOUL.md", content="soul v2", source=Source.ADMIN,
                                     reason="warmer")
    body = client_for(reviewer).get("/").content.decode()
    assert body.index(f"/proposals/{proposal.pk}/") < body.index(f"/proposals/{second.pk}/")
    assert "<strong>2</strong> pending" in body and "<strong>0</strong> gone stale" in body


def test_it_filters_the_queue_and_serves_the_list_fragment_to_htmx(agent, reviewer, proposal):
    services.write_memory(agent=agent, kind="SOUL.md", content="soul v1")
    soul = services.propose_change(agent=agent, kind="SOUL.md", content="soul v2", source=Source.ADMIN)
    client = client_for(reviewer)
    body = client.get("/", {"file": "SOUL.md"}).content.decode()
    assert f"/proposals/{soul.pk}/" in body and f"/proposals/{proposal.pk}/" not in body
    body = client.get("/", {"source": "consolidation", "user": "u1"}).content.decode()
    assert f"/proposals/{proposal.pk}/" in body and f"/proposals/{soul.pk}/" not in body
    assert f"/proposals/{proposal.pk}/" not in client.get("/", {"older_than": "5"}).content.decode()
    fragment = client.get("/", {"agent": agent.slug}, HTTP_HX_TARGET="proposal-list", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="proposal-list"') and "<html" not in fragment


def test_it_hides_other_workspaces_from_the_queue(reviewer, proposal, other_workspace_proposal):
    body = client_for(reviewer).get("/").content.decode()
    assert f"/proposals/{other_workspace_proposal.pk}/" not in body


def test_it_queries_the_queue_in_bounded_numbers(agent, reviewer):
    client = client_for(reviewer)

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/").status_code == 200
        return len(ctx.captured_queries)

    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u0", content="x")
    services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u0", content="y", source=Source.CONSOLIDATION)
    few = queries()
    for i in range(1, 21):
        other = AgentFactory(workspace=agent.workspace)
        services.propose_change(agent=other, kind="MEMORY.md", user_ref=f"u{i}", content=f"- fact {i}",
                                source=Source.AGENT, author_agent=other)
    assert queries() == few


def test_it_paginates_the_queue_25_a_page(agent, reviewer):
    for i in range(27):
        services.propose_change(agent=agent, kind="MEMORY.md", user_ref=f"u{i}", content="- x",
                                source=Source.CONSOLIDATION)
    client = client_for(reviewer)
    assert client.get("/").content.decode().count("/proposals/") == 25
    assert client.get("/", {"page": 2}).content.decode().count("/proposals/") == 2


# --- proposal page ---------------------------------------------------------------------


def test_it_shows_the_diff_evidence_scanner_and_sizes(reviewer, proposal, evidence):
    body = client_for(reviewer).get(url(proposal)).content.decode()
    assert "<mark>green </mark>" in body or "<mark>green</mark>" in body
    assert "Tea preference" in body and "The user said so." in body
    assert f"/sessions/{evidence[0].session_id}/#entry-{evidence[0].pk}" in body
    assert "I switched to green tea last month." in body
    assert "No findings" in body and "5,000" in body


def test_it_serves_the_unified_diff_as_a_fragment(reviewer, proposal):
    response = client_for(reviewer).get(url(proposal) + "?view=unified", HTTP_HX_TARGET="diff", **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="diff"') and "diff-unified" in body


def test_it_does_not_show_evidence_from_another_users_log(agent, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE)
    session = services.start_session(agent=agent, user_ref="u2")
    secret = services.append_log(session=session, entries=[{"role": "user", "content": "u2 private detail"}])
    forged = services.propose_change(
        agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE + "- x\n", source=Source.CONSOLIDATION,
        rationale=[{"kind": "add", "summary": "x", "reason": "y", "evidence": [secret[0].pk]}],
    )
    body = client_for(reviewer).get(url(forged)).content.decode()
    assert "u2 private detail" not in body and "not found for this agent and user" in body


def test_it_shows_a_session_log_and_hides_other_workspaces_sessions(reviewer, evidence, other_workspace_proposal):
    client = client_for(reviewer)
    body = client.get(f"/sessions/{evidence[0].session_id}/").content.decode()
    assert f'id="entry-{evidence[0].pk}"' in body
    other_session = services.start_session(agent=other_workspace_proposal.agent, user_ref="x")
    assert client.get(f"/sessions/{other_session.pk}/").status_code == 404


@pytest.mark.parametrize("role, can_decide", [(Role.REVIEWER, True), (Role.ADMIN, True), (Role.AUDITOR, False)])
def test_it_lets_each_role_view_and_only_reviewers_and_admins_decide(agent, proposal, role, can_decide):
    user = staff(agent.workspace, role)
    client = client_for(user)
    assert client.get("/").status_code == 200
    page = client.get(url(proposal))
    assert page.status_code == 200
    assert ('value="approve"' in page.content.decode()) is can_decide
    response = client.post(url(proposal), {"action": "approve"})
    if can_decide:
        assert response.status_code == 302 and status_of(proposal) == ProposalStatus.APPROVED
    else:
        assert response.status_code == 403 and "does not allow" in response.content.decode()
        assert status_of(proposal) == ProposalStatus.PENDING


@pytest.mark.parametrize("role, allowed", [(Role.REVIEWER, True), (Role.ADMIN, True), (Role.AUDITOR, False)])
def test_it_lets_only_reviewers_and_admins_reject_and_edit(agent, proposal, role, allowed):
    client = client_for(staff(agent.workspace, role))
    reject = client.post(url(proposal), {"action": "reject", "comment": "no"})
    assert reject.status_code == (302 if allowed else 403)
    assert status_of(proposal) == (ProposalStatus.REJECTED if allowed else ProposalStatus.PENDING)
    services.write_memory(agent=agent, kind="SOUL.md", content="soul v1")
    soul = services.propose_change(agent=agent, kind="SOUL.md", content="soul v2", source=Source.CONSOLIDATION)
    edit = client.post(url(soul), {"action": "edit", "content": "soul v2, edited"})
    assert edit.status_code == (302 if allowed else 403)
    assert status_of(soul) == (ProposalStatus.SUPERSEDED if allowed else ProposalStatus.PENDING)


def test_it_answers_404_for_another_workspaces_proposal_and_agent(reviewer, other_workspace_proposal):
    client = client_for(reviewer)
    assert client.get(url(other_workspace_proposal)).status_code == 404
    assert client.post(url(other_workspace_proposal), {"action": "approve"}).status_code == 404
    assert status_of(other_workspace_proposal) == ProposalStatus.PENDING
    slug = other_workspace_proposal.agent.slug
    assert client.get(f"/agents/{slug}/files/SOUL.md/history/").status_code == 404
    assert client.get(f"/agents/{slug}/files/SOUL.md/blame/").status_code == 404
    assert client.post(f"/agents/{slug}/files/SOUL.md/history/",
                       {"action": "rollback", "version": 1, "reason": "x"}).status_code == 404


def test_it_shows_four_eyes_as_an_error_and_changes_nothing(agent, admin):
    services.write_memory(agent=agent, kind="SOUL.md", content="soul v1")
    own = services.propose_change(agent=agent, kind="SOUL.md", content="soul v2", source=Source.ADMIN,
                                  author_user=admin)
    client = client_for(admin)
    page = client.get(url(own)).content.decode()
    assert "someone else approves or rejects it (four-eyes rule)" in page
    assert 'value="approve"' not in page and 'value="reject"' not in page and 'value="withdraw"' in page
    # A forged POST meets the same rule in the service.
    response = client.post(url(own), {"action": "approve"})
    assert response.status_code == 403 and "four-eyes" in response.content.decode()
    fragment = client.post(url(own), {"action": "approve"}, **HTMX)
    assert fragment.status_code == 200 and "four-eyes" in fragment.content.decode()
    assert fragment.content.decode().lstrip().startswith('<section id="decision"')
    assert status_of(own) == ProposalStatus.PENDING
    assert MemoryFile.objects.get(agent=agent, kind="SOUL.md").content == "soul v1"


def test_it_refuses_a_reject_without_a_comment(reviewer, proposal):
    client = client_for(reviewer)
    page = client.get(url(proposal)).content.decode()
    assert 'name="comment" rows="2" required' in page
    response = client.post(url(proposal), {"action": "reject", "comment": "  "})
    assert response.status_code == 400
    assert "saying why you reject this proposal is required" in response.content.decode()
    assert status_of(proposal) == ProposalStatus.PENDING


def test_it_refuses_to_approve_a_stale_proposal_and_offers_a_rebase(agent, reviewer, proposal):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE + "- new fact\n")
    client = client_for(reviewer)
    page = client.get(url(proposal)).content.decode()
    assert "This proposal is stale" in page and 'value="rebase"' in page and 'value="approve"' not in page
    response = client.post(url(proposal), {"action": "approve"})
    assert response.status_code == 409 and "Rebase the proposal" in response.content.decode()
    assert MemoryFile.objects.get(agent=agent, kind="MEMORY.md").content == BASE + "- new fact\n"

    rebase = client.post(url(proposal), {"action": "rebase"})
    rebased = Proposal.objects.get(status=ProposalStatus.PENDING)
    assert rebase.status_code == 302 and rebase.url == url(rebased)
    assert status_of(proposal) == ProposalStatus.SUPERSEDED
    assert rebased.proposed_content == "# Memory\n- likes green tea\n- lives in Oslo\n- new fact\n"
    assert client.post(url(rebased), {"action": "approve"}).status_code == 302
    assert status_of(rebased) == ProposalStatus.APPROVED


def test_it_rebases_over_htmx_with_a_client_redirect(agent, reviewer, proposal):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=BASE + "- new fact\n")
    response = client_for(reviewer).post(url(proposal), {"action": "rebase"}, **HTMX)
    rebased = Proposal.objects.get(status=ProposalStatus.PENDING)
    assert response.status_code == 200 and response["HX-Redirect"] == url(rebased)


@pytest.mark.parametrize("action, data", [
    ("approve", {"comment": "fine"}),
    ("reject", {"comment": "not supported by the log"}),
    ("edit", {"content": BASE + "- edited\n", "comment": "tightened"}),
])
def test_it_answers_a_plain_post_with_a_redirect_and_htmx_with_a_fragment(reviewer, proposal, action, data):
    client = client_for(reviewer)
    plain = client.post(url(proposal), {"action": action, **data})
    assert plain.status_code == 302
    followed = client.get(plain.url).content.decode()
    assert 'class="notice notice-success"' in followed


@pytest.mark.parametrize("action, data, expected", [
    ("approve", {"comment": "fine"}, "Approved."),
    ("reject", {"comment": "not supported by the log"}, "Rejected."),
])
def test_it_swaps_the_decision_fragment_for_an_htmx_post(reviewer, proposal, action, data, expected):
    response = client_for(reviewer).post(url(proposal), {"action": action, **data}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="decision"')
    assert expected in body and "<html" not in body


def test_it_sends_an_htmx_edit_to_the_new_proposal(reviewer, proposal):
    response = client_for(reviewer).post(url(proposal), {"action": "edit", "content": BASE + "- e\n"}, **HTMX)
    revision = Proposal.objects.get(status=ProposalStatus.PENDING)
    assert response.status_code == 200 and response["HX-Redirect"] == url(revision)
    assert revision.author_user == reviewer and revision.source == Source.REVIEWER


# --- history, blame, rollback ----------------------------------------------------------------


@pytest.fixture
def soul_history(agent, admin, reviewer):
    services.write_memory(agent=agent, kind="SOUL.md", content="You are calm.\nYou are brief.\n")
    p = services.propose_change(agent=agent, kind="SOUL.md", content="You are calm.\nYou are kind.\n",
                                source=Source.ADMIN, author_user=admin, reason="kinder")
    services.approve_proposal(proposal_id=p.pk, reviewer=reviewer)
    return p


def history(agent) -> str:
    return f"/agents/{agent.slug}/files/SOUL.md/history/"


def test_it_shows_the_history_timeline_and_a_diff_between_versions(agent, reviewer, soul_history):
    client = client_for(reviewer)
    body = client.get(history(agent)).content.decode()
    assert "v2" in body and "v1" in body and f"/proposals/{soul_history.pk}/" in body
    assert f"approved by {reviewer.username}" in body and "kinder" in body
    fragment = client.get(history(agent), {"a": 1, "b": 2}, HTTP_HX_TARGET="version-diff", **HTMX)
    text = fragment.content.decode()
    assert text.lstrip().startswith('<section id="version-diff"') and "<mark>kind</mark>" in text


def test_it_blames_each_line_on_its_version_and_proposal(agent, reviewer, soul_history):
    body = client_for(reviewer).get(f"/agents/{agent.slug}/files/SOUL.md/blame/").content.decode()
    assert f"/proposals/{soul_history.pk}/" in body
    assert body.index("v1</a>") < body.index("You are calm.") < body.index("v2</a>") < body.index("You are kind.")


def test_blame_credits_an_approved_rollback_like_a_revert(agent, admin, reviewer, soul_history):
    # v2 only changed one line; rolling back to v1 restores "brief" and keeps "calm".
    second = staff(agent.workspace, Role.REVIEWER, username="second-reviewer")
    rollback = services.propose_rollback(agent=agent, kind="SOUL.md", to_version=1, actor=reviewer, reason="undo")
    services.approve_proposal(proposal_id=rollback.pk, reviewer=second)
    body = client_for(reviewer).get(f"/agents/{agent.slug}/files/SOUL.md/blame/").content.decode()
    rows = body[body.index("<tbody>"):body.index("</tbody>")].split("<tr")[1:]
    assert len(rows) == 2
    # Every served line is the rollback's: its version, who asked and who approved it ...
    assert "v3</a>" in rows[0] and "rollback to v1" in rows[0] and f"user:{reviewer.username}" in rows[0]
    assert f"#{rollback.pk}</a> · approved by second-reviewer" in rows[0]
    # ... and each still names the version that first wrote it.
    assert all("written in" in row and "v1</a> by agent:" in row for row in rows)
    assert "You are calm." in rows[0] and "You are brief." in rows[1]
    assert "v2</a>" not in body.split("<tbody>")[1]


def test_it_confirms_then_rolls_back_with_a_reason(agent, reviewer, soul_history):
    client = client_for(reviewer)
    confirm = client.get(history(agent), {"rollback": 1}).content.decode()
    assert "Propose rolling SOUL.md back to the content of version 1?" in confirm and 'name="reason"' in confirm
    assert "another reviewer approves it before that content is served" in confirm
    response = client.post(history(agent), {"action": "rollback", "version": 1, "reason": "too soft"})
    rollback = Proposal.objects.get(source="rollback")
    assert response.status_code == 302 and response.url == url(rollback)
    assert (rollback.rollback_to, rollback.proposed_content, rollback.author_user) == (
        1, "You are calm.\nYou are brief.\n", reviewer)
    # Nothing is served until a second reviewer approves the rollback.
    assert MemoryFile.objects.get(agent=agent, kind="SOUL.md").version == 2


def test_it_refuses_a_rollback_without_a_reason(agent, reviewer, soul_history):
    response = client_for(reviewer).post(history(agent), {"action": "rollback", "version": 1, "reason": ""})
    assert response.status_code == 400 and "reason for a rollback is required" in response.content.decode()
    assert MemoryFile.objects.get(agent=agent, kind="SOUL.md").version == 2


def test_it_rolls_back_over_htmx_and_swaps_the_timeline(agent, reviewer, soul_history):
    response = client_for(reviewer).post(history(agent), {"action": "rollback", "version": 1, "reason": "undo"},
                                         **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="timeline"')
    assert "Another reviewer has to approve it" in body


@pytest.mark.parametrize("role, allowed", [(Role.REVIEWER, True), (Role.ADMIN, True), (Role.AUDITOR, False)])
def test_it_lets_only_reviewers_and_admins_roll_back(agent, soul_history, role, allowed):
    client = client_for(staff(agent.workspace, role))
    assert client.get(history(agent)).status_code == 200
    assert ("propose rollback to v1" in client.get(history(agent)).content.decode()) is allowed
    response = client.post(history(agent), {"action": "rollback", "version": 1, "reason": "r"})
    assert response.status_code == (302 if allowed else 403)
    assert Proposal.objects.filter(source="rollback").exists() is allowed
