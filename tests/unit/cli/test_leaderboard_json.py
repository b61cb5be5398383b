"""`tilejudge leaderboard --json`: the standings to keep or pass on, whole (every page joined)
and in the game's own fields, a Crosstiles player's rating among them."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx

from cli.client import run_leaderboard

PLAYER = {"rank": 1, "nick": "ann", "games": 2, "wins": 2.0, "spread": 40}
RATED = {"rating": 1662.3, "deviation": 290.3, "volatility": 0.06}


def pages() -> httpx.MockTransport:
    """A Crosstiles board in two pages, as the API gives it."""
    first: dict[str, Any] = {
        "contest": "day", "game": "crosstiles", "players": [PLAYER | RATED],
        "invalid": [], "next": "/v1/contests/day/leaderboard?limit=1000&after=1",
    }  # fmt: skip
    second: dict[str, Any] = {
        "contest": "day", "game": "crosstiles", "next": None, "invalid": [],
        "players": [PLAYER | {"rank": 2, "nick": "bob", "wins": 0.0} | RATED],
    }  # fmt: skip

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=second if "after=" in str(request.url) else first)

    return httpx.MockTransport(answer)


def test_the_json_board_is_every_page_joined_with_each_players_rating() -> None:
    out, err = io.StringIO(), io.StringIO()

    code = run_leaderboard(
        "day", "http://127.0.0.1:9", environ={}, out=out, err=err, transport=pages(),
        as_json=True,
    )  # fmt: skip

    assert (code, err.getvalue()) == (0, "")
    board = json.loads(out.getvalue())
    assert [(p["nick"], p["rating"], p["deviation"]) for p in board["players"]] == [
        ("ann", 1662.3, 290.3),
        ("bob", 1662.3, 290.3),
    ]
    assert (board["contest"], board["game"], board["next"]) == ("day", "crosstiles", None)


def test_without_json_the_board_is_a_table() -> None:
    out = io.StringIO()

    run_leaderboard(
        "day", "http://127.0.0.1:9", environ={}, out=out, err=io.StringIO(), transport=pages()
    )

    assert out.getvalue().split("\n")[0].split() == [
        "rank", "player", "games", "wins", "spread", "rating", "RD"
    ]  # fmt: skip
