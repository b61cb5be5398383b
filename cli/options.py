"""What the commands that talk to a server share: the --url, token and --verbose options and
the one way they resolve (the option, then the environment, then what a running local stack
recorded, then the default), running a command with a client, reading a FILE argument, and
printing a failure as one line (with a hint where the server could not be reached)."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from infra.settings import DEFAULT_URL, ClientSettings, SettingsError

if TYPE_CHECKING:  # the client is imported when a command runs: `tilejudge judge` needs no httpx
    import httpx

    from infra.api_client import Client

EXIT_OK, EXIT_NOT_JUDGED, EXIT_ERROR = 0, 1, 2
# What a command that talks to the server does with its client and its parsed options.
Action = Callable[["Client", argparse.Namespace], int]
# Written by `tilejudge up` under $TILEJUDGE_HOME: the API's URL, and the lock it holds while
# the stack runs (the URL is only believed while it does).
STACK_URL_FILE, STACK_LOCK_FILE, ADMIN_TOKEN_FILE = "api-url", "up.lock", "admin-token"
# How long `submit --wait` waits for a result before it gives up.
WAIT_TIMEOUT_S = 120.0
URL_HELP = (
    "the API's URL (default: $TILEJUDGE_URL, then the URL a running `tilejudge up` recorded in "
    f"$TILEJUDGE_HOME/{STACK_URL_FILE}, then {DEFAULT_URL} where no `tilejudge up` ever ran; "
    "a stopped local stack is an error, not a reason to use the default)"
)
VERBOSE_HELP = (
    "say on stderr which server is used and where its URL came from (said anyway when the "
    "server cannot be reached)"
)
# What a transport error is named when no connection was made: nothing answered at the URL.
NOT_REACHED = frozenset({"ConnectError", "ConnectTimeout"})
STARTERS = "`make run` (or `tilejudge up`)"  # what starts the local stack


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


class Role(StrEnum):
    """Who a command calls the API as, and so which token it needs."""

    PUBLIC = "public"
    TEAM = "team"
    ADMIN = "admin"
    READER = "reader"  # a team (its own submissions) or the organiser (any)


_ADMIN_SOURCES = (
    f"$TILEJUDGE_ADMIN_TOKEN, then the file $TILEJUDGE_HOME/{ADMIN_TOKEN_FILE} "
    "that `tilejudge up` writes"
)
TOKEN_HELP = {
    Role.TEAM: "the team's token (default: $TILEJUDGE_TOKEN)",
    Role.ADMIN: f"the admin token (default: {_ADMIN_SOURCES})",
    Role.READER: "a team's token, to read its own submissions, or the admin token, to read any "
    f"(default: $TILEJUDGE_TOKEN, then {_ADMIN_SOURCES})",
}


class UrlSource(StrEnum):
    """Where the server's URL came from."""

    OPTION = "option"
    ENVIRONMENT = "environment"
    STACK = "stack"
    DEFAULT = "default"


@dataclass(frozen=True)
class Target:
    url: str
    token: str | None
    source: UrlSource = UrlSource.OPTION
    home: Path | None = None  # $TILEJUDGE_HOME, as a person typed it (for STACK and DEFAULT)

    @property
    def origin(self) -> str:
        """Where the URL came from, as the end of a sentence about it."""
        if self.source is UrlSource.OPTION:
            return "from --url"
        if self.source is UrlSource.ENVIRONMENT:
            return "from TILEJUDGE_URL"
        if self.source is UrlSource.STACK:
            return f"recorded by the stack in {self.home}"
        return f"the default: no running stack recorded a URL in {self.home}"

    def unreachable_hint(self) -> str:
        """What to do when nothing answers at the URL, given where it came from."""
        if self.source is UrlSource.DEFAULT:
            return (
                f"{self.url} is {self.origin}. Start the stack with {STARTERS}; if it runs "
                "elsewhere, export TILEJUDGE_HOME=<its data directory> or pass --url URL"
            )
        if self.source is UrlSource.STACK:
            return (
                f"{self.url} was {self.origin}, whose `tilejudge up` still runs: it may be "
                "starting or stopping; wait for its banner, or pass --url URL"
            )
        instead = "leave --url out"
        if self.source is UrlSource.ENVIRONMENT:
            instead = "unset TILEJUDGE_URL"
        return (
            f"{self.url} is {self.origin}: start the stack there, or {instead} to use the local "
            f"one, which {STARTERS} starts"
        )


