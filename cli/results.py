"""What judging produced, from the server: `tilejudge results export` (every submission of a
contest as CSV or JSON Lines, page by page) and `tilejudge report` (one submission's per-line
report, as the offline judge prints it, with --runs each run of lines that fail alike folded
into one; a game log's verdict, scores and winners)."""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cli.games import cli_game, game_of
from cli.options import (
    Action,
    CliError,
    Role,
    add_server_options,
    command,
    read_input,
    run_with_client,
)

if TYPE_CHECKING:
    from infra.api_client import Answer, Client

COLUMNS = (
    "submission", "team", "team_id", "state", "score", "legal", "illegal", "received_at",
    "judged_at", "lexicon", "layout",
)  # fmt: skip
FORMATS = ("csv", "jsonl")


def add_commands(commands: Any) -> None:
    """`results export` and `report`."""
    results = command(commands, "results", "a contest's results for the organiser: export")
    actions = results.add_subparsers(required=True, metavar="ACTION")
    export = command(
        actions,
        "export",
        "write every submission of a contest with its team, state and result (CSV or JSON Lines)",
    )
    export.add_argument("--contest", required=True, help="the contest's id")
    export.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="csv (a header row, then a row a submission) or jsonl (a JSON object a line)",
    )
    export.add_argument(
        "--output",
        metavar="FILE",
        help="write to FILE, in place once complete (default: stdout)",
    )
    add_server_options(export, Role.ADMIN)
    export.set_defaults(run=lambda args, environ: _run(Role.ADMIN, _export, args, environ))

    report = command(
        commands,
        "report",
        "print a submission's per-line report as `tilejudge judge` does (a team sees its own)",
    )
    report.add_argument("submission_id", metavar="SUBMISSION_ID", help="the id `submit` printed")
    report.add_argument(
        "--json", action="store_true", help="the SPEC JSON report as the server sent it, one line"
    )
    report.add_argument(
        "--runs",
        action="store_true",
        help="fold each run of consecutive illegal lines that fail alike (same reason, same "
        "detail) into one entry: its first line, its last and how many (the API's "
        "?lines=runs; with --json, the folded JSON). A report that names one failing line, as "
        "a game log's does, is the same either way",
    )
    report.add_argument(
        "--file",
        metavar="FILE",
        help="the submitted file, to quote each illegal line (checked against the upload's "
        "SHA-256; '-' for stdin)",
    )
    add_server_options(report, Role.READER)
    report.set_defaults(run=lambda args, environ: _run(Role.READER, _report, args, environ))


def _run(role: Role, action: Action, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    return run_with_client(
        role,
        lambda api: action(api, args),
        environ,
        args.url,
        args.token,
        err=sys.stderr,
        verbose=args.verbose,
    )


def _export(api: Client, args: argparse.Namespace) -> int:
    pages = api.pages(f"/v1/contests/{args.contest}/results", "results")
    # The first page is asked for before anything is written: an unknown contest (404) or a
    # refused token leaves no header on stdout and no file.
    first = next(pages, [])
    with _destination(args.output) as out:
        count = write_results(itertools.chain([first], pages), args.format, out)
    where = args.output or "stdout"
    sys.stderr.write(f"tilejudge: exported {count} submissions of {args.contest} to {where}\n")
    return 0


def write_results(pages: Iterator[list[dict[str, Any]]], form: str, out: TextIO) -> int:
    """Each page's rows to `out` as they come, in `form` (csv or jsonl); how many rows."""
    count = 0
    writer = csv.DictWriter(out, COLUMNS, extrasaction="ignore", lineterminator="\n")
    if form == "csv":
        writer.writeheader()
    for page in pages:
        for row in page:
            if form == "csv":
                writer.writerow(row)
            else:
                out.write(json.dumps({key: row.get(key) for key in COLUMNS}) + "\n")
            count += 1
    return count


@contextmanager
def _destination(path: str | None) -> Iterator[TextIO]:
    """stdout, or FILE written beside itself and moved into place once complete: an export cut
    short leaves no half file under the name."""
    if path is None:
        yield sys.stdout
        return
    target = Path(path)
    partial = target.with_name(target.name + ".part")
    try:
        with partial.open("w", newline="", encoding="utf-8") as out:
            yield out
        os.replace(partial, target)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from exc
    finally:
        partial.unlink(missing_ok=True)


def _report(api: Client, args: argparse.Namespace) -> int:
    data = read_input(args.file) if args.file else None
    path = f"/v1/submissions/{args.submission_id}"
    contest = None
    if data is not None:
        receipt = api.call("GET", f"{path}/receipt")
        if hashlib.sha256(data).hexdigest() != receipt["sha256"]:
            raise CliError(f"{args.file} is not what submission {args.submission_id} uploaded")
        contest = receipt["contest"]
    folded = {"lines": "runs"} if args.runs else None
    answer = _made_report(api, f"{path}/report", folded)
    if args.json:
        sys.stdout.buffer.write(answer.body.rstrip(b"\n") + b"\n")
        return 0
    # The report is printed as its contest's game prints one.
    if contest is None:
        contest = api.call("GET", path)["contest"]
    side = cli_game(game_of(api, str(contest)))
    side.print_report(args.submission_id, data, answer.json(), sys.stdout)
    return 0


REPORT_WAIT_S = 120.0  # the longest `tilejudge report` waits for a worker to make a report


def _made_report(api: Client, path: str, params: Mapping[str, str] | None) -> Answer:
    """The report's answer. A heavy upload's report is made by a worker when first asked for
    (202 with Retry-After): asked again after that wait, for up to REPORT_WAIT_S in all; a
    read over the per-minute limit meanwhile (429) waits as its Retry-After says too."""
    from infra.api_client import retry_seconds  # (httpx only once a command calls the API)

    waited = 0.0
    while True:
        answer = api.request("GET", path, params=params, accept=(429,) if waited else ())
        if answer.status not in (202, 429):
            return answer
        wait = retry_seconds(answer.headers.get("retry-after")) or 2.0
        if waited + wait > REPORT_WAIT_S:
            raise CliError(f"the report is still being made after {waited:.0f} s: ask again later")
        if not waited:
            print("the report is being made by a worker; waiting for it", file=sys.stderr)
        time.sleep(wait)
        waited += wait
