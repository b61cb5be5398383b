"""The bot's move search: words made of rack tiles and one tile already on the board.

Candidate words come from an index by sorted letters: every sub-multiset of the rack plus
the anchor's letter is one lookup, so a turn costs a few thousand dictionary lookups rather
than a scan of the word list. Each candidate is then checked in full (bounds, the squares
just before and after it, the cross words, the rack) and scored.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations

from judge.crosstiles.board import CENTER, SIZE, Board
from judge.lexicon import Lexicon

_LONGEST = 8  # seven rack tiles and the anchor
_ENOUGH_MOVES = 12  # legal placements found before the best of them is played
_FULL_RACK_BONUS = 50
_INDEXES: dict[str, WordIndex] = {}


@dataclass(frozen=True)
class WordIndex:
    """Words of 2 to 8 letters (upper case) by their sorted letters, and the whole list."""

    by_letters: dict[str, tuple[str, ...]] = field(repr=False)
    words: frozenset[str] = field(repr=False)

    @classmethod
    def build(cls, words: Iterable[str]) -> WordIndex:
        known = frozenset(words)
        grouped: dict[str, list[str]] = {}
        for word in sorted(known):
            if 2 <= len(word) <= _LONGEST:
                upper = word.upper()
                grouped.setdefault("".join(sorted(upper)), []).append(upper)
        return cls({key: tuple(group) for key, group in grouped.items()}, known)


def word_index(lexicon: Lexicon) -> WordIndex:
    """The index of a lexicon, built once and kept for the last few lexicons asked for."""
    index = _INDEXES.get(lexicon.id)
    if index is None:
        if len(_INDEXES) >= 2:
            _INDEXES.pop(next(iter(_INDEXES)))
        index = _INDEXES[lexicon.id] = WordIndex.build(lexicon.words)
    return index


@dataclass(frozen=True)
class Move:
    """A placement: the main word's first square, its step (1 across, 15 down), PLAY as the
    log writes it, the tiles it takes from the rack ('?' for a blank) and its score."""

    first: int
    step: int
    play: str
    tiles: tuple[str, ...]
    score: int

    @property
    def position(self) -> str:
        row, column = f"{self.first // SIZE + 1}", string.ascii_uppercase[self.first % SIZE]
        return row + column if self.step == 1 else column + row


@dataclass
class Position:
    """The board as the bot sees it: upper-case letters ('' empty) and each tile's points."""

    board: Board
    letters: list[str] = field(default_factory=lambda: [""] * SIZE * SIZE)
    points: list[int] = field(default_factory=lambda: [0] * SIZE * SIZE)

    @property
    def empty(self) -> bool:
        return not any(self.letters)

    def play(self, move: Move) -> None:
        square = move.first
        for char in move.play:
            if char != ".":
                self.letters[square] = char.upper()
                value = 0 if char.islower() else self.board.values[ord(char) - 65]
                self.points[square] = value
            square += move.step


def find_move(
    index: WordIndex, position: Position, rack: list[str], rng: random.Random, *, budget: int
) -> Move | None:
    """The best-scoring of the first few legal placements found, or None. ``budget`` caps
    the candidates checked."""
    found: list[Move] = []
    blanks = rack.count("?")
    letters = sorted(tile for tile in rack if tile != "?")
    subsets = {"".join(c) for size in range(len(letters) + 1) for c in combinations(letters, size)}
    wildcards = [""] + (list(string.ascii_uppercase) if blanks and rng.random() < 0.5 else [])
    anchors = _anchors(position, rng)
    checked = 0
    for anchor in anchors:
        through = position.letters[anchor]  # "" on the empty board's middle square
        for word in _candidates(index, subsets, through, wildcards):
            for first, step in _placings(word, anchor, through):
                checked += 1
                move = evaluate(index, position, rack, word, first, step)
                if move is not None:
                    found.append(move)
            if len(found) >= _ENOUGH_MOVES or checked >= budget:
                return max(found, key=lambda move: move.score, default=None)
    return max(found, key=lambda move: move.score, default=None)


def _anchors(position: Position, rng: random.Random) -> list[int]:
    if position.empty:
        return [CENTER]
    anchors = [square for square, letter in enumerate(position.letters) if letter]
    rng.shuffle(anchors)
    return anchors


