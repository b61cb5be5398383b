"""The squares of a Crosstiles game in play, and what the verifier asks of them about a play.

Squares are numbered 0 to 224, 15 x (row - 1) + column (A = 0); a run is its first square
and its step (1 across, 15 down). A PLAY is the log's spelling of the main word: upper case
for a tile from the rack, lower case for a blank, "." for a square already holding a tile.
"""

from __future__ import annotations

from typing import Final

from judge.crosstiles.board import BLANK, SIZE, SQUARES, TILE_KINDS, Board

_DOT: Final = 46  # "."
_LOWER_A: Final = 97


class Grid:
    """Each square's letter (lower case, 0 when empty) and the points its tile counts once
    placed (a blank 0), with the board's premiums."""

    def __init__(self, board: Board) -> None:
        self.values = board.values
        self.letter_multipliers = board.letter_multipliers
        self.word_multipliers = board.word_multipliers
        self.letters = [0] * SQUARES
        self.text = bytearray(SQUARES)  # the letters again, to slice words out of lines
        self.points = [0] * SQUARES
        self.empty = True

    def clash(self, play: bytes, first: int, step: int) -> int:
        """The offset along the run of the first letter written on a tile or '.' written on
        an empty square; -1 when there is none."""
        letters = self.letters
        square = first
        for offset in range(len(play)):
            if (play[offset] == _DOT) != (letters[square] != 0):
                return offset
            square += step
        return -1

    def extends(self, first: int, step: int, length: int) -> bool:
        """Does a tile lie just before or just after the run (which fits on the board)?"""
        along = first % SIZE if step == 1 else first // SIZE
        before = along > 0 and self.letters[first - step] != 0
        return before or (along + length < SIZE and self.letters[first + length * step] != 0)

    def touches(self, first: int, step: int, length: int) -> bool:
        """Does a square of the run share an edge with a tile, across the run's direction?"""
        letters = self.letters
        square = first
        for _ in range(length):
            if step == SIZE:
                column = square % SIZE
                if (column > 0 and letters[square - 1]) or (
                    column < SIZE - 1 and letters[square + 1]
                ):
                    return True
            elif (square >= SIZE and letters[square - SIZE]) or (
                square < SQUARES - SIZE and letters[square + SIZE]
            ):
                return True
            square += step
        return False

    def place(self, play: bytes, first: int, step: int) -> None:
        letters = self.letters
        square = first
        for byte in play:
            if byte != _DOT:
                letter = byte | 32
                letters[square] = letter
                self.text[square] = letter
                self.points[square] = 0 if byte >= _LOWER_A else self.values[byte - 65]
            square += step
        self.empty = False

    def words_and_score(self, play: bytes, first: int, step: int) -> tuple[list[str], int]:
        """The words a play already placed makes (the main word, then the cross words in order
        along it) and their score, before the full-rack bonus."""
        text = self.text
        points = self.points
        letter_multipliers = self.letter_multipliers
        word_multipliers = self.word_multipliers
        across = SIZE if step == 1 else 1
        words = [text[first : first + len(play) * step : step].decode("ascii")]
        main_sum = 0
        main_multiplier = 1
        cross_total = 0
        square = first
        for byte in play:
            if byte == _DOT:
                main_sum += points[square]
            else:
                value = points[square] * letter_multipliers[square]
                main_sum += value
                main_multiplier *= word_multipliers[square]
                start, end = self.cross_run(square, across)
                if start != end:
                    words.append(text[start : end + 1 : across].decode("ascii"))
                    others = -points[square]
                    for at in range(start, end + 1, across):
                        others += points[at]
                    cross_total += (others + value) * word_multipliers[square]
            square += step
        return words, main_sum * main_multiplier + cross_total

    def cross_run(self, square: int, across: int) -> tuple[int, int]:
        """The first and last squares of the run of tiles through ``square`` in the direction
        ``across`` (both ``square`` when it has no neighbour that way)."""
        letters = self.letters
        start = square
        end = square
        if across == 1:
            while start % SIZE > 0 and letters[start - 1]:
                start -= 1
            while end % SIZE < SIZE - 1 and letters[end + 1]:
                end += 1
        else:
            while start >= SIZE and letters[start - SIZE]:
                start -= SIZE
            while end < SQUARES - SIZE and letters[end + SIZE]:
                end += SIZE
        return start, end


def tiles_placed(play: bytes) -> list[int]:
    """The rack tiles a play places, counted by tile code (a blank for each lower case)."""
    counts = [0] * TILE_KINDS
    for byte in play:
        if byte >= _LOWER_A:
            counts[BLANK] += 1
        elif byte != _DOT:
            counts[byte - 65] += 1
    return counts
