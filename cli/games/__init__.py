"""How each game shows on the command line, beside what every game shares.

By convention the module `cli.games.<game name>` gives a game's `CLI` (a `GameCli`): the
options its offline `judge` and `generate` take and what they do, how it recognises its own
uploads (what `judge` without --game goes by), and how its standings, its rejudge previews and
its reports are printed. A game without such a module (or one this client does not know, named
by a newer server) is shown as teams ranked by their best score (`TeamRanked`): its leaderboard
and previews as scores, its report as indented JSON; it recognises no upload and has no offline
command.
"""

from __future__ import annotations

import argparse
import gc
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from cli.options import CliError
from core.games import DEFAULT, game, names, part_of

if TYPE_CHECKING:
    from infra.api_client import Client

PREVIEW_ROWS = 50  # changed submissions a rejudge preview lists; the rest are counted
# How a rejudge preview shows a rank or score a team did not have: before the run (it is new to
# the standings, such as a team added since), or after it (it has left them).
NOTHING_BEFORE, NOTHING_AFTER = "new", "-"


@dataclass(frozen=True)
class Option:
    """A flag of `judge` or `generate` that a game takes, as argparse is given it."""

    flag: str
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    action: str | None = None  # "store_true" for a switch

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        given: dict[str, Any] = {"metavar": self.metavar, "type": self.type, "action": self.action}
        parser.add_argument(
            self.flag,
            help=self.help,
            **{key: value for key, value in given.items() if value is not None},
        )

    def given(self, args: argparse.Namespace) -> bool:
        """Whether the command line set it (a switch is off and a value None when not)."""
        value = getattr(args, self.dest, None)
        return value is not None and value is not False


class GameCli(Protocol):
    """One game's side of the command line."""

    @property
    def rules_options(self) -> tuple[Option, ...]:
        """The file of its rules data beside the word list: `judge` and `generate` take it."""
        ...

    @property
    def bot_options(self) -> tuple[Option, ...]:
        """What `generate` takes besides --seed, --lexicon and the rules file."""
        ...

    @property
    def shows_upload_rights(self) -> bool:
        """`team list` shows whether each team may upload game logs (`uploads_logs`)."""
        ...

    def recognises(self, data: bytes) -> bool:
        """Whether `data` is, by its header, one of this game's uploads: `judge` without --game
        judges it as such."""
        ...

    def judge(
        self,
        files: Sequence[tuple[str, bytes]],
        args: argparse.Namespace,
        environ: Mapping[str, str],
        out: TextIO,
    ) -> int:
        """`tilejudge judge`: each file's report (its name, its bytes) on `out`; the exit
        status."""
        ...

    def generate(self, args: argparse.Namespace, environ: Mapping[str, str]) -> bytes:
        """`tilejudge generate`: what a bot uploads."""
        ...

    def format_standings(self, board: Mapping[str, Any], contest: str) -> str: ...
    def print_preview(self, run: Mapping[str, Any], out: TextIO) -> None: ...
    def print_report(
        self, submission_id: str, data: bytes | None, report: Any, out: TextIO
    ) -> None:
        """A report the server sent (JSON, parsed) as people read it; each failing line quoted
        from `data`, the bytes uploaded, when they are at hand."""
        ...


class TeamRanked:
    """A game with no command-line module of its own: teams ranked by their best score, a
    rejudge listing the scores and ranks it changes, a report shown as the server sent it."""

    rules_options: tuple[Option, ...] = ()
    bot_options: tuple[Option, ...] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        # The right to upload logs means something only where an upload names other players.
        self.shows_upload_rights = name in names() and game(name).shared_uploads

    def recognises(self, data: bytes) -> bool:
        return False

    def judge(
        self,
        files: Sequence[tuple[str, bytes]],
        args: argparse.Namespace,
        environ: Mapping[str, str],
        out: TextIO,
    ) -> int:
        raise CliError(
            f"--game {self.name} has no offline command: its uploads are judged by a server "
            "(`tilejudge submit`, then `tilejudge report`)"
        )

    def generate(self, args: argparse.Namespace, environ: Mapping[str, str]) -> bytes:
        raise CliError(f"--game {self.name} has no offline command: nothing generates its uploads")

    def format_standings(self, board: Mapping[str, Any], contest: str) -> str:
        entries = board.get("entries") or []
        if not entries:
            return f"no judged submissions in contest {board.get('contest', contest)} yet\n"
        header = ("rank", "team", "score", "received_at")
        rows = [header, *[tuple(str(entry.get(key, "")) for key in header) for entry in entries]]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [
            # Numbers right-aligned so scores line up by magnitude; names and times left-aligned.
            f"{rank:>{widths[0]}}  {team:<{widths[1]}}  {score:>{widths[2]}}  {received}"
            for rank, team, score, received in rows
        ]
        return "\n".join(lines) + "\n"

    def print_preview(self, run: Mapping[str, Any], out: TextIO) -> None:
        changed = run.get("changed", [])
        lines = [headline(run, changes(len(changed), "score"))]
        if changed:
            lines.append(f"  {'submission':<34} {'team':<20} {'old':>8} {'new':>8}")
            lines += [
                f"  {row['submission']:<34} {row['team']:<20} {before(row['old_score']):>8} "
                f"{after(row['new_score']):>8}"
                for row in changed[:PREVIEW_ROWS]
            ]
            if len(changed) > PREVIEW_ROWS:
                lines.append(f"  ... and {len(changed) - PREVIEW_ROWS} more")
        moves = run.get("rank_changes", [])
        if moves:
            lines.append(f"  {'team':<20} {'rank':>6} -> new")
            lines += [
                f"  {row['team']:<20} {before(row['old_rank']):>6} -> {after(row['new_rank'])}"
                for row in moves
            ]
        write_lines(lines + failure_lines(run), out)

    def print_report(
        self, submission_id: str, data: bytes | None, report: Any, out: TextIO
    ) -> None:
        out.write(json.dumps(report, indent=2) + "\n")


