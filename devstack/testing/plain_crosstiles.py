"""A deliberately plain second verifier for Crosstiles logs, written straight from CROSSTILES.md.

This module is a differential-testing oracle. It shares no code with ``judge/crosstiles``
(not even the bag or the board file): the tile set and the premium squares are copied from
the spec's text (`plain_crosstiles_pieces.py`), and every step follows one sentence of the
spec, favouring being obviously right over being fast. Standard library only.

Entry point::

    plain_verify(data: bytes, words: frozenset[str], lexicon_id="", board_id="") -> dict

The result has the report's fields (``valid``, ``error``, ``players``, ``winners``,
``turns``, ``lexicon``, ``board``, ``words``). Its ``error["detail"]`` is its own wording,
except for ``not_in_dictionary``, where the detail is exactly the first missing word.
It never raises on any input bytes.
"""

from __future__ import annotations

import re
from typing import Any

from devstack.testing.plain_crosstiles_pieces import (
    COLUMNS,
    LETTER_FACTOR,
    NICK,
    PLAYER_PRAGMA,
    PREMIUM,
    SEED,
    TILE_VALUE,
    WORD_FACTOR,
    Bag,
    Failure,
    NewTile,
    Square,
    has_tiles,
    parse_move,
    same_tiles,
)

# ---------------------------------------------------------------------------
# The verifier.
# ---------------------------------------------------------------------------