def _candidates(
    index: WordIndex, subsets: set[str], through: str, wildcards: list[str]
) -> list[str]:
    words: set[str] = set()
    for subset in subsets:
        for wildcard in wildcards:
            key = "".join(sorted(subset + through + wildcard))
            words.update(index.by_letters.get(key, ()))
    return sorted(words)


def _placings(word: str, anchor: int, through: str) -> list[tuple[int, int]]:
    """(first square, step) for each way the word can lie with a letter on the anchor."""
    row, column = divmod(anchor, SIZE)
    placings = []
    for i, letter in enumerate(word):
        if through and letter != through:
            continue
        if column - i >= 0:
            placings.append((anchor - i, 1))
        if through and row - i >= 0:
            placings.append((anchor - i * SIZE, SIZE))
    return placings


def evaluate(
    index: WordIndex, position: Position, rack: list[str], word: str, first: int, step: int
) -> Move | None:
    """The word laid from ``first`` as a Move, if it is a legal placement from this rack."""
    letters = position.letters
    length = len(word)
    along = first % SIZE if step == 1 else first // SIZE
    after = first + length * step
    if along + length > SIZE or (along > 0 and letters[first - step]):
        return None
    if along + length < SIZE and letters[after]:
        return None
    available = {tile: rack.count(tile) for tile in set(rack)}
    play: list[str] = []
    tiles: list[str] = []
    for i, letter in enumerate(word):
        square = first + i * step
        if letters[square]:
            if letters[square] != letter:
                return None
            play.append(".")
        elif available.get(letter, 0):
            available[letter] -= 1
            play.append(letter)
            tiles.append(letter)
        elif available.get("?", 0):
            available["?"] -= 1
            play.append(letter.lower())
            tiles.append("?")
        else:
            return None
    if not _connects(position, first, step, play):
        return None
    score = _score(index, position, first, step, play)
    if score is None:
        return None
    bonus = _FULL_RACK_BONUS if len(tiles) == 7 else 0
    return Move(first, step, "".join(play), tuple(tiles), score + bonus)


def _connects(position: Position, first: int, step: int, play: list[str]) -> bool:
    placed = [first + i * step for i, char in enumerate(play) if char != "."]
    if position.empty:
        return len(placed) >= 2 and CENTER in placed
    if not placed:
        return False
    if len(placed) < len(play):
        return True
    across = SIZE if step == 1 else 1
    letters = position.letters
    for square in placed:
        for neighbour in (square - across, square + across):
            on_board = across == SIZE or neighbour // SIZE == square // SIZE
            if on_board and 0 <= neighbour < SIZE * SIZE and letters[neighbour]:
                return True
    return False


def _score(
    index: WordIndex, position: Position, first: int, step: int, play: list[str]
) -> int | None:
    """The score of the main word and the cross words; None if a cross word is no word."""
    board, letters, points = position.board, position.letters, position.points
    across = SIZE if step == 1 else 1
    main_sum, main_multiplier, cross_total = 0, 1, 0
    for i, char in enumerate(play):
        square = first + i * step
        if char == ".":
            main_sum += points[square]
            continue
        value = 0 if char.islower() else board.values[ord(char) - 65]
        value *= board.letter_multipliers[square]
        main_sum += value
        main_multiplier *= board.word_multipliers[square]
        before, after = _run(letters, square, across)
        if before or after:
            cross = "".join(letters[s] for s in before) + char.upper()
            cross += "".join(letters[s] for s in after)
            if cross.lower() not in index.words:
                return None
            other = sum(points[s] for s in before) + sum(points[s] for s in after)
            cross_total += (other + value) * board.word_multipliers[square]
    return main_sum * main_multiplier + cross_total


def _run(letters: list[str], square: int, across: int) -> tuple[list[int], list[int]]:
    """The occupied squares just before and after ``square`` across the main word."""
    before: list[int] = []
    at = square - across
    while at >= 0 and letters[at] and (across == SIZE or at // SIZE == square // SIZE):
        before.insert(0, at)
        at -= across
    after: list[int] = []
    at = square + across
    while at < SIZE * SIZE and letters[at] and (across == SIZE or at // SIZE == square // SIZE):
        after.append(at)
        at += across
    return before, after
