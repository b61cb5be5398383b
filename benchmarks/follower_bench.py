"""Anonymous event-feed followers against the local stack (prints, asserts nothing): whether a
flood of them refuses a team's or the organiser's feed (`api.clics_feed.FeedHub.refusal`).

1. idle: a team's streaming feed of the Contest API (`/clics/contests/bench/event-feed`) opened
   `--feeds` times from 127.0.0.1, each kept open, then the organiser's as many times; how many
   were refused, and each one's time to its first byte of body;
2. flood held: anonymous followers opened one after another, round the loopback addresses
   127.0.0.2 … (`--addresses` of them), each kept open, until `--stop-after` attempts in a row
   are refused (at most `--attempts`); then the same feeds as in 1, the flood still open;
3. flood knocking: as 2, while `--knockers` clients (over the same addresses) go on asking for
   anonymous feeds as fast as they are answered, keeping any they get.

Each answer is held (its first bytes read) before the next is asked for, so the server counts
it; one feed of each kind is opened first, uncounted, so that the idle figures are warm. The
time to the first byte runs from the connection's start. The feeds use one team
(`tuning.CLICS_FOLLOWERS_PER_ADDRESS_SHARE` of a process's followers may be one team's; the
default 20 fit). At the end: how many held followers the server still had open.

    python -m benchmarks.follower_bench [--feeds 20] [--addresses 40] [--attempts 3000]
        [--stop-after 80] [--knockers 20] [--uploads 20] [--api-workers N]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import socket
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from benchmarks.fixtures import api_workers_env, api_workers_option, bench_stack, open_contest
from benchmarks.stranger_bench import team_uploads

FEED = "/clics/contests/bench/event-feed?stream=true"
READ_S = 30.0  # a feed that sends nothing for this long counts as refused ("timeout")
SETTLE_S = 2.0  # for the server to see closed feeds go before the next phase


@dataclass
class Feed:
    """One ask for a feed: the open socket (None if refused), the status (0: no answer), why it
    was refused (the 503's detail, numbers as N), the time to its first byte of body (s)."""

    sock: socket.socket | None
    status: int
    reason: str = ""
    first_byte: float = 0.0


@dataclass
class Phase:
    """What the team's and the organiser's feeds met in one phase."""

    name: str
    refused: dict[str, collections.Counter[str]] = field(default_factory=dict)
    first_bytes: dict[str, list[float]] = field(default_factory=dict)


class Target:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def open(self, source: str, token: str | None = None) -> Feed:
        """Ask for the contest's streaming feed from `source`, and read up to its first byte
        of body (a chunk's size line, then data)."""
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        request = f"GET {FEED} HTTP/1.1\r\nHost: {self.host}\r\n{auth}\r\n".encode()
        started = time.monotonic()
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=READ_S, source_address=(source, 0)
            )
        except OSError as exc:
            return Feed(None, 0, type(exc).__name__)
        try:
            sock.sendall(request)
            data = _read_until(sock, b"", lambda d: b"\r\n\r\n" in d)
            head, _, body = data.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                reason = _reason(sock, head, body)
                sock.close()
                return Feed(None, status, reason)
            _read_until(sock, body, _has_data)
            return Feed(sock, 200, "", time.monotonic() - started)
        except (OSError, ValueError, IndexError) as exc:
            sock.close()
            return Feed(None, 0, type(exc).__name__)


def _read_until(sock: socket.socket, data: bytes, done: Callable[[bytes], bool]) -> bytes:
    while not done(data):
        piece = sock.recv(65536)
        if not piece:
            raise ConnectionError("closed by the server")
        data += piece
    return data


def _has_data(body: bytes) -> bool:
    """Whether a chunked body holds its first chunk's size line and a byte of its data."""
    _, found, rest = body.partition(b"\r\n")
    return bool(found) and len(rest) > 0


def _reason(sock: socket.socket, head: bytes, body: bytes) -> str:
    """A refusal's detail, its numbers as N (so refusals group by kind)."""
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    with_body = int(length.group(1)) if length else 0
    try:
        body = _read_until(sock, body, lambda d: len(d) >= with_body)
        answer = json.loads(body)
        detail = str(answer.get("message") or answer.get("detail") or answer)
    except (OSError, ValueError, AttributeError):
        detail = body[:200].decode(errors="replace")
    return re.sub(r"\d+", "N", detail)


def _state(sock: socket.socket) -> str:
    """Whether the server still holds a feed open: "open", "closed", or the error's name."""
    sock.setblocking(False)  # with a timeout, recv would wait for data first
    try:
        return "open" if sock.recv(1, socket.MSG_PEEK) else "closed"
    except BlockingIOError:
        return "open"
    except OSError as exc:
        return type(exc).__name__


def _close(feeds: list[Feed]) -> None:
    for feed in feeds:
        if feed.sock is not None:
            feed.sock.close()


# -- the phases ---------------------------------------------------------------------------


def measure(target: Target, name: str, tokens: dict[str, str | None], count: int) -> Phase:
    """Each of `tokens`' feeds (by whose) opened `count` times from 127.0.0.1 and kept open
    until all are open; then all closed."""
    phase = Phase(name)
    held: list[Feed] = []
    try:
        for whose, token in tokens.items():
            phase.refused[whose], phase.first_bytes[whose] = collections.Counter(), []
            for _ in range(count):
                feed = target.open("127.0.0.1", token)
                held.append(feed)
                if feed.sock is None:
                    phase.refused[whose][f"{feed.status} {feed.reason}"] += 1
                else:
                    phase.first_bytes[whose].append(feed.first_byte)
    finally:
        _close(held)
    return phase


