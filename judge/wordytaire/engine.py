"""The Wordytaire rules engine: submission bytes in, one verdict per move line out (SPEC.md)."""

from __future__ import annotations

import re

from judge.lexicon import Lexicon
from judge.wordytaire.layout import BONUSES, LETTERS, Layout
from judge.wordytaire.report import Reason, Report, Verdict

_BOM = b"\xef\xbb\xbf"
_NUMBER = rb"(-?[0-9]{1,18})"
# A well-formed move in one match: the fast path for nearly every line.
_MOVE = re.compile(rb"[ \t]*" + rb"[ \t]+".join([_NUMBER] * 4) + rb"[ \t]+([a-z]+)[ \t]*").fullmatch
_SEPARATORS = re.compile(rb"[ \t]+")
_IS_NUMBER = re.compile(_NUMBER).fullmatch

MALFORMED = Reason.MALFORMED
BAD_LETTERS = Reason.BAD_LETTERS
TOO_SHORT = Reason.TOO_SHORT
BAD_DIRECTION = Reason.BAD_DIRECTION
LENGTH_MISMATCH = Reason.LENGTH_MISMATCH
NOT_IN_DICTIONARY = Reason.NOT_IN_DICTIONARY
MUST_COVER_ORIGIN = Reason.MUST_COVER_ORIGIN
NOT_CONNECTED = Reason.NOT_CONNECTED
CONFLICT = Reason.CONFLICT
NO_NEW_TILES = Reason.NO_NEW_TILES
BAG_EMPTY = Reason.BAG_EMPTY

# A lane is one row (for a word running right) or one column (for a word running down):
# {fixed coordinate: {coordinate along the lane: letter byte}}. Keeping the board as rows
# and as columns lets a move read its own lane and its two neighbours with three lookups.
Lanes = dict[int, dict[int, int]]


