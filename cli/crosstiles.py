"""Crosstiles game logs on the command line: `judge --game crosstiles` (a report per log, for
people or as JSON Lines), a plain-English sentence for each reason code, and
`generate --game crosstiles` (a bot's whole valid game)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TextIO

from cli.options import CliError, read_input
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
    names: Sequence[str],
    lexicon_path: str | None,
    board_path: str | None,
    as_json: bool,
    environ: Mapping[str, str],
    out: TextIO,
) -> int:
    """Verify each log and write its report on `out`: for people, or one JSON object a line
    (the spec's report with its `file`). Exit status 0 when all are valid, else EXIT_INVALID."""
    # Every file is read before any is judged: a missing one fails the command before output.
    logs = [(name, read_input(name)) for name in names]
    lexicon, board = load_rules(lexicon_path, board_path, environ)
    all_valid = True
    for name, data in logs:
        report = verify(data, lexicon, board)
        all_valid = all_valid and report.valid
        if as_json:
            out.write(json.dumps({"file": name, **report.to_json()}, separators=(",", ":")))
            out.write("\n")
        else:
            print_report(name, data, report, out)
    out.flush()
    return 0 if all_valid else EXIT_INVALID


def print_report(name: str, data: bytes, report: CrosstilesReport, out: TextIO) -> None:
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
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
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
