"""What verifying a Crosstiles log returns: valid or the first failing line, and the totals."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    """CROSSTILES.md's reason codes, in the order the checks run."""

    MALFORMED = "malformed"
    WRONG_TURN = "wrong_turn"
    RACK_MISMATCH = "rack_mismatch"
    OFF_BOARD = "off_board"
    OCCUPIED = "occupied"
    NOT_ON_RACK = "not_on_rack"
    INCOMPLETE_WORD = "incomplete_word"
    TOO_FEW_TILES = "too_few_tiles"
    MUST_COVER_CENTER = "must_cover_center"
    NOT_CONNECTED = "not_connected"
    NOT_IN_DICTIONARY = "not_in_dictionary"
    BAG_TOO_SMALL = "bag_too_small"
    SCORE_MISMATCH = "score_mismatch"
    END_MISMATCH = "end_mismatch"
    TOTAL_MISMATCH = "total_mismatch"
    AFTER_END = "after_end"
    UNFINISHED = "unfinished"


@dataclass(frozen=True, slots=True)
class LogError:
    """The first failing line (or the line after the last, for a missing part) and why."""

    line: int
    reason: Reason
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason.value, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class PlayerResult:
    nick: str
    score: int
    removed: bool

    def to_json(self) -> dict[str, Any]:
        return {"nick": self.nick, "score": self.score, "removed": self.removed}


@dataclass(frozen=True, slots=True)
class CrosstilesReport:
    """A whole log's result, with exactly the fields CROSSTILES.md fixes.

    ``players`` holds the totals replayed to the end, or to the line before the failing one
    (none when the header fails); ``words`` every distinct word the judged moves made, sorted.
    """

    error: LogError | None
    players: tuple[PlayerResult, ...]
    winners: tuple[str, ...]
    turns: int
    lexicon: str
    board: str
    words: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.error is None,
            "error": None if self.error is None else self.error.to_json(),
            "players": [player.to_json() for player in self.players],
            "winners": list(self.winners),
            "turns": self.turns,
            "lexicon": self.lexicon,
            "board": self.board,
            "words": list(self.words),
        }
