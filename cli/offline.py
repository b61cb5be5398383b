"""The offline commands, which need no server: `tilejudge judge` (each file as the game --game
names, else as the game its header shows) and `tilejudge generate` (a bot's upload)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from cli.games import GameCli, Option, cli_game, game_help, recognised_game
from cli.options import CliError, command, read_input
from core.games import DEFAULT, game, names
from infra import lexicon_files
from infra.settings import SettingsError
from judge import LexiconError

LEXICON_HELP = (
    "word list, one word a line (default: Wordytaire's: $TILEJUDGE_LEXICON, then the cache; "
    "Crosstiles': the cache's crosstiles.txt)"
)


def add_commands(commands: Any) -> None:
    """`judge` and `generate`."""
    _add_judge_command(commands)
    _add_generate_command(commands)


def rules_errors() -> tuple[type[Exception], ...]:
    """What a rules file (a layout, a board) that cannot be read raises, in any game."""
    return tuple(error for name in names() for error in game(name).rules_errors)


def refused_errors() -> tuple[type[Exception], ...]:
    """What an offline command refuses with: a bad option, a file or a word list that cannot be
    read; printed as one line, exit status 2."""
    return (
        CliError,
        SettingsError,
        lexicon_files.LexiconNotFound,
        LexiconError,
        *rules_errors(),
    )


def _add_judge_command(commands: Any) -> None:
    check = command(
        commands,
        "judge",
        "judge submission files or Crosstiles game logs offline",
        epilog="Without --game, each FILE is judged as the game its header shows (a Crosstiles "
        f"log starts with '#crosstiles 1'), and any other as a {DEFAULT} upload; several FILEs "
        "of different games are reported game by game. exit status: 0; 1 when any game log is "
        "invalid; 2 for a bad option or a file that cannot be read",
    )
    check.add_argument(
        "files", nargs="+", metavar="FILE", help="submission files or game logs ('-' for stdin)"
    )
    check.add_argument(
        "--game",
        choices=names(),
        help=f"{game_help(default='')}: judge every FILE as this game's, whatever its header "
        "shows (a FILE whose header shows another game is named on stderr; default: each FILE "
        "as the game its header shows)",
    )
    check.add_argument("--lexicon", metavar="FILE", help=LEXICON_HELP)
    for option in _offered(_rules_options):
        option.add_to(check)
    check.add_argument(
        "--json",
        action="store_true",
        help="JSON reports (SPEC's, or CROSSTILES.md's), one a line, each with its file",
    )
    check.set_defaults(run=_judge)


def _add_generate_command(commands: Any) -> None:
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


def _refuse_other_games_options(
    args: argparse.Namespace, offered: Sequence[Option], games: Sequence[str]
) -> None:
    """CliError naming the options given (of those `offered`) that none of `games` takes:
    the one --game names, or the games of the files given."""
    flags = {option.flag for name in games for option in _taken_by(cli_game(name))}
    given = [option.flag for option in offered if option.flag not in flags and option.given(args)]
    if not given:
        return
    if args.game is not None:
        raise CliError(f"{', '.join(given)}: not an option of --game {args.game}")
    raise CliError(
        f"{', '.join(given)}: not an option of {' or '.join(games)}, the game of the files "
        "given (--game chooses one)"
    )


def _taken_by(side: GameCli) -> tuple[Option, ...]:
    return (*side.bot_options, *side.rules_options)


def _judge(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if args.game is not None:  # a bad option is refused before any file is read
        _refuse_other_games_options(args, _offered(_rules_options), [args.game])
    # Every file is read before any is judged (and stdin once): a missing one fails the command
    # before output.
    files = [(name, read_input(name)) for name in args.files]
    batches = by_game(files, args.game, sys.stderr)
    _refuse_other_games_options(args, _offered(_rules_options), list(batches))
    status = 0
    for name, batch in batches.items():
        try:
            status = max(status, cli_game(name).judge(batch, args, environ, sys.stdout))
        except refused_errors() as exc:
            if len(batches) == 1:
                raise
            named = ", ".join(file for file, _ in batch)
            raise CliError(f"{named} ({name}): {exc}") from exc
    return status


def by_game(
    files: Sequence[tuple[str, bytes]], chosen: str | None, err: TextIO
) -> dict[str, list[tuple[str, bytes]]]:
    """The files by the game to judge them as, games in the order their first file comes: the
    `chosen` one (--game) for all, each file whose header shows another game named on `err`;
    else the game each file's header shows, DEFAULT for a file no game recognises."""
    batches: dict[str, list[tuple[str, bytes]]] = {}
    for name, data in files:
        found = recognised_game(data)
        if chosen is not None and found not in (None, chosen):
            err.write(
                f"tilejudge: {name}: judged as --game {chosen} says, though its header shows a "
                f"{found} upload (without --game it would be judged as one)\n"
            )
        batches.setdefault(chosen or found or DEFAULT, []).append((name, data))
    err.flush()
    return batches


def _generate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    side = cli_game(args.game)
    offered = (*_offered(_bot_options), *_offered(_rules_options))
    _refuse_other_games_options(args, offered, [args.game])
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
