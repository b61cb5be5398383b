"""Strangers against the local stack (prints, asserts nothing): a team's one-line uploads, timed
idle and while strangers hold connections or send made-up tokens.

1. idle-connections: 2,000 keep-alive connections from 20 loopback addresses (127.0.0.2 …
   127.0.0.21), each having sent one `GET /healthz`, kept open (one closed by the server is
   opened again at once); then separately 300 from one address (127.0.0.2);
2. random-tokens: 100 clients (over the same 20 addresses) uploading under random bearer
   tokens as fast as they are answered, for `--seconds`.

For each: the team's upload p50/p95 idle and under attack, and how many of its uploads were not
answered 202. The team uploads from 127.0.0.1.

    python -m benchmarks.stranger_bench [--checks idle-connections,random-tokens]
        [--connections 2000] [--addresses 20] [--one-address 300] [--clients 100]
        [--seconds 40] [--uploads 200]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import secrets
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx

from benchmarks.fixtures import bench_stack, open_contest

ROUTE = "/v1/contests/bench/submissions"
_lines = itertools.count()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checks", default="idle-connections,random-tokens")
    parser.add_argument("--connections", type=int, default=2000, help="idle ones, in all")
    parser.add_argument("--addresses", type=int, default=20, help="loopback addresses used")
    parser.add_argument("--one-address", type=int, default=300, help="idle ones from one address")
    parser.add_argument("--clients", type=int, default=100, help="random-token clients")
    parser.add_argument("--seconds", type=float, default=40, help="how long they send")
    parser.add_argument("--uploads", type=int, default=200, help="the team's, idle and loaded")
    args = parser.parse_args()
    checks = set(args.checks.split(","))
    env = {"TILEJUDGE_RATE_LIMIT": "100000"}
    with bench_stack("tj-strangers-", workers=2, env=env) as stack:
        with httpx.Client(base_url=stack.url, timeout=60) as http:
            (token,) = open_contest(http, stack, teams=1)
        addresses = [f"127.0.0.{2 + n}" for n in range(args.addresses)]
        if "idle-connections" in checks:
            idle_connections(stack.url, token, addresses, args.connections, args.uploads)
            idle_connections(stack.url, token, addresses[:1], args.one_address, args.uploads)
        if "random-tokens" in checks:
            random_tokens(stack.url, token, addresses, args.clients, args.seconds, args.uploads)


def team_uploads(url: str, token: str, count: int) -> tuple[list[float], collections.Counter[str]]:
    """`count` distinct one-line uploads one after another over one kept-alive client: their
    answer times (s, 202s only) and every answer that was not 202 (status, or error name)."""
    times: list[float] = []
    other: collections.Counter[str] = collections.Counter()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(count):
            body = b"0 0 2 0 cat\n#team %d\n" % next(_lines)
            started = time.monotonic()
            try:
                status = http.post(ROUTE, content=body, headers=headers).status_code
            except httpx.HTTPError as exc:
                other[type(exc).__name__] += 1
                continue
            if status == 202:
                times.append(time.monotonic() - started)
            else:
                other[str(status)] += 1
    return times, other


def _cuts(times: list[float]) -> tuple[float, float]:
    if len(times) < 2:
        return (times[0], times[0]) if times else (0.0, 0.0)
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[94] * 1000


def report(
    name: str, idle: list[float], loaded: list[float], refused: collections.Counter[str]
) -> None:
    (idle_50, idle_95), (loaded_50, loaded_95) = _cuts(idle), _cuts(loaded)
    ratio = loaded_95 / idle_95 if idle_95 else float("nan")
    print(
        f"{name}: team upload idle p50 {idle_50:.0f} ms p95 {idle_95:.0f} ms; under attack "
        f"p50 {loaded_50:.0f} ms p95 {loaded_95:.0f} ms ({ratio:.1f}x idle p95); "
        f"{sum(refused.values())} of {len(loaded) + sum(refused.values())} not answered 202"
        + (f" {dict(refused)}" if refused else ""),
        flush=True,
    )


# -- idle connections -----------------------------------------------------------------------


def _open_idle(host: str, port: int, source: str) -> socket.socket | None:
    """A connection from `source` that had one `GET /healthz` answered, then waits."""
    try:
        sock = socket.create_connection((host, port), timeout=10, source_address=(source, 0))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.recv(4096)
    except OSError:
        return None
    sock.setblocking(False)
    return sock


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed this (non-blocking) connection; select() would refuse the
    descriptors past 1024 that thousands of connections use."""
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@contextlib.contextmanager
def holding(url: str, addresses: list[str], count: int) -> Iterator[collections.Counter[str]]:
    """`count` idle connections spread over `addresses`, each one the server closes opened
    again, until the block ends; counts of what happened."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    slots = [addresses[n % len(addresses)] for n in range(count)]
    held: list[socket.socket | None] = [_open_idle(host, port, s) for s in slots]
    counts: collections.Counter[str] = collections.Counter()
    counts["opened"] = sum(1 for s in held if s is not None)
    stop = threading.Event()

    def keep() -> None:
        while not stop.is_set():
            for n, sock in enumerate(held):
                if stop.is_set():
                    return
                if sock is None or _closed(sock):
                    if sock is not None:
                        sock.close()
                        counts["closed by the server"] += 1
                    held[n] = _open_idle(host, port, slots[n])
                    counts["opened"] += 1
            stop.wait(0.2)

    keeper = threading.Thread(target=keep, daemon=True)
    keeper.start()
    try:
        yield counts
    finally:
        stop.set()
        keeper.join()
        for sock in held:
            if sock is not None:
                sock.close()


def idle_connections(url: str, token: str, addresses: list[str], count: int, uploads: int) -> None:
    idle, _ = team_uploads(url, token, uploads)
    with holding(url, addresses, count) as counts:
        loaded, refused = team_uploads(url, token, uploads)
    report(f"{count} idle connections from {len(addresses)} address(es)", idle, loaded, refused)
    print(f"  attacker: {dict(counts)}", flush=True)


# -- random tokens --------------------------------------------------------------------------


def random_tokens(
    url: str, token: str, addresses: list[str], clients: int, seconds: float, uploads: int
) -> None:
    idle, _ = team_uploads(url, token, uploads)
    stop = threading.Event()
    statuses: collections.Counter[str] = collections.Counter()
    counting = threading.Lock()

    def send(source: str) -> None:
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(base_url=url, timeout=30, transport=transport) as client:
            while not stop.is_set():
                headers = {"Authorization": f"Bearer tj_{secrets.token_urlsafe(32)}"}
                try:
                    status = str(client.post(ROUTE, content=b"x\n", headers=headers).status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with counting:
                    statuses[status] += 1

    threads = [
        threading.Thread(target=send, args=(addresses[n % len(addresses)],), daemon=True)
        for n in range(clients)
    ]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    loaded: list[float] = []
    refused: collections.Counter[str] = collections.Counter()
    while time.monotonic() - started < seconds:
        times, other = team_uploads(url, token, 10)
        loaded += times
        refused += other
    elapsed = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    report(f"{clients} random-token clients for {elapsed:.0f} s", idle, loaded, refused)
    answered = sum(statuses.values())
    print(
        f"  attacker: {answered / elapsed:.0f} answers/s, {dict(statuses.most_common())}",
        flush=True,
    )


if __name__ == "__main__":
    main()
