"""The Crosstiles verifier: a game log's bytes in, one report out (CROSSTILES.md).

The game is replayed from its seed, and every line that is not ignored is checked in the
spec's order; the first failing line ends the check. Never raises on any bytes. The work is
linear in the log's length: a game has at most a few hundred turns (every placement takes a
tile from the bag, and six scoreless turns in a row end it), nothing after its end lines is
judged but the first line that is not ignored, and every field is matched by one linear scan.

Decisions where the spec is silent
----------------------------------
- A final ``\\n`` ends the last line; no empty line follows it ("a\\n" has one line).
- Lines are recognised as ignored on their bytes, before any UTF-8 check (``#note`` may be
  followed by "whatever bytes"). ``#note`` is matched as written, case-sensitively, at the
  line's first non-blank character: ``#notes`` is a note, ``#NOTE`` is not.
- Once the end lines are complete, every line that is not ignored is ``after_end``, even one
  that is not valid UTF-8 or starts with ``#``.
- ``#crosstiles`` takes exactly the value ``1``; ``#seed`` exactly one field. Pragma names
  are case-sensitive; ``#`` with no name, and any pragma without a value, are ``malformed``.
- ``#player`` followed by digits other than exactly 1-4 (``#player0``, ``#player01``,
  ``#player10``) is ``malformed``; other names (``#players``) are informational.
- When the header fails (on a header line, on the first move line or past the last line),
  ``players`` is ``[]`` and ``turns`` is 0: no turn or end line was judged. A complete
  header with no move line after it is ``unfinished``, with every player at 0.
- An ``unfinished`` log's ``turns`` counts the lines judged; the missing line is not one.
- The nick of a move line must have the form of a nick (else ``malformed``); a well-formed
  nick of another player, or of nobody in the game, is ``wrong_turn``.
- The sign is part of each form: ``+`` for a turn's score and a going-out gain, ``-`` for a
  rack penalty; the other sign is ``malformed``. A ``RACK`` of any length is well formed
  (more than seven tiles is ``rack_mismatch``), as is a ``PLAY`` of any length
  (``off_board`` when too long).
- A placement that scores 0 (blanks only) is a scoreless turn towards the six in a row.
- A removed player keeps their rack: it gets its penalty line like anyone's, and its tiles
  count towards a going-out gain.
- A penalty line's ``RACK`` and ``(RACK)`` must both be the player's rack (as multisets).
- ``words`` takes the words of every placement that reaches the dictionary check, whether
  it then passes, fails there or fails a later check (its score or total).
- ``winners`` are listed in player order.
- Where one check fails at several places (two occupied squares), the detail names the first
  along the run.
"""

from __future__ import annotations

import re
from typing import Final

from judge.crosstiles.bag import Bag
from judge.crosstiles.board import CENTER, TILE_KINDS, Board
from judge.crosstiles.details import (
    clash_detail,
    field_text,
    form_problem,
    not_on_rack_detail,
    tiles_text,
    too_few_detail,
)
from judge.crosstiles.grid import Grid, tiles_placed
from judge.crosstiles.header import Header

# The move table's reading; `X as X` keeps the names exported from here too, where `identity`
# takes them to read lines as the verifier does.
from judge.crosstiles.move_line import (
    _EXCHANGE,
    _GAIN,
    _MOVE,
    _PENALTY,
    _PLACEMENT,
    _TIMEOUT,
    _codes,
    _counts,
    _kind,
    _locate,
)
from judge.crosstiles.report import CrosstilesReport, LogError, PlayerResult, Reason
from judge.lexicon import Lexicon

_BOM: Final = b"\xef\xbb\xbf"
_RACK_SIZE: Final = 7
_FULL_RACK_BONUS: Final = 50
_SCORELESS_TURNS_TO_END: Final = 6
_TIMEOUTS_TO_REMOVAL: Final = 3
_DOT: Final = 46  # "."

# Phases of a replay.
_HEADER: Final = 0
_TURNS: Final = 1
_ENDING: Final = 2
_DONE: Final = 3


