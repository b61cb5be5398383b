"""Contestant client for the HTTP API: `tilejudge submit` and `tilejudge leaderboard`.

Errors from the server are printed as it sent them (`{"error", "detail"}`) and exit with 2.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
# Generous read timeout: an upload of the 2 MiB limit over a slow link still fits.
TIMEOUT = httpx.Timeout(30.0, connect=5.0)
FINAL_STATES = frozenset({"judged", "failed"})
EXIT_OK, EXIT_NOT_JUDGED, EXIT_ERROR = 0, 1, 2


# An upload is sent again after these (and after no answer at all): the server answers the
# same bytes from the same team with the same submission, even past the deadline when the first
# copy came in time, so sending again never makes a second one.
RETRYABLE_STATUS = frozenset({429, 502, 503, 504})
SUBMIT_ATTEMPTS = 5
FIRST_PAUSE_S, LONGEST_PAUSE_S = 0.5, 10.0


class ClientError(Exception):
    """Something the user can fix (bad token, closed contest, server unreachable, ...)."""

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable  # no answer, or one that says to try again later
        self.retry_after = retry_after


@dataclass(frozen=True)
class Poll:
    """How `--wait` polls (and a retried upload pauses); the clock and sleep are parameters so
    tests need not wait."""

    interval: float = 0.5
    timeout: float = 120.0
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.monotonic)


def describe_error(response: httpx.Response) -> str:
    """The server's `{"error", "detail"}` as one line, or its raw text if it sent no JSON."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        text = f"{body['error']}: {body.get('detail', '')}".rstrip(": ")
    else:
        text = response.text.strip()[:300] or response.reason_phrase
    retry_after = response.headers.get("Retry-After")
    suffix = f" (retry after {retry_after} s)" if retry_after else ""
    return f"HTTP {response.status_code} {text}{suffix}"


def open_client(url: str, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=TIMEOUT, transport=transport)


