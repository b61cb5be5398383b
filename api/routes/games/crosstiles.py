"""Crosstiles' part of the HTTP contract: its leaderboard's response model (the players of a
contest's valid game logs, ranked, and its invalid logs)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from api.schemas import FROZEN, NEXT_PAGE, PENDING


class PlayerStanding(BaseModel):
    rank: int
    nick: str
    games: int = Field(description="valid games the player is named in")
    wins: float = Field(description="games won; a k-way tie for the win counts 1/k")
    spread: int = Field(
        description="summed over the games: the player's score minus the best other player's"
    )
    rating: float = Field(
        description="Glicko-2 rating after the contest's counted games in receipt order, each "
        "game a rating period (docs/rules/crosstiles.md); every player starts at 1500"
    )
    deviation: float = Field(description="the rating's deviation (RD); 350 at the start")
    volatility: float = Field(description="the rating's volatility; 0.06 at the start")


class InvalidGame(BaseModel):
    submission: str
    team: str = Field(description="the team that uploaded the log")
    line: int
    reason: str = Field(description="a reason code of the game's rules (docs/rules/)")
    detail: str


class GameStandings(BaseModel):
    """A Crosstiles contest's standings: the players of its valid game logs, ranked by wins,
    then spread, then nick; and its invalid logs, with why."""

    contest: str
    game: str
    players: list[PlayerStanding]
    invalid: list[InvalidGame]
    disputed: int = Field(
        default=0,
        description="games with rival valid logs the organiser has not settled: counted for "
        "no one (GET /v1/contests/{contest}/disputes lists them to the organiser and the clubs "
        "that sent them)",
    )
    next: str | None = Field(default=None, description=NEXT_PAGE)
    frozen: bool = Field(default=False, description=FROZEN)
    pending: int = Field(default=0, description=PENDING)


LEADERBOARD = GameStandings
