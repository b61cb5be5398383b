"""Crosstiles as a game of the pipeline, and what a judged game log keeps besides its report.

A Crosstiles upload is the log of a whole game between named players (docs/rules/crosstiles.md),
so it is judged whole: valid, or invalid at its first failing line. One game is one submission
whichever club uploads it and in whatever bytes: its identity is what the verifier reads
(`judge.crosstiles.identity`).

A judged game's result is its own (`GameOutcome`): whether it is valid, the turns judged, an
invalid game's error (first failing line, reason code, detail), and each player of a valid game
(`GamePlayer`): its seat, nick, final score, whether it was removed, its share of the win and
its spread. Its `score`, what every game's result has, is the winning score (the highest final
score among players not removed; 0 for an invalid game).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.disputes import counting
from core.errors import Invalid
from core.game import Identity, Judged
from core.records import JudgedResult
from core.transparency import Logged
from judge import Lexicon
from judge.crosstiles import Board, BoardError, CrosstilesReport, default_board, generate, verify
from judge.crosstiles import identity as game_identity
from judge.crosstiles.board import TILE_NAMES
from judge.crosstiles.ratings import RatingRules, Seat, contest_ratings, shown

BOM = b"\xef\xbb\xbf"
# docs/rules/crosstiles.md: a log may hold blank and #note lines anywhere; the first other line
# is the header's `#crosstiles` pragma.
IGNORED_LINE = re.compile(rb"[ \t]*(?:#note.*)?", re.DOTALL)
HEADER = re.compile(rb"[ \t]*#crosstiles(?:[ \t]|$)")
# Recorded as `judge_version` with every Crosstiles result.
CROSSTILES_JUDGE_VERSION = "crosstiles-1"
# A win's share is kept in twelfths: a game has at most four players, so a k-way tie among the
# winners gives each a whole 12/k, and sums stay exact (a third would not, as a float).
WIN_TWELFTHS = 12


@dataclass(frozen=True)
class GamePlayer:
    """A player of a valid game. `spread` is the player's final score minus the best final
    score among the others (the winner's margin, or how far behind the winner a player is)."""

    seat: int  # 1-based, the log's player order
    nick: str
    score: int
    removed: bool
    win_twelfths: int  # 12 for a sole winner, 12/k in a k-way tie, 0 otherwise
    spread: int


@dataclass(frozen=True)
class GameError:
    """Why a game log is invalid: its first failing line, reason code and detail."""

    line: int
    reason: str
    detail: str


@dataclass(frozen=True)
class GameOutcome:
    """A judged game's own result: the turns judged (after the header, a failing one too),
    and its players if valid, else its error."""

    players: tuple[GamePlayer, ...]
    error: GameError | None
    turns: int = 0

    @property
    def valid(self) -> bool:
        return self.error is None

    @property
    def winners(self) -> tuple[str, ...]:
        return tuple(player.nick for player in self.players if player.win_twelfths)


def outcome(report: CrosstilesReport) -> GameOutcome:
    if report.error is not None:
        error = report.error
        return GameOutcome(
            (), GameError(error.line, error.reason.value, error.detail), report.turns
        )
    winners = set(report.winners)
    scores = [player.score for player in report.players]
    players = []
    for seat, player in enumerate(report.players, 1):
        others = scores[: seat - 1] + scores[seat:]
        share = WIN_TWELFTHS // len(winners) if player.nick in winners else 0
        players.append(
            GamePlayer(
                seat=seat,
                nick=player.nick,
                score=player.score,
                removed=player.removed,
                win_twelfths=share,
                spread=player.score - max(others),
            )
        )
    return GameOutcome(tuple(players), None, report.turns)


def winning_score(report: CrosstilesReport) -> int:
    """The score a valid game was won with; 0 for an invalid one."""
    if report.error is not None or not report.winners:
        return 0
    winners = set(report.winners)
    return max(player.score for player in report.players if player.nick in winners)


def board_json(board: Board) -> str:
    """A board as the JSON a board file holds (its id is kept: `Board.from_json` of this text
    has the same id)."""
    tiles = {tile: [board.counts[code], board.values[code]] for code, tile in enumerate(TILE_NAMES)}
    doc = {
        "name": board.name,
        "premiums": [" ".join(row) for row in board.premiums],
        "tiles": tiles,
    }
    return json.dumps(doc, indent=1)


def is_game_log(data: bytes) -> bool:
    """Whether the first line of `data` that is neither blank nor a #note (lines a log may hold
    anywhere) is the `#crosstiles` pragma, whatever version it gives: the verifier then says
    what is wrong with it, if anything. Reads no further than that line."""
    for line in io.BytesIO(data.removeprefix(BOM)):
        text = line.removesuffix(b"\n").removesuffix(b"\r")
        if not IGNORED_LINE.fullmatch(text):
            return HEADER.match(text) is not None
    return False


def _not_counted(logged: Mapping[str, Logged]) -> set[str]:
    """The valid logs that count for nothing: rival logs of a game (one match) of which the
    settlements logged choose none, or choose another."""
    games: dict[str, dict[str, Logged]] = {}
    for sid, sub in logged.items():
        if sub.match is not None:
            games.setdefault(sub.match, {})[sid] = sub
    held: set[str] = set()
    for rivals in games.values():
        valid = {sid: _valid(sub) for sid, sub in rivals.items()}
        passed = {sid: sub.passed_over_for for sid, sub in rivals.items() if sub.passed_over_for}
        counted = counting(valid, passed)
        held |= {sid for sid, ok in valid.items() if ok and sid not in counted}
    return held


def _valid(sub: Logged) -> bool | None:
    return None if sub.verdict is None else bool(sub.verdict["valid"])


class Crosstiles:
    name = "crosstiles"
    rules_noun = "board"
    shared_uploads = True
    words_vary = True
    rules_errors: tuple[type[Exception], ...] = (BoardError,)

    def identity(self, data: bytes) -> Identity:
        found = game_identity.identity(data)
        return Identity(found.key, found.match)

    def looks_like(self, data: bytes) -> bool:
        return is_game_log(data)

    def default_rules(self) -> Board:
        return default_board()

    def parse_rules(self, content: str) -> Board:
        return Board.from_json(content)

    def rules_json(self, rules: Any) -> str:
        board: Board = rules
        return board_json(board)

    def judge(self, data: bytes, lexicon: Lexicon, rules: Any, report_key: str) -> Judged:
        """The log verified whole, its result its own (`GameOutcome`). (A game log's report is
        a few KB: serialised whole.)"""
        report = verify(data, lexicon, rules)
        result = JudgedResult(
            report.lexicon,
            report.board,
            CROSSTILES_JUDGE_VERSION,
            winning_score(report),
            report_key,
            outcome(report),
        )

        def pieces(head: Mapping[str, Any]) -> Iterable[bytes]:
            return [json.dumps({**head, **report.to_json()}).encode()]

        return Judged(result, report.words, pieces)

    def log_result(self, result: JudgedResult) -> dict[str, Any]:
        """Valid or not, the turns, the winning score, an invalid game's line and reason (not
        its detail, which may quote the log) and each player's part in the standings."""
        played = result.game
        if not isinstance(played, GameOutcome):
            raise TypeError("a Crosstiles result carries its GameOutcome")
        error = played.error
        return {
            "valid": played.valid,
            "turns": played.turns,
            "winning_score": result.score,
            "error": None if error is None else {"line": error.line, "reason": error.reason},
            "players": [
                {
                    "seat": p.seat,
                    "nick": p.nick,
                    "score": p.score,
                    "removed": p.removed,
                    "win_twelfths": p.win_twelfths,
                    "spread": p.spread,
                }
                for p in played.players
            ],
        }

    def contest_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """`ratings`: where every player starts and τ (docs/rules/crosstiles.md, Ratings)."""
        unknown = sorted(set(given) - {"ratings"})
        if unknown:
            raise Invalid(f"a Crosstiles contest takes the option ratings, not {unknown[0]!r}")
        try:
            rules = RatingRules.from_json(given.get("ratings", {}))
        except ValueError as exc:
            raise Invalid(str(exc)) from None
        return {"ratings": rules.to_json()}

    def log_standings(
        self, logged: Mapping[str, Logged], options: Mapping[str, Any] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """The players of the valid games that count (`core.disputes`: rival valid logs of
        one game count for no one until a settlement chose one) by wins (in twelfths), spread,
        then nick by code point; the invalid games by receipt, each with its failing line and
        reason."""
        totals: dict[str, list[int]] = {}
        invalid = []
        counted: list[list[Seat]] = []  # each counted game's players, in receipt order
        held = _not_counted(logged)
        for sid, sub in sorted(logged.items(), key=lambda item: (item[1].received_at, item[0])):
            verdict = sub.verdict
            if verdict is None:
                continue
            if verdict["error"] is not None:
                invalid.append({"submission": sid, **verdict["error"]})
            if sid in held:
                continue
            if verdict["players"]:
                counted.append(
                    [Seat(p["nick"], p["score"], p["removed"]) for p in verdict["players"]]
                )
            for player in verdict["players"]:
                games, twelfths, spread = totals.setdefault(player["nick"], [0, 0, 0])
                totals[player["nick"]] = [
                    games + 1,
                    twelfths + player["win_twelfths"],
                    spread + player["spread"],
                ]
        order = sorted(totals.items(), key=lambda item: (-item[1][1], -item[1][2], item[0]))
        ratings = contest_ratings(counted, rating_rules(options))
        players = [
            {
                "rank": rank,
                "nick": nick,
                "games": played,
                "wins": twelfths / WIN_TWELFTHS,
                "spread": spread,
                **shown(ratings[nick]),
            }
            for rank, (nick, (played, twelfths, spread)) in enumerate(order, 1)
        ]
        return {"players": players, "invalid": invalid}

    def sample(self, lexicon: Lexicon, rules: Any, seed: int, size: int) -> bytes:
        """A whole valid game between two to four bots (`size` does not bound a game)."""
        return generate(2 + seed % 3, f"sample-{seed}", lexicon, rules, rng_seed=seed)


def rating_rules(options: Mapping[str, Any] | None) -> RatingRules:
    """The rating rules a contest's options name (as `contest_options` completed them)."""
    ratings = (options or {}).get("ratings")
    return RatingRules.from_json(ratings) if ratings is not None else RatingRules()
