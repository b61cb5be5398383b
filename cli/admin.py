"""Organiser commands over the HTTP API: word-list and layout versions, and rejudge runs.

The admin token comes from --token, else $TILEJUDGE_ADMIN_TOKEN, else $TILEJUDGE_HOME/admin-token.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from cli.client import DEFAULT_URL

POLL_SECONDS = 0.5


class AdminError(Exception):
    """An HTTP or usage error, printed as one line."""


def add_lexicon_actions(actions: Any) -> None:
    add = actions.add_parser("add", help="register a word list with the server")
    add.add_argument("file", metavar="FILE")
    add.add_argument("--name", required=True)
    _common(add, _lexicon_add)
    _common(actions.add_parser("list", help="word lists the server knows"), _lexicon_list)
    diff = actions.add_parser("diff", help="words added and removed from A to B (ids or names)")
    diff.add_argument("a")
    diff.add_argument("b")
    _common(diff, _lexicon_diff)


def add_commands(commands: Any) -> None:
    layout = commands.add_parser("layout", help="bonus layouts on the server")
    actions = layout.add_subparsers(required=True, metavar="ACTION")
    add = actions.add_parser("add", help="register a layout JSON file")
    add.add_argument("file", metavar="FILE")
    add.add_argument("--name", required=True)
    _common(add, _layout_add)
    _common(actions.add_parser("list", help="layouts the server knows"), _layout_list)
    diff = actions.add_parser("diff", help="squares and letters that differ from A to B")
    diff.add_argument("a")
    diff.add_argument("b")
    _common(diff, _layout_diff)

    rejudge = commands.add_parser(
        "rejudge",
        help="rejudge a contest under another word list or layout",
        description="tilejudge rejudge --contest C --lexicon L [--layout Y] [--affected] [--apply]"
        " | tilejudge rejudge show|apply|cancel ID",
    )
    rejudge.add_argument("action", nargs="?", choices=["show", "apply", "cancel"])
    rejudge.add_argument("run_id", nargs="?", metavar="ID")
    rejudge.add_argument("--contest")
    rejudge.add_argument("--lexicon", help="lexicon id or name")
    rejudge.add_argument("--layout", help="layout id or name (default: unchanged)")
    rejudge.add_argument("--affected", action="store_true", help="only what the fix can change")
    rejudge.add_argument("--apply", action="store_true", help="apply once ready")
    rejudge.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for ready")
    _common(rejudge, _rejudge)


def _common(parser: argparse.ArgumentParser, run: Any) -> None:
    parser.add_argument(
        "--url", help="API URL (default: $TILEJUDGE_URL, then http://127.0.0.1:8000)"
    )
    parser.add_argument("--token", help="admin token")
    parser.set_defaults(run=lambda args: _guarded(run, args))


def _guarded(run: Any, args: argparse.Namespace) -> int:
    try:
        with _client(args) as http:
            return int(run(http, args))
    except AdminError as exc:
        print(f"tilejudge: {exc}", file=sys.stderr)
        return 2
    except httpx.HTTPError as exc:
        print(f"tilejudge: cannot reach the server: {exc}", file=sys.stderr)
        return 2


def _client(args: argparse.Namespace) -> httpx.Client:
    token = args.token or os.environ.get("TILEJUDGE_ADMIN_TOKEN")
    if not token:
        path = Path(os.environ.get("TILEJUDGE_HOME", "./.tilejudge")) / "admin-token"
        token = path.read_text().strip() if path.is_file() else None
    if not token:
        raise AdminError(
            "no admin token: pass --token, set TILEJUDGE_ADMIN_TOKEN, or run beside TILEJUDGE_HOME"
        )
    url = (args.url or os.environ.get("TILEJUDGE_URL") or DEFAULT_URL).rstrip("/")
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def _call(response: httpx.Response) -> dict[str, Any]:
    if response.is_error:
        try:
            body = response.json()
            detail = f"{body.get('error')}: {body.get('detail')}"
        except ValueError:
            detail = response.text[:200]
        raise AdminError(f"HTTP {response.status_code} {detail}")
    result: dict[str, Any] = response.json()
    return result


def _read(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise AdminError(f"cannot read {path}: {exc.strerror}") from exc


def _lexicon_add(http: httpx.Client, args: argparse.Namespace) -> int:
    body = _call(
        http.post(
            "/v1/lexicons",
            params={"name": args.name},
            content=_read(args.file),
            headers={"Content-Type": "text/plain"},
        )
    )
    print(f"{body['id']}  {body['name']}  {body['words']} words")
    return 0


def _lexicon_list(http: httpx.Client, args: argparse.Namespace) -> int:
    for row in _call(http.get("/v1/lexicons"))["lexicons"]:
        print(
            f"{row['id'][:16]}  {row['name']:<24} {row['words']:>8} words  {row['created_at']}  {row['source']}"
        )
    return 0


def _lexicon_diff(http: httpx.Client, args: argparse.Namespace) -> int:
    body = _call(http.get(f"/v1/lexicons/{args.a}/diff/{args.b}"))
    print(
        f"{body['from'][:16]} -> {body['to'][:16]}: +{len(body['added'])} -{len(body['removed'])}"
    )
    for word in body["added"]:
        print(f"+{word}")
    for word in body["removed"]:
        print(f"-{word}")
    return 0


def _layout_add(http: httpx.Client, args: argparse.Namespace) -> int:
    body = _call(
        http.post(
            "/v1/layouts",
            params={"name": args.name},
            content=_read(args.file),
            headers={"Content-Type": "application/json"},
        )
    )
    print(f"{body['id']}  {body['name']}")
    return 0


def _layout_list(http: httpx.Client, args: argparse.Namespace) -> int:
    for row in _call(http.get("/v1/layouts"))["layouts"]:
        print(f"{row['id'][:16]}  {row['name']:<24} {row['created_at']}  by {row['created_by']}")
    return 0


def _layout_diff(http: httpx.Client, args: argparse.Namespace) -> int:
    body = _call(http.get(f"/v1/layouts/{args.a}/diff/{args.b}"))
    print(
        f"{body['from'][:16]} -> {body['to'][:16]}: {len(body['squares'])} squares, "
        f"{len(body['letters'])} letters differ"
    )
    for square in body["squares"]:
        print(
            f"  square |y|%p={square['row']} |x|%p={square['column']}: {square['from']} -> {square['to']}"
        )
    for letter in body["letters"]:
        print(f"  {letter['letter']}: points/tiles {letter['from']} -> {letter['to']}")
    return 0


def _rejudge(http: httpx.Client, args: argparse.Namespace) -> int:
    if args.action is not None:
        if not args.run_id:
            raise AdminError(f"rejudge {args.action} needs the run's ID")
        if args.action == "show":
            print_preview(_call(http.get(f"/v1/rejudges/{args.run_id}")))
            return 0
        body = _call(http.post(f"/v1/rejudges/{args.run_id}/{args.action}"))
        print(f"rejudge {body['id']}: {body['state']}")
        return 0
    if not (args.contest and args.lexicon):
        raise AdminError("rejudge needs --contest and --lexicon (or show|apply|cancel ID)")
    request = {"lexicon": args.lexicon, "mode": "affected" if args.affected else "full"}
    if args.layout:
        request["layout"] = args.layout
    run = _call(http.post(f"/v1/contests/{args.contest}/rejudges", json=request))
    print(f"rejudge {run['id']} ({run['mode']}) {'started' if run['created'] else 'already open'}")
    shown = follow(http, run["id"], args.timeout)
    print_preview(shown)
    if args.apply and shown["state"] == "ready":
        body = _call(http.post(f"/v1/rejudges/{run['id']}/apply"))
        print(f"applied: the contest is judged with {body['lexicon'][:16]} / {body['layout'][:16]}")
    return 0 if shown["state"] in ("ready", "applied") else 1


def follow(http: httpx.Client, run_id: str, timeout: float) -> dict[str, Any]:
    """Redraw a progress bar (count, rate, ETA) until the run is no longer running."""
    started = time.monotonic()
    first_done: int | None = None
    while True:
        run = _call(http.get(f"/v1/rejudges/{run_id}"))
        elapsed = time.monotonic() - started
        first_done = run["done"] if first_done is None else first_done
        rate = (run["done"] - first_done) / elapsed if elapsed > 0 else 0.0
        left = run["total"] - run["done"]
        eta = f"{left / rate:5.0f} s" if rate > 0 else "    ? s"
        width = 30
        filled = width * run["done"] // max(1, run["total"])
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {run['done']}/{run['total']}"
            f"  {rate:7.1f}/s  ETA {eta}  ({run['carried']} carried over)  "
        )
        sys.stderr.flush()
        if run["state"] != "running" or elapsed > timeout:
            sys.stderr.write("\n")
            return run
        time.sleep(POLL_SECONDS)


def print_preview(run: dict[str, Any]) -> None:
    print(
        f"rejudge {run['id']}: {run['state']}, {run['done']}/{run['total']} done "
        f"({run['carried']} carried over), {len(run.get('changed', []))} scores change"
    )
    changed = run.get("changed", [])
    if changed:
        print(f"  {'submission':<34} {'team':<20} {'old':>8} {'new':>8}")
        for row in changed[:50]:
            print(
                f"  {row['submission']:<34} {row['team']:<20} {row['old_score']:>8} {row['new_score']:>8}"
            )
        if len(changed) > 50:
            print(f"  ... and {len(changed) - 50} more")
    moves = run.get("rank_changes", [])
    if moves:
        print(f"  {'team':<20} {'rank':>6} -> {'new':<6}")
        for row in moves:
            print(f"  {row['team']:<20} {row['old_rank']!s:>6} -> {row['new_rank']!s:<6}")
