"""A deliberately plain reference judge for Wordytaire, written straight from SPEC.md.

This module is a differential-testing oracle. It is written independently of the real
engine in ``judge/`` and favours being obviously correct over being fast: it follows the
SPEC check table one row at a time, in order, and every step names the SPEC rule it
implements. Standard library only.

Entry point::

    plain_judge(data: bytes, words, bonus_rows=None) -> dict

The result::

    {
        "total": int,                 # sum of the scores of the legal moves
        "legal": int,                 # number of legal moves
        "illegal": int,               # number of illegal moves
        "lines": [                    # one entry per non-blank line, in line order
            {"line": N, "ok": True, "score": S, "tiles": new_tiles_placed},
            {"line": N, "ok": False, "reason": "<code>"},
        ],
        "bag_left": {letter: count},  # all 26 letters, tiles still in the bag at the end
    }

It never decodes the whole input as text and never raises on any input bytes.
"""

from __future__ import annotations

import re
from typing import Any

# ---------------------------------------------------------------------------
# Constants copied from SPEC.md, section "The bag"
# (letter points / tiles in the bag; 10,000 tiles in all).
# ---------------------------------------------------------------------------

LETTER_POINTS: dict[str, int] = {
    "a": 1, "b": 5, "c": 4, "d": 4, "e": 1, "f": 6, "g": 5, "h": 5, "i": 1,
    "j": 9, "k": 7, "l": 3, "m": 4, "n": 2, "o": 2, "p": 4, "q": 9, "r": 2,
    "s": 2, "t": 2, "u": 4, "v": 6, "w": 7, "x": 8, "y": 5, "z": 8,
}  # fmt: skip

BAG_COUNTS: dict[str, int] = {
    "a": 846, "b": 183, "c": 438, "d": 324, "e": 1078, "f": 112, "g": 236,
    "h": 264, "i": 896, "j": 16, "k": 77, "l": 558, "m": 301, "n": 719,
    "o": 720, "p": 325, "q": 17, "r": 704, "s": 716, "t": 661, "u": 376,
    "v": 95, "w": 64, "x": 30, "y": 202, "z": 42,
}  # fmt: skip

assert sum(BAG_COUNTS.values()) == 10_000

# SPEC.md, section "The bonus squares": rows are |y| mod 5, columns are |x| mod 5.
SPEC_BONUS_ROWS: list[list[str]] = [
    [".", ".", "L2", ".", "."],
    [".", "W2", ".", ".", "L3"],
    [".", ".", "L2", ".", "."],
    [".", ".", ".", "W3", "."],
    [".", ".", ".", ".", "."],
]

# bonus name -> (letter multiplier, word multiplier)
BONUS_EFFECT: dict[str, tuple[int, int]] = {
    ".": (1, 1),
    "L2": (2, 1),
    "L3": (3, 1),
    "W2": (1, 2),
    "W3": (1, 3),
}

# SPEC "A submission": a UTF-8 byte order mark at the very start is ignored.
UTF8_BOM = b"\xef\xbb\xbf"

# SPEC check 1: an optional "-" then 1 to 18 ASCII digits. Bytes pattern, so [0-9] is
# ASCII only; used with fullmatch so nothing may precede or follow.
COORDINATE_PATTERN = re.compile(rb"-?[0-9]{1,18}")

# SPEC check 2: one or more of the ASCII letters a-z only.
WORD_PATTERN = re.compile(rb"[a-z]+")

# SPEC check 1: the only field separators are spaces and tabs.
SEPARATOR_BYTES = b" \t"


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def is_blank(line: bytes) -> bool:
    """SPEC "A submission": a line of nothing but spaces and tabs (or nothing) is blank."""
    return all(byte in SEPARATOR_BYTES for byte in line)


def split_fields(line: bytes) -> list[bytes]:
    """SPEC check 1: fields are separated by runs of spaces and tabs; leading and
    trailing runs are ignored. No other byte (\\r, \\x0b, \\x0c, NUL, ...) separates."""
    fields: list[bytes] = []
    current = bytearray()
    for byte in line:
        if byte in SEPARATOR_BYTES:
            if current:
                fields.append(bytes(current))
                current = bytearray()
        else:
            current.append(byte)
    if current:
        fields.append(bytes(current))
    return fields