def resolve(
    settings: ClientSettings,
    role: Role,
    *,
    url: str | None = None,
    token: str | None = None,
    flag: str = "--token",
    err: TextIO | None = None,
    verbose: bool = False,
) -> Target:
    """The server and the token to call it with.

    The server: `url`, else $TILEJUDGE_URL, else the URL a running `tilejudge up` recorded
    under $TILEJUDGE_HOME, else the local API where no `up` ever ran there (SettingsError saying
    how to start it where one ran and stopped: another stack may answer on the default port);
    with `verbose`, `err` (stderr) is told which and why. The token for `role`: a team's is
    `token`, else $TILEJUDGE_TOKEN; an organiser's is `token`, else $TILEJUDGE_ADMIN_TOKEN,
    else the one `up` wrote to $TILEJUDGE_HOME/admin-token; a reader's is either. SettingsError, naming the option
    (`flag`) and the variables, when there is none."""
    server = _server(settings, url)
    if verbose:
        announce(server, err or sys.stderr)
    if role is Role.PUBLIC:
        return server
    if role is Role.TEAM:
        team = token or settings.team_token
        if not team:
            raise SettingsError(f"no team token: pass {flag} or set TILEJUDGE_TOKEN")
        return replace(server, token=team)
    if role is Role.READER:
        token = token or settings.team_token
    admin = token or settings.admin_token or _home_admin_token(settings.home)
    if not admin:
        team_too = " or TILEJUDGE_TOKEN" if role is Role.READER else ""
        raise SettingsError(
            f"no {'token' if team_too else 'admin token'}: pass {flag}, set "
            f"TILEJUDGE_ADMIN_TOKEN{team_too}, or run beside TILEJUDGE_HOME"
        )
    return replace(server, token=admin)


def _server(settings: ClientSettings, url: str | None) -> Target:
    if url:
        return Target(url.rstrip("/"), None)
    if settings.url:
        return Target(settings.url, None, UrlSource.ENVIRONMENT)
    home = _shown(settings.home)
    lock = settings.home / STACK_LOCK_FILE
    if _stack_runs(lock):
        recorded = _recorded_url(settings.home)
        if recorded is not None:
            return Target(recorded, None, UrlSource.STACK, home)
    elif lock.exists():
        # A stack ran here and stopped: whatever answers on the default port is another's.
        raise SettingsError(
            f"the local stack in {home} is not running: start it with {STARTERS}, or pass "
            "--url URL (or set TILEJUDGE_URL) to use another server"
        )
    return Target(DEFAULT_URL, None, UrlSource.DEFAULT, home)


def announce(target: Target, err: TextIO) -> None:
    """Say on `err` which server a command calls and where its URL came from."""
    err.write(f"tilejudge: using {target.url} ({target.origin})\n")
    err.flush()


def stack_url(home: Path) -> str | None:
    """The API's URL that `tilejudge up` recorded under `home`, if that stack still runs;
    SettingsError naming the file if what it holds is not a URL."""
    if not _stack_runs(home / STACK_LOCK_FILE):
        return None
    return _recorded_url(home)


def _recorded_url(home: Path) -> str | None:
    path = home / STACK_URL_FILE
    try:
        recorded = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from exc
    parts = urlsplit(recorded)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{path} must hold an http:// or https:// URL, not {recorded[:100]!r}")
    return recorded.rstrip("/")


