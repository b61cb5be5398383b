"""A hint for an upload that is accepted and judged but is most likely not what the team meant to
send: empty, binary (a NUL byte), not UTF-8 text, or the other game's format (a game log sent to
a Wordytaire contest, a move list to a Crosstiles contest).

Such an upload is still accepted and judged as the rules say (docs/rules/: every line that is
not blank gets its verdict, `malformed` included; an empty move list scores 0, an empty game log
is invalid): refusing it would lose an upload the rules define a result for. The hint goes back
with the receipt, so the team hears at once instead of reading a report of `malformed` lines.

Which format an upload reads as is each game's own judgement (`Game.looks_like`); this module
asks every registered game and never names one. Every check reads the upload at most once,
without copying it, and the games read only its first lines.
"""

from __future__ import annotations

import codecs

from core.game import Game
from core.games import game, names

BOM = b"\xef\xbb\xbf"
UTF8_SLICE = 64 * 1024  # bytes decoded at a time when an upload is not ASCII


def upload_hint(game_name: str, data: bytes) -> str | None:
    """One sentence for a team whose upload to a contest of the game `game_name` is accepted
    but is unlikely to be what it meant; None for an upload that looks like the game's own."""
    body = data.removeprefix(BOM)
    if not body or body.isspace():  # stops at the first byte that is not a space: no copy
        return (
            "the upload is empty (nothing but blank lines): it is accepted and judged as it is, "
            "with nothing to score; was the right file sent?"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        return (
            f"the upload holds a NUL byte (line {_line_of(data, nul)}): is it a binary file? "
            "It is accepted and judged as text, and the lines that hold such bytes fail"
        )
    bad = first_non_utf8(data)
    if bad is not None:
        return (
            f"the upload is not UTF-8 text (line {_line_of(data, bad)} is the first that is "
            "not): it is accepted and judged as it is, and the lines that are not UTF-8 fail"
        )
    own = game(game_name)
    if _looks_like(own, data):
        return None
    other = next(
        (name for name in names() if name != game_name and _looks_like(game(name), data)), None
    )
    if other is None:
        return None
    return (
        f"the upload reads as a {other} upload, but this contest's game is {game_name}: it is "
        f"accepted and judged as a {game_name} upload, so most of its lines will fail; was it "
        "meant for another contest?"
    )


def first_non_utf8(data: bytes) -> int | None:
    """The offset of the first byte of `data` that is not part of valid UTF-8, or None; an
    ASCII upload is answered without decoding, any other a slice at a time."""
    if data.isascii():
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for start in range(0, len(data), UTF8_SLICE):
        # A character cut by the slice's end is held back and decoded with the next slice:
        # offsets in an error count from the first byte held.
        held = len(decoder.getstate()[0])
        try:
            decoder.decode(view[start : start + UTF8_SLICE], final=start + UTF8_SLICE >= len(data))
        except UnicodeDecodeError as exc:
            return start - held + exc.start
    return None


def _line_of(data: bytes, offset: int) -> int:
    """The 1-based line number of the byte at `offset`."""
    return data.count(b"\n", 0, offset) + 1


def _looks_like(found: Game, data: bytes) -> bool:
    """A game registered from outside the project may predate `looks_like`: it then
    recognises nothing."""
    looks_like = getattr(found, "looks_like", None)
    return bool(looks_like(data)) if looks_like is not None else False