def bonus_of(table: list[list[str]], x: int, y: int) -> str:
    """SPEC "The bonus squares": square (x, y) has the bonus at row |y| mod 5, column |x| mod 5."""
    return table[abs(y) % 5][abs(x) % 5]


def cells_of_move(x1: int, y1: int, x2: int, y2: int) -> list[tuple[int, int]]:
    """The cells from (x1, y1) to (x2, y2) inclusive; the move runs right or down
    (SPEC check 4 already passed), so exactly one coordinate changes."""
    if y1 == y2:  # runs right
        return [(x, y1) for x in range(x1, x2 + 1)]
    return [(x1, y) for y in range(y1, y2 + 1)]  # runs down


def validate_table(bonus_rows: list[list[str]]) -> list[list[str]]:
    """A bonus table must be 5 rows of 5 known bonus names. (Programmer input, not
    submission bytes, so raising here is fine.)"""
    if len(bonus_rows) != 5 or any(len(row) != 5 for row in bonus_rows):
        raise ValueError("bonus table must be 5 rows of 5 entries")
    for row in bonus_rows:
        for entry in row:
            if entry not in BONUS_EFFECT:
                raise ValueError(f"unknown bonus entry {entry!r}")
    return [list(row) for row in bonus_rows]


# ---------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------


