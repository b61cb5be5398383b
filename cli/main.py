"""The `tilejudge` command: judge and generate offline, run the local stack, upload and rank as
a team, and organise contests, word lists, layouts and rejudges."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from cli import admin as admin_cli
from cli import audit as audit_cli
from cli import contests as contests_cli
from cli import disputes as disputes_cli
from cli import load as load_cli
from cli import offline as offline_cli
from cli import results as results_cli
from cli import roles as roles_cli
from cli.options import (
    ADMIN_TOKEN_FILE,
    STACK_URL_FILE,
    WAIT_TIMEOUT_S,
    Role,
    add_global_options,
    add_server_options,
    command,
    read_input,
)
from infra import lexicon_files
from infra.settings import DEFAULT_URL, ClientSettings, Settings


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command. Every default comes from `environ` (the process environment when None):
    nothing below reads os.environ."""
    parser = _parser()
    args = parser.parse_args(argv)
    refused = offline_cli.refused_errors()
    try:
        return int(args.run(args, os.environ if environ is None else environ))
    except refused as exc:
        print(f"tilejudge: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


ENVIRONMENT = f"""\
environment:
  TILEJUDGE_URL          the API for commands that talk to a server; without it (and without
                         --url) the URL a running `tilejudge up` recorded in
                         $TILEJUDGE_HOME/{STACK_URL_FILE}, else {DEFAULT_URL} where no
                         `tilejudge up` ever ran (where one ran and stopped, a command says so
                         and how to start it, and calls no server)
  TILEJUDGE_HOME         the local stack's data directory (default: ./.tilejudge); `up` writes
                         the admin token to $TILEJUDGE_HOME/{ADMIN_TOKEN_FILE}, which organiser
                         commands read when neither --token nor $TILEJUDGE_ADMIN_TOKEN is given
  TILEJUDGE_ADMIN_TOKEN  the organiser's token
  TILEJUDGE_TOKEN        a team's token, for submit and report
  TILEJUDGE_LEXICON      the Wordytaire word list to judge with offline (default: the cache
                         `make lexicon` fills); Crosstiles logs are judged with --lexicon, else
                         the cache's crosstiles.txt

A command that talks to a server says on stderr which URL it uses, and where that came from,
with -v, or when nothing answers there (with how to start the local stack).

`tilejudge COMMAND --help` describes a command and its options.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilejudge",
        description=__doc__,
        epilog=ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_global_options(parser)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    offline_cli.add_commands(commands)

    lexicon = command(
        commands, "lexicon", "word lists: fetch the judge's; add, list, diff on a server"
    )
    lexicon_commands = lexicon.add_subparsers(required=True, metavar="ACTION")
    fetch = command(
        lexicon_commands,
        "fetch",
        "fill the local cache with the known word lists (verified digests)",
        epilog="Each list comes from the first place that has it: the cache, the folder "
        "$TILEJUDGE_LEXICON_SOURCE names (for machines without internet), ../shared/lexicons "
        "beside the project, or upstream (a pinned download or a recipe; docs/lexicons.md).",
    )
    fetch.set_defaults(run=_fetch)
    admin_cli.add_lexicon_actions(lexicon_commands)
    admin_cli.add_commands(commands)
    contests_cli.add_commands(commands)
    disputes_cli.add_commands(commands)
    results_cli.add_commands(commands)
    _add_service_commands(commands)
    roles_cli.add_commands(commands)
    load_cli.add_command(commands)
    audit_cli.add_command(commands)
    audit_cli.add_key_command(commands)
    return parser


def _add_service_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = command(commands, "up", "run the whole stack in the foreground until Ctrl-C")
    up.add_argument("--demo", action="store_true", help="also load a demo contest and teams")
    up.add_argument("--no-workers", action="store_true", help="start no Celery worker")
    up.set_defaults(run=_up)

    submit = command(commands, "submit", "upload a submission to a contest")
    submit.add_argument("file", metavar="FILE", help="submission file ('-' for stdin)")
    submit.add_argument("--contest", required=True, help="the contest's id")
    submit.add_argument(
        "--wait",
        action="store_true",
        help="then wait for the result and print it; gives up after "
        f"{WAIT_TIMEOUT_S:.0f} s (exit 1: still being judged)",
    )
    add_server_options(submit, Role.TEAM)
    submit.set_defaults(run=_submit)

    board = command(commands, "leaderboard", "print a contest's ranking")
    board.add_argument("--contest", required=True, help="the contest's id")
    board.add_argument(
        "--json",
        action="store_true",
        help="print the whole ranking as JSON, in the game's own fields (Crosstiles: with "
        "each player's rating), instead of a table: the standings to keep or pass on",
    )
    add_server_options(board, Role.PUBLIC)
    board.set_defaults(run=_leaderboard)


def _fetch(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = ClientSettings.from_env(environ)
    fetched, missing = lexicon_files.fetch(settings.lexicon_cache, settings.lexicon_source)
    for found in fetched:
        print(found.path)
    for lost in missing:
        print(f"tilejudge: {lost.sentence()}", file=sys.stderr)
    return 1 if missing else 0


# The service commands import their modules here, not at the top, so `tilejudge judge` does not
# pay for httpx, boto3 and friends.


def _up(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from devstack.up import run_stack

    settings = Settings.from_env(environ)
    return run_stack(settings, demo=args.demo, workers=not args.no_workers)


def _submit(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from cli import client

    data = read_input(args.file)
    return client.run_submit(
        data, args.contest, args.token, args.url, args.wait, environ=environ, verbose=args.verbose
    )


def _leaderboard(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from cli import client

    return client.run_leaderboard(
        args.contest, args.url, environ=environ, verbose=args.verbose, as_json=args.json
    )


if __name__ == "__main__":
    sys.exit(main())
