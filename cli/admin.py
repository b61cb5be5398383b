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

from cli.options import EXIT_OK, CliError, Role, add_server_options, fail, read_input, resolve
from core.states import RejudgeMode, RejudgeState
from infra.settings import ClientSettings, SettingsError

if TYPE_CHECKING:  # the client is imported when a command runs: `tilejudge judge` needs no httpx
    import httpx

    from infra.api_client import Client

POLL_SECONDS = 0.5
# Registering a word list of several MB and diffing two of them take the server a while.
ADMIN_TIMEOUT_S = 120.0

Action = Callable[["Client", argparse.Namespace], int]


def add_lexicon_actions(actions: Any) -> None:
    _registry_actions(
        actions,
        ("register a word list with the server", "the word list, one word a line ('-' for stdin)"),
        "word lists the server knows",
        "words added and removed from A to B (ids or names)",
        (_lexicon_add, _lexicon_list, _lexicon_diff),
    )


def add_commands(commands: Any) -> None:
    layout = commands.add_parser("layout", help="bonus layouts on the server")
    actions = layout.add_subparsers(required=True, metavar="ACTION")
    _registry_actions(
        actions,
        ("register a layout JSON file", "the layout JSON ('-' for stdin)"),
        "layouts the server knows",
        "squares and letters that differ from A to B (ids or names)",
        (_layout_add, _layout_list, _layout_diff),
    )

    rejudge = commands.add_parser(
        "rejudge",
        help="rejudge a contest under another word list or layout",
        description="tilejudge rejudge --contest C --lexicon L [--layout Y] [--affected] [--apply]"
        " | tilejudge rejudge show|apply|cancel ID",
    )
    rejudge.add_argument("action", nargs="?", choices=["show", "apply", "cancel"])
    rejudge.add_argument("run_id", nargs="?", metavar="ID")
    rejudge.add_argument("--contest")
    rejudge.add_argument("--lexicon", help="lexicon id or name")
    rejudge.add_argument("--layout", help="layout id or name (default: unchanged)")
    rejudge.add_argument("--affected", action="store_true", help="only what the fix can change")
    rejudge.add_argument("--apply", action="store_true", help="apply once ready")
    rejudge.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for ready")
    _common(rejudge, _rejudge)

    team = commands.add_parser("team", help="organiser actions on teams")
    team_actions = team.add_subparsers(required=True, metavar="ACTION")
    delete = team_actions.add_parser("delete", help="delete a team with its uploads and results")
    delete.add_argument("--team", required=True, help="the team's id")
    add_server_options(delete, Role.ADMIN)
    delete.set_defaults(
        run=lambda args, environ: run_team_delete(args.team, args.url, args.token, environ=environ)
    )


def _registry_actions(
    actions: Any,
    add_help: tuple[str, str],
    list_help: str,
    diff_help: str,
    handlers: tuple[Action, Action, Action],
) -> None:
    """`add FILE --name`, `list` and `diff A B` of a content-addressed registry."""
    add = actions.add_parser("add", help=add_help[0])
    add.add_argument("file", metavar="FILE", help=add_help[1])
    add.add_argument("--name", required=True, help="a name contests can give instead of the id")
    _common(add, handlers[0])
    _common(actions.add_parser("list", help=list_help), handlers[1])
    diff = actions.add_parser("diff", help=diff_help)
    diff.add_argument("a", metavar="A", help="the older one: id or name")
    diff.add_argument("b", metavar="B", help="the newer one: id or name")
    _common(diff, handlers[2])