def split_lines(data: bytes) -> list[bytes]:
    """SPEC "A submission": drop a UTF-8 BOM at the very start only; split on \\n; drop
    one \\r at the end of each line (CRLF judges like LF; also at the end of the last
    line). A final line without \\n still counts. Index i holds physical line i + 1."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    lines = data.split(b"\n")
    result = []
    for line in lines:
        if line.endswith(b"\r"):
            line = line[:-1]  # exactly one \r
        result.append(line)
    return result


def plain_judge(
    data: bytes,
    words: set[str] | frozenset[str],
    bonus_rows: list[list[str]] | None = None,
) -> dict[str, Any]:
    """Judge a whole submission following SPEC.md literally. See the module docstring."""
    data = bytes(data)
    lexicon = words if isinstance(words, (set, frozenset)) else frozenset(words)
    table = validate_table(SPEC_BONUS_ROWS if bonus_rows is None else bonus_rows)

    board: dict[tuple[int, int], str] = {}  # (x, y) -> letter, only legal moves change it
    bag: dict[str, int] = dict(BAG_COUNTS)  # SPEC "The bag": one bag for the whole submission
    verdicts: list[dict[str, Any]] = []
    total = 0
    legal = 0
    illegal = 0

    # SPEC "A submission": line numbers are physical, 1-based, counting blank lines too.
    for line_number, line in enumerate(split_lines(data), start=1):
        # SPEC "A submission": a blank line gets no verdict and costs nothing.
        if is_blank(line):
            continue

        # Every other line is a move with exactly one verdict; judging never stops early.
        outcome = judge_move(line, board, bag, lexicon, table)
        if isinstance(outcome, str):
            # Illegal: the first failing check's reason code; nothing changes.
            illegal += 1
            verdicts.append({"line": line_number, "ok": False, "reason": outcome})
        else:
            score, new_tiles = outcome
            legal += 1
            total += score  # SPEC: a submission's total is the sum of legal moves' scores
            verdicts.append({"line": line_number, "ok": True, "score": score, "tiles": new_tiles})

    return {
        "total": total,
        "legal": legal,
        "illegal": illegal,
        "lines": verdicts,
        "bag_left": {letter: bag[letter] for letter in sorted(BAG_COUNTS)},
    }


def judge_move(
    line: bytes,
    board: dict[tuple[int, int], str],
    bag: dict[str, int],
    lexicon: set[str] | frozenset[str],
    table: list[list[str]],
) -> str | tuple[int, int]:
    """Judge one non-blank line. Returns a reason code (illegal; board and bag untouched)
    or (score, number_of_new_tiles) after placing the tiles (legal)."""

    # --- Check 1 (malformed): exactly 5 fields separated by runs of spaces/tabs; each of
    # the first four is an optional "-" then 1 to 18 ASCII digits.
    fields = split_fields(line)
    if len(fields) != 5:
        return "malformed"
    for field in fields[:4]:
        if COORDINATE_PATTERN.fullmatch(field) is None:
            return "malformed"
    # Safe: the field is ASCII "-" and digits only.
    x1, y1, x2, y2 = (int(field.decode("ascii")) for field in fields[:4])
    raw_word = fields[4]

    # --- Check 2 (bad_letters): the word is 1+ ASCII letters a-z only; nothing is folded.
    if WORD_PATTERN.fullmatch(raw_word) is None:
        return "bad_letters"
    word = raw_word.decode("ascii")  # safe: a-z only

    # --- Check 3 (too_short): (x1, y1) != (x2, y2); a move covers at least two cells.
    if (x1, y1) == (x2, y2):
        return "too_short"

    # --- Check 4 (bad_direction): runs right (y1 == y2, x2 > x1) or runs down
    # (x1 == x2, y2 > y1). Left, up and diagonal fail.
    runs_right = y1 == y2 and x2 > x1
    runs_down = x1 == x2 and y2 > y1
    if not (runs_right or runs_down):
        return "bad_direction"

    # --- Check 5 (length_mismatch): number of cells equals number of letters.
    cell_count = (x2 - x1 + 1) if runs_right else (y2 - y1 + 1)
    if cell_count != len(word):
        return "length_mismatch"

    # --- Check 6 (not_in_dictionary): exact, case-sensitive match of the whole word.
    if word not in lexicon:
        return "not_in_dictionary"

    cells = cells_of_move(x1, y1, x2, y2)
    assert len(cells) == len(word)

    # "The board is empty" means no legal move has been made yet. Every legal move places
    # at least one tile (check 10), so that is the same as "no tile on the board".
    board_is_empty = len(board) == 0

    if board_is_empty:
        # --- Check 7 (must_cover_origin): on an empty board one cell is the origin.
        if (0, 0) not in cells:
            return "must_cover_origin"
    else:
        # --- Check 8 (not_connected): on a non-empty board, one of the word's cells
        # holds a tile or is edge-adjacent (up/down/left/right, not diagonal) to one.
        connected = False
        for x, y in cells:
            if (x, y) in board:
                connected = True
            for neighbour in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if neighbour in board:
                    connected = True
        if not connected:
            return "not_connected"

    # --- Check 9 (conflict): every cell that already holds a tile holds the same letter.
    for cell, letter in zip(cells, word, strict=True):
        if cell in board and board[cell] != letter:
            return "conflict"

    # --- Check 10 (no_new_tiles): at least one cell of the word is empty.
    new_positions = [i for i, cell in enumerate(cells) if cell not in board]
    if not new_positions:
        return "no_new_tiles"

    # --- Check 11 (bag_empty): for each letter, the bag holds at least as many tiles as
    # the move newly places of that letter.
    needed: dict[str, int] = {}
    for i in new_positions:
        needed[word[i]] = needed.get(word[i], 0) + 1
    for letter, count in needed.items():
        if bag[letter] < count:
            return "bag_empty"

    # --- Legal. Score first (against the board as it was), then place tiles.
    # SPEC "Scoring one legal move": a letter on a new tile is multiplied by its square's
    # letter bonus; a letter on a tile already there counts plain. The sum is multiplied
    # by the word bonus of every new tile's square; word bonuses multiply together.
    letter_sum = 0
    word_multiplier = 1
    for cell, letter in zip(cells, word, strict=True):
        points = LETTER_POINTS[letter]
        if cell in board:
            letter_sum += points  # reused tile: plain value, no bonus of any kind
        else:
            letter_mult, word_mult = BONUS_EFFECT[bonus_of(table, cell[0], cell[1])]
            letter_sum += points * letter_mult
            word_multiplier *= word_mult
    score = letter_sum * word_multiplier

    # A legal move places its new tiles and takes exactly those letters out of the bag.
    for i in new_positions:
        board[cells[i]] = word[i]
        bag[word[i]] -= 1

    return score, len(new_positions)