def changes(count: int, what: str) -> str:
    """'1 score changes', '6 scores change'."""
    return f"{count} {what} changes" if count == 1 else f"{count} {what}s change"


def headline(run: Mapping[str, Any], counted: str) -> str:
    """A preview's first line: the run's state and progress, and `counted` (what changes), or,
    for a run applied before apply recorded what it changed, that it is not known."""
    if run.get("state") == "applied" and run.get("summary_recorded") is False:
        counted = "what it changed was not recorded (applied before summaries were kept)"
    return (
        f"rejudge {run['id']}: {run['state']}, {run['done']}/{run['total']} done "
        f"({run['carried']} carried over), {counted}"
    )


def before(value: object) -> str:
    """A rank or score before a rejudge, as a preview shows it."""
    return NOTHING_BEFORE if value is None else str(value)


def after(value: object) -> str:
    """A rank or score after a rejudge, as a preview shows it."""
    return NOTHING_AFTER if value is None else str(value)


def failure_lines(run: Mapping[str, Any]) -> list[str]:
    """The submissions a run could not judge, with their team and reason code: none, or a
    count and one line each (applying the run marks them failed)."""
    count = int(run.get("failed") or 0)
    if not count:
        return []
    listed = run.get("failures") or []
    lines = [f"{count} could not be judged (failed with their reason if applied):"]
    lines += [
        f"  {row['submission']:<34} {row['team']:<20} {row['reason']}"
        for row in listed[:PREVIEW_ROWS]
    ]
    if count > min(len(listed), PREVIEW_ROWS):
        lines.append(f"  ... and {count - min(len(listed), PREVIEW_ROWS)} more")
    return lines


def write_lines(lines: Sequence[str], out: TextIO) -> None:
    """Each line on `out`, without the spaces a padded last column leaves at its end."""
    out.write("".join(f"{line.rstrip()}\n" for line in lines))


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a command judges its files, as it was after.
    The judges make no reference cycles, so reference counting frees all they leave; and with
    the word list's set of some 370,000 words alive, each full collection would walk all of it
    again: about a twelfth of `tilejudge judge`'s time over 200 files (`perf record` of the
    command `python -m benchmarks.wordytaire_cli_judge` times)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@cache
def cli_game(name: str) -> GameCli:
    """The command-line side of the game of that name (`TeamRanked` for a game with no module
    of its own, or one not registered in `core.games`)."""
    if name not in names():  # a server's string never picks a module to import
        return TeamRanked(name)
    module = part_of(__name__, name)
    if module is None:
        return TeamRanked(name)
    found: GameCli = module.CLI
    return found


def recognised_game(data: bytes) -> str | None:
    """The name of the first registered game that recognises `data` by its header, if any."""
    for name in names():
        if cli_game(name).recognises(data):
            return name
    return None


def game_help(default: str = " (the default)") -> str:
    """The games --game takes, the default first and marked by `default`: "a (the default), b
    or c"."""
    others = [name for name in names() if name != DEFAULT]
    listed = ", ".join([f"{DEFAULT}{default}", *others[:-1]])
    return f"{listed} or {others[-1]}" if others else listed


def game_of(api: Client, contest: str) -> str:
    """The name of the contest's game, as the server gives it."""
    return str(api.call("GET", f"/v1/contests/{contest}")["game"])
