"""The API's reference pages (/docs, /redoc) and the privacy page in a real browser, offline.

The app runs in-process under uvicorn on 127.0.0.1 (with the test pipeline's fakes behind it);
Debian's Chromium, driven by Playwright, has every request to another host aborted. The pages
must render the operations from files the API serves itself, with no console error and no
Content-Security-Policy violation; Swagger UI's Authorize button takes the admin token and its
calls carry it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, Route

from api.app import create_app
from devstack.testing.pipeline import ADMIN_TOKEN, open_pipeline
from tests.e2e.browsers import chromium

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OPERATION = "/v1/contests/{contest}/submissions"
ADMIN_OPERATION = "#operations-admin-list_lexicons_v1_lexicons_get"  # GET /v1/lexicons
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
RENDER_TIMEOUT_MS = 30_000  # the bundles are 1-1.5 MB of script to parse on a shared core
# Collects CSP violations the document sees, before any of the page's own scripts run.
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


@dataclass
class Watched:
    page: Page
    problems: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__cspViolations"))


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with (
        open_pipeline(tmp_path_factory.mktemp("docs")) as pipe,
        serving(create_app(pipe.services, sweeper=False)) as url,
    ):
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = Watched(page)
    page.on("console", lambda m: seen.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: seen.problems.append(f"uncaught: {error}"))
    page.add_init_script(WATCH_CSP)

    def only_loopback(route: Route) -> None:
        if urlsplit(route.request.url).hostname in LOOPBACK_HOSTS:
            route.continue_()
        else:
            seen.aborted.append(route.request.url)
            route.abort()

    page.route("**/*", only_loopback)
    yield seen
    page.close()


def test_swagger_ui_renders_the_operations_from_the_api_alone(
    api_url: str, watched: Watched
) -> None:
    response = watched.page.goto(f"{api_url}/docs")
    assert response is not None and response.ok
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "http" not in policy

    operation = watched.page.wait_for_selector(
        f'.opblock[id] .opblock-summary-path[data-path="{OPERATION}"]', timeout=RENDER_TIMEOUT_MS
    )
    assert operation is not None
    # An operation opens and calls the API from the page (connect-src 'self').
    health = watched.page.locator('.opblock-summary-path[data-path="/healthz"]')
    health.click()
    watched.page.click("#operations-health-healthz_healthz_get .try-out__btn")
    watched.page.click("#operations-health-healthz_healthz_get .execute")
    status = watched.page.wait_for_selector(
        "#operations-health-healthz_healthz_get .live-responses-table td.response-col_status:not(.col_header)",
        timeout=RENDER_TIMEOUT_MS,
    )
    assert status is not None and (status.text_content() or "").strip() == "200"
    _settle(watched)
    assert watched.problems == []
    assert watched.violations() == []
    assert watched.aborted == []


def test_swagger_ui_authorizes_with_the_admin_token_and_then_admin_calls_succeed(
    api_url: str, watched: Watched
) -> None:
    page = watched.page
    page.goto(f"{api_url}/docs")
    authorize = page.wait_for_selector(".auth-wrapper .btn.authorize", timeout=RENDER_TIMEOUT_MS)
    assert authorize is not None and "unlocked" in (authorize.get_attribute("class") or "")
    # An admin operation shows its padlock, and without a token it is refused.
    page.click(f"{ADMIN_OPERATION} .opblock-summary-control")
    assert page.locator(f"{ADMIN_OPERATION} .authorization__btn").count() == 1
    page.click(f"{ADMIN_OPERATION} .try-out__btn")
    assert _execute(page) == "401"

    authorize.click()
    schemes = page.locator(".modal-ux .auth-container h4 code").all_text_contents()
    assert {"adminToken", "teamToken"} <= set(schemes)
    admin = page.locator(".modal-ux .auth-container").nth(schemes.index("adminToken"))
    admin.locator("input").fill(ADMIN_TOKEN)
    admin.locator("button.authorize").click()
    admin.locator("button.btn-done").click()
    page.wait_for_selector(".auth-wrapper .btn.authorize.locked")

    assert _execute(page) == "200"
    curl = page.text_content(f"{ADMIN_OPERATION} .curl-command") or ""
    assert f"Authorization: Bearer {ADMIN_TOKEN}" in curl
    _settle(watched)
    # The browser logs the deliberate 401 itself; nothing else may appear.
    assert [p for p in watched.problems if "401" not in p] == []
    assert watched.violations() == []
    assert watched.aborted == []


def _execute(page: Page) -> str:
    """Press the opened operation's Execute; the status of the answer it shows."""
    status = f"{ADMIN_OPERATION} .live-responses-table td.response-col_status:not(.col_header)"
    clear = page.locator(f"{ADMIN_OPERATION} .btn-clear")
    if clear.count():  # the answer shown before goes, so the one waited for is the new one
        clear.click()
        page.wait_for_selector(status, state="detached")
    page.click(f"{ADMIN_OPERATION} .execute")
    shown = page.wait_for_selector(status, timeout=RENDER_TIMEOUT_MS)
    assert shown is not None
    return (shown.text_content() or "").strip()


def test_redoc_renders_the_operations_from_the_api_alone(api_url: str, watched: Watched) -> None:
    response = watched.page.goto(f"{api_url}/redoc")
    assert response is not None and response.ok
    assert "worker-src blob:" in response.headers["content-security-policy"]

    watched.page.wait_for_function(
        "(path) => document.body.textContent.includes(path)", arg=OPERATION,
        timeout=RENDER_TIMEOUT_MS,
    )  # fmt: skip
    # The search box works only if its blob: worker was allowed to start.
    watched.page.fill('input[placeholder="Search..."]', "leaderboard")
    watched.page.wait_for_selector(
        "[data-role='search:results'] [role=menuitem]", timeout=RENDER_TIMEOUT_MS
    )
    _settle(watched)
    assert watched.problems == []
    assert watched.violations() == []
    assert watched.aborted == []


def test_the_privacy_page_renders_with_its_own_stylesheet(api_url: str, watched: Watched) -> None:
    response = watched.page.goto(f"{api_url}/privacy")
    assert response is not None and response.ok

    heading = watched.page.text_content("h1") or ""
    assert heading.startswith("Privacy")
    assert watched.page.locator("table").count() >= 3
    # The served stylesheet applied: the text column is narrower than the window.
    width = watched.page.evaluate("document.querySelector('main').getBoundingClientRect().width")
    assert width < 1280 * 0.9
    _settle(watched)
    assert watched.problems == []
    assert watched.violations() == []
    assert watched.aborted == []


def _settle(watched: Watched) -> None:
    """Let late requests and console messages (a blocked worker, an image) arrive."""
    watched.page.wait_for_load_state("networkidle")
    watched.page.wait_for_timeout(300)


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """The app under uvicorn on a loopback port, in a thread of this process."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
