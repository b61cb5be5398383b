"""What the commands that talk to a server share: the --url and token options and the one way
they resolve (the option, then the environment, then the default), reading a FILE argument, and
printing a failure as one line."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TextIO

from infra.settings import DEFAULT_URL, ClientSettings, SettingsError

EXIT_OK, EXIT_NOT_JUDGED, EXIT_ERROR = 0, 1, 2
URL_HELP = f"API URL (default: $TILEJUDGE_URL, then {DEFAULT_URL})"
TOKEN_HELP = {
    "team": "the team's token (default: $TILEJUDGE_TOKEN)",
    "admin": "admin token (default: $TILEJUDGE_ADMIN_TOKEN, then $TILEJUDGE_HOME/admin-token)",
}


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


class Role(StrEnum):
    """Who a command calls the API as, and so which token it needs."""

    PUBLIC = "public"
    TEAM = "team"
    ADMIN = "admin"


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
) -> Target:
    """The server: `url`, else $TILEJUDGE_URL, else the local API. The token for `role`: a
    team's is `token`, else $TILEJUDGE_TOKEN; an organiser's is `token`, else
    $TILEJUDGE_ADMIN_TOKEN, else the one `up` wrote to $TILEJUDGE_HOME/admin-token.
    SettingsError, naming the option (`flag`) and the variables, when there is none."""
    server = (url or settings.url).rstrip("/")
    if role is Role.PUBLIC:
        return Target(server, None)
    if role is Role.TEAM:
        team = token or settings.team_token
        if not team:
            raise SettingsError(f"no team token: pass {flag} or set TILEJUDGE_TOKEN")
        return Target(server, team)
    admin = token or settings.admin_token or _home_admin_token(settings.home)
    if not admin:
        raise SettingsError(
            f"no admin token: pass {flag}, set TILEJUDGE_ADMIN_TOKEN, or run beside TILEJUDGE_HOME"
        )
    return Target(server, admin)


def _home_admin_token(home: Path) -> str | None:
    path = home / "admin-token"
    return path.read_text().strip() if path.is_file() else None


def add_server_options(parser: argparse.ArgumentParser, role: Role) -> None:
    """--url, and --token for a command that needs one."""
    parser.add_argument("--url", help=URL_HELP)
    if role is not Role.PUBLIC:
        parser.add_argument("--token", help=TOKEN_HELP[role])


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
