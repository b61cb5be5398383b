"""Which game a Crosstiles log holds, whatever bytes it came as: its identity key and match.

The canonical form (version 1) is ``b"crosstiles-identity-1\\n"`` and then, ``\\n``-ended, every
line the verifier does not ignore (a BOM, the ``\\r`` before ``\\n``, blank and ``#note`` lines
are dropped as it drops them), stripped, each run of spaces and tabs made one space, and every
move line rebuilt from its fields with numbers by value, a ``POS`` on the board without a
leading zero and end-line tiles sorted. When the verifier reads the header, the header's lines
are replaced by ``#crosstiles 1``, ``#seed SEED`` and ``#playerN NICK`` per player in order
(informational pragmas and full names left out), and the match is the SHA-256 of
``b"crosstiles-match-1\\n"`` and those lines; when it cannot, the header's lines stay (stripped
and spaced) and there is no match.

Only what never reaches a report is normalised, so two logs with one key get the same report
from ``verify`` but for its line numbers: a turn's ``RACK`` stays as written (a wrong one is
quoted), as does a ``POS`` off the board. Lines are split, classified and parsed by the
verifier's own code (``engine._BOM``, ``move_line._MOVE``, ``move_line._kind``,
``move_line._locate``, ``header._FIELDS``, ``header.Header``) in one pass; no lexicon, no
board, never raises.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Final

from judge.crosstiles.board import SIZE, TILE_NAMES
from judge.crosstiles.engine import _BOM
from judge.crosstiles.header import _FIELDS, Header
from judge.crosstiles.move_line import _EXCHANGE, _GAIN, _MOVE, _PENALTY, _PLACEMENT, _kind, _locate

VERSION: Final = b"crosstiles-identity-1\n"
MATCH_VERSION: Final = b"crosstiles-match-1\n"
_BLOCK: Final = 1 << 16  # bytes of lines split at once
_ZERO: Final = 48  # "0"


@dataclass(frozen=True)
class GameIdentity:
    """``key``: the hex SHA-256 of the log's canonical form, equal for logs the verifier reads
    alike. ``match``: the hex SHA-256 of its seed and nicks in order; None without a header."""

    key: str
    match: str | None


def identity(data: bytes) -> GameIdentity:
    """The identity of a log's bytes. Never raises; linear in the length of ``data``."""
    head, blocks = _canonical_blocks(data)
    key = hashlib.sha256(VERSION)
    for block in blocks:
        if block:
            key.update(b"\n".join(block))
            key.update(b"\n")
    match = None
    if head is not None:
        match = hashlib.sha256(MATCH_VERSION + _joined(head)).hexdigest()
    return GameIdentity(key.hexdigest(), match)


def canonical(data: bytes) -> bytes:
    """The canonical form of a log (the module's docstring): what its key is the hash of."""
    return VERSION + b"".join(_joined(block) for block in _canonical_blocks(data)[1])


def _joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _canonical_blocks(data: bytes) -> tuple[list[bytes] | None, Iterator[list[bytes]]]:
    """The header's canonical lines (None when the verifier cannot read it), and the canonical
    form's lines after its version, lazily, a block at a time. The header is read as
    ``engine.verify`` reads it: each line from the first judged up to the first that does not
    start with '#' is a pragma, given to a ``Header``; the first it refuses ends the header."""
    blocks = _judged_blocks(data)
    header = Header()
    pragmas: list[bytes] = []
    first: list[bytes] = []  # the rest of the block where the header ends
    readable = True
    for block in blocks:
        for index, line in enumerate(block):
            if not line.startswith(b"#"):
                first = block[index:]
                break
            pragmas.append(line)
            if not _accepted(header, line):
                readable = False
                first = block[index + 1 :]
                break
        else:
            continue
        break
    body = (_lines(block) for block in chain([first], blocks))
    if not readable or header.missing():
        return None, chain([_lines(pragmas)], body)
    head = [b"#crosstiles 1", b"#seed " + header.seed.encode("ascii")]
    for number, nick in enumerate(header.players(), 1):
        head.append(b"#player%d %s" % (number, nick.encode("ascii")))
    return head, chain([head], body)


