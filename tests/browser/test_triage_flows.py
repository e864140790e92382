"""Keyboard triage and phones in real Chromium: a reviewer clears a queue
with the keyboard alone, focus lands on the next item after every
decision, the badge follows at once, ? opens the help, and at 390×844
the queue and proposal pages fit (cards, unified diff)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub import services
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from tests.browser.conftest import screenshot, sign_in
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory
PHONE = {"width": 390, "height": 844}

FACTS = [
    ("cust-1", "Prefers email over phone; send statements as PDF."),
    ("cust-2", "Moving to Berlin in March; update the postal address then."),
    ("cust-3", "Account 4411 is a joint account with her husband."),
    ("cust-4", "Asked twice about the overdraft fee refund (ticket 8812)."),
    ("cust-5", "Speaks German and English; prefers German on the phone."),
]


@pytest.fixture
def world() -> dict[str, Any]:
    workspace = WorkspaceFactory(slug="acme", name="Acme Bank")
    agent = AgentFactory(workspace=workspace, slug="support-bot", name="Support bot")
    proposals = []
    for user_ref, fact in FACTS:
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user_ref,
                              content="# Memory\n- Customer since 2019.\n- Has a savings account.\n")
        proposals.append(services.propose_change(
            agent=agent, kind="MEMORY.md", user_ref=user_ref, source=Source.CONSOLIDATION,
            content=f"# Memory\n- Customer since 2019.\n- Has a savings account.\n- {fact}\n",
            reason=f"Consolidated from 2 sessions: {fact}",
            rationale=[{"kind": "add", "summary": f"Add: {fact}", "reason": "The customer said so.",
                        "evidence": []}],
        ))
    return {"agent": agent, "proposals": proposals,
            "reviewer": staff(workspace, Role.REVIEWER, username="rita-reviewer")}


def active(page: Any) -> str:
    """What has the focus: its id, or its tag and text."""
    return str(page.evaluate(
        "() => { const e = document.activeElement;"
        " return e.id || (e.tagName.toLowerCase() + ':' + (e.textContent || '').trim().slice(0, 60)); }"
    ))


def badge(page: Any) -> str:
    return str(page.locator("#pending-badge").inner_text()).replace("pending", "").strip()


def test_a_reviewer_clears_five_proposals_with_the_keyboard_alone(page, live_server, world):
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    page.keyboard.press("j")
    assert active(page).startswith("a:#")  # the first row's link
    assert page.locator("tr.is-current").count() == 1
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("o")
    first = world["proposals"][0]
    page.wait_for_url(f"**/proposals/{first.pk}/")

    for n, proposal in enumerate(world["proposals"]):
        assert page.url.endswith(f"/proposals/{proposal.pk}/")
        if n % 2 == 0:
            page.keyboard.press("a")
            assert active(page) == "button:Approve & next"
            page.keyboard.press("Enter")
        else:
            page.keyboard.press("r")
            assert active(page) == "reject-comment"
            page.keyboard.type("Not confirmed by the customer.")  # "a" and "r" in here are just letters
            page.keyboard.press("Control+Enter")
        page.wait_for_load_state()
        if n < len(world["proposals"]) - 1:
            page.wait_for_url(f"**/proposals/{world['proposals'][n + 1].pk}/")
            # Focus lands on the next proposal, not on <body>.
            page.wait_for_function("() => document.activeElement.id === 'proposal-title'")
            page.wait_for_function("n => document.querySelector('#pending-badge').textContent.trim()"
                                   ".startsWith(String(n))", arg=len(world["proposals"]) - n - 1)
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_text("Nothing else is waiting in this filter.").wait_for()
    assert active(page) in ("H1:Review queue".lower(), "h1:Review queue")

    statuses = [Proposal.objects.get(pk=p.pk) for p in world["proposals"]]
    assert [p.status for p in statuses] == ["approved", "rejected", "approved", "rejected", "approved"]
    assert statuses[1].decision_comment == "Not confirmed by the customer."
    assert {p.decided_by_username for p in statuses} == {"rita-reviewer"}
    assert page.console_errors == []


def test_r_goes_to_the_comment_and_rejects_nothing_blind(page, live_server, world):
    proposal = world["proposals"][0]
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    page.keyboard.press("r")
    assert active(page) == "reject-comment"
    page.keyboard.press("Control+Enter")  # empty comment: the browser holds the form back
    page.wait_for_timeout(300)
    assert Proposal.objects.get(pk=proposal.pk).status == ProposalStatus.PENDING
    assert page.url.endswith(f"/proposals/{proposal.pk}/")
    page.keyboard.type("jkaeow?")  # keys typed into a field stay there
    assert page.locator("#reject-comment").input_value() == "jkaeow?"
    assert page.locator("dialog[open]").count() == 0


def test_a_plain_approve_updates_the_badge_at_once_and_focuses_the_next_one(page, live_server, world):
    first, second = world["proposals"][:2]
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{first.pk}/")
    page.wait_for_function("() => document.querySelector('#pending-badge').textContent.trim() !== ''")
    assert badge(page) == "5"
    page.get_by_role("button", name="Approve and serve").click()
    page.locator(".status .status-approved").wait_for()
    assert badge(page) == "4"  # out of band, not after the 30-second poll
    page.wait_for_function("() => document.activeElement.id === 'next-after-decision'")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/proposals/{second.pk}/")
    assert page.console_errors == []


def test_question_mark_opens_the_help_dialog(page, live_server, world):
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{world['proposals'][0].pk}/")
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    dialog.wait_for()
    assert "Next / previous change in the diff" in dialog.inner_text()
    assert active(page) == "button:Close"
    page.keyboard.press("a")  # the dialog has the keyboard: nothing moves behind it
    assert active(page) == "button:Close"
    screenshot(page, "keyboard-help")
    page.keyboard.press("Escape")
    assert page.locator("dialog[open]").count() == 0
    page.get_by_role("button", name="Keyboard shortcuts").click()
    dialog.wait_for()
    page.get_by_role("button", name="Close").click()
    assert page.locator("dialog[open]").count() == 0
    assert page.console_errors == []


def test_e_opens_the_editor_and_w_the_withhold_form(page, live_server, world):
    proposal = world["proposals"][0]
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{proposal.pk}/")
    page.keyboard.press("e")
    assert active(page) == "edit-content"
    page.keyboard.press("Escape")
    page.locator("#edit-content").blur()
    page.keyboard.press("w")
    page.wait_for_url("**/history/?user=cust-1#withhold")
    page.wait_for_load_state()
    page.wait_for_function("() => document.activeElement.id === 'withhold-reason'")


def test_the_header_focus_ring_stands_out_on_the_dark_header(page, live_server, world):
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    page.keyboard.press("Tab")  # skip link
    page.keyboard.press("Tab")  # the brand, in the header
    ratio = page.evaluate("""() => {
      const lum = c => { const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(v => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
      const ring = getComputedStyle(document.activeElement).outlineColor;
      const header = getComputedStyle(document.querySelector('.site-header')).backgroundColor;
      const [a, b] = [lum(ring), lum(header)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05);
    }""")
    assert page.evaluate("() => !!document.activeElement.closest('.site-header')")
    assert ratio >= 3


def test_the_queue_and_a_proposal_fit_a_phone(browser, live_server, world):
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    no_sideways = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    assert page.evaluate(no_sideways)
    assert page.get_by_role("button", name="Sign out").is_visible()
    assert page.evaluate("() => getComputedStyle(document.querySelector('table.queue tr')).display") == "block"
    screenshot(page, "queue-phone")
    # The whole card is the link: a tap on the reason text opens the proposal.
    first = world["proposals"][0]
    page.locator("td.reason").first.scroll_into_view_if_needed()
    box = page.locator("td.reason").first.bounding_box()
    page.mouse.click(box["x"] + 10, box["y"] + box["height"] / 2)
    page.wait_for_url(f"**/proposals/{first.pk}/")
    # Phones get the unified diff unless the reviewer chose a layout.
    page.locator('#diff .toggle a[aria-current="true"]', has_text="Unified").wait_for()
    assert page.locator("table.diff-unified").count() >= 1
    assert page.evaluate(no_sideways)
    screenshot(page, "proposal-phone")
    page.goto(f"{live_server.url}/proposals/{first.pk}/?view=split")
    assert page.locator("table.diff-split").count() >= 1
    assert page.evaluate(no_sideways)
    assert errors == []
    context.close()


WRAPPED_WORDS = """() => {
  // Words (numbers, encodings) in the size table that the layout broke across lines.
  const broken = [];
  for (const cell of document.querySelectorAll('table.size th, table.size td')) {
    for (const node of cell.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
      for (const word of node.textContent.trim().split(/\\s+/)) {
        const start = node.textContent.indexOf(word);
        const range = document.createRange();
        range.setStart(node, start);
        range.setEnd(node, start + word.length);
        if (range.getClientRects().length > 1) broken.push(word);
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [390, 1000])
def test_the_size_table_never_breaks_a_word(browser, live_server, world, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/proposals/{world['proposals'][0].pk}/")
    assert page.locator("table.size td").count() >= 6
    assert page.evaluate(WRAPPED_WORDS) == []
    context.close()



def test_the_queue_shows_proposals_on_the_first_screen(browser, live_server, world):
    """At 1280×900 the rows come first: filters fold into one line, the bulk
    form follows the list (and stays in view at the bottom)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    for url in ("/", "/?sort=risk&source=consolidation"):
        page.goto(f"{live_server.url}{url}")
        first_row = page.locator("tr[data-queue-row]").first.bounding_box()
        assert first_row is not None and first_row["y"] + first_row["height"] <= 900, (url, first_row)
        assert page.evaluate("() => window.scrollY") == 0
        bulk = page.locator("#bulk-form").bounding_box()
        assert bulk is not None and bulk["y"] + bulk["height"] <= 900 and bulk["y"] > first_row["y"]
        # The bulk form never covers the first row.
        assert bulk["y"] >= first_row["y"] + first_row["height"]
    assert "Sort" in page.locator(".filters-box > summary").inner_text()  # names what is active
    assert not page.locator(".filters-box").evaluate("e => e.open")
    page.locator(".filters-box > summary").click()
    page.get_by_label("Source").wait_for()
    context.close()


def test_x_ticks_the_current_row_for_a_bulk_decision(page, live_server, world):
    first, second, third = world["proposals"][:3]
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/")
    box = lambda p: page.get_by_label(f"Select proposal {p.pk}")  # noqa: E731
    page.keyboard.press("x")  # no current row yet: the first becomes current and is ticked
    assert box(first).is_checked() and page.locator("tr.is-current").count() == 1
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    assert box(third).is_checked() and not box(second).is_checked()
    page.keyboard.press("k")
    page.keyboard.press("x")
    page.keyboard.press("x")  # x again unticks
    assert not box(second).is_checked()
    assert active(page).startswith("a:#")  # focus stays on the row, so j/k go on from there
    page.get_by_label("Comment").fill("x marks the spot")  # an x typed into a field is just a letter
    assert [box(p).is_checked() for p in world["proposals"]] == [True, False, True, False, False]
    page.get_by_label("Reason code").select_option("accurate")
    page.get_by_role("button", name="Approve ticked").click()
    page.wait_for_url("**/queue/bulk/")
    assert "2 approved" in page.locator("#bulk-results").inner_text()
    statuses = [Proposal.objects.get(pk=p.pk).status for p in world["proposals"]]
    assert statuses == ["approved", "pending", "approved", "pending", "pending"]
    page.keyboard.press("?")
    assert "Tick or untick the current proposal" in page.get_by_role("dialog", name="Keyboard shortcuts").inner_text()
    assert page.console_errors == []


def test_the_history_diff_scrolls_with_the_keyboard_on_a_phone(browser, live_server, world):
    from tests.browser.test_accessibility import AXE

    agent = world["agent"]
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="cust-1",
                          content="# Memory\n- Customer since 2019, account ORD-2026-0042-AB.\n")
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    sign_in(page, live_server, "rita-reviewer", PASSWORD)
    page.goto(f"{live_server.url}/agents/{agent.slug}/files/MEMORY.md/history/?user=cust-1")
    region = page.get_by_role("region", name="Side-by-side diff: Version 1 and Version 2")
    assert region.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll sideways here
    region.focus()
    assert region.evaluate("e => e === document.activeElement")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("End")
    page.wait_for_function("() => document.activeElement.scrollLeft > 0")
    page.evaluate(AXE)
    found = page.evaluate("async () => (await axe.run(document, {runOnly: ['scrollable-region-focusable',"
                          " 'aria-allowed-attr', 'aria-prohibited-attr']})).violations.map(v => v.id)")
    assert found == []
    # The id keeps its hyphens on one line, however narrow the cell.
    rects = page.locator("td.side-new .id-nowrap", has_text="ORD-2026-0042-AB").evaluate(
        "e => e.getClientRects().length")
    assert rects == 1
    context.close()