class Api:
    """The few calls a contestant makes, each returning the decoded JSON body."""

    def __init__(self, http: httpx.Client) -> None:
        self._http = http

    def submit(self, contest: str, token: str, data: bytes) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}
        url = f"/v1/contests/{contest}/submissions"
        return self._json(lambda: self._http.post(url, content=data, headers=headers))

    def submission(self, submission_id: str, token: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        url = f"/v1/submissions/{submission_id}"
        return self._json(lambda: self._http.get(url, headers=headers))

    def leaderboard(self, contest: str) -> dict[str, Any]:
        return self._json(lambda: self._http.get(f"/v1/contests/{contest}/leaderboard"))

    def delete_team(self, team_id: str, admin_token: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {admin_token}"}
        return self._json(lambda: self._http.delete(f"/v1/teams/{team_id}", headers=headers))

    def _json(self, call: Callable[[], httpx.Response]) -> dict[str, Any]:
        try:
            response = call()
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise ClientError(
                f"cannot reach {self._http.base_url}: {reason}", retryable=True
            ) from exc
        if response.is_error:
            raise ClientError(
                describe_error(response),
                retryable=response.status_code in RETRYABLE_STATUS,
                retry_after=_seconds(response.headers.get("Retry-After")),
            )
        try:
            body = response.json()
        except ValueError:
            raise ClientError(f"HTTP {response.status_code}: the answer is not JSON") from None
        if not isinstance(body, dict):
            raise ClientError(f"HTTP {response.status_code}: expected a JSON object")
        return body


def submit_retrying(
    api: Api, contest: str, token: str, data: bytes, poll: Poll, err: TextIO, attempts: int
) -> dict[str, Any]:
    """Upload, and again after no answer or a 429/502/503/504, pausing 0.5, 1, 2, 4 s (or as
    long as Retry-After says, at most 10 s) between attempts; each retry is said on `err`."""
    attempt = 1
    while True:
        try:
            return api.submit(contest, token, data)
        except ClientError as exc:
            if not exc.retryable or attempt >= attempts:
                raise
            pause = (
                FIRST_PAUSE_S * 2 ** (attempt - 1) if exc.retry_after is None else exc.retry_after
            )
            pause = min(pause, LONGEST_PAUSE_S)
            attempt += 1
            err.write(f"tilejudge: {exc}; sending again in {pause:g} s ({attempt} of {attempts})\n")
            err.flush()
            poll.sleep(pause)


def _seconds(header: str | None) -> float | None:
    return float(header) if header is not None and header.strip().isdigit() else None


def wait_for_result(api: Api, submission_id: str, token: str, poll: Poll) -> dict[str, Any]:
    """The submission once judged or failed; the last state seen if `poll.timeout` runs out."""
    deadline = poll.clock() + poll.timeout
    while True:
        status = api.submission(submission_id, token)
        if status.get("state") in FINAL_STATES or poll.clock() >= deadline:
            return status
        poll.sleep(poll.interval)


def resolve_url(given: str | None, environ: Mapping[str, str]) -> str:
    return (given or environ.get("TILEJUDGE_URL") or DEFAULT_URL).rstrip("/")


def run_submit(
    data: bytes,
    contest: str,
    token: str | None,
    url: str | None,
    wait: bool,
    *,
    environ: Mapping[str, str] = os.environ,
    out: TextIO | None = None,
    err: TextIO | None = None,
    poll: Poll = Poll(),
    transport: httpx.BaseTransport | None = None,
    attempts: int = SUBMIT_ATTEMPTS,
) -> int:
    """`tilejudge submit`: upload (again, after no answer or a busy server), print the receipt,
    and with `wait` the result."""
    out, err = out or sys.stdout, err or sys.stderr  # looked up late, so redirection works
    token = token or environ.get("TILEJUDGE_TOKEN")
    if not token:
        return _fail(err, "no team token: pass --token or set TILEJUDGE_TOKEN")
    with open_client(resolve_url(url, environ), transport) as http:
        api = Api(http)
        try:
            receipt = submit_retrying(api, contest, token, data, poll, err, attempts)
            out.write(format_receipt(receipt))
            out.flush()  # the receipt is proof of upload: show it even if waiting is cut short
            if not wait:
                return EXIT_OK
            status = wait_for_result(api, str(receipt["id"]), token, poll)
        except ClientError as exc:
            return _fail(err, str(exc))
    out.write(format_result(status))
    if status.get("state") == "judged":
        return EXIT_OK
    if status.get("state") not in FINAL_STATES:
        err.write(f"tilejudge: no result within {poll.timeout:.0f} s; it is still being judged\n")
    return EXIT_NOT_JUDGED


def run_leaderboard(
    contest: str,
    url: str | None,
    *,
    environ: Mapping[str, str] = os.environ,
    out: TextIO | None = None,
    err: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
) -> int:
    """`tilejudge leaderboard`: print the contest's ranking as a table."""
    out, err = out or sys.stdout, err or sys.stderr
    with open_client(resolve_url(url, environ), transport) as http:
        try:
            board = Api(http).leaderboard(contest)
        except ClientError as exc:
            return _fail(err, str(exc))
    out.write(format_leaderboard(board, contest))
    return EXIT_OK


def run_team_delete(
    team_id: str,
    url: str | None,
    admin_token: str | None,
    *,
    environ: Mapping[str, str] = os.environ,
    out: TextIO | None = None,
    err: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
) -> int:
    """`tilejudge team delete`: remove a team, its uploads, results and reports."""
    out, err = out or sys.stdout, err or sys.stderr
    token = admin_token or environ.get("TILEJUDGE_ADMIN_TOKEN") or _home_admin_token(environ)
    if not token:
        return _fail(
            err,
            "no admin token: pass --token, set TILEJUDGE_ADMIN_TOKEN, or run beside TILEJUDGE_HOME",
        )
    with open_client(resolve_url(url, environ), transport) as http:
        try:
            done = Api(http).delete_team(team_id, token)
        except ClientError as exc:
            return _fail(err, str(exc))
    out.write(f"deleted team {done.get('team')} and {done.get('deleted_objects')} stored objects\n")
    return EXIT_OK


def _home_admin_token(environ: Mapping[str, str]) -> str | None:
    path = Path(environ.get("TILEJUDGE_HOME", "./.tilejudge")) / "admin-token"
    return path.read_text().strip() if path.is_file() else None


def _fail(err: TextIO, message: str) -> int:
    err.write(f"tilejudge: {message}\n")
    return EXIT_ERROR


def _rows(pairs: list[tuple[str, object]]) -> str:
    return "".join(f"{name:<12}{value}\n" for name, value in pairs)


def format_receipt(receipt: Mapping[str, Any]) -> str:
    keys = ("id", "sha256", "received_at", "receipt")
    return _rows([(key, receipt.get(key, "?")) for key in keys])


def format_result(status: Mapping[str, Any]) -> str:
    keys = ["state", "score", "legal", "illegal", "judged_at"]
    # The contract does not name a failure field; show one if the server sends it.
    keys += [key for key in ("failure", "reason") if status.get(key)]
    return _rows([(key, status.get(key, "-")) for key in keys])


def format_leaderboard(board: Mapping[str, Any], contest: str) -> str:
    entries = board.get("entries") or []
    if not entries:
        return f"no judged submissions in contest {board.get('contest', contest)} yet\n"
    header = ("rank", "team", "score", "received_at")
    rows = [header, *[tuple(str(entry.get(key, "")) for key in header) for entry in entries]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        # Numbers right-aligned so scores line up by magnitude; names and times left-aligned.
        f"{rank:>{widths[0]}}  {team:<{widths[1]}}  {score:>{widths[2]}}  {received}"
        for rank, team, score, received in rows
    ]
    return "\n".join(lines) + "\n"
