"""A team's own page in a real browser (Debian's Chromium driven by Playwright) against
`tilejudge up`: sign in with the team token, upload through the form and see the result appear
without a reload, a too-large file refused in the browser with its sentence, a wrong-game upload
shown its hint, another team's submission and an unknown one answered 404 alike, a report page
with its runs folded; the sign-in reached and sent from the keyboard; axe-core finds no serious
or critical violation on the sign-in, team, report and not-found pages, and none of the first
three overflows sideways at 360, 768 or 1920 px; nothing is loaded from elsewhere, and no
console error but the planned 404s'.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, FilePayload, Page

from core import clock
from devstack.testing.stack_process import RunningStack, running_stack
from tests.e2e.browsers import axe_violations, chromium, planned_error, watched_page

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
README_IMAGE = ROOT / "docs/images/team-page.png"
WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by")
CONTEST = "team-day"
LIMIT = 2 * 1024 * 1024  # the stack's default upload limit
MOVES = b"0 0 2 0 cat\n0 0 0 1 at\n"
RUN_OF_THREE = b"0 0 2 0 zzz\n0 0 2 0 zzz\n0 0 2 0 zzz\n0 0 2 0 cat\n"
LOG = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n>ann: AEINRST - +0 0\n"
WIDTHS = (360, 768, 1920)
JUDGED_WITHIN_MS = 60_000
NOT_FOUND = "status of 404"  # Chromium's console error for a page answered 404


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_a_team_signs_in_uploads_and_follows_its_results_in_the_browser(
    tmp_path: Path, browser: Browser
) -> None:
    with (
        running_stack(tmp_path / "home", workers=1) as stack,
        httpx.Client(base_url=stack.url, timeout=30) as http,
    ):
        owls, larks = _contest_with_two_teams(http, stack)
        page, problems, elsewhere = watched_page(browser, stack.url, 1280, 900)
        uploads: list[str] = []
        page.on("request", lambda r: uploads.append(r.url) if r.url.endswith("/upload") else None)

        page.goto(f"{stack.url}/team")
        assert axe_violations(page) == []
        _no_overflow(page)
        _signed_in_by_keyboard(page, owls)
        assert "2 MiB" in (page.text_content("#limit-note") or "")
        page.evaluate("() => { window.notReloaded = true; }")

        first = _upload(page, "moves.txt", MOVES)
        row = f'#submissions tr[data-id="{first}"][data-state="judged"]'
        page.wait_for_selector(row, timeout=JUDGED_WITHIN_MS)
        assert "points" in (page.text_content(row) or "")
        assert page.evaluate("() => window.notReloaded") is True
        download = page.get_attribute("#receipt-download", "href")
        assert download == f"/team/submissions/{first}/receipt.json"

        sent_before = len(uploads)
        page.set_input_files("#file", files=[_file("big.txt", b"0" * (LIMIT + 1))])
        page.click("#send")
        error = page.wait_for_selector("#upload-error:not([hidden])")
        assert error is not None
        assert "over the 2 MiB upload limit: it was not sent." in (error.text_content() or "")
        assert len(uploads) == sent_before

        _upload(page, "log.txt", LOG)
        hint = page.wait_for_selector("#upload-hint:not([hidden])")
        assert hint is not None and "reads as a crosstiles upload" in (hint.text_content() or "")

        folded = _upload(page, "runs.txt", RUN_OF_THREE)
        page.wait_for_selector(
            f'#submissions tr[data-id="{folded}"][data-state="judged"]', timeout=JUDGED_WITHIN_MS
        )
        page.set_viewport_size({"width": 1280, "height": 900})
        assert axe_violations(page) == []
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "team-page.png"), full_page=True)
        README_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / "team-page.png", README_IMAGE)
        _no_overflow(page)

        page.click(f'#submissions a[href="/team/submissions/{folded}"]')
        page.wait_for_selector("#report-heading")
        assert "lines 1–3 (3 lines)" in (page.text_content("#illegal") or "")
        assert "The receipt is valid" in (page.text_content(".checks") or "")
        assert axe_violations(page) == []
        _no_overflow(page)

        theirs = http.post(
            f"/v1/contests/{CONTEST}/submissions", content=MOVES,
            headers={"Authorization": f"Bearer {larks}", "content-type": "text/plain"},
        )  # fmt: skip
        assert theirs.status_code == 202, theirs.text
        with planned_error(problems, NOT_FOUND):
            missing = page.goto(f"{stack.url}/team/submissions/{theirs.json()['id']}")
            assert missing is not None and missing.status == 404
            missing_text = page.text_content("main")
        with planned_error(problems, NOT_FOUND):
            unknown = page.goto(f"{stack.url}/team/submissions/{'0' * 32}")
            assert unknown is not None and unknown.status == 404
            assert page.text_content("main") == missing_text  # alike: neither says more
            assert axe_violations(page) == []
        assert problems == []
        assert elsewhere == []


def _contest_with_two_teams(http: httpx.Client, stack: RunningStack) -> tuple[str, str]:
    lexicon = http.post(
        "/v1/lexicons", params={"name": "team-words"}, content="\n".join(WORDS) + "\n",
        headers=stack.admin | {"content-type": "text/plain"},
    )  # fmt: skip
    assert lexicon.status_code == 201, lexicon.text
    now = datetime.now(UTC)
    contest = {
        "id": CONTEST, "title": "A team's day", "lexicon": "team-words",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
    }  # fmt: skip
    assert http.post("/v1/contests", json=contest, headers=stack.admin).status_code == 201
    tokens = []
    for name in ("owls", "larks"):
        team = http.post(f"/v1/contests/{CONTEST}/teams", json={"name": name}, headers=stack.admin)
        assert team.status_code == 201, team.text
        tokens.append(str(team.json()["token"]))
    return tokens[0], tokens[1]


def _signed_in_by_keyboard(page: Page, token: str) -> None:
    """Sign in from the keyboard alone: the first Tab reaches the header's link (the page has
    no skip link: the form follows it), the next the token field; Enter sends the form."""
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == "/team"
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "token"
    page.keyboard.type(token)
    page.keyboard.press("Enter")
    page.wait_for_selector("#upload-form")


def _file(name: str, data: bytes) -> FilePayload:
    return {"name": name, "mimeType": "text/plain", "buffer": data}


def _upload(page: Page, name: str, data: bytes) -> str:
    """Upload through the form; the new submission's id, from the receipt shown."""
    with page.expect_response(lambda r: r.url.endswith("/team/upload")) as answered:
        page.set_input_files("#file", files=[_file(name, data)])
        page.click("#send")
    assert answered.value.status == 202, answered.value.text()
    submission = str(answered.value.json()["id"])
    page.wait_for_selector(f"#receipt-facts >> text={submission}")
    return submission


def _no_overflow(page: Page) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        wide = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"{page.url} is {wide} px too wide at {width} px"