def verify(log_bytes: bytes, lexicon: Lexicon, board: Board) -> CrosstilesReport:
    """Verify a whole game log. Never raises on any bytes: a bad log is a report."""
    replay = _Replay(lexicon, board)
    data = log_bytes
    size = len(data)
    start = 3 if data.startswith(_BOM) else 0
    number = 0
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        line = data[start:end]
        start = end + 1
        number += 1
        if line.endswith(b"\r"):
            line = line[:-1]
        stripped = line.strip(b" \t")
        if not stripped or stripped.startswith(b"#note"):
            continue
        if not replay.judge(number, line, stripped):
            return replay.report()
    replay.finish(number + 1)
    return replay.report()


class _Replay:
    """One game replayed line by line: the board as flat lists of 225 squares, racks as
    counts of each tile code, and the totals."""

    def __init__(self, lexicon: Lexicon, board: Board) -> None:
        self.words: frozenset[str] = lexicon.words
        self.lexicon_id = lexicon.id
        self.board_id = board.id
        self.counts = board.counts
        self.values = board.values
        self.grid = Grid(board)
        self.phase = _HEADER
        self.header = Header()
        self.nicks: list[str] = []
        self.nick_bytes: list[bytes] = []
        self.totals: list[int] = []
        self.removed: list[bool] = []
        self.racks: list[list[int]] = []
        self.rack_sizes: list[int] = []
        self.timeouts: list[int] = []
        self.player = 0
        self.scoreless = 0
        self.went_out = -1
        self.bag = Bag([], "")
        self.due: list[tuple[int, int, int, list[int]]] = []  # player, kind, points, tiles
        self.turns = 0
        self.made: set[str] = set()
        self.error: LogError | None = None

    # -- the report ---------------------------------------------------------------------

    def fail(self, number: int, reason: Reason, detail: str) -> bool:
        self.error = LogError(number, reason, detail)
        return False

    def finish(self, after_last: int) -> None:
        if self.phase == _HEADER:
            missing = self.header.missing()
            if missing:
                self.fail(after_last, Reason.MALFORMED, missing)
                return
            self.deal()
        if self.phase == _TURNS:
            self.fail(after_last, Reason.UNFINISHED, "the log stops while the game is in play")
        elif self.phase == _ENDING:
            expected = self.expected_end_line()
            self.fail(after_last, Reason.UNFINISHED, f"the next end line is due: {expected}")

    def report(self) -> CrosstilesReport:
        if self.phase == _HEADER:
            players: tuple[PlayerResult, ...] = ()
        else:
            players = tuple(
                PlayerResult(nick, total, removed)
                for nick, total, removed in zip(self.nicks, self.totals, self.removed)
            )
        winners: tuple[str, ...] = ()
        if self.error is None:
            best = max(p.score for p in players if not p.removed)
            winners = tuple(p.nick for p in players if not p.removed and p.score == best)
        return CrosstilesReport(
            error=self.error,
            players=players,
            winners=winners,
            turns=self.turns,
            lexicon=self.lexicon_id,
            board=self.board_id,
            words=tuple(sorted(self.made)),
        )

    # -- one line -------------------------------------------------------------------------

    def judge(self, number: int, line: bytes, stripped: bytes) -> bool:
        """Check one line that is not ignored; False when it fails (the error is set)."""
        phase = self.phase
        if phase == _HEADER:
            if stripped.startswith(b"#"):
                return self.pragma(number, stripped)
            missing = self.header.missing()
            if missing:
                return self.fail(number, Reason.MALFORMED, missing)
            self.deal()
        self.turns += 1
        if phase == _DONE:
            return self.fail(number, Reason.AFTER_END, "the game's end lines are complete")
        move = _MOVE.fullmatch(line)
        if move is None:
            return self.fail(number, Reason.MALFORMED, form_problem(stripped))
        if self.phase == _TURNS:
            return self.turn(number, move, _kind(move))
        return self.end_line(number, move, _kind(move))

    def pragma(self, number: int, stripped: bytes) -> bool:
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError:
            return self.fail(number, Reason.MALFORMED, "the line is not valid UTF-8")
        problem = self.header.add(text)
        return self.fail(number, Reason.MALFORMED, problem) if problem else True

    def deal(self) -> None:
        self.nicks = self.header.players()
        self.nick_bytes = [nick.encode("ascii") for nick in self.nicks]
        players = len(self.nicks)
        self.totals = [0] * players
        self.removed = [False] * players
        self.timeouts = [0] * players
        self.bag = Bag(self.counts, self.header.seed)
        for _ in range(players):
            rack = [0] * TILE_KINDS
            drawn = self.bag.draw(_RACK_SIZE)
            for code in drawn:
                rack[code] += 1
            self.racks.append(rack)
            self.rack_sizes.append(len(drawn))
        self.phase = _TURNS

    # -- turns ----------------------------------------------------------------------------

    def turn(self, number: int, move: re.Match[bytes], kind: int) -> bool:
        player = self.player
        if kind in (_PENALTY, _GAIN):
            return self.fail(number, Reason.WRONG_TURN, "an end line while the game is in play")
        nick: bytes = move.group(1)
        if nick != self.nick_bytes[player]:
            detail = f"it is {self.nicks[player]}'s turn, not {field_text(nick)}'s"
            return self.fail(number, Reason.WRONG_TURN, detail)
        rack = self.racks[player]
        written: bytes = move.group(2)
        if len(written) != self.rack_sizes[player] or _counts(written) != rack:
            detail = f"{self.nicks[player]}'s rack is {tiles_text(rack)}, not {field_text(written)}"
            return self.fail(number, Reason.RACK_MISMATCH, detail)
        score = 0
        if kind == _PLACEMENT:
            placed = self.placement(number, move, rack)
            if placed < 0:
                return False
            score = placed
        elif kind == _EXCHANGE and move.group(6):
            if not self.exchange(number, move, rack):
                return False
        elif int(move.group(kind)) != 0:
            return self.fail(number, Reason.SCORE_MISMATCH, "a pass or missed deadline scores 0")
        if not self.add_total(number, player, score, move.group(13)):
            return False
        self.after_turn(player, kind, score, rack)
        return True

    def exchange(self, number: int, move: re.Match[bytes], rack: list[int]) -> bool:
        tiles: bytes = move.group(6)
        aside = _codes(tiles)
        wanted = _counts(tiles)
        if _short(wanted, rack):
            detail = not_on_rack_detail(wanted, rack)
            return self.fail(number, Reason.NOT_ON_RACK, detail)
        if self.bag.left < _RACK_SIZE:
            detail = f"an exchange needs 7 tiles in the bag; it holds {self.bag.left}"
            return self.fail(number, Reason.BAG_TOO_SMALL, detail)
        if int(move.group(7)) != 0:
            return self.fail(number, Reason.SCORE_MISMATCH, "an exchange scores 0")
        for code in aside:
            rack[code] -= 1
        for code in self.bag.exchange(aside):
            rack[code] += 1
        return True

    def add_total(self, number: int, player: int, points: int, written: bytes) -> bool:
        total = self.totals[player] + points
        if int(written) != total:
            detail = f"{self.nicks[player]}'s total is {total}, not {int(written)}"
            return self.fail(number, Reason.TOTAL_MISMATCH, detail)
        self.totals[player] = total
        return True

    def after_turn(self, player: int, kind: int, score: int, rack: list[int]) -> None:
        """The turn passed every check: removals, the end of the game, the next player."""
        self.scoreless = 0 if score > 0 else self.scoreless + 1
        if kind == _TIMEOUT:
            self.timeouts[player] += 1
            if self.timeouts[player] == _TIMEOUTS_TO_REMOVAL:
                self.removed[player] = True
        else:
            self.timeouts[player] = 0
        if kind == _PLACEMENT:
            drawn = self.bag.draw(_RACK_SIZE - self.rack_sizes[player])
            for code in drawn:
                rack[code] += 1
            self.rack_sizes[player] += len(drawn)
            if self.rack_sizes[player] == 0:
                self.went_out = player
        remaining = self.removed.count(False)
        if self.went_out >= 0 or self.scoreless >= _SCORELESS_TURNS_TO_END or remaining < 2:
            self.end_game()
            return
        following = (player + 1) % len(self.nicks)
        while self.removed[following]:
            following = (following + 1) % len(self.nicks)
        self.player = following

    # -- a placement ----------------------------------------------------------------------

    def placement(self, number: int, move: re.Match[bytes], rack: list[int]) -> int:
        """The placement's score once it passes every check up to the score's, else -1."""
        position: bytes = move.group(3)
        play: bytes = move.group(4)
        length = len(play)
        first, step, off_board = _locate(position, length)
        if off_board:
            return self.failed(number, Reason.OFF_BOARD, off_board)
        grid = self.grid
        clash = grid.clash(play, first, step)
        if clash >= 0:
            return self.failed(
                number, Reason.OCCUPIED, clash_detail(play[clash], first + clash * step)
            )
        needed = tiles_placed(play)
        if _short(needed, rack):
            detail = not_on_rack_detail(needed, rack)
            return self.failed(number, Reason.NOT_ON_RACK, detail)
        if grid.extends(first, step, length):
            detail = "a tile lies just before or just after the run: PLAY spells the whole word"
            return self.failed(number, Reason.INCOMPLETE_WORD, detail)
        placed = length - play.count(b".")
        if length < 2 or placed == 0 or (grid.empty and placed < 2):
            return self.failed(number, Reason.TOO_FEW_TILES, too_few_detail(length, placed))
        if grid.empty:
            if not (first <= CENTER < first + length * step and (CENTER - first) % step == 0):
                detail = "the first placement covers the middle square 8H"
                return self.failed(number, Reason.MUST_COVER_CENTER, detail)
        elif placed == length and not grid.touches(first, step, length):
            detail = "no placed tile shares an edge with a tile on the board"
            return self.failed(number, Reason.NOT_CONNECTED, detail)
        grid.place(play, first, step)  # a failure from here on ends the replay all the same
        words, score = grid.words_and_score(play, first, step)
        missing = ""
        for word in words:
            self.made.add(word)
            if not missing and word not in self.words:
                missing = word
        if missing:
            return self.failed(number, Reason.NOT_IN_DICTIONARY, f"'{missing}' is not in the list")
        if placed == _RACK_SIZE:
            score += _FULL_RACK_BONUS
        if int(move.group(5)) != score:
            detail = f"the placement scores {score}, not {int(move.group(5))}"
            return self.failed(number, Reason.SCORE_MISMATCH, detail)
        for code in range(TILE_KINDS):
            rack[code] -= needed[code]
        self.rack_sizes[self.player] -= placed
        return score

    def failed(self, number: int, reason: Reason, detail: str) -> int:
        self.fail(number, reason, detail)
        return -1

    # -- the end of the game --------------------------------------------------------------

    def end_game(self) -> None:
        """List the end lines due: every non-empty rack's penalty, then the going-out gain."""
        self.phase = _ENDING
        gain = 0
        others = [0] * TILE_KINDS
        for player, rack in enumerate(self.racks):
            if self.rack_sizes[player]:
                value = sum(count * self.values[code] for code, count in enumerate(rack))
                self.due.append((player, _PENALTY, value, list(rack)))
                gain += value
                for code in range(TILE_KINDS):
                    others[code] += rack[code]
        if self.went_out >= 0:
            self.due.append((self.went_out, _GAIN, gain, others))
        self.due.reverse()  # taken from the end
        if not self.due:
            self.phase = _DONE

    def end_line(self, number: int, move: re.Match[bytes], kind: int) -> bool:
        player, due_kind, points, tiles = self.due[-1]
        if kind != due_kind or move.group(1) != self.nick_bytes[player]:
            return self.fail(number, Reason.END_MISMATCH, self.expected_end_line())
        if kind == _PENALTY:
            ok = _counts(move.group(2)) == tiles and _counts(move.group(9)) == tiles
            signed = -points
        else:
            ok = _counts(move.group(11)) == tiles
            signed = points
        if not ok or int(move.group(kind)) != points:
            return self.fail(number, Reason.END_MISMATCH, self.expected_end_line())
        if not self.add_total(number, player, signed, move.group(13)):
            return False
        self.due.pop()
        if not self.due:
            self.phase = _DONE
        return True

    def expected_end_line(self) -> str:
        player, kind, points, tiles = self.due[-1]
        text = tiles_text(tiles)
        if kind == _PENALTY:
            return f"'>{self.nicks[player]}: {text} ({text}) -{points} TOTAL'"
        return f"'>{self.nicks[player]}: ({text}) +{points} TOTAL'"


def _short(wanted: list[int], have: list[int]) -> bool:
    return any(wanted[code] > have[code] for code in range(TILE_KINDS))
