"""Contestant commands over the HTTP API: `tilejudge submit` and `tilejudge leaderboard`.

Errors from the server are printed as it sent them (`{"error", "detail"}`) and exit with 2.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import httpx

from cli.games import cli_game
from cli.options import (
    EXIT_NOT_JUDGED,
    EXIT_OK,
    WAIT_TIMEOUT_S,
    Role,
    fail,
    fail_call,
    resolve,
)
from core.states import SubmissionState
from infra import api_client
from infra.api_client import ApiError, Client, Retry
from infra.settings import ClientSettings, SettingsError

FINAL_STATES = frozenset({SubmissionState.JUDGED, SubmissionState.FAILED})
SUBMIT_ATTEMPTS = Retry().attempts


@dataclass(frozen=True)
class Poll:
    """How `--wait` polls (and a retried upload pauses); the clock and sleep are parameters so
    tests need not wait."""

    interval: float = 0.5
    timeout: float = WAIT_TIMEOUT_S
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.monotonic)


def run_submit(
    data: bytes,
    contest: str,
    token: str | None,
    url: str | None,
    wait: bool,
    *,
    environ: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    poll: Poll = Poll(),
    transport: httpx.BaseTransport | None = None,
    attempts: int = SUBMIT_ATTEMPTS,
    verbose: bool = False,
) -> int:
    """`tilejudge submit`: upload (again, after no answer or a busy server), print the receipt,
    and with `wait` the result."""
    out, err = out or sys.stdout, err or sys.stderr  # looked up late, so redirection works
    settings = ClientSettings.from_env(environ)
    try:
        target = resolve(settings, Role.TEAM, url=url, token=token, err=err, verbose=verbose)
    except SettingsError as exc:
        return fail(err, str(exc))
    retry = Retry(attempts=attempts, sleep=poll.sleep, clock=poll.clock)
    with api_client.connect(target.url, target.token, transport=transport) as api:
        try:
            receipt = submit_retrying(api, contest, data, retry, err)
            out.write(format_receipt(receipt))
            out.flush()  # the receipt is proof of upload: show it even if waiting is cut short
            if receipt.get("hint"):  # accepted, but most likely not what was meant
                err.write(f"tilejudge: note: {receipt['hint']}\n")
                err.flush()
            if not wait:
                return EXIT_OK
            status = wait_for_result(api, str(receipt["id"]), poll)
        except ApiError as exc:
            return fail_call(err, exc, target)
    out.write(format_result(status))
    if status.get("state") == SubmissionState.JUDGED:
        return EXIT_OK
    if status.get("state") not in FINAL_STATES:
        err.write(f"tilejudge: no result within {poll.timeout:.0f} s; it is still being judged\n")
    return EXIT_NOT_JUDGED


def submit_retrying(
    api: Client, contest: str, data: bytes, retry: Retry, err: TextIO
) -> dict[str, Any]:
    """The receipt of an upload sent by the retry policy; each retry is said on `err`."""

    def announce(exc: ApiError, pause: float, attempt: int) -> None:
        err.write(
            f"tilejudge: {exc}; sending again in {pause:g} s ({attempt} of {retry.attempts})\n"
        )
        err.flush()

    return retry.run(lambda: api.submit(contest, data).json(), announce=announce)


def wait_for_result(api: Client, submission_id: str, poll: Poll) -> dict[str, Any]:
    """The submission once judged or failed; the last state seen if `poll.timeout` runs out."""
    deadline = poll.clock() + poll.timeout
    while True:
        status = api.call("GET", f"/v1/submissions/{submission_id}")
        if status.get("state") in FINAL_STATES or poll.clock() >= deadline:
            return status
        poll.sleep(poll.interval)


def run_leaderboard(
    contest: str,
    url: str | None,
    *,
    environ: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
    verbose: bool = False,
    as_json: bool = False,
) -> int:
    """`tilejudge leaderboard`: print the contest's ranking as a table, or (`as_json`) the
    whole board as the API gives it, its pages joined."""
    out, err = out or sys.stdout, err or sys.stderr
    settings = ClientSettings.from_env(environ)
    try:
        target = resolve(settings, Role.PUBLIC, url=url, err=err, verbose=verbose)
    except SettingsError as exc:
        return fail(err, str(exc))
    with api_client.connect(target.url, transport=transport) as api:
        try:
            board = whole_board(api, contest)
        except ApiError as exc:
            return fail_call(err, exc, target)
    if as_json:
        out.write(json.dumps(board, indent=1) + "\n")
    else:
        out.write(format_leaderboard(board, contest))
    return EXIT_OK


BOARD_PAGE = 1000  # the most entries the server gives a page
BOARD_PAGES_MOST = 1000  # pages followed at most: a million entries


def whole_board(api: Client, contest: str) -> dict[str, Any]:
    """The contest's whole leaderboard: its pages followed through `next`."""
    path = f"/v1/contests/{contest}/leaderboard?limit={BOARD_PAGE}"
    return join_pages(lambda page: api.call("GET", page), path)


def join_pages(get: Callable[[str], Mapping[str, Any]], path: str) -> dict[str, Any]:
    """A paged answer whole: `get` of `path`, then of each page's `next`, every list (entries,
    players, invalid logs) joined in order; at most BOARD_PAGES_MOST pages."""
    board: dict[str, Any] = {}
    following: str | None = path
    for _ in range(BOARD_PAGES_MOST):
        if following is None:
            break
        page = get(following)
        for key, value in page.items():
            if isinstance(value, list) and isinstance(board.get(key), list):
                board[key].extend(value)
            else:
                board.setdefault(key, value)
        following = page.get("next")
    board["next"] = None
    return board


def _rows(pairs: list[tuple[str, object]]) -> str:
    width = max([12, *(len(name) + 1 for name, _ in pairs)])
    return "".join(f"{name:<{width}}{value}\n" for name, value in pairs)


def format_receipt(receipt: Mapping[str, Any]) -> str:
    keys = ("id", "sha256", "received_at", "receipt")
    return _rows([(key, receipt.get(key, "?")) for key in keys])


def format_result(status: Mapping[str, Any]) -> str:
    """A submission's state and, once judged, its result in its game's own fields."""
    result = status.get("result") or {}
    pairs: list[tuple[str, object]] = [("state", status.get("state", "-"))]
    pairs += [(key, _shown(value)) for key, value in result.items()]
    pairs.append(("judged_at", _shown(status.get("judged_at"))))
    # The contract does not name a failure field; show one if the server sends it.
    pairs += [(key, status[key]) for key in ("failure", "reason") if status.get(key)]
    return _rows(pairs)


def _shown(value: object) -> str:
    """A result field as people read it: no Python None, lists and objects spelt out."""
    if value is None or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value)
    if isinstance(value, dict):
        return "; ".join(f"{key} {_shown(item)}" for key, item in value.items())
    return str(value)


def format_leaderboard(board: Mapping[str, Any], contest: str) -> str:
    """The leaderboard as its contest's game prints one (by the `game` the server names), and
    whether it is frozen."""
    shown = cli_game(str(board.get("game", ""))).format_standings(board, contest)
    if board.get("frozen"):
        shown += (
            f"frozen: {board.get('pending', 0)} uploads received since the freeze are pending "
            "until the organiser thaws the standings\n"
        )
    return shown
