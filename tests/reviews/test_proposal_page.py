"""The proposal page: four-eyes made visible (no Approve/Reject for anyone
who wrote a revision, Withdraw for the author, no Approve over conflict
blocks), an edited proposal's diff against the original, and diffs
collapsed to their changes with "show all", change anchors and n/p keys."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import AuditEvent, MemoryFile, Proposal, ProposalStatus, Role, Source
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
FIFTY = "\n".join(f"- Account {1000 + n} is billed on day {n % 28 + 1}" for n in range(50)) + "\n"


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(proposal: Proposal) -> str:
    return f"/proposals/{proposal.pk}/"


def status_of(proposal: Proposal) -> str:
    proposal.refresh_from_db()
    return proposal.status


@pytest.fixture
def second(agent):
    return staff(agent.workspace, Role.REVIEWER)


@pytest.fixture
def own(agent, admin):
    services.write_memory(agent=agent, kind="SOUL.md", content="I am calm.")
    return services.propose_persona_edit(agent=agent, kind="SOUL.md", content="I am calm and kind.",
                                         reason="kinder", actor_user=admin)


def forms_on(page: str) -> set[str]:
    return {action for action in ("approve", "reject", "withdraw", "edit", "rebase")
            if f'name="action" value="{action}"' in page}


# --- four-eyes -------------------------------------------------------------------------------


def test_the_author_sees_withdraw_instead_of_approve_and_reject(own, admin, reviewer):
    assert forms_on(login(admin).get(url(own)).content.decode()) == {"withdraw", "edit"}
    assert forms_on(login(reviewer).get(url(own)).content.decode()) == {"approve", "reject", "edit"}


def test_the_author_withdraws_with_a_plain_post_and_nothing_is_served(agent, own, admin):
    client = login(admin)
    response = client.post(url(own), {"action": "withdraw", "comment": "not needed after all"})
    assert response.status_code == 302 and response.url == url(own)
    assert status_of(own) == ProposalStatus.WITHDRAWN
    page = client.get(url(own)).content.decode()
    assert "Withdrawn. Nothing served has changed." in page and "Withdrawn by its author" in page
    assert forms_on(page) == set()
    assert MemoryFile.objects.get(agent=agent, kind="SOUL.md").content == "I am calm."
    assert AuditEvent.objects.filter(action="proposal.withdraw", actor_user=admin).exists()


def test_the_author_withdraws_over_htmx_and_the_decision_fragment_swaps(own, admin):
    response = login(admin).post(url(own), {"action": "withdraw"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="decision"')
    assert "Withdrawn. Nothing served has changed." in body and "<html" not in body
    assert 'id="pending-badge" hx-swap-oob="innerHTML"' in body  # the header count follows
    assert status_of(own) == ProposalStatus.WITHDRAWN


def test_only_the_author_may_withdraw(own, reviewer):
    client = login(reviewer)
    plain = client.post(url(own), {"action": "withdraw"})
    assert plain.status_code == 403 and "Only the person who made a proposal" in plain.content.decode()
    fragment = client.post(url(own), {"action": "withdraw"}, **HTMX)
    assert fragment.status_code == 200 and "Only the person who made a proposal" in fragment.content.decode()
    assert status_of(own) == ProposalStatus.PENDING


def test_the_author_of_an_earlier_revision_sees_no_decision_either(agent, own, admin, reviewer, second):
    revision = services.revise_proposal(proposal_id=own.pk, reviewer=reviewer, content="I am calm, kind.")
    # The admin wrote the original, the reviewer the edit: neither decides it.
    for author in (admin, reviewer):
        page = login(author).get(url(revision)).content.decode()
        assert forms_on(page) & {"approve", "reject"} == set(), author
    assert "You wrote an earlier revision" in login(admin).get(url(revision)).content.decode()
    assert forms_on(login(reviewer).get(url(revision)).content.decode()) == {"withdraw", "edit"}
    assert forms_on(login(second).get(url(revision)).content.decode()) == {"approve", "reject", "edit"}
    assert login(admin).post(url(revision), {"action": "approve"}).status_code == 403
    assert login(second).post(url(revision), {"action": "approve"}).status_code == 302
    assert status_of(revision) == ProposalStatus.APPROVED


def test_an_auditor_sees_no_decision_forms_and_is_refused(agent, own):
    auditor = staff(agent.workspace, Role.AUDITOR)
    client = login(auditor)
    page = client.get(url(own)).content.decode()
    assert forms_on(page) == set() and "Read-only" in page
    for action in ("approve", "reject", "withdraw", "edit"):
        assert client.post(url(own), {"action": action, "comment": "x", "content": "y"}).status_code == 403, action
    assert status_of(own) == ProposalStatus.PENDING


# --- conflicts ---------------------------------------------------------------------------------


@pytest.fixture
def conflicted(agent, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- pays in EUR\n")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content="- pays in USD\n",
                                       source=Source.CONSOLIDATION)
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- pays in GBP\n")
    return services.rebase_proposal(proposal_id=proposal.pk, reviewer=reviewer)


def test_no_approve_button_while_conflict_blocks_remain(conflicted, second):
    assert "<<<<<<<" in conflicted.proposed_content
    client = login(second)
    page = client.get(url(conflicted)).content.decode()
    assert forms_on(page) == {"reject", "edit"}
    assert "still contains merge-conflict blocks. It cannot be approved" in page
    response = client.post(url(conflicted), {"action": "approve"})
    assert response.status_code == 409 and "merge-conflict blocks" in response.content.decode()
    assert status_of(conflicted) == ProposalStatus.PENDING


def test_a_rebased_proposal_shows_what_the_rebase_changed_as_well_as_the_change_to_the_file(conflicted, second):
    page = login(second).get(url(conflicted)).content.decode()
    assert f"What this revision changed in proposal #{conflicted.revises_id}" in page
    assert f"Proposal #{conflicted.revises_id}" in page and "This revision" in page
    assert 'id="revision-change-1"' in page


def test_an_edited_proposal_shows_the_edit_against_the_original(agent, reviewer, second):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n")
    original = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", source=Source.CONSOLIDATION,
                                       content="- likes tea\n- pays on Mondays\n")
    edit = services.revise_proposal(proposal_id=original.pk, reviewer=reviewer,
                                    content="- likes tea\n- pays on Fridays\n")
    page = login(second).get(url(edit)).content.decode()
    revision_part = page.split("What this revision changed", 1)[1]
    assert "<mark>Mondays</mark>" in revision_part and "<mark>Fridays</mark>" in revision_part
    before_part = page.split("What this revision changed", 1)[0]
    assert "Mondays" not in before_part  # the change to the file knows only the edit
    unified = login(second).get(url(edit) + "?view=unified", HTTP_HX_TARGET="diff", **HTMX).content.decode()
    assert unified.count("diff-unified") == 2


# --- diffs -------------------------------------------------------------------------------------


@pytest.fixture
def long_proposal(agent):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=FIFTY)
    lines = FIFTY.splitlines()
    content = "\n".join(lines[:19] + [lines[20].replace("day 21", "day 22")] + lines[21:]) + "\n"
    return services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content=content,
                                   source=Source.CONSOLIDATION)


def test_a_long_diff_is_collapsed_to_its_change_with_show_all(long_proposal, reviewer):
    client = login(reviewer)
    page = client.get(url(long_proposal)).content.decode()
    assert page.count('<tr class="row-equal"') == 6 and page.count('class="row-skip"') == 2
    assert "16 unchanged lines hidden" in page and "26 unchanged lines hidden" in page
    assert '<a href="?context=all" hx-get="?context=all" hx-target="#diff"' in page and "Show all 50 lines" in page
    whole = client.get(url(long_proposal), {"context": "all"}).content.decode()
    assert whole.count('<tr class="row-equal"') == 48 and "row-skip" not in whole
    assert "Hide unchanged lines" in whole
    fragment = client.get(url(long_proposal), {"context": "all", "view": "unified"}, HTTP_HX_TARGET="diff", **HTMX)
    body = fragment.content.decode()
    assert body.lstrip().startswith('<section id="diff"') and body.count('<tr class="row-equal"') == 48
    assert '?context=all&amp;view=split' in body  # the layout toggle keeps the whole diff


def test_the_deleted_line_stands_alone_on_its_row(long_proposal, reviewer):
    page = login(reviewer).get(url(long_proposal)).content.decode()
    deleted = page.split('<tr class="row-delete"', 1)[1].split("</tr>", 1)[0]
    assert "- Account 1019 is billed on day 20" in deleted and 'class="code blank"' in deleted
    edited = page.split('<tr class="row-replace"', 1)[1].split("</tr>", 1)[0]
    assert "<mark>21</mark>" in edited and "<mark>22</mark>" in edited and edited.count("<mark>") == 2


def test_each_change_block_is_an_anchor_with_next_and_previous_links(agent, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=FIFTY)
    content = FIFTY.replace("day 3\n", "day 4\n").replace("day 27\n", "day 26\n")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content=content,
                                       source=Source.CONSOLIDATION)
    page = login(reviewer).get(url(proposal)).content.decode()
    assert 'id="change-1" data-change-start="1"' in page and 'id="change-2" data-change-start="2"' in page
    assert 'data-change-nav="next"' in page and 'data-change-nav="prev"' in page
    assert '<a href="#change-2">2</a>' in page and "/static/js/diff-nav.js" in page
    assert 'aria-keyshortcuts="n"' in page and 'aria-keyshortcuts="p"' in page


def test_diff_cells_are_inert_containers(long_proposal, reviewer):
    page = login(reviewer).get(url(long_proposal)).content.decode()
    assert page.count('class="code side-old" hx-disable') >= 1
    assert page.count("<td class=\"code") == page.count("<td class=\"code side-old\" hx-disable>") + page.count(
        "<td class=\"code side-new\" hx-disable>") + page.count("<td class=\"code blank\" hx-disable>")


def test_the_history_link_encodes_the_user(agent, reviewer):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="a&b=c d", content="- x\n")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="a&b=c d", content="- y\n",
                                       source=Source.CONSOLIDATION)
    page = login(reviewer).get(url(proposal)).content.decode()
    assert f'href="/agents/{agent.slug}/files/MEMORY.md/history/?user=a%26b%3Dc+d"' in page
    history = login(reviewer).get(f"/agents/{agent.slug}/files/MEMORY.md/history/?user=a%26b%3Dc+d")
    assert history.status_code == 200 and "a&amp;b=c d" in history.content.decode()


def test_the_approve_form_asks_for_an_acknowledgement_of_special_personal_data() -> None:
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    proposal = services.propose_change(agent=agent, kind="USER.md", user_ref="u1", source=Source.CONSOLIDATION,
                                       reason="r", content="- Is allergic to penicillin.\n")
    client = login(reviewer)

    page = client.get(url(proposal)).content.decode()
    refused = client.post(url(proposal), {"action": "approve"}, **HTMX).content.decode()
    approved = client.post(url(proposal), {"action": "approve", "acknowledge_personal_data": "1"}, **HTMX)

    assert 'name="acknowledge_personal_data"' in page and "health data" in page
    assert "personal data of a special category" in refused and "Not done." in refused
    assert approved.status_code == 200 and Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.APPROVED
