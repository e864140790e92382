"""Real Chromium through Playwright against a live server the test starts.

Playwright cannot download its own browser here: it drives Debian's
Chromium (PLAYWRIGHT_CHROMIUM_EXECUTABLE, default /usr/bin/chromium).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM = os.environ.get("PLAYWRIGHT_CHROMIUM_EXECUTABLE", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not at {CHROMIUM}: install Debian's chromium (apt-get install -y chromium).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            # The closed network refuses Chromium's background connections.
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    console_errors: list[str] = []
    page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
    page.console_errors = console_errors  # type: ignore[attr-defined]
    yield page
    context.close()


def screenshot(page: Any, name: str) -> None:
    """Save docs/screenshots/<name>.png, only when asked (`make screenshots`
    sets MEMORYHUB_SCREENSHOTS=1): an ordinary test run leaves the tree clean."""
    if os.environ.get("MEMORYHUB_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # caret="initial": hiding the caret makes Playwright inject an inline
    # style, which the CSP rightly blocks and logs as a console error.
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, caret="initial")


def sign_in(page: Any, live_server: Any, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
