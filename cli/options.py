"""What the commands that talk to a server share: the --url and token options and the one way
they resolve (the option, then the environment, then what a running local stack recorded, then
the default), running a command with a client, reading a FILE argument, and printing a failure
as one line."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
    f"$TILEJUDGE_HOME/{STACK_URL_FILE}, then {DEFAULT_URL})"
)


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


@dataclass(frozen=True)
class Target:
    url: str
    token: str | None


def resolve(
    settings: ClientSettings,
    role: Role,
    *,
    url: str | None = None,
    token: str | None = None,
    flag: str = "--token",
    err: TextIO | None = None,
) -> Target:
    """The server and the token to call it with.

    The server: `url`, else $TILEJUDGE_URL, else the URL a running `tilejudge up` recorded
    under $TILEJUDGE_HOME, else the local API; when it is not `url` or the default, `err`
    (stderr) is told which and why. The token for `role`: a team's is `token`, else
    $TILEJUDGE_TOKEN; an organiser's is `token`, else $TILEJUDGE_ADMIN_TOKEN, else the one `up`
    wrote to $TILEJUDGE_HOME/admin-token; a reader's is either. SettingsError, naming the
    option (`flag`) and the variables, when there is none."""
    server = _server(settings, url, err or sys.stderr)
    if role is Role.PUBLIC:
        return Target(server, None)
    if role is Role.TEAM:
        team = token or settings.team_token
        if not team:
            raise SettingsError(f"no team token: pass {flag} or set TILEJUDGE_TOKEN")
        return Target(server, team)
    if role is Role.READER:
        token = token or settings.team_token
    admin = token or settings.admin_token or _home_admin_token(settings.home)
    if not admin:
        team_too = " or TILEJUDGE_TOKEN" if role is Role.READER else ""
        raise SettingsError(
            f"no {'token' if team_too else 'admin token'}: pass {flag}, set "
            f"TILEJUDGE_ADMIN_TOKEN{team_too}, or run beside TILEJUDGE_HOME"
        )
    return Target(server, admin)


def _server(settings: ClientSettings, url: str | None, err: TextIO) -> str:
    if url:
        return url.rstrip("/")
    if settings.url:
        found, why = settings.url, "from TILEJUDGE_URL"
    else:
        recorded = stack_url(settings.home)
        if recorded is None:
            return DEFAULT_URL
        found, why = recorded, f"recorded by the stack in {_shown(settings.home)}"
    err.write(f"tilejudge: using {found} ({why})\n")
    err.flush()
    return found


def stack_url(home: Path) -> str | None:
    """The API's URL that `tilejudge up` recorded under `home`, if that stack still runs;
    SettingsError naming the file if what it holds is not a URL."""
    if not _stack_runs(home / STACK_LOCK_FILE):
        return None
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


def add_server_options(parser: argparse.ArgumentParser, role: Role, **options: Any) -> None:
    """--url, and --token for a command that needs one (`options`: more for both, such as
    `default=argparse.SUPPRESS` on a subcommand whose parent has them too)."""
    parser.add_argument("--url", help=URL_HELP, **options)
    if role is not Role.PUBLIC:
        parser.add_argument("--token", help=TOKEN_HELP[role], **options)


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
) -> int:
    """Run `action` with a client of the server, holding the token `role` needs; a failure
    (no token, a refusal, no answer) is one line on `err`, exit status 2."""
    from infra import api_client
    from infra.api_client import DEFAULT_TIMEOUT_S, ApiError

    try:
        target = resolve(ClientSettings.from_env(environ), role, url=url, token=token, err=err)
        with api_client.connect(
            target.url, target.token, timeout=timeout or DEFAULT_TIMEOUT_S, transport=transport
        ) as api:
            return action(api)
    except (SettingsError, ApiError, CliError) as exc:
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
