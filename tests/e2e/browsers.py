"""Debian's Chromium under Playwright, for the browser tests (no browser download)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
# npm's axe-core, fetched into the virtualenv by `make axe`.
AXE = Path(__file__).resolve().parents[2] / ".venv/node/node_modules/axe-core/axe.min.js"
# The impacts a page may not have: axe-core's two highest of four.
AXE_REFUSED = ("serious", "critical")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed afterwards; the test fails if the package is missing."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def watched_page(
    browser: Browser, origin: str, width: int, height: int
) -> tuple[Page, list[str], list[str]]:
    """A new page, with the list its console errors and uncaught exceptions go to and the list
    of the requests it sends anywhere but `origin` (or a data: URL)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith((origin, "data:")) else elsewhere.append(r.url),
    )
    return page, problems, elsewhere


@contextmanager
def planned_error(problems: list[str], expected: str) -> Iterator[None]:
    """A block that means to meet an error (a navigation to a page answered 404, say): the
    console errors logged in it that contain `expected` are taken off `problems` (a watched
    page's list), and at least one must have come; any other error stays on the list."""
    before = len(problems)
    yield
    logged = problems[before:]
    assert any(expected in problem for problem in logged), f"no {expected!r} among {logged}"
    problems[before:] = [problem for problem in logged if expected not in problem]


def axe_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations of the page as it is now, one line each
    (rule, impact, help and the elements): run in the page through the DevTools protocol,
    which the page's Content-Security-Policy does not govern, so the page's own CSP stays."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run `make axe`")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text() + "\n;undefined")
    found = page.evaluate(
        """async () => (await axe.run(document)).violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 5),
        }))"""
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']}: {', '.join(v['nodes'])}"
        for v in found
        if v["impact"] in AXE_REFUSED
    ]