def _judged_blocks(data: bytes) -> Iterator[list[bytes]]:
    """Every line ``engine.verify`` judges, in order, a block of lines at a time: split and
    skipped as its loop does (a BOM at the start, lines split on '\\n', one '\\r' before it
    dropped, blank and '#note' lines skipped), stripped of blanks and with each run of blanks
    made one space first, which changes neither how a line is classified nor its fields."""
    size = len(data)
    start = 3 if data.startswith(_BOM) else 0
    while start < size:
        end = data.find(b"\n", start + _BLOCK)
        if end < 0:
            end = size
        # Latin-1 maps bytes to characters one to one: any bytes come back as they were.
        text = _FIELDS.sub(" ", data[start:end].decode("latin-1")).replace("\r\n", "\n")
        if text.endswith("\r"):  # the block ends where a line does
            text = text[:-1]
        text = text.replace(" \n", "\n").replace("\n ", "\n").strip(" ")
        start = end + 1
        lines = text.encode("latin-1").split(b"\n")
        if "#note" in text:
            yield [line for line in lines if line and not line.startswith(b"#note")]
        else:
            yield list(filter(None, lines))


def _accepted(header: Header, stripped: bytes) -> bool:
    """Whether the verifier's header takes this pragma line (it is added to ``header``)."""
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not header.add(text)


def _lines(lines: list[bytes]) -> list[bytes]:
    """Judged lines in canonical form: a move line rebuilt, any other as it is. ``_MOVE`` can
    only match a line starting with '>', since the lines are stripped of blanks."""
    return [_line(line) if line.startswith(b">") else line for line in lines]


def _line(line: bytes) -> bytes:
    move = _MOVE.fullmatch(line)
    return line if move is None else _move(move)


def _move(move: re.Match[bytes]) -> bytes:
    """A move line from its fields as ``_MOVE`` reads them, one space apart, the numbers by
    value (the verifier reads and reports them so); ``_MOVE`` matches the result alike."""
    nick, rack, position, play, score, tiles, zero, timeout, held, penalty, gained, gain, total = (
        move.groups()
    )
    kind = _kind(move)
    if kind == _PLACEMENT:
        position = _position(position, len(play))
        return b">%s: %s %s %s +%d %d" % (nick, rack, position, play, int(score), int(total))
    if kind == _EXCHANGE:  # or a pass, with no tiles
        return b">%s: %s -%s +%d %d" % (nick, rack, tiles, int(zero), int(total))
    if kind == _PENALTY:
        rack, held = _sorted(rack), _sorted(held)
        return b">%s: %s (%s) -%d %d" % (nick, rack, held, int(penalty), int(total))
    if kind == _GAIN:
        return b">%s: (%s) +%d %d" % (nick, _sorted(gained), int(gain), int(total))
    return b">%s: %s (timeout) +%d %d" % (nick, rack, int(timeout), int(total))


def _position(position: bytes, length: int) -> bytes:
    """``POS`` as ``_locate`` reads it, without a leading zero, while the run is on the board;
    as written once it is not (the verifier then quotes it). Only a number written with a
    leading zero can change."""
    if position[0] != _ZERO and position[1] != _ZERO:
        return position
    first, step, off_board = _locate(position, length)
    if off_board:
        return position
    row, column = divmod(first, SIZE)
    letter = TILE_NAMES[column].encode("ascii")
    return b"%d%s" % (row + 1, letter) if step == 1 else b"%s%d" % (letter, row + 1)


def _sorted(tiles: bytes) -> bytes:
    """End-line tiles in one order: the verifier counts them and never quotes them."""
    return bytes(sorted(tiles))