class PlainGame:
    def __init__(self, words: frozenset[str]) -> None:
        self.words = words
        self.pragmas: set[bytes] = set()
        self.seed: str | None = None
        self.player_nicks: dict[int, str] = {}
        self.started = False  # the first move line was reached with a complete header
        self.nicks: list[str] = []
        self.scores: list[int] = []
        self.removed: list[bool] = []
        self.racks: list[list[str]] = []
        self.missed_in_a_row: list[int] = []
        self.board: dict[Square, tuple[str, bool]] = {}  # -> (letter, whether a blank)
        self.bag: Bag | None = None
        self.to_move = 0
        self.zero_turns_in_a_row = 0
        self.went_out: int | None = None
        self.game_over = False
        self.end_lines_due: list[dict[str, Any]] = []
        self.turns = 0
        self.made_words: set[str] = set()

    # -- the header --------------------------------------------------------------

    def header_line(self, number: int, stripped: bytes) -> None:
        try:
            stripped.decode("utf-8")
        except UnicodeDecodeError:
            raise Failure(number, "malformed", "not UTF-8") from None
        fields = re.split(rb"[ \t]+", stripped)
        name = fields[0]
        if not self.pragmas:
            if fields != [b"#crosstiles", b"1"]:
                raise Failure(number, "malformed", "the log must start with #crosstiles 1")
        elif name in self.pragmas:
            raise Failure(number, "malformed", "repeated pragma")
        elif name == b"#" or len(fields) < 2:
            raise Failure(number, "malformed", "a pragma is #name value")
        elif name == b"#seed":
            if len(fields) != 2 or not SEED.fullmatch(fields[1]):
                raise Failure(number, "malformed", "bad seed")
            self.seed = fields[1].decode()
        elif (player := PLAYER_PRAGMA.fullmatch(name)) is not None:
            digits = player.group(1)
            if digits not in (b"1", b"2", b"3", b"4"):
                raise Failure(number, "malformed", "players are #player1 to #player4")
            if not NICK.fullmatch(fields[1]):
                raise Failure(number, "malformed", "bad nick")
            nick = fields[1].decode()
            if nick in self.player_nicks.values():
                raise Failure(number, "malformed", "nick taken")
            self.player_nicks[int(digits)] = nick
        self.pragmas.add(name)

    def header_complete(self, number: int) -> None:
        if b"#crosstiles" not in self.pragmas or self.seed is None:
            raise Failure(number, "malformed", "a required pragma is missing")
        numbers = sorted(self.player_nicks)
        if len(numbers) < 2 or numbers != list(range(1, len(numbers) + 1)):
            raise Failure(number, "malformed", "players missing or numbered with a gap")

    def start(self) -> None:
        assert self.seed is not None
        self.started = True
        self.nicks = [self.player_nicks[n] for n in sorted(self.player_nicks)]
        self.scores = [0 for _ in self.nicks]
        self.removed = [False for _ in self.nicks]
        self.missed_in_a_row = [0 for _ in self.nicks]
        self.bag = Bag(self.seed)
        self.racks = [self.bag.draw(7) for _ in self.nicks]

    # -- turns -------------------------------------------------------------------

    def turn_line(self, number: int, move: dict[str, Any]) -> None:
        if move["kind"] in ("penalty", "gain"):
            raise Failure(number, "wrong_turn", "an end line during play")
        player = self.to_move
        if move["nick"] != self.nicks[player]:
            raise Failure(number, "wrong_turn", "not this player's turn")
        rack = self.racks[player]
        if not same_tiles(move["rack"], rack):
            raise Failure(number, "rack_mismatch", "not the rack")
        if move["kind"] == "placement":
            score = self.placement(number, move, rack)
        else:
            if move["kind"] == "exchange":
                tiles = list(move["tiles"])
                if not has_tiles(rack, tiles):
                    raise Failure(number, "not_on_rack", "exchanging tiles not on the rack")
                assert self.bag is not None
                if len(self.bag.tiles) < 7:
                    raise Failure(number, "bag_too_small", "fewer than 7 tiles in the bag")
            score = 0
            if move["score"] != 0:
                raise Failure(number, "score_mismatch", "this kind of turn scores 0")
        if move["total"] != self.scores[player] + score:
            raise Failure(number, "total_mismatch", "wrong total")
        self.scores[player] += score
        self.apply(player, move, rack)
        self.after_turn(player, move, score)

    def apply(self, player: int, move: dict[str, Any], rack: list[str]) -> None:
        assert self.bag is not None
        if move["kind"] == "placement":
            for tile in move["placed_tiles"]:
                rack.remove(tile)
            for (row, col), letter, blank in move["new_squares"]:
                self.board[row, col] = (letter, blank)
            rack.extend(self.bag.draw(7 - len(rack)))
            if not rack:
                self.went_out = player
        elif move["kind"] == "exchange":
            aside = list(move["tiles"])
            for tile in aside:
                rack.remove(tile)
            rack.extend(self.bag.draw(len(aside)))
            self.bag.tiles.extend(aside)
            self.bag.shuffle()

    def after_turn(self, player: int, move: dict[str, Any], score: int) -> None:
        if move["kind"] == "timeout":
            self.missed_in_a_row[player] += 1
            if self.missed_in_a_row[player] == 3:
                self.removed[player] = True
        else:
            self.missed_in_a_row[player] = 0
        if score == 0:
            self.zero_turns_in_a_row += 1
        else:
            self.zero_turns_in_a_row = 0
        still_in = [n for n in range(len(self.nicks)) if not self.removed[n]]
        if self.went_out is not None or self.zero_turns_in_a_row >= 6 or len(still_in) < 2:
            self.end_game()
            return
        nxt = (player + 1) % len(self.nicks)
        while self.removed[nxt]:
            nxt = (nxt + 1) % len(self.nicks)
        self.to_move = nxt

    # -- a placement -------------------------------------------------------------

    def placement(self, number: int, move: dict[str, Any], rack: list[str]) -> int:
        row, col = move["row"], COLUMNS.find(move["column"]) + 1
        play: str = move["play"]
        if not 1 <= row <= 15 or move["column"] not in COLUMNS:
            raise Failure(number, "off_board", "start square off the board")
        d_row, d_col = (0, 1) if move["across"] else (1, 0)
        squares = [(row + i * d_row, col + i * d_col) for i in range(len(play))]
        if any(r > 15 or c > 15 for r, c in squares):
            raise Failure(number, "off_board", "runs off the board")
        new_squares: list[NewTile] = []
        placed_tiles: list[str] = []
        for (r, c), char in zip(squares, play, strict=True):
            if char == ".":
                if (r, c) not in self.board:
                    raise Failure(number, "occupied", "'.' on an empty square")
            else:
                if (r, c) in self.board:
                    raise Failure(number, "occupied", "a letter on a tile")
                new_squares.append(((r, c), char.lower(), char.islower()))
                placed_tiles.append("?" if char.islower() else char)
        if not has_tiles(rack, placed_tiles):
            raise Failure(number, "not_on_rack", "placing tiles not on the rack")
        before = (row - d_row, col - d_col)
        after = (squares[-1][0] + d_row, squares[-1][1] + d_col)
        if before in self.board or after in self.board:
            raise Failure(number, "incomplete_word", "a tile next to the run")
        first_placement = not self.board
        if len(play) < 2 or not placed_tiles or (first_placement and len(placed_tiles) < 2):
            raise Failure(number, "too_few_tiles", "too few tiles")
        if first_placement:
            if (8, 8) not in squares:
                raise Failure(number, "must_cover_center", "the first word covers 8H")
        elif not self.connected(squares, new_squares):
            raise Failure(number, "not_connected", "does not touch the board")
        words_and_scores = self.words_made(squares, new_squares, d_row, d_col)
        for word, _ in words_and_scores:
            self.made_words.add(word)
        for word, _ in words_and_scores:
            if word not in self.words:
                raise Failure(number, "not_in_dictionary", word)
        score = sum(points for _, points in words_and_scores)
        if len(placed_tiles) == 7:
            score += 50
        if score != move["score"]:
            raise Failure(number, "score_mismatch", f"scores {score}")
        move["placed_tiles"] = placed_tiles
        move["new_squares"] = new_squares
        return score

    def connected(self, squares: list[Square], new_squares: list[NewTile]) -> bool:
        if any(square in self.board for square in squares):
            return True
        for (r, c), _, _ in new_squares:
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                if (r + dr, c + dc) in self.board:
                    return True
        return False

    def words_made(
        self, squares: list[Square], new_squares: list[NewTile], d_row: int, d_col: int
    ) -> list[tuple[str, int]]:
        new = {square: (letter, blank) for square, letter, blank in new_squares}
        # The main word.
        result = [self.score_run(squares, new)]
        # The cross words, in order along the main word.
        for square in squares:
            if square not in new:
                continue
            run = [square]
            r, c = square
            while (r - d_col, c - d_row) in self.board:
                r, c = r - d_col, c - d_row
                run.insert(0, (r, c))
            r, c = square
            while (r + d_col, c + d_row) in self.board:
                r, c = r + d_col, c + d_row
                run.append((r, c))
            if len(run) >= 2:
                result.append(self.score_run(run, {square: new[square]}))
        return result

    def score_run(self, run: list[Square], new: dict[Square, tuple[str, bool]]) -> tuple[str, int]:
        word = ""
        total = 0
        multiplier = 1
        for square in run:
            if square in new:
                letter, blank = new[square]
                value = 0 if blank else TILE_VALUE[letter.upper()]
                premium = PREMIUM[square[0], COLUMNS[square[1] - 1]]
                value *= LETTER_FACTOR.get(premium, 1)
                multiplier *= WORD_FACTOR.get(premium, 1)
            else:
                letter, blank = self.board[square]
                value = 0 if blank else TILE_VALUE[letter.upper()]
            word += letter
            total += value
        return word, total * multiplier

    # -- the end -----------------------------------------------------------------

    def end_game(self) -> None:
        self.game_over = True
        penalties = 0
        others: list[str] = []
        for player, rack in enumerate(self.racks):
            if rack:
                value = sum(TILE_VALUE[tile] for tile in rack)
                self.end_lines_due.append(
                    {"player": player, "kind": "penalty", "tiles": list(rack), "points": value}
                )
                penalties += value
                others += rack
        if self.went_out is not None:
            self.end_lines_due.append(
                {"player": self.went_out, "kind": "gain", "tiles": others, "points": penalties}
            )

    def end_line(self, number: int, move: dict[str, Any]) -> None:
        due = self.end_lines_due[0]
        right = (
            move["kind"] == due["kind"]
            and move["nick"] == self.nicks[due["player"]]
            and same_tiles(move["tiles"], due["tiles"])
            and move["points"] == due["points"]
        )
        if right and due["kind"] == "penalty":
            right = same_tiles(move["rack"], due["tiles"])
        if not right:
            raise Failure(number, "end_mismatch", "not the end line due")
        change = -due["points"] if due["kind"] == "penalty" else due["points"]
        if move["total"] != self.scores[due["player"]] + change:
            raise Failure(number, "total_mismatch", "wrong total")
        self.scores[due["player"]] += change
        self.end_lines_due.pop(0)

    def ended_completely(self) -> bool:
        return self.game_over and not self.end_lines_due

    # -- one line ----------------------------------------------------------------

    def line(self, number: int, stripped: bytes) -> None:
        if not self.started:
            if stripped.startswith(b"#"):
                self.header_line(number, stripped)
                return
            self.header_complete(number)
            self.start()
        self.turns += 1
        if self.ended_completely():
            raise Failure(number, "after_end", "a line after the end lines")
        move = parse_move(re.split(rb"[ \t]+", stripped))
        if move is None:
            raise Failure(number, "malformed", "not a move line")
        if self.game_over:
            self.end_line(number, move)
        else:
            self.turn_line(number, move)