def judge(data: bytes, lexicon: Lexicon, layout: Layout) -> Report:
    """Judge a whole submission. Never raises on any bytes; illegal lines are verdicts."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    lines = data[start:].split(b"\n") if start else data.split(b"\n")
    words = lexicon.words
    period = layout.period
    points = [0] * 128
    bag = [0] * 128
    for name in LETTERS:
        points[ord(name)] = layout.points[name]
        bag[ord(name)] = layout.bag[name]
    # across[fixed % period][along % period] = (letter multiplier, word multiplier)
    by_row = [[BONUSES[square] for square in row] for row in layout.bonus]
    by_column = [list(column) for column in zip(*by_row, strict=True)]

    rows: Lanes = {}
    columns: Lanes = {}
    verdicts: list[Verdict] = []
    append = verdicts.append
    looked_up: set[str] = set()
    # One string object per distinct detail (up to _SHARED_DETAILS of them): a million lines
    # that fail alike then cost a verdict each, not a verdict and a copy of its sentence.
    shared: dict[str, str] = {}
    total = 0
    placed = 0
    board_empty = True
    match = _MOVE

    for number, line in enumerate(lines, 1):
        if line[-1:] == b"\r":
            line = line[:-1]
        move = match(line)
        if move is None:
            unparsed = _unparsed(line)
            if unparsed is not None:
                append(Verdict(number, unparsed[0], detail=_share(shared, unparsed[1])))
            continue
        sx1, sy1, sx2, sy2, word = move.groups()
        x1 = int(sx1)
        y1 = int(sy1)
        x2 = int(sx2)
        y2 = int(sy2)
        if y1 == y2:
            if x2 > x1:
                fixed, first, last, lanes, crossing, bonus = y1, x1, x2, rows, columns, by_row
            elif x1 == x2:
                append(Verdict(number, TOO_SHORT, detail=_TOO_SHORT))
                continue
            else:
                append(Verdict(number, BAD_DIRECTION, detail=_LEFT))
                continue
        elif x1 == x2 and y2 > y1:
            fixed, first, last, lanes, crossing, bonus = x1, y1, y2, columns, rows, by_column
        else:
            append(Verdict(number, BAD_DIRECTION, detail=_UP if x1 == x2 else _ASKEW))
            continue
        if last - first + 1 != len(word):
            cells = last - first + 1
            detail = f"it covers {cells} cells but the word has {len(word)} letters"
            append(Verdict(number, LENGTH_MISMATCH, detail=_share(shared, detail)))
            continue
        text = word.decode("ascii")
        looked_up.add(text)
        if text not in words:
            detail = _share(shared, f"'{text}' is not in the lexicon")
            append(Verdict(number, NOT_IN_DICTIONARY, detail=detail))
            continue

        lane = lanes.get(fixed)
        existing: list[int | None]
        if lane:
            existing = [lane.get(p) for p in range(first, last + 1)]
            fresh = existing.count(None)
        else:
            existing = [None] * len(word)
            fresh = len(word)
        if board_empty:
            if fixed != 0 or first > 0 or last < 0:
                append(Verdict(number, MUST_COVER_ORIGIN, detail=_ORIGIN))
                continue
        elif fresh == len(word) and not _touches(lanes, fixed, first, last):
            append(Verdict(number, NOT_CONNECTED, detail=_ALONE))
            continue

        if fresh != len(word):
            clash = -1
            for index, (tile, letter) in enumerate(zip(existing, word)):
                if tile is not None and tile != letter:
                    clash = index
                    break
            if clash >= 0:
                across = lanes is rows
                detail = _conflict(across, fixed, first + clash, existing[clash], word[clash])
                append(Verdict(number, CONFLICT, detail=_share(shared, detail)))
                continue
            if not fresh:
                append(Verdict(number, NO_NEW_TILES, detail=_NOTHING_NEW))
                continue
        short = False
        for tile, letter in zip(existing, word):
            if tile is None:
                left = bag[letter] - 1
                bag[letter] = left
                if left < 0:
                    short = True
        if short:
            for tile, letter in zip(existing, word):
                if tile is None:
                    bag[letter] += 1
            detail = _short(bag, [c for t, c in zip(existing, word) if t is None])
            append(Verdict(number, BAG_EMPTY, detail=_share(shared, detail)))
            continue

        if lane is None:
            lane = lanes[fixed] = {}
        squares = bonus[abs(fixed) % period]
        score = 0
        multiplier = 1
        p = first
        for tile, letter in zip(existing, word):
            if tile is None:
                letter_bonus, word_bonus = squares[abs(p) % period]
                score += points[letter] * letter_bonus
                multiplier *= word_bonus
                lane[p] = letter
                cross = crossing.get(p)
                if cross is None:
                    crossing[p] = {fixed: letter}
                else:
                    cross[fixed] = letter
            else:
                score += points[letter]
            p += 1
        score *= multiplier
        total += score
        placed += fresh
        board_empty = False
        # Built as the tuple it is: NamedTuple's own __new__ is a Python function, and this runs
        # for every legal line.
        append(tuple.__new__(Verdict, (number, None, score, fresh, "")))

    return Report(
        lexicon=lexicon.id,
        layout=layout.id,
        verdicts=tuple(verdicts),
        total=total,
        tiles_placed=placed,
        bag_left={name: bag[ord(name)] for name in LETTERS},
        words=frozenset(looked_up),
    )


def _share(shared: dict[str, str], detail: str) -> str:
    """The copy of `detail` already held, or `detail`, kept for next time while there is room."""
    held = shared.get(detail)
    if held is not None:
        return held
    if len(shared) < _SHARED_DETAILS:
        shared[detail] = detail
    return detail


def _touches(lanes: Lanes, fixed: int, first: int, last: int) -> bool:
    """Is any cell of an all-empty span edge-adjacent to a tile? (SPEC check 8)"""
    span = range(first, last + 1)
    lane = lanes.get(fixed)
    if lane is not None and (first - 1 in lane or last + 1 in lane):
        return True
    for side in (lanes.get(fixed - 1), lanes.get(fixed + 1)):
        if side is not None:
            if len(side) < len(span):
                if any(first <= p <= last for p in side):
                    return True
            elif any(p in side for p in span):
                return True
    return False


def _unparsed(line: bytes) -> tuple[Reason, str] | None:
    """Why a line missed the fast path: blank (None), malformed or bad_letters (SPEC 1-2)."""
    fields = _SEPARATORS.split(line.strip(b" \t"))
    if fields == [b""]:
        return None
    if len(fields) != 5:
        return MALFORMED, f"a move has 5 fields (x1 y1 x2 y2 word); this line has {len(fields)}"
    for position, field in enumerate(fields[:4], 1):
        if not _IS_NUMBER(field):
            shown = _show(field)
            return MALFORMED, f"field {position} ({shown}) is not a whole number of 1-18 digits"
    return BAD_LETTERS, f"the word {_show(fields[4])} has letters other than lower-case a-z"


def _show(field: bytes) -> str:
    text = repr(field[:40].decode("utf-8", "replace"))
    return text if len(field) <= 40 else text + "..."


def _conflict(across: bool, fixed: int, along: int, tile: int | None, letter: int) -> str:
    x, y = (along, fixed) if across else (fixed, along)
    held = chr(tile) if tile is not None else "?"
    return f"({x}, {y}) already holds '{held}' but the word puts '{chr(letter)}' there"


def _short(bag: list[int], new_letters: list[int]) -> str:
    for letter in sorted(set(new_letters)):
        needed = new_letters.count(letter)
        if bag[letter] < needed:
            left = f"{bag[letter]} left" if bag[letter] else "none left"
            return f"needs {needed} '{chr(letter)}' but the bag has {left}"
    return "the bag is short of a letter"  # unreachable: kept so the detail is never empty


_SHARED_DETAILS = 4096
_TOO_SHORT = "it starts and ends on the same cell; a move covers at least two cells"
_LEFT = "words run right (x grows) or down (y grows); this one runs left"
_UP = "words run right (x grows) or down (y grows); this one runs up"
_ASKEW = "words run right (x grows) or down (y grows); this one runs diagonally"
_ORIGIN = "the first word must cover the origin (0, 0)"
_ALONE = "it touches no tile on the board (edge to edge; corners do not count)"
_NOTHING_NEW = "every cell already holds the word's letters, so it places no new tile"
