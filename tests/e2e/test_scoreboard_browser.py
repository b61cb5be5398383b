"""The public pages in a real browser (Debian's Chromium driven by Playwright) against
`tilejudge up`: the contests' list, the scoreboards of both games (frozen and in large type
too) and the page of an unknown contest (answered 404) pass axe-core; an open
scoreboard shows a team's judged upload without a reload; a frozen one hides the late score,
says how many uploads are pending, and shows the score at the thaw without a reload; no page
scrolls sideways from 360 to 1920 px (large type too); keyboard focus starts at the skip link;
with script off the board still reads; nothing is loaded from elsewhere, no console error but
the planned 404's (a blocked inline script or style would be one). One stack for all."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page

from core import clock
from devstack.testing.stack_process import RunningStack, running_stack
from tests.e2e.browsers import axe_violations, chromium, planned_error, watched_page
from tests.unit.api.test_crosstiles_contest import passing_game

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
README_IMAGE = ROOT / "docs/images/scoreboard.png"  # the README shows it
WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by")
CAB, CAT, TAB = b"0 0 2 0 cab\n", b"0 0 2 0 cat\n", b"0 0 2 0 tab\n"  # 15, 9, 13
WIDTHS = (360, 768, 1920)
SHOWN_WITHIN_MS = 20_000  # judging included: a bound for a stuck page, not a speed check
LONG_TEAM = "the-night-owls-of-the-northern-reading-room-league"
NOT_FOUND = "status of 404"  # Chromium's console error for a page answered 404


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_the_public_pages_follow_uploads_the_freeze_and_the_thaw_and_read_everywhere(
    tmp_path: Path, browser: Browser
) -> None:
    with (
        running_stack(tmp_path / "home", workers=1) as stack,
        httpx.Client(base_url=stack.url, timeout=30) as http,
    ):
        tokens = _contests(http, stack)
        page, problems, elsewhere = watched_page(browser, stack.url, 1280, 900)

        page.goto(f"{stack.url}/contests")
        assert page.locator("a[href='/contests/live']").count() == 1
        assert axe_violations(page) == []

        page.goto(f"{stack.url}/contests/live")
        page.wait_for_selector("#live-status >> text=Live")
        page.evaluate("() => { window.notReloaded = true; }")
        _upload(http, tokens["ravens"], "live", CAT)
        _upload(http, tokens[LONG_TEAM], "live", CAB)
        page.wait_for_selector(f"#live tbody th >> text={LONG_TEAM}", timeout=SHOWN_WITHIN_MS)
        page.wait_for_selector("#live tbody th >> text=ravens", timeout=SHOWN_WITHIN_MS)
        page.wait_for_selector("#live svg.chart", timeout=SHOWN_WITHIN_MS)
        assert page.evaluate("() => window.notReloaded") is True
        assert axe_violations(page) == []
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "scoreboard.png"), full_page=True)
        README_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / "scoreboard.png", README_IMAGE)
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "skip"
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert _sideways(page) == 0, f"the page scrolls sideways at {width} px"
        page.goto(f"{stack.url}/contests/live?big=1")
        page.set_viewport_size({"width": 360, "height": 900})
        assert _sideways(page) == 0, "the large type scrolls sideways at 360 px"
        assert axe_violations(page) == []
        with planned_error(problems, NOT_FOUND):
            missing = page.goto(f"{stack.url}/contests/nowhere")
            assert missing is not None and missing.status == 404
            assert axe_violations(page) == []

        _frozen_then_thawed(page, http, stack, tokens)
        _crosstiles(page, stack)
        _without_script(browser, stack)
        assert problems == []
        assert elsewhere == []


def _contests(http: httpx.Client, stack: RunningStack) -> dict[str, str]:
    """An open contest, a frozen one, a Crosstiles one with a valid game uploaded, an
    upcoming and a closed one; the teams' tokens by name."""
    lexicon = http.post(
        "/v1/lexicons", params={"name": "board-words"}, content="\n".join(WORDS) + "\n",
        headers=stack.admin | {"content-type": "text/plain"},
    )  # fmt: skip
    assert lexicon.status_code == 201, lexicon.text
    now = datetime.now(UTC)
    hours = {
        "live": (-1, 1, None, "wordytaire"),
        "frozen": (-1, 1, -0.5, "wordytaire"),
        "tiles": (-1, 1, None, "crosstiles"),
        "later": (2, 3, None, "wordytaire"),
        "over": (-3, -2, None, "wordytaire"),
    }
    for contest, (opens, closes, freezes, game) in hours.items():
        body = {
            "id": contest, "title": f"The {contest} round", "lexicon": "board-words", "game": game,
            "opens_at": clock.format_time(now + timedelta(hours=opens)),
            "closes_at": clock.format_time(now + timedelta(hours=closes)),
        }  # fmt: skip
        if freezes is not None:
            body["freeze_at"] = clock.format_time(now + timedelta(hours=freezes))
        created = http.post("/v1/contests", json=body, headers=stack.admin)
        assert created.status_code == 201, created.text
    tokens = {}
    for contest, name in (("live", "ravens"), ("live", LONG_TEAM), ("frozen", "owls")):
        team = http.post(f"/v1/contests/{contest}/teams", json={"name": name}, headers=stack.admin)
        assert team.status_code == 201, team.text
        tokens[name] = team.json()["token"]
    club = http.post(
        "/v1/contests/tiles/teams", json={"name": "club", "uploads_logs": True}, headers=stack.admin
    )
    assert club.status_code == 201, club.text
    log, _ = passing_game("browser", ("ann", "bob"))
    _upload(http, club.json()["token"], "tiles", log)
    return tokens


