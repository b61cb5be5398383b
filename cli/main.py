"""The `tilejudge` command: judge and generate offline, run the local stack, upload and rank as
a team, and organise contests, word lists, layouts and rejudges."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from cli import admin as admin_cli
from cli import contests as contests_cli
from cli import results as results_cli
from cli import roles as roles_cli
from cli.games import GameCli, Option, cli_game, game_help
from cli.options import (
    ADMIN_TOKEN_FILE,
    STACK_URL_FILE,
    TOKEN_HELP,
    WAIT_TIMEOUT_S,
    CliError,
    Role,
    add_server_options,
    command,
    read_input,
    resolve,
)
from core.games import DEFAULT, game, names
from infra import lexicon_files
from infra.settings import DEFAULT_URL, ClientSettings, Settings, SettingsError
from judge import LexiconError


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command. Every default comes from `environ` (the process environment when None):
    nothing below reads os.environ."""
    parser = _parser()
    args = parser.parse_args(argv)
    refused: tuple[type[Exception], ...] = (
        CliError,
        SettingsError,
        lexicon_files.LexiconNotFound,
        LexiconError,
        *_rules_errors(),
    )
    try:
        return int(args.run(args, os.environ if environ is None else environ))
    except refused as exc:
        print(f"tilejudge: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


LEXICON_HELP = (
    "word list, one word a line (default: Wordytaire's: $TILEJUDGE_LEXICON, then the cache; "
    "Crosstiles': the cache's crosstiles.txt)"
)
ENVIRONMENT = f"""\
environment:
  TILEJUDGE_URL          the API for commands that talk to a server; without it (and without
                         --url) the URL a running `tilejudge up` recorded in
                         $TILEJUDGE_HOME/{STACK_URL_FILE}, else {DEFAULT_URL}
  TILEJUDGE_HOME         the local stack's data directory (default: ./.tilejudge); `up` writes
                         the admin token to $TILEJUDGE_HOME/{ADMIN_TOKEN_FILE}, which organiser
                         commands read when neither --token nor $TILEJUDGE_ADMIN_TOKEN is given
  TILEJUDGE_ADMIN_TOKEN  the organiser's token
  TILEJUDGE_TOKEN        a team's token, for submit and report
  TILEJUDGE_LEXICON      the Wordytaire word list to judge with offline (default: the cache
                         `make lexicon` fills); Crosstiles logs are judged with --lexicon, else
                         the cache's crosstiles.txt

`tilejudge COMMAND --help` describes a command and its options.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilejudge",
        description=__doc__,
        epilog=ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    _add_judge_command(commands)
    _add_generate_command(commands)

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
    results_cli.add_commands(commands)
    _add_service_commands(commands)
    roles_cli.add_commands(commands)
    _add_load_command(commands)
    return parser


def _add_judge_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = command(
        commands,
        "judge",
        "judge submission files or Crosstiles game logs offline",
        epilog="exit status: 0 (with --game crosstiles: 0 when every log is valid, 1 when any "
        "is invalid); 2 for a bad option or a file that cannot be read",
    )
    check.add_argument(
        "files", nargs="+", metavar="FILE", help="submission files or game logs ('-' for stdin)"
    )
    check.add_argument("--game", choices=names(), default=DEFAULT, help=game_help())
    check.add_argument("--lexicon", metavar="FILE", help=LEXICON_HELP)
    for option in _offered(_rules_options):
        option.add_to(check)
    check.add_argument(
        "--json",
        action="store_true",
        help="JSON reports (SPEC's, or CROSSTILES.md's), one a line, each with its file",
    )
    check.set_defaults(run=_judge)


def _add_generate_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bot = command(
        commands, "generate", "write a generated submission or Crosstiles game log (to stdout)"
    )
    bot.add_argument("--game", choices=names(), default=DEFAULT, help=game_help())
    bot.add_argument(
        "--seed",
        required=True,
        help="Wordytaire: the generator's seed, a whole number (the same seed, the same moves); "
        "Crosstiles: the game's seed (1 to 128 printable ASCII characters, no spaces), which "
        "orders the bag",
    )
    for option in _offered(_bot_options):
        option.add_to(bot)
    bot.add_argument("--lexicon", metavar="FILE", help=LEXICON_HELP)
    for option in _offered(_rules_options):
        option.add_to(bot)
    bot.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    bot.set_defaults(run=_generate)


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
    add_server_options(board, Role.PUBLIC)
    board.set_defaults(run=_leaderboard)


def _add_load_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    load = command(
        commands,
        "load",
        "upload a bounded burst of generated submissions to a local stack and check them",
    )
    load.add_argument("--url", required=True, help="the API (127.0.0.1, localhost or ::1 only)")
    load.add_argument("--contest", required=True, help="created (open for a day) if missing")
    load.add_argument("--uploads", type=int, required=True, help="how many uploads (N)")
    load.add_argument("--concurrency", type=int, required=True, help="concurrent clients (K)")
    load.add_argument("--teams", type=int, required=True, help="new teams to spread them over (T)")
    load.add_argument("--admin-token", help=TOKEN_HELP[Role.ADMIN])
    load.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds for uploads and results (default: 600)",
    )
    load.add_argument(
        "--seed", type=int, default=0, help="of the generated submissions (default: 0)"
    )
    load.add_argument(
        "--moves", type=int, default=120, help="move lines per submission (default: 120)"
    )
    load.add_argument(
        "--retries",
        type=int,
        default=0,
        help="extra attempts after a 429/503 or a refused call (default: 0)",
    )
    load.set_defaults(run=_load)


def _rules_options(side: GameCli) -> tuple[Option, ...]:
    return side.rules_options


def _bot_options(side: GameCli) -> tuple[Option, ...]:
    return side.bot_options


def _offered(taken: Callable[[GameCli], tuple[Option, ...]]) -> tuple[Option, ...]:
    """The options some game takes (`taken` of its command-line side), each flag once, in the
    order the games are registered."""
    found: dict[str, Option] = {}
    for name in names():
        for option in taken(cli_game(name)):
            found.setdefault(option.flag, option)
    return tuple(found.values())


def _rules_errors() -> tuple[type[Exception], ...]:
    """What a rules file (a layout, a board) that cannot be read raises, in any game."""
    return tuple(error for name in names() for error in game(name).rules_errors)


def _refuse_other_games_options(
    args: argparse.Namespace, offered: Sequence[Option], taken: Sequence[Option]
) -> None:
    """CliError naming the options given (of those `offered`) that args.game does not take."""
    flags = {option.flag for option in taken}
    given = [option.flag for option in offered if option.flag not in flags and option.given(args)]
    if given:
        raise CliError(f"{', '.join(given)}: not an option of --game {args.game}")


def _judge(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    side = cli_game(args.game)
    _refuse_other_games_options(args, _offered(_rules_options), side.rules_options)
    return side.judge(args, environ, sys.stdout)


def _generate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    side = cli_game(args.game)
    offered = (*_offered(_bot_options), *_offered(_rules_options))
    _refuse_other_games_options(args, offered, (*side.bot_options, *side.rules_options))
    data = side.generate(args, environ)
    if args.output is None:
        sys.stdout.buffer.write(data)
        return 0
    try:
        with open(args.output, "wb") as out:
            out.write(data)
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {exc.strerror}") from exc
    return 0


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
    return client.run_submit(data, args.contest, args.token, args.url, args.wait, environ=environ)


def _leaderboard(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from cli import client

    return client.run_leaderboard(args.contest, args.url, environ=environ)


def _load(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from devstack import load
    from devstack.plan import LoadError, Plan, check_loopback
    from infra.api_client import ApiError

    bounds = {
        "--uploads": (args.uploads, 1, 100_000),
        "--concurrency": (args.concurrency, 1, 1_000),
        "--teams": (args.teams, 1, 10_000),
        "--timeout": (args.timeout, 1, 3_600),
        "--moves": (args.moves, 1, 10_000),
        "--retries": (args.retries, 0, 20),
    }
    for flag, (value, low, high) in bounds.items():
        if not low <= value <= high:
            raise CliError(f"{flag} must be between {low} and {high}, not {value}")
    settings = ClientSettings.from_env(environ)
    try:
        url = check_loopback(args.url)
        target = resolve(
            settings, Role.ADMIN, url=url, token=args.admin_token, flag="--admin-token"
        )
        assert target.token is not None  # resolve raises when there is none
        plan = Plan(
            url=url,
            contest=args.contest,
            uploads=args.uploads,
            concurrency=args.concurrency,
            teams=args.teams,
            admin_token=target.token,
            timeout=args.timeout,
            seed=args.seed,
            moves=args.moves,
            retries=args.retries,
        )
        lexicon = lexicon_files.load(lexicon_files.resolve(None, settings))
        return load.run(plan, lexicon)
    except (LoadError, ApiError) as exc:
        raise CliError(str(exc)) from exc


if __name__ == "__main__":
    sys.exit(main())
