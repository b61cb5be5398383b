"""Crosstiles game logs on the command line: how a log is recognised (by its `#crosstiles`
header), `judge` (a report per log, for people or as JSON Lines), a plain-English sentence for
each reason code, `generate --game crosstiles` (a bot's whole valid game), and what the server
sends of a Crosstiles contest as people read it: a log's report, the players' standings with
the invalid logs, and a rejudge's preview."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from cli.games import (
    PREVIEW_ROWS,
    GameCli,
    Option,
    after,
    before,
    changes,
    collector_paused,
    failure_lines,
    headline,
    write_lines,
)
from cli.options import CliError, read_input
from core.games.crosstiles import BOM, is_game_log
from infra import lexicon_files
from infra.settings import ClientSettings
from judge import Lexicon
from judge.crosstiles import Board, CrosstilesReport, Reason, default_board, generate, verify

# `judge --game crosstiles` exits 0 when every log is valid, 1 when any is invalid (2, as for
# every command, for a usage error or a file that cannot be read).
EXIT_INVALID = 1
PLAYERS = (2, 3, 4)
SEED = re.compile(r"[!-~]{1,128}")  # CROSSTILES.md: 1 to 128 printable ASCII, no space
SHOWN_CHARS = 80  # of a failing line's text in the human report

BOARD = Option(
    "--board", "Crosstiles' board JSON file (default: the packaged board-1)", metavar="FILE"
)
BOT_OPTIONS = (
    Option("--players", "Crosstiles (required): 2, 3 or 4 players", type=int),
    Option("--exchanges", "Crosstiles: the bots exchange now and then", action="store_true"),
    Option("--passes", "Crosstiles: the bots pass now and then", action="store_true"),
    Option(
        "--timeouts",
        "Crosstiles: the bots miss deadlines now and then; with 3 or 4 players one misses "
        "three in a row and is removed",
        action="store_true",
    ),
    Option(
        "--bot-seed",
        "Crosstiles: seed of the bots' choices (default: 0); the bag follows --seed",
        type=int,
    ),
)

# What each reason code means, for someone reading the report rather than the spec.
REASONS: dict[Reason, str] = {
    Reason.MALFORMED: "The line is not in a form the log allows here",
    Reason.WRONG_TURN: "The line is not by the player whose turn it is",
    Reason.RACK_MISMATCH: "The rack written is not the rack the player holds",
    Reason.OFF_BOARD: "The word runs off the board",
    Reason.OCCUPIED: "A letter is written on a square that already holds a tile, or '.' on an "
    "empty one",
    Reason.NOT_ON_RACK: "The move uses a tile the player does not hold",
    Reason.INCOMPLETE_WORD: "The word does not run to its ends (a tile lies just before or "
    "just after it)",
    Reason.TOO_FEW_TILES: "The move places too few tiles, or its word is shorter than two letters",
    Reason.MUST_COVER_CENTER: "The first word of the game does not cover the centre square 8H",
    Reason.NOT_CONNECTED: "The move does not touch the tiles already on the board",
    Reason.NOT_IN_DICTIONARY: "A word the move makes is not in the word list",
    Reason.BAG_TOO_SMALL: "Tiles are exchanged while the bag holds fewer than 7",
    Reason.SCORE_MISMATCH: "The score written is not what the move scores",
    Reason.END_MISMATCH: "The game is over, and this is not the end line due next",
    Reason.TOTAL_MISMATCH: "The running total is not the player's previous total plus this "
    "line's points",
    Reason.AFTER_END: "Only blank and #note lines may follow the game's end lines",
    Reason.UNFINISHED: "The log stops before the game and its end lines are complete",
}


def judge_logs(
    logs: Sequence[tuple[str, bytes]],
    lexicon_path: str | None,
    board_path: str | None,
    as_json: bool,
    environ: Mapping[str, str],
    out: TextIO,
) -> int:
    """Verify each log (its name, its bytes) and write its report on `out`: for people, or one
    JSON object a line (the spec's report with its `file`). Exit status 0 when all are valid,
    else EXIT_INVALID."""
    lexicon, board = load_rules(lexicon_path, board_path, environ)
    all_valid = True
    with collector_paused():
        for name, data in logs:
            report = verify(data, lexicon, board)
            all_valid = all_valid and report.valid
            if as_json:
                out.write(json.dumps({"file": name, **report.to_json()}, separators=(",", ":")))
                out.write("\n")
            else:
                print_log_report(name, data, report, out)
    out.flush()
    return 0 if all_valid else EXIT_INVALID


def print_log_report(name: str, data: bytes, report: CrosstilesReport, out: TextIO) -> None:
    """`report` as people read it, headed by `name`; a failing line quoted from `data`."""
    scores = ", ".join(
        f"{player.nick} {player.score}{' (removed)' if player.removed else ''}"
        for player in report.players
    )
    if report.error is None:
        out.write(f"{name}: valid, {report.turns} turns\n")
        out.write(f"  final scores: {scores}\n")
        out.write(f"  winners: {', '.join(report.winners)}\n")
        return
    error = report.error
    out.write(f"{name}: invalid at line {error.line} ({error.reason}): ")
    out.write(f"{line_text(data, error.line)}\n")
    out.write(f"  {REASONS[error.reason]}: {error.detail}\n")
    out.write(f"  scores so far: {scores or 'none, the header is not complete'}\n")


def line_text(data: bytes, number: int) -> str:
    """Physical line `number` (1-based) of a log, quoted and cut to SHOWN_CHARS, or where it
    would be when the log ends before it."""
    lines = data.removeprefix(BOM).split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # a final "\n" ends the last line, it does not start another
    if number > len(lines):
        return f"(the log ends after line {len(lines)})"
    text = lines[number - 1].removesuffix(b"\r").decode("utf-8", "replace")
    shown = text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
    return repr(shown)  # a log's control characters never reach the terminal


def generate_log(
    *,
    players: int | None,
    seed: str,
    exchanges: bool,
    passes: bool,
    timeouts: bool,
    bot_seed: int,
    lexicon_path: str | None,
    board_path: str | None,
    environ: Mapping[str, str],
) -> bytes:
    """A whole valid game between `players` bots whose bag follows `seed`; CliError naming
    the option when one is out of range."""
    if players is None:
        raise CliError("--players is required with --game crosstiles (2, 3 or 4)")
    if players not in PLAYERS:
        raise CliError(f"--players must be 2, 3 or 4, not {players}")
    if SEED.fullmatch(seed) is None:
        shown = seed if len(seed) <= 40 else seed[:37] + "..."
        raise CliError(
            "--seed must be 1 to 128 printable ASCII characters without spaces, "
            f"not {shown!r} ({len(seed)} characters)"
        )
    lexicon, board = load_rules(lexicon_path, board_path, environ)
    return generate(
        players,
        seed,
        lexicon,
        board,
        exchanges=exchanges,
        passes=passes,
        timeouts=timeouts,
        rng_seed=bot_seed,
    )


def load_rules(
    lexicon_path: str | None, board_path: str | None, environ: Mapping[str, str]
) -> tuple[Lexicon, Board]:
    """The word list (--lexicon, else the cache's Crosstiles list) and the board (--board,
    else the packaged one)."""
    settings = ClientSettings.from_env(environ)
    path = lexicon_files.resolve(lexicon_path, settings, lexicon_files.CROSSTILES_LIST)
    board = Board.from_json(read_input(board_path)) if board_path else default_board()
    return lexicon_files.load(path), board


def print_game_report(
    submission_id: str, data: bytes | None, report: Mapping[str, Any], out: TextIO
) -> None:
    """A game log's report from the server as people read it: valid with its scores and
    winners, or its first failing line (quoted when the log was given with --file) and why."""
    scores = ", ".join(
        f"{p['nick']} {p['score']}{' (removed)' if p['removed'] else ''}" for p in report["players"]
    )
    error = report.get("error")
    if error is None:
        out.write(f"{submission_id}: valid, {report['turns']} turns\n")
        out.write(f"  final scores: {scores}\n")
        out.write(f"  winners: {', '.join(report['winners'])}\n")
        return
    quoted = f": {line_text(data, int(error['line']))}" if data is not None else ""
    out.write(f"{submission_id}: invalid at line {error['line']} ({error['reason']}){quoted}\n")
    out.write(f"  {error['detail']}\n")
    out.write(f"  scores so far: {scores or 'none, the header is not complete'}\n")


def format_standings(board: Mapping[str, Any], contest: str) -> str:
    """A Crosstiles contest's leaderboard: its players ranked, then its invalid game logs with
    why."""
    players, invalid = board.get("players") or [], board.get("invalid") or []
    name = board.get("contest", contest)
    if not players and not invalid:
        return f"no judged game logs in contest {name} yet\n"
    out = []
    if players:
        header = ("rank", "player", "games", "wins", "spread", "rating", "RD")
        rows = [header] + [
            (
                str(p["rank"]),
                str(p["nick"]),
                str(p["games"]),
                f"{p['wins']:g}",
                f"{p['spread']:+d}",
                f"{p['rating']:.0f}" if "rating" in p else "-",
                f"{p['deviation']:.0f}" if "deviation" in p else "-",
            )
            for p in players
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        out += [
            "  ".join(
                cell.ljust(widths[i]) if i == 1 else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
            for row in rows
        ]
    else:
        out.append(f"no valid game logs in contest {name} yet")
    if invalid:
        out.append(f"\ninvalid game logs ({len(invalid)}):")
        out += [
            f"  {g['submission']}  {g['team']}  line {g['line']}: {g['reason']} ({g['detail']})"
            for g in invalid
        ]
    return "\n".join(out) + "\n"


def print_preview(run: Mapping[str, Any], out: TextIO | None = None) -> None:
    """A Crosstiles contest's rejudge preview on `out` (stdout): the games whose verdict or
    winners change, and the players whose standing moves."""
    out = out or sys.stdout  # looked up late, so redirection works
    changed = run.get("changed", [])
    lines = [headline(run, changes(len(changed), "game"))]

    def verdict(valid: bool, winners: list[str], reason: str | None) -> str:
        return f"won by {', '.join(winners)}" if valid else f"invalid: {reason}"

    if changed:
        lines.append(f"  {'submission':<34} {'team':<20} old -> new")
        for row in changed[:PREVIEW_ROWS]:
            old = verdict(row["old_valid"], row["old_winners"], row["old_reason"])
            new = verdict(row["new_valid"], row["new_winners"], row["new_reason"])
            lines.append(f"  {row['submission']:<34} {row['team']:<20} {old} -> {new}")
        if len(changed) > PREVIEW_ROWS:
            lines.append(f"  ... and {len(changed) - PREVIEW_ROWS} more")
    moves = run.get("rank_changes", [])
    if moves:
        lines.append(f"  {'player':<20} {'rank':>6} -> {'new':<6} {'wins':>6} -> new")
        lines += [
            f"  {row['player']:<20} {before(row['old_rank']):>6} -> {after(row['new_rank']):<6} "
            f"{_number(row['old_wins']):>6} -> {_number(row['new_wins'])}"
            for row in moves
        ]
    write_lines(lines + failure_lines(run), out)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


class Crosstiles:
    rules_options = (BOARD,)
    bot_options = BOT_OPTIONS
    shows_upload_rights = True  # a log names other players: only teams allowed may send one

    def recognises(self, data: bytes) -> bool:
        return is_game_log(data)

    def judge(
        self,
        files: Sequence[tuple[str, bytes]],
        args: argparse.Namespace,
        environ: Mapping[str, str],
        out: TextIO,
    ) -> int:
        return judge_logs(files, args.lexicon, args.board, args.json, environ, out)

    def generate(self, args: argparse.Namespace, environ: Mapping[str, str]) -> bytes:
        return generate_log(
            players=args.players,
            seed=args.seed,
            exchanges=args.exchanges,
            passes=args.passes,
            timeouts=args.timeouts,
            bot_seed=args.bot_seed or 0,
            lexicon_path=args.lexicon,
            board_path=args.board,
            environ=environ,
        )

    def format_standings(self, board: Mapping[str, Any], contest: str) -> str:
        return format_standings(board, contest)

    def print_preview(self, run: Mapping[str, Any], out: TextIO) -> None:
        print_preview(run, out)

    def print_report(
        self, submission_id: str, data: bytes | None, report: Any, out: TextIO
    ) -> None:
        try:
            print_game_report(submission_id, data, report, out)
        except (KeyError, TypeError, ValueError) as exc:
            raise CliError(
                f"the server's report of {submission_id}: not a game log's report: {exc!r}"
            ) from exc


CLI: GameCli = Crosstiles()
