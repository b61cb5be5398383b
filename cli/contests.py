"""Organiser commands for contests and their teams: `tilejudge contest
create|list|show|close|thaw` and `tilejudge team add|allow-logs|list|delete`, over the HTTP
API."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from cli.admin import ADMIN_TIMEOUT_S, run_team_delete
from cli.games import cli_game
from cli.options import Action, CliError, Role, add_server_options, command, run_with_client
from core import clock
from core.games import DEFAULT, names

if TYPE_CHECKING:
    from infra.api_client import Client

ISO_EXAMPLE = "2026-12-24T18:00:00Z"
CONTEST_FIELDS = ("id", "title", "game", "status", "opens_at", "closes_at", "lexicon", "layout")
# A freeze given as a duration before the close: "1h", "30m", "90s", "1h30m".
BEFORE_CLOSE = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def add_commands(commands: Any) -> None:
    """`contest` and `team`."""
    contest = command(commands, "contest", "contests: create, list, show, close, thaw")
    actions = contest.add_subparsers(required=True, metavar="ACTION")

    create = command(actions, "create", "create a contest (its teams are added with `team add`)")
    create.add_argument(
        "contest_id", metavar="ID", help="the contest's id: a-z, 0-9, '-' and '_', 63 at most"
    )
    create.add_argument("--title", required=True, help="the contest's title, for people")
    create.add_argument(
        "--lexicon", required=True, help="the word list to judge with: id or name (`lexicon list`)"
    )
    create.add_argument(
        "--game",
        choices=names(),
        default=DEFAULT,
        help="what teams upload, fixed for good: Wordytaire move lists, or Crosstiles game logs "
        f"(default: {DEFAULT})",
    )
    create.add_argument(
        "--layout",
        help="the bonus layout: id or name (`layout list`; default: the SPEC layout); for a "
        "Crosstiles contest, its board (default: the classic board)",
    )
    create.add_argument(
        "--opens", required=True, help=f"when uploads open: ISO 8601 UTC, e.g. {ISO_EXAMPLE}"
    )
    create.add_argument(
        "--closes",
        required=True,
        help=f"when uploads close (the deadline): ISO 8601 UTC, e.g. {ISO_EXAMPLE}",
    )
    create.add_argument(
        "--freeze",
        metavar="WHEN",
        help="freeze the public standings from then until `contest thaw`: ISO 8601 UTC, or a "
        "duration before the close (1h, 30m, 90s, 1h30m); uploads received from then on "
        "show as pending to the public (default: no freeze)",
    )
    create.add_argument(
        "--options",
        metavar="JSON",
        help="what the game takes besides its rules data, as a JSON object: for Crosstiles, "
        '\'{"ratings": {"rating": 1500, "deviation": 350, "volatility": 0.06, "tau": 0.5}}\', '
        "any of them (the rest as shown, the default)",
    )
    with_client(create, Role.ADMIN, _create)

    with_client(command(actions, "list", "list every contest with its window"), Role.PUBLIC, _list)

    show = command(
        actions, "show", "show a contest: title, game, window, status, word list, layout"
    )
    show.add_argument("contest_id", metavar="ID", help="the contest's id")
    with_client(show, Role.PUBLIC, _show)

    close = command(
        actions,
        "close",
        "close a contest now: every upload received from now on is refused",
    )
    close.add_argument("contest_id", metavar="ID", help="the contest's id")
    with_client(close, Role.ADMIN, _close)

    thaw = command(
        actions,
        "thaw",
        "thaw a contest's frozen standings: the public sees every verdict from now on",
    )
    thaw.add_argument("contest_id", metavar="ID", help="the contest's id")
    with_client(thaw, Role.ADMIN, _thaw)

    _add_team_commands(commands)


def _add_team_commands(commands: Any) -> None:
    team = command(commands, "team", "a contest's teams: add, allow-logs, list, delete")
    actions = team.add_subparsers(required=True, metavar="ACTION")

    add = command(
        actions, "add", "add a team to a contest and print its token (shown this once only)"
    )
    add.add_argument("name", metavar="NAME", help="the team's name, unique in its contest")
    add.add_argument("--contest", required=True, help="the contest's id")
    add.add_argument(
        "--uploads-logs",
        action="store_true",
        help="allow the team to upload game logs to a Crosstiles contest (a log names other "
        "players, so only teams allowed may)",
    )
    with_client(add, Role.ADMIN, _team_add)

    allow = command(
        actions,
        "allow-logs",
        "allow a team to upload game logs (or, with --no, take the right back)",
    )
    allow.add_argument("team_id", metavar="TEAM_ID", help="the team's id (`team list` shows it)")
    allow.add_argument("--no", action="store_true", help="take the right back")
    with_client(allow, Role.ADMIN, _team_allow_logs)

    listing = command(
        actions,
        "list",
        "list a contest's teams: id and name (and, in a Crosstiles contest, whether each may "
        "upload game logs)",
    )
    listing.add_argument("--contest", required=True, help="the contest's id")
    with_client(listing, Role.ADMIN, _team_list)

    delete = command(actions, "delete", "delete a team with its uploads, results and reports")
    delete.add_argument(
        "team_id", nargs="?", metavar="TEAM_ID", help="the team's id (`team list` shows it)"
    )
    delete.add_argument("--team", help="the team's id, given as an option instead")
    add_server_options(delete, Role.ADMIN)
    delete.set_defaults(run=_team_delete)


def with_client(parser: argparse.ArgumentParser, role: Role, action: Action) -> None:
    """The command runs `action` with a client of the server, as `role`."""
    add_server_options(parser, role)
    parser.set_defaults(
        run=lambda args, environ: run_with_client(
            role,
            lambda api: action(api, args),
            environ,
            args.url,
            getattr(args, "token", None),
            err=sys.stderr,
            timeout=ADMIN_TIMEOUT_S,
            verbose=args.verbose,
        )
    )


def _create(api: Client, args: argparse.Namespace) -> int:
    times = {}
    for flag, value in (("--opens", args.opens), ("--closes", args.closes)):
        try:
            times[flag] = clock.format_time(clock.parse_time(value))
        except ValueError as exc:
            raise CliError(f"{flag}: {exc} (ISO 8601 UTC, e.g. {ISO_EXAMPLE})") from exc
    if times["--closes"] <= times["--opens"]:
        raise CliError("--closes must be after --opens")
    body: dict[str, Any] = {
        "id": args.contest_id,
        "title": args.title,
        "lexicon": args.lexicon,
        "opens_at": times["--opens"],
        "closes_at": times["--closes"],
        "game": args.game,
    }
    if args.layout:
        body["layout"] = args.layout
    if args.freeze:
        body["freeze_at"] = freeze_time(args.freeze, times["--closes"])
        if not times["--opens"] <= body["freeze_at"] <= times["--closes"]:
            raise CliError("--freeze must fall from --opens to --closes")
    if args.options:
        try:
            body["options"] = json.loads(args.options)
        except ValueError:
            raise CliError("--options must be a JSON object") from None
        if not isinstance(body["options"], dict):
            raise CliError("--options must be a JSON object")
    sys.stdout.write(format_contest(api.call("POST", "/v1/contests", json_body=body)))
    return 0


def _list(api: Client, args: argparse.Namespace) -> int:
    contests = api.call("GET", "/v1/contests")["contests"]
    if not contests:
        sys.stdout.write("no contests yet: `tilejudge contest create` makes one\n")
        return 0
    header = ("id", "status", "freeze", "opens_at", "closes_at", "title")
    rows = [header, *[tuple(str(c[key]) for key in header) for c in map(_with_freeze, contests)]]
    sys.stdout.write(table(rows))
    return 0


def _show(api: Client, args: argparse.Namespace) -> int:
    sys.stdout.write(format_contest(api.call("GET", f"/v1/contests/{args.contest_id}")))
    return 0


def _close(api: Client, args: argparse.Namespace) -> int:
    closed = api.call("POST", f"/v1/contests/{args.contest_id}/close")
    if closed["was_open"]:
        sys.stdout.write(
            f"contest {closed['id']} closed at {closed['closes_at']}: uploads received from now "
            "on are refused (a retry of one received in time still gets its answer)\n"
        )
    else:
        sys.stdout.write(f"contest {closed['id']} had closed already, at {closed['closes_at']}\n")
    return 0


def _thaw(api: Client, args: argparse.Namespace) -> int:
    thawed = api.call("POST", f"/v1/contests/{args.contest_id}/thaw")
    if thawed["thawed"]:
        sys.stdout.write(
            f"contest {thawed['id']} thawed at {thawed['thawed_at']}: the public standings show "
            "every verdict now\n"
        )
    else:
        sys.stdout.write(
            f"contest {thawed['id']} had been thawed already, at {thawed['thawed_at']}\n"
        )
    return 0


def freeze_time(when: str, closes_at: str) -> str:
    """`--freeze`: an ISO 8601 time, or a duration before `closes_at` (1h, 30m, 90s, 1h30m)."""
    before = BEFORE_CLOSE.fullmatch(when.strip())
    if before is not None and any(before.groups()):
        hours, minutes, seconds = (int(part or 0) for part in before.groups())
        span = timedelta(hours=hours, minutes=minutes, seconds=seconds)
        return clock.format_time(clock.parse_time(closes_at) - span)
    try:
        return clock.format_time(clock.parse_time(when))
    except ValueError as exc:
        raise CliError(
            f"--freeze: {exc} (ISO 8601 UTC, e.g. {ISO_EXAMPLE}, or a duration before the "
            "close: 1h, 30m, 90s)"
        ) from exc


def _with_freeze(contest: Mapping[str, Any]) -> dict[str, Any]:
    """The contest with its freeze in a word or a time: "-" none, "frozen", "thawed", or the
    time it freezes."""
    if contest.get("frozen"):
        state = "frozen"
    elif contest.get("thawed_at"):
        state = "thawed"
    else:
        state = contest.get("freeze_at") or "-"
    return {**contest, "freeze": state}


def _team_add(api: Client, args: argparse.Namespace) -> int:
    team = api.call(
        "POST",
        f"/v1/contests/{args.contest}/teams",
        json_body={"name": args.name, "uploads_logs": args.uploads_logs},
    )
    # The token alone on stdout, so `TOKEN=$(tilejudge team add ...)` takes it; the rest is said
    # on stderr.
    sys.stdout.write(f"{team['token']}\n")
    sys.stdout.flush()
    sys.stderr.write(
        f"tilejudge: added team {team['name']} (id {team['id']}) to contest {args.contest}. "
        "Keep its token (above) now: the server stores only its hash and cannot show it again.\n"
    )
    return 0


def _team_list(api: Client, args: argparse.Namespace) -> int:
    listing = api.call("GET", f"/v1/contests/{args.contest}/teams")
    teams = listing["teams"]
    if not teams:
        sys.stdout.write(f"no teams in contest {args.contest} yet: `tilejudge team add` adds one\n")
        return 0
    if cli_game(str(listing.get("game", ""))).shows_upload_rights:
        rows = [(t["id"], t["name"], "yes" if t["uploads_logs"] else "no") for t in teams]
        sys.stdout.write(table([("id", "name", "uploads_logs"), *rows]))
    else:
        sys.stdout.write(table([("id", "name"), *[(t["id"], t["name"]) for t in teams]]))
    return 0


def _team_allow_logs(api: Client, args: argparse.Namespace) -> int:
    team = api.call("PATCH", f"/v1/teams/{args.team_id}", json_body={"uploads_logs": not args.no})
    may = "may" if team["uploads_logs"] else "may not"
    sys.stdout.write(f"team {team['name']} ({team['id']}) {may} upload game logs\n")
    return 0


def _team_delete(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if bool(args.team_id) == bool(args.team):
        raise CliError("team delete needs the team's id: TEAM_ID (or --team TEAM_ID), once")
    return run_team_delete(
        args.team_id or args.team, args.url, args.token, environ=environ, verbose=args.verbose
    )


def format_contest(contest: Mapping[str, Any]) -> str:
    shown = "".join(f"{key:<12}{contest.get(key, '-')}\n" for key in CONTEST_FIELDS)
    shown += f"{'freeze':<12}{_freeze_line(contest)}\n"
    if contest.get("options"):
        shown += f"{'options':<12}{json.dumps(contest['options'], sort_keys=True)}\n"
    return shown


def _freeze_line(contest: Mapping[str, Any]) -> str:
    freeze_at, thawed_at = contest.get("freeze_at"), contest.get("thawed_at")
    if not freeze_at:
        return "-"
    if thawed_at:
        return f"{freeze_at} (thawed at {thawed_at})"
    if contest.get("frozen"):
        return f"{freeze_at} (frozen: `tilejudge contest thaw {contest['id']}` reveals all)"
    return f"{freeze_at} (not yet frozen)"


def table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as left-aligned columns two spaces apart; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )
