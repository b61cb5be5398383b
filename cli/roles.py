"""The stack's parts as commands of their own, to run on as many hosts as needed: `api`,
`worker`, `sweeper` and `migrate`, each set up from the environment alone (the same variables
on every host). `tilejudge up` runs the same parts on one machine. A role whose settings cannot
work across hosts refuses to start, one line on stderr for each reason, exit status 2."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

from cli.options import EXIT_ERROR, EXIT_OK, CliError, command
from devstack.children import QUEUES, api_argv, worker_argv
from infra import topology
from infra.settings import Settings

_COMMON_ENV = """\
  TILEJUDGE_DATABASE_URL  the shared database (PostgreSQL across hosts)
  REDIS_URL               the broker"""
_S3_ENV = """
  TILEJUDGE_S3_ENDPOINT   the blob store (and TILEJUDGE_S3_BUCKET, _ACCESS_KEY, _SECRET_KEY)"""
_SWEEPER_ENV = """
  TILEJUDGE_SWEEPER_LOCK_TTL  seconds after its holder dies before another sweeper takes
                          over (default: 10)"""
API_ENV = f"""environment:
  TILEJUDGE_API_HOST      the address to listen on (default: 127.0.0.1, this host alone;
                          0.0.0.0 serves other hosts)
  TILEJUDGE_API_PORT      the port (default: 8000)
  TILEJUDGE_API_WORKERS   API processes (default: 2)
  TILEJUDGE_ADMIN_TOKEN   the organiser's token (required)
  TILEJUDGE_RECEIPT_KEY   the key receipts are signed with (required when the parts run on
                          several hosts)
{_COMMON_ENV}{_S3_ENV}
  TILEJUDGE_SWEEPER       elected (default: each API process runs a sweeper, one sweeps at a
                          time) or off (a `tilejudge sweeper` runs instead){_SWEEPER_ENV}
"""
WORKER_ENV = f"""environment:
{_COMMON_ENV}{_S3_ENV}
  TILEJUDGE_WORKERS, TILEJUDGE_STANDBY_WORKERS  bulk and standby pool processes
  TILEJUDGE_HOME          this host's own files: the word-list cache and the bulk slots
"""
SWEEPER_ENV = f"""environment:
{_COMMON_ENV}{_SWEEPER_ENV}
"""
MIGRATE_ENV = """environment:
  TILEJUDGE_DATABASE_URL  the database to bring to the newest schema
"""


def add_commands(commands: Any) -> None:
    """`api`, `worker`, `sweeper` and `migrate`."""
    raw = argparse.RawDescriptionHelpFormatter
    api = command(
        commands, "api", "serve the HTTP API (uvicorn) in the foreground", epilog=API_ENV,
        formatter_class=raw,
    )  # fmt: skip
    api.set_defaults(run=_api)

    worker = command(
        commands, "worker", "judge as a Celery worker in the foreground", epilog=WORKER_ENV,
        formatter_class=raw,
    )  # fmt: skip
    worker.add_argument(
        "--queues",
        default=",".join(QUEUES),
        help=f"the queues to take work from, comma-separated (default: {','.join(QUEUES)})",
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        help="pool processes (default: TILEJUDGE_WORKERS + TILEJUDGE_STANDBY_WORKERS)",
    )
    worker.set_defaults(run=_worker)

    sweeper = command(
        commands,
        "sweeper",
        "republish stuck submissions until Ctrl-C, while elected: one sweeps at a time",
        epilog=SWEEPER_ENV,
        formatter_class=raw,
    )
    sweeper.set_defaults(run=_sweeper)

    migrate = command(
        commands,
        "migrate",
        "bring the database to the newest schema; safe from several hosts at once",
        epilog=MIGRATE_ENV,
        formatter_class=raw,
    )
    migrate.set_defaults(run=_migrate)


def checked(role: topology.Role, environ: Mapping[str, str]) -> Settings | None:
    """The settings, or None once every reason `role` cannot start with them is printed."""
    settings = Settings.from_env(environ)
    problems = topology.problems(settings, role)
    for problem in problems:
        print(f"tilejudge {role}: {problem}", file=sys.stderr)
    return None if problems else settings


def _api(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = checked(topology.Role.API, environ)
    if settings is None:
        return EXIT_ERROR
    processes = settings.api_workers
    print(
        f"tilejudge api: serving on {settings.api_host} port {settings.api_port}, "
        f"{processes} process{'es' if processes > 1 else ''}",
        file=sys.stderr,
        flush=True,
    )
    _replace_process(
        api_argv(settings.api_port, settings.api_workers, host=settings.api_host), environ
    )


def _worker(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = checked(topology.Role.WORKER, environ)
    if settings is None:
        return EXIT_ERROR
    queues = [name.strip() for name in args.queues.split(",")]
    unknown = [name for name in queues if name not in QUEUES]
    if unknown or len(set(queues)) != len(queues):
        raise CliError(
            f"--queues takes {' and/or '.join(QUEUES)}, each once, comma-separated; "
            f"not {args.queues!r}"
        )
    concurrency = args.concurrency
    if concurrency is None:
        concurrency = settings.workers + settings.standby_workers
    if not 1 <= concurrency <= 256:
        raise CliError(f"--concurrency must be between 1 and 256, not {concurrency}")
    _replace_process(worker_argv(concurrency, queues), environ)


def _replace_process(argv: list[str], environ: Mapping[str, str]) -> NoReturn:
    """Become `argv`: the server gets the signals sent to this process, and its exit status is
    the command's."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, dict(environ))


def _sweeper(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = checked(topology.Role.SWEEPER, environ)
    if settings is None:
        return EXIT_ERROR
    from infra import compose
    from infra.logging import configure_logging

    configure_logging()
    thread = compose.lone_sweeper(settings)

    def stop(signum: int, frame: object) -> None:
        thread.stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        thread.start()
        # Returns once a signal stopped the thread, which lets the lock go as it ends.
        thread.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK


def _migrate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = checked(topology.Role.MIGRATE, environ)
    if settings is None:
        return EXIT_ERROR
    from sqlalchemy.exc import SQLAlchemyError

    from infra import compose

    try:
        done = compose.migrate(settings.resolved_database_url())
    except SQLAlchemyError as exc:
        # The driver's first line: SQLAlchemy's message adds the statement and a link.
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise CliError(f"the database could not be upgraded: {cause}") from exc
    change = "upgraded" if done.before != done.after else "already at the newest revision"
    print(f"revision {done.before or 'none'} -> {done.after or 'none'} ({change})")
    return EXIT_OK
