"""Disputed games (rival valid logs of one game, which count for no one until the organiser
chooses one): `tilejudge dispute list` (the organiser's every one, a club's own) and `tilejudge
dispute settle`, over the HTTP API."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cli.contests import table, with_client
from cli.options import CliError, Role, command

if TYPE_CHECKING:
    from infra.api_client import Client


def add_commands(commands: Any) -> None:
    """`dispute list` and `dispute settle`."""
    dispute = command(
        commands, "dispute", "games with rival valid logs, counted for no one: list, settle"
    )
    actions = dispute.add_subparsers(required=True, metavar="ACTION")
    listing = command(
        actions,
        "list",
        "list a contest's disputed games and their rival logs (a club sees those it sent one of)",
    )
    listing.add_argument("--contest", required=True, help="the contest's id")
    listing.add_argument("--json", action="store_true", help="the API's answer, one line")
    with_client(listing, Role.READER, _list)

    settle = command(
        actions,
        "settle",
        "settle a disputed game: the log given counts, the game's other logs are passed over",
        epilog="Allowed after the close (settling is no upload). A valid log of the same game "
        "uploaded later disputes the game again, with the log chosen.",
    )
    settle.add_argument("--contest", required=True, help="the contest's id")
    settle.add_argument(
        "submission_id", metavar="SUBMISSION_ID", help="the log chosen (`dispute list` shows them)"
    )
    with_client(settle, Role.ADMIN, _settle)


def _path(contest: str) -> str:
    return f"/v1/contests/{quote(contest, safe='')}/disputes"


def _list(api: Client, args: argparse.Namespace) -> int:
    answer = api.call("GET", _path(args.contest))
    if args.json:
        sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
        return 0
    sys.stdout.write(format_disputes(answer["disputes"], args.contest))
    return 0


def format_disputes(disputes: list[dict[str, Any]], contest: str) -> str:
    """Each disputed game's rival logs as a table, under the game's match key."""
    if not disputes:
        return f"no disputed games in {contest}\n"
    parts = []
    for dispute in disputes:
        header = ("submission", "teams", "received_at", "winners")
        rows = [
            (
                log["submission"],
                ", ".join(log["teams"]),
                log["received_at"],
                ", ".join(log["winners"]) or "-",
            )
            for log in dispute["logs"]
        ]
        parts.append(f"game {dispute['match']}:\n" + table([header, *rows]))
    hint = f"settle one with `tilejudge dispute settle --contest {contest} SUBMISSION_ID`\n"
    return "\n".join(parts) + hint


def _settle(api: Client, args: argparse.Namespace) -> int:
    """Find the chosen log's game among the disputes, then settle it for that log."""
    disputes = api.call("GET", _path(args.contest))["disputes"]
    match = next(
        (
            dispute["match"]
            for dispute in disputes
            if any(log["submission"] == args.submission_id for log in dispute["logs"])
        ),
        None,
    )
    if match is None:
        raise CliError(
            f"submission {args.submission_id} is not a log of a disputed game of "
            f"{args.contest} (`tilejudge dispute list --contest {args.contest}`)"
        )
    settled = api.call(
        "POST",
        f"{_path(args.contest)}/{match}/settle",
        json_body={"submission": args.submission_id},
    )
    passed = ", ".join(settled["passed_over"]) or "none"
    if settled["changed"]:
        sys.stdout.write(
            f"game {match} settled: {settled['chosen']} counts; passed over: {passed}\n"
        )
    else:
        sys.stdout.write(f"game {match} was settled for {settled['chosen']} already\n")
    return 0
