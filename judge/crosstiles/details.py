"""The wording of a failing line's detail: only ever used once a check has failed."""

from __future__ import annotations

from typing import Final

from judge.crosstiles.board import SIZE, TILE_NAMES

_DOT: Final = 46  # "."
FORMS: Final = (
    "a move line is one of '>NICK: RACK POS PLAY +SCORE TOTAL', '>NICK: RACK -TILES +SCORE "
    "TOTAL', '>NICK: RACK - +SCORE TOTAL', '>NICK: RACK (timeout) +SCORE TOTAL', "
    "'>NICK: RACK (RACK) -N TOTAL' or '>NICK: (TILES) +N TOTAL'"
)


def clash_detail(written: int, square: int) -> str:
    if written == _DOT:
        return f"'.' on {square_name(square)}, which is empty"
    return f"{chr(written)} on {square_name(square)}, which already holds a tile"


def not_on_rack_detail(wanted: list[int], rack: list[int]) -> str:
    """Which of the tiles ``wanted`` (counts by code) the rack lacks."""
    lacking = [max(0, want - held) for want, held in zip(wanted, rack)]
    return f"the rack {tiles_text(rack)} has no {tiles_text(lacking)}"


def tiles_text(counts: list[int]) -> str:
    """Tiles counted by code, written as a rack: canonical order, '?' for a blank."""
    return "".join(TILE_NAMES[code] * count for code, count in enumerate(counts)) or "nothing"


def square_name(square: int) -> str:
    """A square as the log names it, row first: 8H."""
    return f"{square // SIZE + 1}{TILE_NAMES[square % SIZE]}"


def field_text(field: bytes) -> str:
    return field.decode("ascii")


def too_few_detail(length: int, placed: int) -> str:
    if length < 2:
        return "the main word has at least two letters"
    if placed == 0:
        return "a placement places at least one tile"
    return "the first placement of the game places at least two tiles"


def form_problem(stripped: bytes) -> str:
    """Why a line after the header has none of the forms of a move line."""
    if stripped.startswith(b"#"):
        return "a pragma after the first move line (only #note lines may follow it)"
    if not stripped.isascii():
        try:
            stripped.decode("utf-8")
        except UnicodeDecodeError:
            return "the line is not valid UTF-8"
        return "a move line holds only ASCII characters"
    return FORMS
