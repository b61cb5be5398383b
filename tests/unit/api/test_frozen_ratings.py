"""Crosstiles ratings freeze like the rest of the standings: while a contest is frozen, the
public board's and the public page's ratings are computed from the games received before the
freeze only, as if the later ones had not been played; the organiser sees every game counted,
and the thaw shows the ratings of them all. Computed here from the games' own results, in
receipt order, by `judge.crosstiles.ratings`."""

from __future__ import annotations

import re
from typing import Any

import pytest

from api.pages.latest import Latest
from core import clock
from devstack.testing.pipeline import ADMIN, Pipeline, drain
from judge.crosstiles.ratings import Seat, contest_ratings, shown
from tests.unit.api.test_crosstiles_contest import passing_game
from tests.unit.api.test_freeze import CONTEST, Shifted, board, frozen_contest, past_the_freeze


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> Shifted:
    moved = Shifted()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def game(seed: str, nicks: tuple[str, ...]) -> tuple[bytes, list[Seat]]:
    """A valid log of a game everyone passes through, and its seats as a rating sees them."""
    log, values = passing_game(seed, nicks)
    return log, [Seat(nick, -value, False) for nick, value in zip(nicks, values, strict=True)]


def ratings_of(found: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {
        p["nick"]: {k: p[k] for k in ("rating", "deviation", "volatility")}
        for p in found["players"]
    }


def expected(*games: list[Seat]) -> dict[str, dict[str, float]]:
    return {nick: shown(rating) for nick, rating in contest_ratings(games).items()}


def page_rating(page: str, nick: str) -> tuple[str, str]:
    """The rating and deviation the page's row of `nick` shows (its last two cells)."""
    row = re.search(rf'<th scope="row">{re.escape(nick)}</th>(.*?)</tr>', page)
    assert row is not None, page
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    return cells[-2], cells[-1]


def as_shown(rating: dict[str, float]) -> tuple[str, str]:
    """A rating and its deviation as the page rounds them."""
    return f"{rating['rating']:,.0f}", f"{rating['deviation']:,.0f}"


def test_a_frozen_boards_ratings_leave_out_the_games_received_after_the_freeze_until_the_thaw(
    pipe: Pipeline, shifted: Shifted
) -> None:
    frozen_contest(pipe, game="crosstiles")
    club = pipe.add_team("club", CONTEST, uploads_logs=True)
    early_log, early = game("early", ("ann", "bob"))
    pipe.accepted(club, early_log)
    drain(pipe.services)
    past_the_freeze(shifted)
    # Later games of the same players, and one with a new player: each would move the ratings.
    late_logs = [game("late", ("ann", "bob")), game("later", ("ann", "cyd"))]
    for log, _ in late_logs:
        pipe.accepted(club, log)
    drain(pipe.services)

    before_freeze = expected(early)
    every_game = expected(early, *(seats for _, seats in late_logs))
    assert before_freeze["ann"] != every_game["ann"] and before_freeze["bob"] != every_game["bob"]

    public = board(pipe)
    assert (public["frozen"], public["pending"]) == (True, 2)
    assert ratings_of(public) == before_freeze
    assert [p["games"] for p in public["players"]] == [1, 1]
    page = pipe.client.get(f"/contests/{CONTEST}").text
    assert as_shown(before_freeze["ann"]) != as_shown(every_game["ann"])
    assert page_rating(page, "ann") == as_shown(before_freeze["ann"])
    assert page_rating(page, "bob") == as_shown(before_freeze["bob"])
    assert "cyd" not in page
    assert ratings_of(board(pipe, ADMIN)) == every_game

    assert pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN).status_code == 200
    thawed = board(pipe)
    assert (thawed["frozen"], thawed["pending"]) == (False, 0)
    assert ratings_of(thawed) == every_game
    # The page's board is shared for a short window (the open page hears the thaw live).
    pipe.services.public.forget(("scoreboard", CONTEST))
    pipe.client.app.state.page_boards = Latest()  # type: ignore[attr-defined]
    page = pipe.client.get(f"/contests/{CONTEST}").text
    for nick in ("ann", "bob", "cyd"):
        assert page_rating(page, nick) == as_shown(every_game[nick])
