"""The `tilejudge` command: judge and generate offline, run the local stack, upload and rank as
a team, and organise contests, word lists, layouts and rejudges."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from cli import admin as admin_cli
from cli.options import TOKEN_HELP, URL_HELP, CliError, Role, read_input, resolve
from infra import lexicon_files
from infra.settings import ClientSettings, Settings, SettingsError
from judge import Layout, LayoutError, Lexicon, LexiconError, Report, default_layout, judge
from judge.generator import WordIndex, generate


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command. Every default comes from `environ` (the process environment when None):
    nothing below reads os.environ."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, os.environ if environ is None else environ))
    except (
        CliError,
        SettingsError,
        lexicon_files.LexiconNotFound,
        LexiconError,
        LayoutError,
    ) as exc:
        print(f"tilejudge: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilejudge", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    check = commands.add_parser("judge", help="judge submission files offline")
    check.add_argument("files", nargs="+", metavar="FILE", help="submission files ('-' for stdin)")
    check.add_argument("--lexicon", help="word list (default: $TILEJUDGE_LEXICON, then the cache)")
    check.add_argument("--layout", help="layout JSON file (default: the SPEC layout)")
    check.add_argument("--json", action="store_true", help="SPEC JSON report(s), JSON Lines")
    check.set_defaults(run=_judge)

    bot = commands.add_parser("generate", help="write a generated submission to stdout")
    bot.add_argument("--seed", type=int, required=True, help="the same seed, the same moves")
    bot.add_argument("--moves", type=int, required=True, help="at most this many move lines")
    bot.add_argument("--illegal-share", type=float, default=0.0, help="share of illegal lines, 0-1")
    bot.add_argument("--lexicon", help="word list (default: $TILEJUDGE_LEXICON, then the cache)")
    bot.add_argument("--layout", help="layout JSON file (default: the SPEC layout)")
    bot.set_defaults(run=_generate)

    lexicon = commands.add_parser("lexicon", help="word lists")
    lexicon_commands = lexicon.add_subparsers(required=True, metavar="ACTION")
    fetch = lexicon_commands.add_parser("fetch", help="fill the local cache (verified digests)")
    fetch.set_defaults(run=_fetch)
    admin_cli.add_lexicon_actions(lexicon_commands)
    admin_cli.add_commands(commands)
    _add_service_commands(commands)
    _add_load_command(commands)
    return parser


def _add_service_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = commands.add_parser("up", help="run the whole stack in the foreground until Ctrl-C")
    up.add_argument("--demo", action="store_true", help="also load a demo contest and teams")
    up.add_argument("--no-workers", action="store_true", help="start no Celery worker")
    up.set_defaults(run=_up)

    submit = commands.add_parser("submit", help="upload a submission to a contest")
    submit.add_argument("file", metavar="FILE", help="submission file ('-' for stdin)")
    submit.add_argument("--contest", required=True, help="the contest's id")
    submit.add_argument("--token", help=TOKEN_HELP[Role.TEAM])
    submit.add_argument("--url", help=URL_HELP)
    submit.add_argument("--wait", action="store_true", help="wait for the result and print it")
    submit.set_defaults(run=_submit)

    board = commands.add_parser("leaderboard", help="print a contest's ranking")
    board.add_argument("--contest", required=True, help="the contest's id")
    board.add_argument("--url", help=URL_HELP)
    board.set_defaults(run=_leaderboard)


def _add_load_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    load = commands.add_parser(
        "load",
        help="upload a bounded burst of generated submissions to a local stack and check them",
    )
    load.add_argument("--url", required=True, help="the API (127.0.0.1, localhost or ::1 only)")
    load.add_argument("--contest", required=True, help="created (open for a day) if missing")
    load.add_argument("--uploads", type=int, required=True, help="how many uploads (N)")
    load.add_argument("--concurrency", type=int, required=True, help="concurrent clients (K)")
    load.add_argument("--teams", type=int, required=True, help="new teams to spread them over (T)")
    load.add_argument("--admin-token", help=TOKEN_HELP[Role.ADMIN])
    load.add_argument(
        "--timeout", type=float, default=600.0, help="seconds for uploads and results (600)"
    )
    load.add_argument("--seed", type=int, default=0, help="of the generated submissions (0)")
    load.add_argument("--moves", type=int, default=120, help="move lines per submission (120)")
    load.add_argument(
        "--retries", type=int, default=0, help="extra attempts after a 429/503 or a refused call"
    )
    load.set_defaults(run=_load)


def _load_rules(
    lexicon_path: str | None, layout_path: str | None, environ: Mapping[str, str]
) -> tuple[Lexicon, Layout]:
    settings = ClientSettings.from_env(environ)
    lexicon = lexicon_files.load(lexicon_files.resolve(lexicon_path, settings))
    layout = Layout.from_json(read_input(layout_path)) if layout_path else default_layout()
    return lexicon, layout


def _judge(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    # Every file is read before any is judged: a missing one fails the command before output.
    submissions = [(name, read_input(name)) for name in args.files]
    lexicon, layout = _load_rules(args.lexicon, args.layout, environ)
    for name, data in submissions:
        report = judge(data, lexicon, layout)
        if args.json:
            head = json.dumps({"file": name}, separators=(",", ":"))[:-1]
            sys.stdout.buffer.write(head.encode() + b"," + report.to_json_bytes()[1:] + b"\n")
        else:
            print_human(name, data, report, sys.stdout)
    sys.stdout.flush()
    return 0


def print_human(name: str, data: bytes, report: Report, out: TextIO) -> None:
    legal, illegal = report.legal, report.illegal
    out.write(f"{name}: {report.total} points from {legal} legal moves, {illegal} illegal\n")
    out.write(
        f"  tiles placed {report.tiles_placed}, left in the bag {sum(report.bag_left.values())}\n"
    )
    for reason, count in report.reasons().items():
        out.write(f"  {reason}: {count}\n")
    texts = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    for verdict in report.illegal_verdicts():
        text = texts[verdict.line - 1].removesuffix(b"\r").decode("utf-8", "replace")
        shown = text if len(text) <= 60 else text[:57] + "..."
        out.write(f"  line {verdict.line}: {shown!r}: {verdict.detail} [{verdict.reason}]\n")


def _generate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if not 0.0 <= args.illegal_share <= 1.0:
        raise CliError("--illegal-share must be between 0 and 1")
    if args.moves < 0:
        raise CliError("--moves must be 0 or more")
    lexicon, layout = _load_rules(args.lexicon, args.layout, environ)
    data = generate(
        WordIndex.build(lexicon.words),
        layout,
        seed=args.seed,
        moves=args.moves,
        illegal_share=args.illegal_share,
    )
    sys.stdout.buffer.write(data)
    return 0


def _fetch(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    for path in lexicon_files.fetch(ClientSettings.from_env(environ).lexicon_cache):
        print(path)
    return 0


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
