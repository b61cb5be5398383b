"""`tilejudge load`: a bounded burst of generated uploads to a local stack, found as every
command finds its server, into a contest made for the run unless --contest names one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cli.options import (
    TOKEN_HELP,
    URL_HELP,
    CliError,
    Role,
    add_url_option,
    add_verbose_option,
    command,
    fail_call,
    resolve,
)
from infra import lexicon_files
from infra.settings import ClientSettings

# Each option's bounds: a run stops by itself, and a typo does not start a run of hours.
BOUNDS: dict[str, tuple[float, float]] = {
    "--uploads": (1, 100_000),
    "--concurrency": (1, 1_000),
    "--teams": (1, 10_000),
    "--timeout": (1, 3_600),
    "--moves": (1, 10_000),
    "--retries": (0, 20),
}


def add_command(commands: Any) -> None:
    load = command(
        commands,
        "load",
        "upload a bounded burst of generated submissions to a local stack and check them",
        epilog="It first says on stderr where the uploads go and which contest takes them. The "
        "run's teams and uploads stay on the server: in a contest of its own "
        "(load-DATE-TIME-XXXX, created for the run) unless --contest names one; the report's "
        "last lines say which and how to remove them.",
    )
    add_url_option(load, help=f"{URL_HELP}; 127.0.0.1, localhost or ::1 only")
    add_verbose_option(load)
    load.add_argument(
        "--contest",
        help="load this contest, created (open for a day) if missing; its standings then show "
        "the run's teams (default: a new contest for the run alone)",
    )
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


def _load(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    # Imported when the command runs: the rest of `tilejudge` needs no load generator.
    from devstack import load
    from devstack.plan import LoadError, Plan, check_loopback
    from infra.api_client import ApiError

    for flag, (low, high) in BOUNDS.items():
        value = getattr(args, flag.removeprefix("--"))
        if not low <= value <= high:
            raise CliError(f"{flag} must be between {low:g} and {high:g}, not {value}")
    settings = ClientSettings.from_env(environ)
    target = resolve(
        settings,
        Role.ADMIN,
        url=args.url,
        token=args.admin_token,
        flag="--admin-token",
        verbose=args.verbose,
    )
    assert target.token is not None  # resolve raises when there is none
    try:
        url = check_loopback(target.url)
    except LoadError as exc:
        raise CliError(f"{exc} (that URL is {target.origin})") from exc
    created = args.contest is None
    plan = Plan(
        url=url,
        contest=load.new_contest_id(datetime.now(UTC)) if created else args.contest,
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
    why = "new, for this run" if created else "from --contest"
    sys.stderr.write(
        f"tilejudge: load: {plan.uploads} uploads to {url}, contest {plan.contest} ({why})\n"
    )
    sys.stderr.flush()
    try:
        return load.run(plan, lexicon, created=created)
    except (LoadError, ApiError) as exc:
        return fail_call(sys.stderr, exc, target)
