"""Every console page in real Chromium: axe-core (vendored, run in the
page) finds no serious or critical violation, and at phone width (390×844)
no page scrolls sideways.

axe is evaluated through Playwright (`page.evaluate`), not added as a
<script> tag: the console's CSP rightly refuses inline scripts, and the
DevTools protocol's evaluation is not a page script, so the CSP stays on
while axe runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memoryhub.models import Agent, AgentSession, Proposal, ProposalStatus, Role
from tests.browser.conftest import sign_in
from tests.factories import staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
AXE = (Path(__file__).parent / "vendor" / "axe.min.js").read_text(encoding="utf-8")
PHONE = {"width": 390, "height": 844}


def axe_violations(page: Any) -> list[dict[str, Any]]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE)
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' — ' + n.failureSummary)}))"
    )
    return [v for v in result if v["impact"] in ("serious", "critical")]


def too_wide(page: Any) -> list[str]:
    """The innermost elements that stick out past the viewport's right edge."""
    return page.evaluate("""() => {
      const width = document.documentElement.clientWidth;
      const out = [];
      for (const el of document.querySelectorAll('body *')) {
        const box = el.getBoundingClientRect();
        const sticksOut = e => e.getBoundingClientRect().right > width + 0.5;
        if (sticksOut(el) && box.width > 0 && ![...el.children].some(sticksOut)) {
          const cls = typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : '';
          out.push(el.tagName.toLowerCase() + cls + ' ' + Math.round(box.right));
        }
      }
      return out.slice(0, 6);
    }""")


def report(failures: dict[str, Any]) -> str:
    lines = []
    for where, found in failures.items():
        if isinstance(found, list) and found and isinstance(found[0], dict):
            for v in found:
                lines.append(f"{where}: {v['id']} ({v['impact']}) {v['help']}")
                lines.extend(f"    {node}" for node in v["nodes"])
        else:
            lines.append(f"{where}: {found}")
    return "\n".join(lines)


def sideways_scroll(page: Any) -> int:
    """How many pixels the page is wider than the viewport (0 is right)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth"))


@pytest.fixture
def demo() -> dict[str, Any]:
    from consolidation import services as consolidation
    from memoryhub.demo import seed_demo

    seed_demo()
    agent = Agent.objects.get(slug="support-bot")
    run, _ = consolidation.trigger_run(agent=agent, user_ref="cust-1042")
    assert consolidation.claim_run(run_id=run.pk)
    consolidation.execute_run(run_id=run.pk)
    proposal = Proposal.objects.filter(status=ProposalStatus.PENDING).order_by("created_at").first()
    session = AgentSession.objects.filter(agent=agent).order_by("-id").first()
    assert proposal is not None and session is not None
    return {"agent": agent, "proposal": proposal, "session": session}


def console_pages(demo: dict[str, Any]) -> list[tuple[str, str]]:
    agent, proposal = demo["agent"].slug, demo["proposal"].pk
    return [
        ("queue", "/"),
        ("proposal", f"/proposals/{proposal}/"),
        ("proposal-unified", f"/proposals/{proposal}/?view=unified"),
        ("dashboard", "/dashboard/"),
        ("agents", "/agents/"),
        ("agent", f"/agents/{agent}/"),
        ("context-preview", f"/agents/{agent}/preview/?user=cust-1042"),
        ("file-history", f"/agents/{agent}/files/MEMORY.md/history/?user=cust-1042"),
        ("file-blame", f"/agents/{agent}/files/MEMORY.md/blame/?user=cust-1042"),
        ("session", f"/sessions/{demo['session'].pk}/"),
        ("audit", "/audit/"),
        ("changes", "/changes/"),
        ("compliance", "/compliance/"),
        ("direct-writes", "/direct-writes/"),
        ("workspace-settings", f"/workspaces/{demo['agent'].workspace.slug}/settings/"),
        ("webhooks", "/webhooks/"),
        ("notification-settings", "/settings/notifications/"),
    ]


def check_pages(page: Any, live_server: Any, pages: list[tuple[str, str]]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    for name, path in pages:
        page.goto(f"{live_server.url}{path}")
        page.locator("main h1").first.wait_for()
        violations = axe_violations(page)
        if violations:
            problems[f"{name} ({path}) axe"] = violations
        width = page.viewport_size["width"]
        if width <= 700 and sideways_scroll(page) > 0:
            problems[f"{name} ({path}) scrolls sideways at {width}px"] = (sideways_scroll(page), too_wide(page))
    return problems


def test_every_console_page_passes_axe_and_fits_a_phone(browser, live_server, demo):
    failures: dict[str, Any] = {}
    for viewport in ({"width": 1360, "height": 900}, PHONE):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("console", lambda msg, errors=errors: errors.append(msg.text) if msg.type == "error" else None)
        sign_in(page, live_server, "admin", "demo-admin-pass")
        failures.update({f"{k} @{viewport['width']}": v
                         for k, v in check_pages(page, live_server, console_pages(demo)).items()})
        if errors:
            failures[f"console errors @{viewport['width']}"] = errors
        context.close()
    assert not failures, report(failures)


def test_the_sign_in_and_two_factor_pages_pass_axe_and_fit_a_phone(browser, live_server, settings):
    from tests.browser.test_strong_signin import app_code
    from tests.factories import AgentFactory, WorkspaceFactory

    settings.MEMORYHUB_REQUIRE_2FA = True
    workspace = WorkspaceFactory(slug="acme")
    AgentFactory(workspace=workspace)
    failures: dict[str, Any] = {}
    for viewport in ({"width": 1360, "height": 900}, PHONE):
        width = viewport["width"]
        username = f"rita-{width}"
        staff(workspace, Role.REVIEWER, username=username)
        context = browser.new_context(viewport=viewport)
        page = context.new_page()

        def check(name: str, page: Any = page, width: int = width) -> None:
            page.locator("main h1").first.wait_for()
            if violations := axe_violations(page):
                failures[f"{name} axe @{width}"] = violations
            if width < 700 and sideways_scroll(page):
                failures[f"{name} scrolls @{width}"] = (sideways_scroll(page), too_wide(page))

        page.goto(f"{live_server.url}/login/")
        check("sign-in")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill("wrong")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        check("sign-in with an error")
        sign_in(page, live_server, username, "pw-for-tests-1")
        page.wait_for_url("**/2fa/enrol/**")
        check("2fa enrol")
        page.get_by_label("Code from the app").fill(app_code(page.locator("#totp-secret").inner_text()))
        page.get_by_role("button", name="Confirm").click()
        page.locator("#recovery-codes").wait_for()
        check("2fa recovery codes")
        page.get_by_role("button", name="I have saved them — continue").click()
        page.wait_for_url(f"{live_server.url}/")
        page.get_by_role("button", name="Sign out").click()
        sign_in(page, live_server, username, "pw-for-tests-1")
        page.wait_for_url("**/2fa/verify/**")
        check("2fa verify")
        context.close()
    assert not failures, report(failures)
