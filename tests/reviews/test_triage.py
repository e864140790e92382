"""Triage without JavaScript: "Approve & next" / "Reject & next" stay in the
reviewer's filter and sort, the badge comes back out of band, a proposal's
timeline says who did what when and why, and the audit log links its
targets and reads as words, not a Python dict."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from memoryhub import selectors, services
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from tests.clock import later, looking_from
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def agent():
    return AgentFactory(slug="support-bot")


@pytest.fixture
def other_agent(agent):
    return AgentFactory(workspace=agent.workspace, slug="sales-bot")


@pytest.fixture
def reviewer(agent):
    return staff(agent.workspace, Role.REVIEWER, username="rita")


@pytest.fixture
def reviewer2(agent):
    return staff(agent.workspace, Role.REVIEWER, username="rob")


def propose(agent, user_ref: str, text: str) -> Proposal:
    return services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user_ref, content=f"- {text}\n",
                                   source=Source.CONSOLIDATION, reason=f"Learned: {text}")


@pytest.fixture
def queue(agent, other_agent):
    """Five pending proposals, oldest first: three for support-bot, two for sales-bot, interleaved."""
    return [
        propose(agent, "u1", "likes tea"),
        propose(other_agent, "u2", "likes coffee"),
        propose(agent, "u3", "lives in Oslo"),
        propose(other_agent, "u4", "lives in Rome"),
        propose(agent, "u5", "has a cat"),
    ]


# --- approve & next, reject & next -----------------------------------------------------------


def test_approve_and_next_goes_to_the_next_pending_proposal_in_the_same_filter(reviewer, queue):
    first, _, third, _, fifth = queue
    client = client_for(reviewer)
    response = client.post(f"/proposals/{first.pk}/?agent=support-bot", {"action": "approve", "next": "1"})
    assert response.status_code == 302
    assert response.url == f"/proposals/{third.pk}/?agent=support-bot"
    first.refresh_from_db()
    assert first.status == ProposalStatus.APPROVED
    # The next page carries the filter on, in its forms and in its "next" link.
    page = client.get(response.url).content.decode()
    assert f'action="/proposals/{third.pk}/?agent=support-bot"' in page
    assert f'href="/proposals/{fifth.pk}/?agent=support-bot" rel="next"' in page
    assert "Approved. MEMORY.md is now version 1." in page


def test_reject_and_next_needs_a_comment_and_then_moves_on(reviewer, queue):
    first, second = queue[0], queue[1]
    client = client_for(reviewer)
    refused = client.post(f"/proposals/{first.pk}/", {"action": "reject", "next": "1", "comment": ""})
    assert refused.status_code == 400
    assert "Not done." in refused.content.decode()
    assert Proposal.objects.get(pk=first.pk).status == ProposalStatus.PENDING

    response = client.post(f"/proposals/{first.pk}/", {"action": "reject", "next": "1", "comment": "Not said."})
    assert response.status_code == 302 and response.url == f"/proposals/{second.pk}/"
    assert Proposal.objects.get(pk=first.pk).decision_comment == "Not said."


def test_after_the_last_one_it_goes_back_to_one_still_waiting_and_then_to_the_queue(reviewer, queue):
    client = client_for(reviewer)
    skipped, *rest = [p for p in queue if p.agent.slug == "support-bot"]
    response = client.post(f"/proposals/{rest[-1].pk}/?agent=support-bot", {"action": "approve", "next": "1"})
    assert response.url == f"/proposals/{skipped.pk}/?agent=support-bot"  # skipped earlier, still waiting

    for proposal in (skipped, rest[0]):
        response = client.post(f"/proposals/{proposal.pk}/?agent=support-bot",
                               {"action": "reject", "comment": "no", "next": "1"})
    assert response.url == "/?agent=support-bot"
    assert "Nothing else is waiting in this filter." in client.get(response.url).content.decode()


def test_an_htmx_decision_with_next_redirects_the_client(reviewer, queue):
    response = client_for(reviewer).post(f"/proposals/{queue[0].pk}/", {"action": "approve", "next": "1"}, **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/proposals/{queue[1].pk}/"


def test_a_plain_htmx_decision_swaps_the_badge_out_of_band_and_offers_the_next_one(reviewer, queue):
    response = client_for(reviewer).post(f"/proposals/{queue[0].pk}/", {"action": "approve"}, **HTMX)
    body = response.content.decode()
    assert '<span id="pending-badge" hx-swap-oob="innerHTML">4<' in body
    assert f'id="next-after-decision" data-key="next-item">Next in queue: proposal #{queue[1].pk}' in body


def test_four_eyes_still_holds_for_approve_and_next(agent, reviewer, reviewer2):
    own = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content="- mine\n",
                                  source=Source.REVIEWER, author_user=reviewer)
    response = client_for(reviewer).post(f"/proposals/{own.pk}/", {"action": "approve", "next": "1"})
    assert response.status_code == 403
    assert Proposal.objects.get(pk=own.pk).status == ProposalStatus.PENDING


def test_the_queue_links_each_proposal_with_its_filter(reviewer, queue):
    page = client_for(reviewer).get("/?agent=sales-bot&page=1").content.decode()
    assert f'href="/proposals/{queue[1].pk}/?agent=sales-bot"' in page and "data-queue-row" in page
    plain = client_for(reviewer).get("/").content.decode()
    assert f'href="/proposals/{queue[0].pk}/" aria-label' in plain


def test_the_proposal_page_offers_the_shortcut_targets_without_javascript(reviewer, queue):
    page = client_for(reviewer).get(f"/proposals/{queue[2].pk}/").content.decode()
    assert 'data-key="approve" aria-keyshortcuts="a">Approve &amp; next</button>' in page
    assert 'id="reject-comment" name="comment" rows="2" required data-key="reject"' in page
    assert f'href="/proposals/{queue[1].pk}/" rel="prev"' in page
    assert f'href="/proposals/{queue[3].pk}/" rel="next"' in page
    assert '<dialog id="keys-help"' in page and "static/js/triage.js" in page


def test_the_neighbour_lookup_costs_the_same_for_a_long_queue(reviewer, agent, django_assert_max_num_queries):
    proposals = [propose(agent, f"u{i}", f"fact {i}") for i in range(30)]
    client = client_for(reviewer)
    client.get(f"/proposals/{proposals[1].pk}/")  # warm the session and caches
    with django_assert_max_num_queries(40) as small:
        client.get(f"/proposals/{proposals[1].pk}/")
    with django_assert_max_num_queries(len(small.captured_queries)):
        client.get(f"/proposals/{proposals[20].pk}/")


# --- the timeline -----------------------------------------------------------------------------------


def test_the_timeline_shows_each_step_with_who_when_and_why(agent, reviewer, reviewer2):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n")
    original = propose(agent, "u1", "likes green tea")
    revision = services.revise_proposal(proposal_id=original.pk, reviewer=reviewer, content="- likes jasmine tea\n",
                                        comment="It was jasmine.")
    services.approve_proposal(proposal_id=revision.pk, reviewer=reviewer2, comment="Checked the log.")
    services.withhold_file(agent=agent, kind="MEMORY.md", user_ref="u1", actor=reviewer,
                           reason="Customer complained.")

    steps = selectors.proposal_timeline(revision)
    assert [(s.step, s.proposal_id) for s in steps] == [
        ("created", original.pk), ("edited", original.pk), ("created", revision.pk),
        ("decided", revision.pk), ("served", revision.pk), ("withheld", revision.pk),
    ]
    edited, decided, withheld = steps[1], steps[3], steps[5]
    assert (edited.who, edited.comment, edited.detail) == ("rita", "It was jasmine.",
                                                           f"superseded by proposal #{revision.pk}")
    assert (decided.label, decided.who, decided.comment) == ("Approved", "rob", "Checked the log.")
    assert (withheld.label, withheld.comment) == ("Withheld from service (v2)", "Customer complained.")
    assert all(s.at is not None for s in steps)

    page = client_for(reviewer).get(f"/proposals/{revision.pk}/").content.decode()
    timeline = page[page.index('id="timeline"'):]
    for text in ("Created", "Edited by a reviewer", "Approved", "Served as v2", "Withheld from service (v2)",
                 "rob", "“Checked the log.”", "“It was jasmine.”", f"proposal #{original.pk}"):
        assert text in timeline
    assert timezone.localtime(decided.at).strftime("%Y-%m-%d %H:%M") in timeline


def test_the_timeline_shows_a_rejection_and_a_rollback(agent, reviewer, reviewer2):
    rejected = propose(agent, "u1", "likes tea")
    services.reject_proposal(proposal_id=rejected.pk, reviewer=reviewer, comment="Not what she said.")
    steps = selectors.proposal_timeline(rejected)
    assert [(s.label, s.who, s.comment) for s in steps][-1] == ("Rejected", "rita", "Not what she said.")

    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes water\n")
    approved = propose(agent, "u1", "likes coffee")
    services.approve_proposal(proposal_id=approved.pk, reviewer=reviewer)
    rollback = services.propose_rollback(agent=agent, kind="MEMORY.md", user_ref="u1", to_version=1,
                                         actor=reviewer, reason="Wrong customer.")
    services.approve_proposal(proposal_id=rollback.pk, reviewer=reviewer2, comment="Agreed.")
    steps = selectors.proposal_timeline(approved)
    assert steps[-1].step == "rolled_back"
    assert (steps[-1].label, steps[-1].who) == (f"Rolled back to v1 by proposal #{rollback.pk}", "rob")


def test_the_timeline_shows_a_consolidation_proposal_superseded_by_a_newer_run(agent):
    older = propose(agent, "u1", "likes tea")
    newer = propose(agent, "u1", "likes tea and cake")
    steps = selectors.proposal_timeline(older)
    assert ("superseded", older.pk, f"by the newer proposal #{newer.pk}") in [
        (s.step, s.proposal_id, s.detail) for s in steps
    ]


def test_the_timeline_costs_two_queries_however_long_the_chain(agent, reviewer, reviewer2,
                                                                django_assert_num_queries):
    proposal = propose(agent, "u1", "v0")
    for n in range(5):
        proposal = services.revise_proposal(proposal_id=proposal.pk, reviewer=reviewer if n % 2 else reviewer2,
                                            content=f"- v{n + 1}\n")
    with django_assert_num_queries(2):
        steps = selectors.proposal_timeline(proposal)
    assert len(steps) == 11  # six creations, five edits


def test_the_timeline_shows_a_rebase_onto_the_version_that_made_it_stale(agent, reviewer2):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- a\n")
    stale = propose(agent, "u1", "a and b")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- a\n- c\n")
    rebased = services.rebase_proposal(proposal_id=stale.pk, reviewer=reviewer2)
    steps = [(s.step, s.who, s.proposal_id) for s in selectors.proposal_timeline(rebased)]
    # The agent's write is what made it stale, and the timeline says so.
    assert steps == [("created", "consolidation run", stale.pk), ("stale", "agent support-bot", stale.pk),
                     ("rebased", "rob", stale.pk), ("created", "consolidation run", rebased.pk)]
    went_stale, rebase = selectors.proposal_timeline(rebased)[1:3]
    assert went_stale.detail == "the file moved to v2"
    assert rebase.detail == f"onto v2; superseded by proposal #{rebased.pk}" and "merged cleanly" in rebase.comment


# --- the audit log ----------------------------------------------------------------------------------


def test_the_audit_log_links_targets_and_reads_details_as_a_list(agent, reviewer, reviewer2):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u 1", content="- tea\n")
    proposal = propose(agent, "u 1", "coffee")
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, comment="Fine.")
    services.withhold_file(agent=agent, kind="MEMORY.md", user_ref="u 1", actor=reviewer2, reason="Oops")
    auditor = staff(agent.workspace, Role.AUDITOR)
    page = client_for(auditor).get("/audit/").content.decode()
    assert f'<a href="/proposals/{proposal.pk}/">Proposal #{proposal.pk}</a>' in page
    assert '<a href="/agents/support-bot/files/MEMORY.md/history/?user=u+1">MemoryFile #' in page
    assert "<dt>Comment</dt><dd>Fine.</dd>" in page
    assert "<dt>Base version</dt><dd>1</dd>" in page
    assert "{&#x27;" not in page and "{'" not in page  # no Python dict


def test_the_console_says_just_now_rather_than_zero_minutes(reviewer, queue):
    page = client_for(reviewer).get("/").content.decode()
    assert "just now" in page and "0\xa0minutes" not in page and "0 minutes" not in page
    with looking_from(later(hours=3)):
        page = client_for(reviewer).get("/").content.decode()
    assert "3\xa0hours ago" in page