def _stack_runs(lock: Path) -> bool:
    """Whether a `tilejudge up` holds its lock: a shared lock that cannot be had at once says
    so. Opened read-only, never created; whatever is taken is let go at once, so an `up`
    starting meanwhile still gets its lock."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file (no stack ever ran here), or not ours to read
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _shown(path: Path) -> Path:
    """`path` relative to the working directory when it is under it, as a person typed it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _home_admin_token(home: Path) -> str | None:
    path = home / ADMIN_TOKEN_FILE
    return path.read_text().strip() if path.is_file() else None


def command(actions: Any, name: str, summary: str, **options: Any) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary is both its line in the parent's list and the
    description its own --help starts with."""
    parser: argparse.ArgumentParser = actions.add_parser(
        name, help=summary, description=summary, **options
    )
    return parser


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """--url and -v/--verbose on the `tilejudge` command itself, so that they may come before
    the subcommand too (`tilejudge -v contest list`); a subcommand's own leave them as given
    there unless given again after it (`add_url_option`, `add_verbose_option`)."""
    parser.add_argument("--url", help=URL_HELP + "; also after the command")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help=VERBOSE_HELP + "; also after the command"
    )


def add_server_options(parser: argparse.ArgumentParser, role: Role, **options: Any) -> None:
    """--url, -v/--verbose, and --token for a command that needs one (`options`: more for all,
    such as `default=argparse.SUPPRESS` on a subcommand whose parent has them too)."""
    add_url_option(parser, **options)
    add_verbose_option(parser, **options)
    if role is not Role.PUBLIC:
        parser.add_argument("--token", help=TOKEN_HELP[role], **options)


# A subcommand's --url and -v set nothing when left out (SUPPRESS), so that the same option
# given before the subcommand (`add_global_options`) holds.
def add_url_option(parser: argparse.ArgumentParser, help: str = URL_HELP, **options: Any) -> None:
    parser.add_argument("--url", help=help, **{"default": argparse.SUPPRESS, **options})


def add_verbose_option(parser: argparse.ArgumentParser, **options: Any) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=VERBOSE_HELP,
        **{"default": argparse.SUPPRESS, **options},
    )


def run_with_client(
    role: Role,
    action: Callable[[Client], int],
    environ: Mapping[str, str],
    url: str | None,
    token: str | None,
    *,
    err: TextIO,
    timeout: float | None = None,
    transport: httpx.BaseTransport | None = None,
    verbose: bool = False,
) -> int:
    """Run `action` with a client of the server, holding the token `role` needs; a failure
    (no token, a refusal, no answer) is one line on `err`, exit status 2; where nothing
    answered, a second line says where the URL came from and what to do."""
    from infra import api_client
    from infra.api_client import DEFAULT_TIMEOUT_S, ApiError

    try:
        target = resolve(
            ClientSettings.from_env(environ), role, url=url, token=token, err=err, verbose=verbose
        )
    except SettingsError as exc:
        return fail(err, str(exc))
    try:
        with api_client.connect(
            target.url, target.token, timeout=timeout or DEFAULT_TIMEOUT_S, transport=transport
        ) as api:
            return action(api)
    except ApiError as exc:
        return fail_call(err, exc, target)
    except (SettingsError, CliError) as exc:
        return fail(err, str(exc))


def read_input(path: str) -> bytes:
    """A FILE argument's bytes ('-' for stdin); CliError naming it if it cannot be read."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc


def fail(err: TextIO, message: str) -> int:
    err.write(f"tilejudge: {message}\n")
    return EXIT_ERROR


def fail_call(err: TextIO, exc: Exception, target: Target) -> int:
    """`fail` for a call to `target` that failed with `exc` (an ApiError, or an error caused by
    one), and the hint of `unreachable_hint` when nothing answered there."""
    fail(err, str(exc))
    if not_reached(exc):
        err.write(f"tilejudge: {target.unreachable_hint()}\n")
    return EXIT_ERROR


def not_reached(exc: BaseException | None) -> bool:
    """Whether `exc`, or the error that caused it, is a call to which nothing answered."""
    from infra.api_client import ApiError

    while exc is not None:
        if isinstance(exc, ApiError) and exc.outcome in NOT_REACHED:
            return True
        exc = exc.__cause__
    return False
