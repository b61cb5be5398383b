"""The dashboard in a real browser (Debian's Chromium driven by Playwright) against `tilejudge up`:
sign in, watch generated uploads get accepted and judged, follow a rejudge run to its preview,
reach a contest's leaderboard in one click, read whole event lines, no console errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core import clock, tuning
from judge.wordytaire import default_layout
from judge.wordytaire.generator import WordIndex, generate
from tests.e2e.browsers import chromium
from tests.stack_process import RunningStack, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by", "oat", "to", "toe",
         "bet", "tee", "ten", "net", "ant", "tan", "nab", "bean", "beat", "neat")  # fmt: skip
CONTEST = "dash"
REFLECT_WITHIN_S = 3.0  # the target: a new upload or result on the page within 3 s
UPLOADS = 4
# The fix drops words the generated games play, so scores and ranks change.
FIXED_WORDS = tuple(word for word in WORDS if word not in ("at", "tea"))
LONG_NAME = "the-night-owls-of-the-northern-reading-room-league-" * 2


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_the_dashboard_follows_uploads_results_and_rejudges(
    tmp_path: Path, browser: Browser
) -> None:
    with (
        running_stack(tmp_path / "home", workers=2) as stack,
        httpx.Client(base_url=stack.url, timeout=30) as http,
    ):
        token = _contest_with_a_team(http, stack)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
        elsewhere: list[str] = []
        page.on(
            "request",
            lambda r: None if r.url.startswith((stack.url, "data:")) else elsewhere.append(r.url),
        )

        _a_wrong_token_is_refused(browser, stack)
        _sign_in(page, stack)
        _wait_for_number(page, "uploads-total", 0, timeout_s=10)
        corpus = [
            generate(WordIndex.build(WORDS), default_layout(), seed=n, moves=25, illegal_share=0.2)
            for n in range(UPLOADS)
        ]
        ids = []
        for n, data in enumerate(corpus, 1):
            accepted = http.post(
                f"/v1/contests/{CONTEST}/submissions", content=data,
                headers={"Authorization": f"Bearer {token}", "content-type": "text/plain"},
            )  # fmt: skip
            assert accepted.status_code == 202, accepted.text
            ids.append(accepted.json()["id"])
            received = clock.parse_time(accepted.json()["received_at"]).timestamp()
            seen = _wait_for_number(page, "uploads-total", n, until=received + REFLECT_WITHIN_S)
            assert seen - received <= REFLECT_WITHIN_S
        assert _number(page, "uploads-rate") >= 1

        _the_leaderboard_is_one_click_away(page, stack)
        seen = _wait_for_number(page, "judged-total", UPLOADS, timeout_s=60)
        results = [http.get(f"/v1/submissions/{sid}", headers=stack.admin).json() for sid in ids]
        assert {r["state"] for r in results} == {"judged"}
        last_result = max(clock.parse_time(r["judged_at"]).timestamp() for r in results)
        assert seen - last_result <= REFLECT_WITHIN_S, (
            f"judged shown {seen - last_result:.1f} s late"
        )
        assert _number(page, "judged-rate") >= 1
        # One worker: two pool processes that judge, one standing by for live uploads.
        assert page.text_content("#workers-online") == "1"
        sizes = page.text_content("#task-sizes") or ""
        assert f"up to {tuning.GROUP_MOST} uploads" in sizes
        assert f"up to {tuning.REJUDGE_BATCH} submissions" in sizes

        print(f"rejudge: {_follow_a_rejudge(page, http, stack)}")
        # The pool size comes from one inspect() per worker, retried while it re-forks.
        page.wait_for_selector("#workers-detail >> text=3 processes", timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
        _event_lines_are_whole(page)
        assert problems == []
        assert elsewhere == []


def _contest_with_a_team(http: httpx.Client, stack: RunningStack) -> str:
    lexicon = http.post(
        "/v1/lexicons", params={"name": "dash-words"}, content="\n".join(WORDS) + "\n",
        headers=stack.admin | {"content-type": "text/plain"},
    )  # fmt: skip
    assert lexicon.status_code == 201, lexicon.text
    now = datetime.now(UTC)
    contest = {
        "id": CONTEST, "title": "Dashboard", "lexicon": "dash-words",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
    }  # fmt: skip
    assert http.post("/v1/contests", json=contest, headers=stack.admin).status_code == 201
    team = http.post(f"/v1/contests/{CONTEST}/teams", json={"name": "owls"}, headers=stack.admin)
    assert team.status_code == 201, team.text
    # Its `team.created` line is longer than the event log is wide: it must wrap, not be cut.
    long = http.post(f"/v1/contests/{CONTEST}/teams", json={"name": LONG_NAME}, headers=stack.admin)
    assert long.status_code == 201, long.text
    return str(team.json()["token"])


def _a_wrong_token_is_refused(browser: Browser, stack: RunningStack) -> None:
    # A page of its own: the browser logs the 401 itself as a console error.
    page = browser.new_page()
    page.goto(f"{stack.url}/dashboard")
    page.fill("#token", "wrong")
    page.click("button[type=submit]")
    assert "not the admin token" in (page.text_content(".notice") or "")
    assert page.query_selector("#status") is None
    page.close()


def _the_leaderboard_is_one_click_away(page: Page, stack: RunningStack) -> None:
    link = page.wait_for_selector(f'#contests a.board[href="/v1/contests/{CONTEST}/leaderboard"]')
    assert link is not None and link.text_content() == "leaderboard"
    board = page.request.get(f"{stack.url}/v1/contests/{CONTEST}/leaderboard")
    assert board.ok and board.json()["contest"] == CONTEST


def _event_lines_are_whole(page: Page) -> None:
    """Each event line wraps inside its cell instead of being cut off."""
    cut = page.evaluate(
        """() => [...document.querySelectorAll('#events .what, #events .type')]
            .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
            .map((cell) => cell.textContent)"""
    )
    assert cut == []
    assert page.locator(f"#events .what >> text={LONG_NAME}").count() == 1


def _sign_in(page: Page, stack: RunningStack) -> None:
    page.goto(f"{stack.url}/dashboard")
    page.fill("#token", stack.admin_token)
    page.click("button[type=submit]")
    page.wait_for_selector("#status:not([data-colour=unknown])", timeout=10_000)


def _number(page: Page, element_id: str) -> float:
    return float((page.text_content(f"#{element_id}") or "nan").replace(",", ""))


def _wait_for_number(
    page: Page,
    element_id: str,
    at_least: int,
    *,
    until: float | None = None,
    timeout_s: float | None = None,
) -> float:
    """Wait until the page shows at least `at_least` in the element; return the wall time."""
    budget = timeout_s if timeout_s is not None else (until or 0) - time.time()
    try:
        page.wait_for_function(
            "([id, n]) => Number(document.getElementById(id).textContent.replace(/,/g, '')) >= n",
            arg=[element_id, at_least],
            polling=50,
            timeout=max(1.0, budget * 1000),
        )
    except PlaywrightTimeout:
        shown = page.text_content(f"#{element_id}")
        pytest.fail(f"#{element_id} still shows {shown!r}, not {at_least}, after {budget:.1f} s")
    return time.time()


def _follow_a_rejudge(page: Page, http: httpx.Client, stack: RunningStack) -> str:
    """Drive a rejudge run if the API has them; otherwise the page says there is none."""
    fixed = http.post(
        "/v1/lexicons", params={"name": "dash-words-fixed"},
        content="\n".join((*FIXED_WORDS, "abet", "tabby")) + "\n",
        headers=stack.admin | {"content-type": "text/plain"},
    )  # fmt: skip
    assert fixed.status_code == 201, fixed.text
    started = http.post(
        f"/v1/contests/{CONTEST}/rejudges",
        json={"lexicon": "dash-words-fixed", "mode": "full"},
        headers=stack.admin,
    )
    if started.status_code in (404, 405) and started.json().get("error") in (
        "not_found",
        "method_not_allowed",
    ):
        page.wait_for_selector("#rejudges >> text=no open rejudge runs", timeout=5_000)
        return f"not built yet (POST answered {started.status_code}); the page shows none"
    assert started.status_code == 202, started.text
    run = started.json()["id"]
    bar = f'.run[data-run="{run}"] [role=progressbar]'
    page.wait_for_selector(bar, timeout=10_000)
    page.wait_for_function(
        """(selector) => {
            const bar = document.querySelector(selector);
            return bar && Number(bar.getAttribute('aria-valuemax')) > 0
                && bar.getAttribute('aria-valuenow') === bar.getAttribute('aria-valuemax');
        }""",
        arg=bar,
        polling=100,
        timeout=120_000,
    )
    card = f'.run[data-run="{run}"]'
    rules = page.text_content(f"{card} [data-field=rules]") or ""
    assert "word list dash-words → dash-words-fixed" in rules, rules
    assert "(unchanged)" in rules.split("layout", 1)[1], rules
    preview = http.get(f"/v1/rejudges/{run}", headers=stack.admin).json()
    assert preview["state"] == "ready" and preview["preview"] is True
    counts = (len(preview["changed"]), len(preview["rank_changes"]))
    assert counts[0] > 0, preview
    expected = f"{_count(counts[0], 'score')} and {_count(counts[1], 'rank')} would change"
    page.wait_for_selector(f"{card} [data-field=changes] >> text={expected}", timeout=10_000)
    link = page.get_attribute(f"{card} [data-field=changes] a", "href")
    assert link == f"/v1/rejudges/{run}"
    shown = page.request.get(f"{stack.url}{link}")  # with the page's admin cookie
    assert shown.ok and shown.json()["id"] == run and shown.json()["preview"] is True
    return f"run {run} driven to its preview: {expected}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
