"""A deterministic bot that writes realistic submissions, legal and illegal lines mixed.

Used by tests, the demo, benchmarks and load tests. It keeps its own plain board so that every
line it writes is meant to get a known verdict; the tests check that meaning against the engine.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from judge.wordytaire.layout import Layout
from judge.wordytaire.report import Reason

_SHORTEST, _LONGEST = 2, 8
_TRIES_PER_MOVE = 200
_FRONTIER = 40
_FAR = 10**15  # far from anything the bot ever builds: a sure not_connected


@dataclass(frozen=True)
class WordIndex:
    """Playable words by the letters they contain, built once per lexicon."""

    words: tuple[str, ...]
    containing: dict[str, tuple[str, ...]] = field(repr=False)
    known: frozenset[str] = field(repr=False)

    @classmethod
    def build(cls, lexicon_words: Iterable[str]) -> WordIndex:
        known = frozenset(lexicon_words)
        words = tuple(sorted(w for w in known if _SHORTEST <= len(w) <= _LONGEST))
        containing: dict[str, list[str]] = {}
        for word in words:
            for letter in set(word):
                containing.setdefault(letter, []).append(word)
        return cls(words, {k: tuple(v) for k, v in containing.items()}, known)


@dataclass
class _Board:
    tiles: dict[tuple[int, int], str] = field(default_factory=dict)
    order: list[tuple[int, int]] = field(default_factory=list)
    across: dict[tuple[int, int], bool] = field(default_factory=dict)
    bag: dict[str, int] = field(default_factory=dict)
    played: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    empty: set[str] = field(default_factory=set)  # the letters the bag has none of

    def __post_init__(self) -> None:
        self.empty.update(c for c, n in self.bag.items() if n == 0)


def generate(
    index: WordIndex, layout: Layout, *, seed: int, moves: int, illegal_share: float = 0.0
) -> bytes:
    """Up to ``moves`` move lines; fewer when no legal move fits the bag any more."""
    rng = random.Random(seed)
    board = _Board(bag=dict(layout.bag))
    lines: list[str] = []
    if illegal_share > 0 and moves > 1:
        lines.append(_off_origin(rng, index))
    while len(lines) < moves:
        if rng.random() < illegal_share:
            line = _illegal(rng, index, board)
            if line is not None:
                lines.append(line)
                continue
        move = _legal(rng, index, board)
        if move is None:
            break
        lines.append(_format(rng, move))
    return "".join(line + "\n" for line in lines).encode()


def _format(rng: random.Random, move: tuple[int, int, int, int, str]) -> str:
    # Contest programs write plain single spaces; now and then a tab or a padded number.
    style = rng.random()
    if style < 0.02:
        return "\t".join(map(str, move))
    if style < 0.03:
        return "  ".join(map(str, move)) + " "
    return " ".join(map(str, move))


def _cells(x: int, y: int, across: bool, length: int) -> list[tuple[int, int]]:
    return [(x + i, y) if across else (x, y + i) for i in range(length)]


def _legal(
    rng: random.Random, index: WordIndex, board: _Board
) -> tuple[int, int, int, int, str] | None:
    tiles, bag = board.tiles, board.bag
    for attempt in range(_TRIES_PER_MOVE):
        if not board.order:
            word = rng.choice(index.words)
            across, offset = rng.random() < 0.5, rng.randrange(len(word))
            x, y = (-offset, 0) if across else (0, -offset)
        else:
            # Cross a recent tile at right angles to the word that placed it, as players do:
            # old tiles in the middle of the board rarely have room left.
            frontier = len(board.order) if attempt % 2 else min(len(board.order), _FRONTIER)
            ax, ay = board.order[-rng.randrange(1, frontier + 1)]
            letter = tiles[ax, ay]
            word = rng.choice(index.containing.get(letter, index.words))
            positions = [i for i, c in enumerate(word) if c == letter] or [0]
            offset = rng.choice(positions)
            across = not board.across[ax, ay]
            if not board.empty.isdisjoint(word):
                continue
            x, y = (ax - offset, ay) if across else (ax, ay - offset)
        # One pass over the word's cells: it must cross the board (once there is one), agree
        # with every tile it crosses, and place at least one tile the bag still holds.
        crosses = not board.order
        new: list[tuple[tuple[int, int], str]] = []
        for i, c in enumerate(word):
            cell = (x + i, y) if across else (x, y + i)
            held = tiles.get(cell)
            if held is None:
                new.append((cell, c))
            elif held != c:
                break
            else:
                crosses = True
        else:
            if not crosses or not new:
                continue
            need: dict[str, int] = {}
            for _, c in new:
                need[c] = need.get(c, 0) + 1
            if any(bag[c] < n for c, n in need.items()):
                continue
            for cell, c in new:
                tiles[cell] = c
                board.order.append(cell)
                board.across[cell] = across
                bag[c] -= 1
                if not bag[c]:
                    board.empty.add(c)
            end = (x + len(word) - 1, y) if across else (x, y + len(word) - 1)
            move = (x, y, end[0], end[1], word)
            board.played.append(move)
            return move
    return None


def _off_origin(rng: random.Random, index: WordIndex) -> str:
    word = rng.choice(index.words)
    x, y = rng.randrange(3, 40), rng.randrange(-40, 40)
    return f"{x} {y} {x + len(word) - 1} {y} {word}"


def _illegal(rng: random.Random, index: WordIndex, board: _Board) -> str | None:
    """A line meant to fail with some reason code; None if none of a few draws can happen yet."""
    for _ in range(8):
        line = _illegal_for(rng, rng.choice(list(Reason)), index, board)
        if line is not None:
            return line
    return None


def _illegal_for(rng: random.Random, reason: Reason, index: WordIndex, board: _Board) -> str | None:
    """A line meant to fail with `reason`; None when that reason cannot happen yet."""
    word = rng.choice(index.words)
    n = len(word)
    if reason is Reason.MALFORMED:
        return rng.choice(
            [
                f"0 0 {n - 1} {word}",
                f"+1 0 {n} 0 {word}",
                f"0 0 1e3 0 {word}",
                f"1234567890123456789 0 0 0 {word}",
                f"0 0 {n - 1} 0 {word} extra",
                f"0x10 0 0 0 {word}",
            ]
        )
    if reason is Reason.BAD_LETTERS:
        spoiled = rng.choice([word.capitalize(), word + "é", word + "1", word.upper()])
        return f"0 0 {len(spoiled) - 1} 0 {spoiled}"
    if reason is Reason.TOO_SHORT:
        return f"4 -2 4 -2 {word}"
    if reason is Reason.BAD_DIRECTION:
        return rng.choice([f"{n - 1} 0 0 0 {word}", f"0 {n - 1} 0 0 {word}", f"0 0 2 2 {word}"])
    if reason is Reason.LENGTH_MISMATCH:
        return f"0 0 {n + 2} 0 {word}"
    if reason is Reason.NOT_IN_DICTIONARY:
        typo = word + "qzx"
        return None if typo in index.known else f"0 0 {len(typo) - 1} 0 {typo}"
    if not board.order:
        return None
    if reason is Reason.NOT_CONNECTED:
        x = _FAR + rng.randrange(1000)
        return f"{x} 7 {x + n - 1} 7 {word}"
    if reason is Reason.NO_NEW_TILES:
        return " ".join(map(str, rng.choice(board.played)))
    if reason is Reason.CONFLICT:
        return _conflict(rng, index, board)
    if reason is Reason.BAG_EMPTY:
        return _bag_empty(rng, index, board)
    return None  # MUST_COVER_ORIGIN: only on an empty board, written first


def _conflict(rng: random.Random, index: WordIndex, board: _Board) -> str | None:
    ax, ay = rng.choice(board.order)
    word = rng.choice(index.words)
    positions = [i for i, c in enumerate(word) if c != board.tiles[ax, ay]]
    if not positions:
        return None
    offset = rng.choice(positions)
    across = rng.random() < 0.5
    x, y = (ax - offset, ay) if across else (ax, ay - offset)
    end = _cells(x, y, across, len(word))[-1]
    return f"{x} {y} {end[0]} {end[1]} {word}"


def _bag_empty(rng: random.Random, index: WordIndex, board: _Board) -> str | None:
    empty = [c for c, n in board.bag.items() if n == 0]
    if not empty:
        return None
    for _ in range(_TRIES_PER_MOVE):
        ax, ay = rng.choice(board.order)
        word = rng.choice(index.containing.get(rng.choice(empty), index.words))
        offset = rng.choice([i for i, c in enumerate(word) if c == board.tiles[ax, ay]] or [-1])
        if offset < 0:
            continue
        across = rng.random() < 0.5
        x, y = (ax - offset, ay) if across else (ax, ay - offset)
        cells = _cells(x, y, across, len(word))
        if any(board.tiles.get(cell, c) != c for cell, c in zip(cells, word, strict=True)):
            continue
        new = [c for cell, c in zip(cells, word, strict=True) if cell not in board.tiles]
        if any(board.bag[c] == 0 for c in new):
            return f"{x} {y} {cells[-1][0]} {cells[-1][1]} {word}"
    return None
