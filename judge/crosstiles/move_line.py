"""One move line of a Crosstiles log as the verifier reads it (CROSSTILES.md's move table):
the whole table as one pattern, which row a line matched, and its fields as tiles and squares.

Only the form is read here; whether the move is legal is the replay's to judge (``engine``).
"""

from __future__ import annotations

import re
from typing import Final

from judge.crosstiles.board import BLANK, SIZE, TILE_KINDS
from judge.crosstiles.details import field_text

# Every row of the spec's move table in one match. Groups: 1 nick, 2 rack, then placement
# (3 position, 4 play, 5 score), exchange or pass (6 tiles, empty for a pass; 7 score),
# missed deadline (8 score), rack penalty (9 tiles, 10 points), going out (11 tiles,
# 12 points), and 13 the total.
_MOVE: Final = re.compile(
    rb"[ \t]*>([A-Za-z0-9_-]{1,32}):[ \t]+(?:([A-Z?]+)[ \t]+(?:"
    rb"([0-9]{1,2}[A-Z]|[A-Z][0-9]{1,2})[ \t]+([A-Za-z.]+)[ \t]+\+([0-9]{1,9})"
    rb"|-([A-Z?]*)[ \t]+\+([0-9]{1,9})"
    rb"|\(timeout\)[ \t]+\+([0-9]{1,9})"
    rb"|\(([A-Z?]+)\)[ \t]+-([0-9]{1,9}))"
    rb"|\(([A-Z?]+)\)[ \t]+\+([0-9]{1,9}))"
    rb"[ \t]+(-?[0-9]{1,9})[ \t]*"
)

# The kinds of move line: the group that holds each kind's score.
_PLACEMENT: Final = 5
_EXCHANGE: Final = 7
_TIMEOUT: Final = 8
_PENALTY: Final = 10
_GAIN: Final = 12


def _kind(move: re.Match[bytes]) -> int:
    """Which row of the move table matched: the group number of its score."""
    if move.group(5) is not None:
        return _PLACEMENT
    if move.group(7) is not None:
        return _EXCHANGE
    if move.group(8) is not None:
        return _TIMEOUT
    if move.group(10) is not None:
        return _PENALTY
    return _GAIN


def _counts(tiles: bytes) -> list[int]:
    counts = [0] * TILE_KINDS
    for byte in tiles:
        counts[BLANK if byte == 63 else byte - 65] += 1
    return counts


def _codes(tiles: bytes) -> list[int]:
    return [BLANK if byte == 63 else byte - 65 for byte in tiles]


def _locate(position: bytes, length: int) -> tuple[int, int, str]:
    """The first square and the step of the run POS and the play's length name, and why it
    is off the board ("" when it is not)."""
    if position[0] <= 57:  # a digit first: the row, running across
        row = int(position[:-1]) - 1
        column = position[-1] - 65
        step, along = 1, column
    else:
        column = position[0] - 65
        row = int(position[1:]) - 1
        step, along = SIZE, row
    if not (0 <= row < SIZE and 0 <= column < SIZE):
        return 0, step, f"{field_text(position)} is not on the board"
    if along + length > SIZE:
        return (
            0,
            step,
            f"{length} squares from {field_text(position)} run past the edge of the board",
        )
    return row * SIZE + column, step, ""