def _common(parser: argparse.ArgumentParser, action: Action) -> None:
    add_server_options(parser, Role.ADMIN)
    parser.set_defaults(
        run=lambda args, environ: run_as_admin(
            lambda api: action(api, args), environ, args.url, args.token, err=sys.stderr
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
) -> int:
    """Run `action` with a client holding the admin token; a failure is one line on `err`."""
    from infra import api_client
    from infra.api_client import ApiError

    try:
        target = resolve(ClientSettings.from_env(environ), Role.ADMIN, url=url, token=token)
        with api_client.connect(
            target.url, target.token, timeout=ADMIN_TIMEOUT_S, transport=transport
        ) as api:
            return action(api)
    except (SettingsError, ApiError, CliError) as exc:
        return fail(err, str(exc))


def run_team_delete(
    team_id: str,
    url: str | None,
    admin_token: str | None,
    *,
    environ: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
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
        delete, environ, url, admin_token, err=err or sys.stderr, transport=transport
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


def _rejudge(api: Client, args: argparse.Namespace) -> int:
    if args.action is not None:
        if not args.run_id:
            raise CliError(f"rejudge {args.action} needs the run's ID")
        if args.action == "show":
            print_preview(api.call("GET", f"/v1/rejudges/{args.run_id}"))
            return 0
        body = api.call("POST", f"/v1/rejudges/{args.run_id}/{args.action}")
        print(f"rejudge {body['id']}: {body['state']}")
        return 0
    if not (args.contest and args.lexicon):
        raise CliError("rejudge needs --contest and --lexicon (or show|apply|cancel ID)")
    request = {
        "lexicon": args.lexicon,
        "mode": RejudgeMode.AFFECTED if args.affected else RejudgeMode.FULL,
    }
    if args.layout:
        request["layout"] = args.layout
    run = api.call("POST", f"/v1/contests/{args.contest}/rejudges", json_body=request)
    print(f"rejudge {run['id']} ({run['mode']}) {'started' if run['created'] else 'already open'}")
    shown = follow(api, run["id"], args.timeout)
    print_preview(shown)
    if args.apply and shown["state"] == RejudgeState.READY:
        body = api.call("POST", f"/v1/rejudges/{run['id']}/apply")
        print(f"applied: the contest is judged with {body['lexicon'][:16]} / {body['layout'][:16]}")
    return 0 if shown["state"] in (RejudgeState.READY, RejudgeState.APPLIED) else 1


def follow(api: Client, run_id: str, timeout: float) -> dict[str, Any]:
    """Redraw a progress bar (count, rate, ETA) until the run is no longer running."""
    started = time.monotonic()
    first_done: int | None = None
    while True:
        run = api.call("GET", f"/v1/rejudges/{run_id}")
        elapsed = time.monotonic() - started
        first_done = run["done"] if first_done is None else first_done
        rate = (run["done"] - first_done) / elapsed if elapsed > 0 else 0.0
        left = run["total"] - run["done"]
        eta = f"{left / rate:5.0f} s" if rate > 0 else "    ? s"
        width = 30
        filled = width * run["done"] // max(1, run["total"])
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {run['done']}/{run['total']}"
            f"  {rate:7.1f}/s  ETA {eta}  ({run['carried']} carried over)  "
        )
        sys.stderr.flush()
        if run["state"] != RejudgeState.RUNNING or elapsed > timeout:
            sys.stderr.write("\n")
            return run
        time.sleep(POLL_SECONDS)


def print_preview(run: dict[str, Any]) -> None:
    print(
        f"rejudge {run['id']}: {run['state']}, {run['done']}/{run['total']} done "
        f"({run['carried']} carried over), {len(run.get('changed', []))} scores change"
    )
    changed = run.get("changed", [])
    if changed:
        print(f"  {'submission':<34} {'team':<20} {'old':>8} {'new':>8}")
        for row in changed[:50]:
            print(
                f"  {row['submission']:<34} {row['team']:<20} {row['old_score']:>8} {row['new_score']:>8}"
            )
        if len(changed) > 50:
            print(f"  ... and {len(changed) - 50} more")
    moves = run.get("rank_changes", [])
    if moves:
        print(f"  {'team':<20} {'rank':>6} -> {'new':<6}")
        for row in moves:
            print(f"  {row['team']:<20} {row['old_rank']!s:>6} -> {row['new_rank']!s:<6}")
