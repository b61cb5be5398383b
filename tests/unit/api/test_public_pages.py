"""The public pages (`api.pages`, `api.routes.public_pages`): the contests' list, a contest's
scoreboard of both games, drawn on the server under the dashboard's strict policy, paged,
frozen as the public board is, and its live stream's bounds."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from api.pages import board, live
from api.pages.board import LivePart
from api.pages.games.crosstiles import PAGE as CROSSTILES
from api.pages.latest import Latest
from api.routes.dashboard import SECURITY_HEADERS
from core import clock
from devstack.testing.pipeline import ADMIN, Pipeline, drain
from tests.unit.api.test_crosstiles_contest import passing_game
from tests.unit.api.test_freeze import (
    BAT_TEA,
    CAB,
    CAT,
    CONTEST,
    TAB,
    Shifted,
    frozen_contest,
    past_the_freeze,
)


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> Shifted:
    moved = Shifted()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def html_of(pipe: Pipeline, path: str, status: int = 200, **params: Any) -> str:
    response = pipe.client.get(path, params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    return str(response.text)


def no_inline_code(page: str) -> None:
    """Nothing the policy would block: scripts only from a file, no style attribute."""
    assert re.search(r"<script(?![^>]*\bsrc=)", page) is None
    assert " style=" not in page and "<style" not in page
    assert "http://" not in page and "https://" not in page


def ranked_rows(page: str) -> list[tuple[str, str, str]]:
    """(rank, team, score) of each row of the ranking table."""
    return re.findall(
        r'<tr><td class="num">([\d,]+)</td><th scope="row">([^<]*)</th><td class="num">([\d,]+)',
        page,
    )


def test_the_contests_page_lists_open_upcoming_and_closed_contests_each_linking_its_board(
    pipe: Pipeline,
) -> None:
    pipe.add_contest("later", opens_in=3600, closes_in=7200)
    pipe.add_contest("over", opens_in=-7200, closes_in=-3600)
    page = html_of(pipe, "/contests")
    no_inline_code(page)
    sections = re.split(r"<h2>", page)[1:]
    assert [s.split("</h2>")[0] for s in sections] == ["Open now", "Upcoming", "Closed"]
    assert 'href="/contests/open"' in sections[0] and "Open: closes in" in sections[0]
    assert 'href="/contests/later"' in sections[1] and "Opens in" in sections[1]
    assert 'href="/contests/over"' in sections[2] and "Closed" in sections[2]


def test_a_wordytaire_scoreboard_shows_rank_team_best_score_when_and_a_chart(
    pipe: Pipeline,
) -> None:
    ravens, owls = pipe.add_team("ravens"), pipe.add_team("<owls>")
    pipe.accepted(ravens, CAT)
    pipe.accepted(owls, CAT)
    pipe.accepted(ravens, CAB)
    drain(pipe.services)
    page = html_of(pipe, "/contests/open")
    no_inline_code(page)
    assert ranked_rows(page) == [("1", "ravens", "15"), ("2", "&lt;owls&gt;", "9")]
    assert page.count("<time datetime=") >= 2
    assert "Open: closes in" in page
    assert '<script src="/pages/static/scoreboard.js" defer>' in page
    assert 'data-stream="/contests/open/stream?page=1"' in page
    assert ">Refresh</a>" in page  # for a browser without script
    chart = re.search(r"<svg[^>]*>.*?</svg>", page, re.S)
    assert chart is not None and 'role="img"' in chart.group(0)
    assert "<title" in chart.group(0) and "<desc" in chart.group(0)
    assert chart.group(0).count("<polyline") == 2  # a line a team
    # Ravens' best went from 9 to 15: the table beside the chart says so.
    assert re.search(r"<td>ravens</td><td>9 at 1 h 00 min; 15 at 1 h 00 min</td>", page)


def test_an_unknown_contest_is_a_404_page_saying_so(pipe: Pipeline) -> None:
    page = html_of(pipe, "/contests/nowhere", status=404)
    assert "no contest &#x27;nowhere&#x27;" in page
    assert pipe.client.get("/contests/open", params={"page": 0}).status_code == 422


def test_the_board_pages_keep_the_ranks_and_link_the_next_and_previous_pages(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board, "ROWS", 1)
    teams = [pipe.add_team(name) for name in ("a", "b", "c")]
    for team, data in zip(teams, (CAB, TAB, CAT), strict=True):
        pipe.accepted(team, data)
    drain(pipe.services)
    first = html_of(pipe, "/contests/open")
    assert ranked_rows(first) == [("1", "a", "15")]
    assert 'href="/contests/open?page=2"' in first and "Previous page" not in first
    second = html_of(pipe, "/contests/open", page=2, big=1)
    assert ranked_rows(second) == [("2", "b", "13")]
    assert 'href="/contests/open?big=1"' in second  # previous, still in large type
    assert 'href="/contests/open?page=3&amp;big=1"' in second
    assert '<body class="public big">' in second
    assert 'href="/contests/open?page=2">Normal type' in second
    third = html_of(pipe, "/contests/open", page=3)
    assert ranked_rows(third) == [("3", "c", "9")] and "Next page" not in third


def test_ten_thousand_teams_are_a_hundred_pages_of_a_hundred_rows(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A board of 10,000 teams (the store's standings stood in for) is drawn a page of ROWS at
    a time, ranks as the whole board's: page 100 is the last, and page 101 says so."""
    at = clock.now()
    entries = [
        {"rank": n, "team": f"team-{n}", "score": 20_000 - n, "received_at": at}
        for n in range(1, 10_001)
    ]
    monkeypatch.setattr(
        pipe.services.store, "standings", lambda contest, *cut: {"entries": entries}
    )
    first = html_of(pipe, "/contests/open")
    rows = ranked_rows(first)
    assert len(rows) == board.ROWS == 100 and rows[0] == ("1", "team-1", "19,999")
    assert "Page 1 of 100" in first and 'href="/contests/open?page=2"' in first
    last = html_of(pipe, "/contests/open", page=100)
    rows = ranked_rows(last)
    assert (len(rows), rows[0][0], rows[-1]) == (100, "9,901", ("10,000", "team-10000", "10,000"))
    assert "Page 100 of 100" in last and "Next page" not in last
    assert 'href="/contests/open?page=99"' in last
    past = html_of(pipe, "/contests/open", page=101)
    assert ranked_rows(past) == [] and "past the board's last, page 100" in past


