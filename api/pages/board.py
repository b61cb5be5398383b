"""The contests' list and a contest's scoreboard page, drawn from what the public may read: the
public board of `api.routes.standings.full_board` (frozen as `core.freeze` says), a page of
ROWS rows at a time, each game's lists and chart drawn by its own module (`api.pages.games`).

The live part of a scoreboard page (`part`) is what the page's stream sends again whenever
it changes (`api.pages.live`): the contest clock's times, the freeze, the lists and the chart.
Its `digest` leaves out the clock's words ("closes in 4 min 12 s"), which change every second
and which the page's script keeps counting down itself; so an unchanged board is sent once."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from api.lookups import known_contest
from api.pages.games import page_of
from api.pages.layout import e, link, page, seconds_between, short_time, span, when
from api.routes import standings
from api.services import Services
from core import clock
from core.records import Contest

ROWS = 100  # rows of each list a page shows; ranks stay the whole board's
PAGES_MOST = 100_000  # `?page=` beyond this is refused (a million rows)
PARTS_KEPT = 32  # pages of one computed board kept drawn; others are drawn for each caller
CLOCK_TEXT = "<!--clock-->"  # where the clock's words go in the live part


@dataclass(frozen=True)
class LivePart:
    """A drawn live part of one scoreboard page, with the clock's words left out, and what
    tells one from another: its digest."""

    html: str
    digest: str
    pages: int
    title: str
    opens_at: str
    closes_at: str


@dataclass
class Board:
    """A contest's whole public board as computed once for every page of it: the contest, the
    board, the chart and the freeze drawn, and the pages drawn so far (`part`)."""

    contest: Contest
    board: dict[str, Any]
    chart: str
    pages: int
    drawn: dict[int, LivePart] = field(default_factory=dict)


def whole_board(svc: Services, contest_id: str) -> Board:
    """The contest's public board and its chart (on a public thread: it reads the store);
    NotFound for an unknown contest. Shared by every page of the board, so a page number
    costs a drawing of its rows, not a computation."""
    found = known_contest(svc, contest_id)
    board = standings.full_board(contest_id, svc, public=True)
    chart = page_of(found.game).chart(svc, found, board, clock.now())
    longest = max((len(v) for v in board.values() if isinstance(v, list)), default=0)
    return Board(found, board, chart, max(1, -(-longest // ROWS)))


def part(whole: Board, number: int) -> LivePart:
    """Page `number` of the board drawn (each list sliced, ranks as the whole board's), kept
    with the board for the next caller."""
    found = whole.drawn.get(number)
    if found is not None:
        return found
    contest = whole.contest
    paged = standings.page_of(whole.board, (number - 1) * ROWS, ROWS)
    html = (
        _clock(contest)
        + _freeze(contest, whole.board)
        + (page_of(contest.game).lists(paged) if number <= whole.pages else _past(whole.pages))
        + (whole.chart if number == 1 else "")
    )
    digest = hashlib.sha256(html.encode()).hexdigest()[:32]
    drawn = LivePart(html, digest, whole.pages, contest.title, contest.opens_at, contest.closes_at)
    if len(whole.drawn) < PARTS_KEPT:
        whole.drawn[number] = drawn
    return drawn


def shown(part: LivePart, now: str | None = None) -> str:
    """The live part as sent: the clock's words as of `now` put in."""
    words = _clock_words_of(part.opens_at, part.closes_at, now or clock.now())
    return part.html.replace(CLOCK_TEXT, e(words), 1)


def scoreboard_page(contest_id: str, part: LivePart, number: int, big: bool) -> str:
    """The whole scoreboard page around the live part: its title, the links (the JSON, the
    large type, the pages) and the plain refresh link that serves a browser without script."""
    path = f"/contests/{quote(contest_id, safe='')}"
    now = clock.now()
    toggle = link(
        path, "Normal type" if big else "Large type", page=_p(number), big=None if big else 1
    )
    json_url = f"/v1/contests/{quote(contest_id, safe='')}/leaderboard"
    stream = f"{path}/stream?page={number}"
    body = (
        f"<h1>{e(part.title)} <small>scoreboard</small></h1>"
        f'<p class="facts"><a href="{e(json_url)}" type="application/json">The board as JSON</a>'
        f"</p>"
        f'<div id="live" data-stream="{e(stream)}" data-now="{e(now)}">{shown(part, now)}</div>'
        f'<p class="live-status"><span id="live-status" role="status">Shown as of '
        f"{when(now)}.</span> "
        f"{link(path, 'Refresh', page=_p(number), big=1 if big else None)}</p>"
        f"{_pager(path, number, part.pages, big)}"
    )
    return page(f"{part.title} · scoreboard", body, big=big, nav=toggle)


def contests_page(contests: Sequence[Contest], now: str) -> str:
    """Every contest, open ones first, then upcoming, then closed, each linking its board."""
    groups: dict[str, list[Contest]] = {"open": [], "upcoming": [], "closed": []}
    for contest in contests:
        groups[_status(contest, now)].append(contest)
    groups["upcoming"].sort(key=lambda c: c.opens_at)
    groups["closed"].sort(key=lambda c: c.closes_at, reverse=True)
    groups["open"].sort(key=lambda c: c.closes_at)
    headings = {"open": "Open now", "upcoming": "Upcoming", "closed": "Closed"}
    body = "<h1>Contests</h1>" + "".join(
        f"<h2>{headings[key]}</h2>" + _contest_table(key, listed, now)
        for key, listed in groups.items()
    )
    return page("Contests", body, script=False)


def not_found_page(message: str) -> str:
    return page("Not found", f'<h1>Not found</h1><p class="notice">{e(message)}</p>', script=False)


def _contest_table(key: str, contests: Sequence[Contest], now: str) -> str:
    if not contests:
        return f'<p class="empty">No {key} contest.</p>'
    rows = "".join(
        f'<tr><th scope="row">{link("/contests/" + quote(c.id, safe=""), c.title)}</th>'
        f"<td>{e(c.game)}</td><td>{when(c.opens_at)}</td><td>{when(c.closes_at)}</td>"
        f"<td>{e(_clock_words_of(c.opens_at, c.closes_at, now))}</td></tr>"
        for c in contests
    )
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{e(key)} contests">'
        '<table class="contests"><thead><tr><th scope="col">Contest</th><th scope="col">Game'
        '</th><th scope="col">Opens</th><th scope="col">Closes</th><th scope="col">Clock</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _status(contest: Contest, now: str) -> str:
    if now < contest.opens_at:
        return "upcoming"
    return "open" if now <= contest.closes_at else "closed"


def _clock(contest: Contest) -> str:
    """The contest clock: its times as data the page's script counts down from, and a
    placeholder for the words (`shown`)."""
    return (
        f'<p class="clock" data-opens="{e(contest.opens_at)}" '
        f'data-closes="{e(contest.closes_at)}"><strong class="clock-text">{CLOCK_TEXT}</strong>'
        f' <span class="window">(opens {when(contest.opens_at)}, closes '
        f"{when(contest.closes_at)})</span></p>"
    )


def _clock_words_of(opens: str, closes: str, now: str) -> str:
    if now < opens:
        return f"Opens in {span(seconds_between(now, opens))}"
    if now <= closes:
        return f"Open: closes in {span(seconds_between(now, closes))}"
    return "Closed"


def _freeze(contest: Contest, board: Mapping[str, Any]) -> str:
    """What the public board says of the freeze: frozen since when, with how many uploads
    pending; or that it was thawed."""
    if board.get("frozen") and contest.freeze_at:
        pending = int(board.get("pending", 0))
        uploads = "upload" if pending == 1 else "uploads"
        return (
            f'<p class="frozen">Frozen since {short_time(contest.freeze_at)}; '
            f"{pending:,} {uploads} pending. Their scores show at the thaw.</p>"
        )
    if contest.freeze_at and contest.thawed_at:
        return (
            f'<p class="thawed">Thawed at {short_time(contest.thawed_at)}: every upload counts.</p>'
        )
    return ""


def _past(pages: int) -> str:
    return f'<p class="empty">This page is past the board\'s last, page {pages:,}.</p>'


def _pager(path: str, number: int, pages: int, big: bool) -> str:
    if pages <= 1 and number <= 1:
        return ""
    big_flag = 1 if big else None
    parts = []
    if number > 1:
        parts.append(link(path, "← Previous page", page=_p(number - 1), big=big_flag))
    parts.append(f'<span aria-current="page">Page {number:,} of {max(pages, number):,}</span>')
    if number < pages:
        parts.append(link(path, "Next page →", page=number + 1, big=big_flag))
    return f'<nav class="pager" aria-label="Pages of the board">{" ".join(parts)}</nav>'


def _p(number: int) -> int | None:
    return number if number > 1 else None
