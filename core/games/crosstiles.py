"""The games a contest can judge, and what a judged Crosstiles game log keeps besides its report.

A contest's game is fixed when it is created. Wordytaire uploads are a team's own moves; a
Crosstiles upload is the log of a whole game between named players (CROSSTILES.md), so it is
judged whole: valid, or invalid at its first failing line. Its result row's columns read:

- `score`: the winning score (the highest final score among players not removed) of a valid
  game, 0 for an invalid one;
- `legal`: the lines judged after the header that passed (every one, for a valid game);
- `illegal`: 1 for an invalid game (its failing line), 0 for a valid one;
- `tiles`: 0 (the report does not count the tiles a game placed).

Each player of a valid game gets a row (`GamePlayer`): its seat, nick, final score, whether it
was removed, its share of the win and its spread; an invalid game gets its error instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from judge.crosstiles import Board, CrosstilesReport
from judge.crosstiles.board import TILE_NAMES

# Recorded as `judge_version` with every Crosstiles result.
CROSSTILES_JUDGE_VERSION = "crosstiles-1"
# A win's share is kept in twelfths: a game has at most four players, so a k-way tie among the
# winners gives each a whole 12/k, and sums stay exact (a third would not, as a float).
WIN_TWELFTHS = 12


class Game(StrEnum):
    WORDYTAIRE = "wordytaire"
    CROSSTILES = "crosstiles"

    @property
    def logs(self) -> bool:
        """Uploads are game logs that name players besides the uploading team: the same bytes
        from any team are one game, and only teams the organiser allows may upload."""
        return self is Game.CROSSTILES


@dataclass(frozen=True)
class GamePlayer:
    """A player of a valid game. `spread` is the player's final score minus the best final
    score among the others (the winner's margin, or how far behind the winner a player is)."""

    seat: int  # 1-based, the log's player order
    nick: str
    score: int
    removed: bool
    win_twelfths: int  # 12 for a sole winner, 12/k in a k-way tie, 0 otherwise
    spread: int


@dataclass(frozen=True)
class GameError:
    """Why a game log is invalid: its first failing line, reason code and detail."""

    line: int
    reason: str
    detail: str


@dataclass(frozen=True)
class GameOutcome:
    """What the standings read of a judged game: its players if valid, else its error."""

    players: tuple[GamePlayer, ...]
    error: GameError | None

    @property
    def valid(self) -> bool:
        return self.error is None

    @property
    def winners(self) -> tuple[str, ...]:
        return tuple(player.nick for player in self.players if player.win_twelfths)


def outcome(report: CrosstilesReport) -> GameOutcome:
    if report.error is not None:
        error = report.error
        return GameOutcome((), GameError(error.line, error.reason.value, error.detail))
    winners = set(report.winners)
    scores = [player.score for player in report.players]
    players = []
    for seat, player in enumerate(report.players, 1):
        others = scores[: seat - 1] + scores[seat:]
        share = WIN_TWELFTHS // len(winners) if player.nick in winners else 0
        players.append(
            GamePlayer(
                seat=seat,
                nick=player.nick,
                score=player.score,
                removed=player.removed,
                win_twelfths=share,
                spread=player.score - max(others),
            )
        )
    return GameOutcome(tuple(players), None)


def winning_score(report: CrosstilesReport) -> int:
    """The score a valid game was won with; 0 for an invalid one."""
    if report.error is not None or not report.winners:
        return 0
    winners = set(report.winners)
    return max(player.score for player in report.players if player.nick in winners)


def board_json(board: Board) -> str:
    """A board as the JSON a board file holds (its id is kept: `Board.from_json` of this text
    has the same id)."""
    tiles = {tile: [board.counts[code], board.values[code]] for code, tile in enumerate(TILE_NAMES)}
    doc = {
        "name": board.name,
        "premiums": [" ".join(row) for row in board.premiums],
        "tiles": tiles,
    }
    return json.dumps(doc, indent=1)