def plain_verify(
    data: bytes, words: frozenset[str], lexicon_id: str = "", board_id: str = ""
) -> dict[str, Any]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if data.endswith(b"\n") or data == b"":
        lines.pop()  # a final newline ends the last line; it does not start another
    game = PlainGame(words)
    error: dict[str, Any] | None = None
    try:
        for number, line in enumerate(lines, 1):
            if line.endswith(b"\r"):
                line = line[:-1]
            stripped = line.strip(b" \t")
            if stripped == b"" or stripped.startswith(b"#note"):
                continue
            game.line(number, stripped)
        if not game.started:
            game.header_complete(len(lines) + 1)
            game.start()
        if not game.ended_completely():
            raise Failure(len(lines) + 1, "unfinished", "the log stops before the end")
    except Failure as failure:
        error = {"line": failure.line, "reason": failure.reason, "detail": failure.detail}
    standing = list(zip(game.nicks, game.scores, game.removed, strict=True))
    players = [
        {"nick": nick, "score": score, "removed": removed} for nick, score, removed in standing
    ]
    winners = []
    if error is None:
        best = max(score for _, score, removed in standing if not removed)
        winners = [nick for nick, score, removed in standing if not removed and score == best]
    return {
        "valid": error is None,
        "error": error,
        "players": players,
        "winners": winners,
        "turns": game.turns if game.started else 0,
        "lexicon": lexicon_id,
        "board": board_id,
        "words": sorted(game.made_words),
    }