def test_a_frozen_scoreboard_shows_only_the_public_board_with_pending_until_the_thaw(
    pipe: Pipeline, shifted: Shifted
) -> None:
    frozen_contest(pipe)
    ravens, owls = pipe.add_team("ravens", CONTEST), pipe.add_team("owls", CONTEST)
    pipe.accepted(ravens, CAB)
    pipe.accepted(owls, CAT)
    drain(pipe.services)
    past_the_freeze(shifted)
    pipe.accepted(owls, TAB)
    pipe.accepted(ravens, BAT_TEA)
    drain(pipe.services)
    page = html_of(pipe, f"/contests/{CONTEST}")
    assert ranked_rows(page) == [("1", "ravens", "15"), ("2", "owls", "9")]
    assert re.search(r"Frozen since <time[^>]*>\d\d:\d\d UTC</time>; 2 uploads pending", page)
    assert "13 at " not in page  # nor in the chart's data
    thawed = pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN)
    assert thawed.status_code == 200, thawed.text
    pipe.services.public.forget(("scoreboard", CONTEST))
    pipe.client.app.state.page_boards = Latest()  # type: ignore[attr-defined]
    after = html_of(pipe, f"/contests/{CONTEST}")
    assert ranked_rows(after) == [("1", "ravens", "15"), ("2", "owls", "13")]
    assert "Frozen since" not in after and "Thawed at" in after


def test_a_crosstiles_scoreboard_shows_players_by_wins_and_invalid_logs_with_their_reason(
    pipe: Pipeline,
) -> None:
    pipe.add_contest("ct", game="crosstiles")
    club = pipe.add_team("club", "ct", uploads_logs=True)
    game, values = passing_game("page", ("ann", "bob"))
    spoilt = passing_game("spoilt", ("eve", "fay"))[0].replace(b"+0 0", b"+7 7", 1)
    for data in (game, spoilt):
        assert pipe.upload(club, data, "ct").status_code == 202
    drain(pipe.services)
    page = html_of(pipe, "/contests/ct")
    no_inline_code(page)
    players = re.findall(r'<th scope="row">(ann|bob)</th>', page)
    winner = "ann" if values[0] < values[1] else "bob"  # the lower rack loses less
    assert players[0] == winner and sorted(players) == ["ann", "bob"]
    assert "<h2>Invalid logs</h2>" in page and "<td>club</td>" in page
    assert re.search(r"<td><code>[a-z_]+</code></td>", page)
    assert "Wins of the leading 2 players" in page
    assert '<th scope="col" class="num">Rating</th>' in page  # the standings carry ratings


