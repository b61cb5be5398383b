"""Organiser commands over the HTTP API: word-list and layout versions, rejudge runs, and
deleting a team. The admin token comes from --token, else $TILEJUDGE_ADMIN_TOKEN, else
$TILEJUDGE_HOME/admin-token.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from cli.games import cli_game, game_of
from cli.options import (
    EXIT_OK,
    Action,
    CliError,
    Role,
    add_server_options,
    command,
    read_input,
    run_with_client,
)
from cli.progress import Progress
from core.states import RejudgeMode, RejudgeState

if TYPE_CHECKING:  # the client is imported when a command runs: `tilejudge judge` needs no httpx
    import httpx

    from infra.api_client import Client

POLL_SECONDS = 0.5
# Both forms of `rejudge`: argparse would show one line ending in the optional action.
REJUDGE_USAGE = """\
%(prog)s --contest CONTEST --lexicon LEXICON [--layout LAYOUT]
                         [--affected] [--apply] [--timeout SECONDS]
                         [--url URL] [--token TOKEN] [-v]
       %(prog)s {show,apply,cancel} RUN_ID [--url URL] [--token TOKEN] [-v]"""
# Registering a word list of several MB and diffing two of them take the server a while.
ADMIN_TIMEOUT_S = 120.0


def add_lexicon_actions(actions: Any) -> None:
    _registry_actions(
        actions,
        "word list",
        ("register a word list with the server", "the word list, one word a line ('-' for stdin)"),
        "list the word lists the server knows",
        "print the words added and removed from A to B",
        (_lexicon_add, _lexicon_list, _lexicon_diff),
    )


def add_commands(commands: Any) -> None:
    """`layout` and `rejudge`."""
    layout = command(commands, "layout", "bonus layouts on the server: add, list, diff")
    actions = layout.add_subparsers(required=True, metavar="ACTION")
    _registry_actions(
        actions,
        "layout",
        ("register a layout JSON file with the server", "the layout JSON ('-' for stdin)"),
        "list the layouts the server knows",
        "print the squares and letters that differ from A to B",
        (_layout_add, _layout_list, _layout_diff),
    )
    _add_rejudge(commands)


def _add_rejudge(commands: Any) -> None:
    rejudge = command(
        commands,
        "rejudge",
        "rejudge a contest under another word list or layout; show, apply or cancel a run",
        usage=REJUDGE_USAGE,
        epilog="The first form starts a run, follows it (a progress bar on a terminal, a line "
        "each tenth of the way elsewhere) and prints its preview; the second acts on the run "
        "whose id the first printed.",
    )
    rejudge.add_argument("--contest", help="the contest to rejudge (starts a run)")
    rejudge.add_argument("--lexicon", help="the word list to rejudge under: id or name")
    rejudge.add_argument(
        "--layout", help="the layout to rejudge under: id or name (default: the contest's)"
    )
    rejudge.add_argument(
        "--affected",
        action="store_true",
        help="judge again only what the fix can change, carry the rest over "
        "(default: judge everything)",
    )
    rejudge.add_argument(
        "--apply", action="store_true", help="apply the run as soon as it is ready"
    )
    rejudge.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="stop waiting for the run to be ready after this many seconds; the run goes on "
        "(default: 3600)",
    )
    _common(rejudge, _rejudge)
    # prog: the actions' usage starts `tilejudge rejudge show`, not with REJUDGE_USAGE.
    runs = rejudge.add_subparsers(dest="action", required=False, prog=rejudge.prog)
    for name, summary in (
        ("show", "show a run's progress and, once ready, the scores and ranks it changes"),
        ("apply", "switch the contest to a ready run's results, in one transaction"),
        ("cancel", "close a run; nothing visible changes"),
    ):
        action = command(runs, name, summary)
        action.add_argument(
            "run_id", metavar="RUN_ID", help="the run's id, as `rejudge` printed it"
        )
        # SUPPRESS: an option given before the action is not reset by the action's default.
        _common(action, _rejudge_action, default=argparse.SUPPRESS)


def _registry_actions(
    actions: Any,
    what: str,
    add_help: tuple[str, str],
    list_help: str,
    diff_help: str,
    handlers: tuple[Action, Action, Action],
) -> None:
    """`add FILE --name`, `list` and `diff A B` of a content-addressed registry."""
    add = command(actions, "add", add_help[0])
    add.add_argument("file", metavar="FILE", help=add_help[1])
    add.add_argument(
        "--name", required=True, help=f"a name to give instead of the {what}'s id (required)"
    )
    _common(add, handlers[0])
    _common(command(actions, "list", list_help), handlers[1])
    diff = command(actions, "diff", diff_help)
    diff.add_argument("a", metavar="A", help=f"the older {what}: id or name")
    diff.add_argument("b", metavar="B", help=f"the newer {what}: id or name")
    _common(diff, handlers[2])


def _common(parser: argparse.ArgumentParser, action: Action, **options: Any) -> None:
    add_server_options(parser, Role.ADMIN, **options)
    parser.set_defaults(
        run=lambda args, environ: run_as_admin(
            lambda api: action(api, args),
            environ,
            args.url,
            args.token,
            err=sys.stderr,
            verbose=args.verbose,
        )
    )


def run_as_admin(
    action: Callable[[Client], int],
    environ: Mapping[str, str],
    url: str | None,
    token: str | None,
    *,
    err: TextIO,
    transport: httpx.BaseTransport | None = None,
    verbose: bool = False,
) -> int:
    """Run `action` with a client holding the admin token; a failure is one line on `err`."""
    return run_with_client(
        Role.ADMIN,
        action,
        environ,
        url,
        token,
        err=err,
        timeout=ADMIN_TIMEOUT_S,
        transport=transport,
        verbose=verbose,
    )


def run_team_delete(
    team_id: str,
    url: str | None,
    admin_token: str | None,
    *,
    environ: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
    verbose: bool = False,
) -> int:
    """`tilejudge team delete`: remove a team, its uploads, results and reports."""

    def delete(api: Client) -> int:
        done = api.call("DELETE", f"/v1/teams/{team_id}")
        (out or sys.stdout).write(
            f"deleted team {done.get('team')} and {done.get('deleted_objects')} stored objects\n"
        )
        return EXIT_OK

    # sys.stdout and sys.stderr are looked up late, so redirection works.
    return run_as_admin(
        delete,
        environ,
        url,
        admin_token,
        err=err or sys.stderr,
        transport=transport,
        verbose=verbose,
    )


def _lexicon_add(api: Client, args: argparse.Namespace) -> int:
    body = api.call(
        "POST", "/v1/lexicons", params={"name": args.name}, content=read_input(args.file)
    )
    print(f"{body['id']}  {body['name']}  {body['words']} words")
    return 0


def _lexicon_list(api: Client, args: argparse.Namespace) -> int:
    for row in api.call("GET", "/v1/lexicons")["lexicons"]:
        print(
            f"{row['id'][:16]}  {row['name']:<24} {row['words']:>8} words  {row['created_at']}  {row['source']}"
        )
    return 0


def _lexicon_diff(api: Client, args: argparse.Namespace) -> int:
    body = api.call("GET", f"/v1/lexicons/{args.a}/diff/{args.b}")
    print(
        f"{body['from'][:16]} -> {body['to'][:16]}: +{len(body['added'])} -{len(body['removed'])}"
    )
    for word in body["added"]:
        print(f"+{word}")
    for word in body["removed"]:
        print(f"-{word}")
    return 0


def _layout_add(api: Client, args: argparse.Namespace) -> int:
    body = api.call(
        "POST",
        "/v1/layouts",
        params={"name": args.name},
        content=read_input(args.file),
        content_type="application/json",
    )
    print(f"{body['id']}  {body['name']}")
    return 0


def _layout_list(api: Client, args: argparse.Namespace) -> int:
    for row in api.call("GET", "/v1/layouts")["layouts"]:
        print(f"{row['id'][:16]}  {row['name']:<24} {row['created_at']}  by {row['created_by']}")
    return 0


def _layout_diff(api: Client, args: argparse.Namespace) -> int:
    body = api.call("GET", f"/v1/layouts/{args.a}/diff/{args.b}")
    print(
        f"{body['from'][:16]} -> {body['to'][:16]}: {len(body['squares'])} squares, "
        f"{len(body['letters'])} letters differ"
    )
    for square in body["squares"]:
        print(
            f"  square |y|%p={square['row']} |x|%p={square['column']}: {square['from']} -> {square['to']}"
        )
    for letter in body["letters"]:
        print(f"  {letter['letter']}: points/tiles {letter['from']} -> {letter['to']}")
    return 0


def _rejudge_action(api: Client, args: argparse.Namespace) -> int:
    """`rejudge show|apply|cancel ID`."""
    if args.contest or args.lexicon or args.layout or args.affected or args.apply:
        raise CliError(f"rejudge {args.action} takes only RUN_ID (and --url, --token, -v)")
    if args.action == "show":
        run = api.call("GET", f"/v1/rejudges/{args.run_id}")
        print_preview(run, game_of(api, run["contest"]))
        return 0
    body = api.call("POST", f"/v1/rejudges/{args.run_id}/{args.action}")
    print(f"rejudge {body['id']}: {body['state']}")
    return 0


def _rejudge(api: Client, args: argparse.Namespace) -> int:
    """`rejudge --contest C --lexicon L`: start a run, follow it, show its preview."""
    if not (args.contest and args.lexicon):
        raise CliError("rejudge needs --contest and --lexicon (or show|apply|cancel RUN_ID)")
    request = {
        "lexicon": args.lexicon,
        "mode": RejudgeMode.AFFECTED if args.affected else RejudgeMode.FULL,
    }
    if args.layout:
        request["layout"] = args.layout
    run = api.call("POST", f"/v1/contests/{args.contest}/rejudges", json_body=request)
    print(f"rejudge {run['id']} ({run['mode']}) {'started' if run['created'] else 'already open'}")
    shown = follow(api, run["id"], args.timeout)
    print_preview(shown, game_of(api, shown["contest"]))
    if args.apply and shown["state"] == RejudgeState.READY:
        body = api.call("POST", f"/v1/rejudges/{run['id']}/apply")
        print(f"applied: the contest is judged with {body['lexicon'][:16]} / {body['layout'][:16]}")
    return 0 if shown["state"] in (RejudgeState.READY, RejudgeState.APPLIED) else 1


def follow(
    api: Client,
    run_id: str,
    timeout: float,
    *,
    err: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Show the run's progress (count, rate, ETA) on `err` (stderr) until it is no longer
    running or `timeout` seconds have passed; the run as last read."""
    progress = Progress(err or sys.stderr, f"rejudge {run_id}", clock=clock)
    started = clock()
    first_done: int | None = None
    while True:
        run = api.call("GET", f"/v1/rejudges/{run_id}")
        elapsed = clock() - started
        first_done = run["done"] if first_done is None else first_done
        rate = (run["done"] - first_done) / elapsed if elapsed > 0 else 0.0
        left = run["total"] - run["done"]
        eta = f"{left / rate:.0f} s" if rate > 0 else "? s"
        detail = f"{rate:.1f}/s  ETA {eta}  ({run['carried']} carried over)"
        if run["state"] != RejudgeState.RUNNING or elapsed > timeout:
            progress.finish(run["done"], run["total"], detail)
            return run
        progress.show(run["done"], run["total"], detail)
        sleep(POLL_SECONDS)


def print_preview(run: Mapping[str, Any], game: str) -> None:
    """A rejudge run's progress and preview on stdout, as the contest's game (`game`, its name)
    prints one."""
    cli_game(game).print_preview(run, sys.stdout)