def flood(
    target: Target, addresses: list[str], attempts: int, stop_after: int
) -> tuple[list[Feed], collections.Counter[str]]:
    """Anonymous followers round `addresses` until `stop_after` in a row are refused (or
    `attempts` were made): those held, and the refusals by reason."""
    held: list[Feed] = []
    refused: collections.Counter[str] = collections.Counter()
    in_a_row = 0
    for n in range(attempts):
        feed = target.open(addresses[n % len(addresses)])
        if feed.sock is not None:
            held.append(feed)
            in_a_row = 0
            continue
        refused[f"{feed.status} {feed.reason}"] += 1
        in_a_row += 1
        if in_a_row >= stop_after:
            break
    return held, refused


class Knocking:
    """`clients` threads asking for anonymous feeds as fast as they are answered, keeping any
    they get, until the block ends."""

    def __init__(self, target: Target, addresses: list[str], clients: int) -> None:
        self.target, self.addresses, self.clients = target, addresses, clients
        self.held: list[Feed] = []
        self.answers: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _knock(self, source: str) -> None:
        while not self._stop.is_set():
            feed = self.target.open(source)
            with self._lock:
                if feed.sock is not None:
                    self.held.append(feed)
                    self.answers["200 held"] += 1
                else:
                    self.answers[f"{feed.status} {feed.reason}"] += 1

    def __enter__(self) -> Knocking:
        for n in range(self.clients):
            source = self.addresses[n % len(self.addresses)]
            thread = threading.Thread(target=self._knock, args=(source,), daemon=True)
            thread.start()
            self._threads.append(thread)
        time.sleep(1.0)  # under way before the feeds are asked for
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        _close(self.held)


# -- the report ---------------------------------------------------------------------------


def _p95(times: list[float]) -> str:
    if not times:
        return "-"
    if len(times) < 2:
        return f"{times[0] * 1000:.0f} ms"
    return f"{statistics.quantiles(times, n=100, method='inclusive')[94] * 1000:.0f} ms"


def _p50(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.0f} ms" if times else "-"


def report(phases: list[Phase], count: int) -> None:
    rows = [f"{'':34}" + "".join(f"{p.name:>22}" for p in phases)]
    for whose in phases[0].refused:
        rows.append(
            f"  {whose + ' feeds refused':32}"
            + "".join(f"{f'{sum(p.refused[whose].values())}/{count}':>22}" for p in phases)
        )
    for whose in phases[0].first_bytes:
        for label, cut in (("p50", _p50), ("p95", _p95)):
            rows.append(
                f"  {f'{whose} first byte {label}':32}"
                + "".join(f"{cut(p.first_bytes[whose]):>22}" for p in phases)
            )
    print("\n".join(rows), flush=True)
    for phase in phases:
        for whose, refused in phase.refused.items():
            for reason, times in refused.most_common():
                print(f"  refused ({phase.name}, {whose}): {times} x {reason}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--feeds", type=int, default=20, help="a team's, and the organiser's")
    parser.add_argument("--addresses", type=int, default=40, help="loopback addresses used")
    parser.add_argument("--attempts", type=int, default=3000, help="anonymous ones, at most")
    parser.add_argument("--stop-after", type=int, default=80, help="refused in a row")
    parser.add_argument("--knockers", type=int, default=20, help="0: no knocking phase")
    parser.add_argument("--uploads", type=int, default=20, help="judged before, in the feeds")
    api_workers_option(parser)
    args = parser.parse_args()
    addresses = [f"127.0.0.{2 + n}" for n in range(args.addresses)]
    env = api_workers_env(args.api_workers)
    with bench_stack("tj-followers-", workers=2, env=env) as stack:
        with httpx.Client(base_url=stack.url, timeout=60) as http:
            (token,) = open_contest(http, stack, teams=1)
        team_uploads(stack.url, token, args.uploads)
        target = Target(stack.url)
        tokens: dict[str, str | None] = {"team": token, "organiser": stack.admin_token}
        measure(target, "warm-up", tokens, 1)  # the first of each is no idle figure
        phases = [measure(target, "idle", tokens, args.feeds)]
        time.sleep(SETTLE_S)
        started = time.monotonic()
        held, refused = flood(target, addresses, args.attempts, args.stop_after)
        took = time.monotonic() - started
        try:
            phases.append(measure(target, "flood held", tokens, args.feeds))
            time.sleep(SETTLE_S)
            if args.knockers:
                with Knocking(target, addresses, args.knockers) as knocking:
                    phases.append(measure(target, "flood knocking", tokens, args.feeds))
            states = collections.Counter(_state(f.sock) for f in held if f.sock is not None)
        finally:
            _close(held)
    workers = args.api_workers or "as `tilejudge up` starts"
    print(f"follower flood: API processes {workers}; {len(addresses)} anonymous addresses")
    print(f"  anonymous followers held       {len(held)} (in {took:.0f} s)")
    print(f"    at the end                   {dict(states)}")
    print(f"  anonymous refused              {sum(refused.values())}")
    for reason, times in refused.most_common():
        print(f"    {times} x {reason}")
    if args.knockers:
        answers = knocking.answers
        print(f"  knocking: {args.knockers} clients, {sum(answers.values())} answers")
        for reason, times in answers.most_common():
            print(f"    {times} x {reason}")
    report(phases, args.feeds)


if __name__ == "__main__":
    main()