def test_crosstiles_ratings_disputes_and_the_ratings_note_show_when_the_board_has_them() -> None:
    rated = {
        "players": [
            {"rank": 1, "nick": "ann", "games": 3, "wins": 2.5, "spread": 40,
             "rating": 1563.2, "deviation": 210.7},
            {"rank": 2, "nick": "bob", "games": 3, "wins": 0.5, "spread": -40,
             "rating": 1436.8, "deviation": 210.7},
        ],
        "invalid": [],
        "disputed": 2,
        "ratings": "Glicko-2, each game its own rating period",
    }  # fmt: skip
    drawn = CROSSTILES.lists(rated)
    assert '<th scope="col" class="num">Rating</th>' in drawn
    assert '<td class="num">1,563</td><td class="num">211</td>' in drawn
    assert '<td class="num">2.50</td><td class="num">+40</td>' in drawn
    assert "2 disputed games" in drawn
    assert "Glicko-2, each game its own rating period" in drawn


def test_the_stylesheet_and_script_are_served_and_nothing_else_is(pipe: Pipeline) -> None:
    for name, kind in (("scoreboard.css", "text/css"), ("scoreboard.js", "text/javascript")):
        response = pipe.client.get(f"/pages/static/{name}")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(kind)
    assert pipe.client.get("/pages/static/dashboard.html").status_code == 404


def test_a_stream_beyond_its_addresss_share_is_refused_with_retry_after(pipe: Pipeline) -> None:
    pipe.client.app.state.page_followers = live.Followers(most=10, per_address=0)  # type: ignore[attr-defined]
    response = pipe.client.get("/contests/open/stream")
    assert response.status_code == 503
    assert response.headers["retry-after"] == live.RETRY_AFTER_S
    assert "this address follows 0 scoreboards here, its most" in response.json()["detail"]
    assert pipe.client.get("/contests/nowhere/stream").status_code == 404


def test_followers_are_counted_in_all_and_per_address() -> None:
    followers = live.Followers(most=3, per_address=2)
    followers.hold("a")
    followers.hold("a")
    assert followers.refusal("a") is not None and followers.refusal("b") is None
    followers.hold("b")
    assert "its most" in (followers.refusal("c") or "")
    followers.let_go("a")
    followers.let_go("b")
    assert followers.count() == 1 and followers.refusal("a") is None


def test_a_follower_is_sent_the_part_only_when_it_changes_and_a_keep_alive_between() -> None:
    parts = iter(["one", "one", "one", "two", "two"])
    now = [0.0]

    async def read() -> LivePart:
        now[0] += 1.0
        digest = next(parts, None)
        if digest is None:
            raise asyncio.CancelledError  # the client went away
        return LivePart(
            f"<p>{digest}</p>", digest, 1, "t", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
        )

    async def run() -> list[bytes]:
        followers = live.Followers()
        sent: list[bytes] = []
        stream = live.follow(
            followers, "a", read, tick_s=0, keepalive_s=1.5, monotonic=lambda: now[0]
        )
        try:
            async for chunk in stream:
                sent.append(chunk)
        except asyncio.CancelledError:
            pass
        assert followers.count() == 0  # let go when the stream ends
        return sent

    sent = asyncio.run(run())
    kinds = [chunk.split(b"\n")[0] for chunk in sent]
    assert kinds == [b"retry: 2000", b"event: board", b": keep-alive", b"event: board"]
    assert b"<p>one</p>" in sent[1] and b"<p>two</p>" in sent[3]


def test_a_reader_is_answered_from_the_last_board_while_the_next_is_computed() -> None:
    now = [0.0]
    latest: Latest[str] = Latest(stale_most_s=5.0, monotonic=lambda: now[0])

    async def at_once(value: str) -> str:
        return value

    async def run() -> list[str]:
        answers = [await latest.get("c", lambda: at_once("first"))]
        slow = asyncio.Event()

        async def computing() -> str:
            await slow.wait()
            return "second"

        answers.append(await latest.get("c", computing))  # the last one, at once
        slow.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        now[0] = 3.0
        answers.append(await latest.get("c", computing))  # the second one, kept meanwhile
        now[0] = 9.0  # the second is too old to answer for the next
        waited = asyncio.Event()

        async def later() -> str:
            await asyncio.sleep(0)
            waited.set()
            return "third"

        answers.append(await latest.get("c", later))
        assert waited.is_set()
        return answers

    assert asyncio.run(run()) == ["first", "first", "second", "third"]