def _upload(http: httpx.Client, token: str, contest: str, data: bytes) -> str:
    accepted = http.post(
        f"/v1/contests/{contest}/submissions", content=data,
        headers={"Authorization": f"Bearer {token}", "content-type": "text/plain"},
    )  # fmt: skip
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["id"])


def _frozen_then_thawed(
    page: Page, http: httpx.Client, stack: RunningStack, tokens: dict[str, str]
) -> None:
    """The frozen contest: the late upload is pending, its score hidden, until the thaw,
    which shows it on the open page."""
    page.set_viewport_size({"width": 1280, "height": 900})
    submission = _upload(http, tokens["owls"], "frozen", TAB)
    _judged(http, stack, submission)
    page.goto(f"{stack.url}/contests/frozen")
    page.wait_for_selector("#live-status >> text=Live")
    frozen = page.text_content(".frozen") or ""
    assert "Frozen since" in frozen and "1 upload pending" in frozen, frozen
    assert page.locator("#live tbody th >> text=owls").count() == 0
    assert axe_violations(page) == []
    page.evaluate("() => { window.notReloaded = true; }")
    thawed = http.post("/v1/contests/frozen/thaw", headers=stack.admin)
    assert thawed.status_code == 200, thawed.text
    page.wait_for_selector("#live tbody th >> text=owls", timeout=SHOWN_WITHIN_MS)
    assert page.locator("#live .frozen").count() == 0
    assert "13" in (page.text_content("#live tbody tr") or "")
    assert page.evaluate("() => window.notReloaded") is True


def _judged(http: httpx.Client, stack: RunningStack, submission: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = http.get(f"/v1/submissions/{submission}", headers=stack.admin).json()["state"]
        if state == "judged":
            return
        time.sleep(0.2)
    raise AssertionError(f"submission {submission} not judged within 60 s")


def _crosstiles(page: Page, stack: RunningStack) -> None:
    page.goto(f"{stack.url}/contests/tiles")
    page.wait_for_selector("#live tbody th >> text=ann", timeout=SHOWN_WITHIN_MS)
    assert page.locator("#live tbody th >> text=bob").count() == 1
    assert axe_violations(page) == []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        assert _sideways(page) == 0, f"the Crosstiles page scrolls sideways at {width} px"


def _without_script(browser: Browser, stack: RunningStack) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{stack.url}/contests/live")
    assert page.locator("#live tbody th >> text=ravens").count() == 1
    assert page.locator("a >> text=Refresh").count() == 1
    assert "Open: closes in" in (page.text_content(".clock") or "")
    context.close()


def _sideways(page: Page) -> int:
    """How far the page scrolls sideways, in px."""
    page.evaluate(
        "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
    )
    found: int = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return found
