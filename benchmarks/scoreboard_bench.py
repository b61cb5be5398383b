"""What the public scoreboard page costs and how live it is, against one local stack (prints
figures, asserts nothing): a contest of the default game with TEAMS teams, each with a judged
upload, then

1. its scoreboard page (`GET /contests/{id}`) read by CLIENTS clients, each a page every
   `--interval` seconds: the p95 of a read (goal ≤ 100 ms), and how many were refused;
2. a team's upload p95, idle and then with FOLLOWERS pages following the board's live stream
   (goal: at most twice idle);
3. with those followers on, a judged upload to the change on an open page, p95 (goal ≤ 2 s):
   an upload that puts a new team on the page's first page of rows, from its `judged_at` to
   the stream's event that shows that team, read by a client following the stream.

The followers come through the stack's trusted-proxy setting (FORWARDED_ALLOW_IPS), each
naming an address of its own, as browsers behind a proxy would: one address may hold only a
few streams (`api.pages.live`).

    python -m benchmarks.scoreboard_bench [--teams 1000] [--clients 200] [--followers 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from benchmarks.fixtures import UNLIMITED, bench_stack, open_contest
from core import clock
from core.games import DEFAULT, game
from devstack.testing.stack_process import RunningStack
from judge import Lexicon

WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by", "oat", "to", "toe",
         "bet", "tee", "ten", "net", "ant", "tan", "nab", "bean", "beat", "neat")  # fmt: skip
CONTEST = "bench"
GOAL_READ_MS, GOAL_SLOWDOWN, GOAL_LIVE_S = 100.0, 2.0, 2.0


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else float("nan")


def corpus(count: int, moves: int, first_seed: int) -> list[bytes]:
    """Generated uploads of the game of `open_contest`'s contest, which names none."""
    played, lexicon = game(DEFAULT), Lexicon.from_words(list(WORDS))
    rules = played.default_rules()
    return [played.sample(lexicon, rules, first_seed + n, moves) for n in range(count)]


def upload(http: httpx.Client, token: str, data: bytes) -> tuple[str, float]:
    started = time.perf_counter()
    answer = http.post(
        f"/v1/contests/{CONTEST}/submissions", content=data,
        headers={"Authorization": f"Bearer {token}", "content-type": "text/plain"},
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    answer.raise_for_status()
    return str(answer.json()["id"]), elapsed


def wait_judged(http: httpx.Client, stack: RunningStack, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        board = http.get(f"/v1/contests/{CONTEST}/leaderboard", params={"limit": 1})
        if board.status_code == 200 and board.json()["entries"]:
            found = http.get(
                f"/v1/contests/{CONTEST}/leaderboard", params={"offset": count - 1, "limit": 1}
            ).json()["entries"]
            if found:
                return
        time.sleep(0.5)
    raise SystemExit(f"the {count} uploads were not all judged within {timeout:.0f} s")


def uploads_p95(http: httpx.Client, tokens: list[str], files: list[bytes]) -> float:
    """Uploads four at a time; the p95 of their answers, in ms."""
    times: list[float] = []
    lock = threading.Lock()
    work = list(zip(tokens, files, strict=False))

    def run() -> None:
        while True:
            with lock:
                if not work:
                    return
                token, data = work.pop()
            _, elapsed = upload(http, token, data)
            with lock:
                times.append(elapsed * 1000)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return p95(times)


async def readers(
    url: str, clients: int, interval: float, seconds: float
) -> tuple[list[float], int]:
    """`clients` readers of the page, each a read every `interval` s (started spread over one
    interval); the times of the reads answered 200 (ms), and how many were refused."""
    times: list[float] = []
    refused = 0
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:

        async def reader(n: int) -> None:
            nonlocal refused
            end = time.monotonic() + seconds
            await asyncio.sleep(interval * n / clients)
            while time.monotonic() < end:
                started = time.perf_counter()
                answer = await http.get(f"/contests/{CONTEST}")
                if answer.status_code == 200:
                    times.append((time.perf_counter() - started) * 1000)
                else:
                    refused += 1
                await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))

        await asyncio.gather(*(reader(n) for n in range(clients)))
    return times, refused


@dataclass
class Following:
    """FOLLOWERS streams held open in a thread of their own, and one probe stream whose events
    are kept with their arrival time."""

    url: str
    count: int
    open: int = 0
    events: int = 0
    probe: list[tuple[float, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    ready: threading.Event = field(default_factory=threading.Event)

    async def main(self) -> None:
        limits = httpx.Limits(max_connections=self.count + 10, max_keepalive_connections=0)
        timeout = httpx.Timeout(30, read=None)
        async with httpx.AsyncClient(base_url=self.url, timeout=timeout, limits=limits) as http:
            tasks = [asyncio.create_task(self.follow(http, n, n == 0)) for n in range(self.count)]
            while not self.stop.is_set():
                await asyncio.sleep(0.2)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def follow(self, http: httpx.AsyncClient, n: int, probe: bool) -> None:
        await asyncio.sleep(n * 0.02)  # fifty a second: opening them is paced like any read
        address = f"10.{n // 250}.{n % 250}.1"
        while not self.stop.is_set():
            async with http.stream(
                "GET", f"/contests/{CONTEST}/stream", headers={"X-Forwarded-For": address}
            ) as answer:
                if answer.status_code != 200:
                    await asyncio.sleep(1)
                    continue
                self.open += 1
                if self.open >= self.count:
                    self.ready.set()
                try:
                    async for line in answer.aiter_lines():
                        if line.startswith("data:"):
                            self.events += 1
                            if probe:
                                self.probe.append((time.time(), line))
                finally:
                    self.open -= 1

    @contextmanager
    def running(self) -> Iterator[Following]:
        thread = threading.Thread(target=lambda: asyncio.run(self.main()), daemon=True)
        thread.start()
        try:
            self.ready.wait(120)
            yield self
        finally:
            self.stop.set()
            thread.join(30)


def live_delays(
    http: httpx.Client, stack: RunningStack, following: Following, tokens: list[str], trials: int
) -> list[float]:
    """Each trial: a team new to the first page uploads a high score; the time from its
    judgement to the probe's event showing it, in s."""
    delays = []
    files = corpus(trials, 60, 50_000)
    for n, data in enumerate(files):
        team = len(tokens) - 1 - n
        seen_before = len(following.probe)
        submission, _ = upload(http, tokens[team], data)
        deadline = time.monotonic() + 30
        needle = f">t{team}</th>"
        arrived = None
        while arrived is None and time.monotonic() < deadline:
            for at, line in following.probe[seen_before:]:
                if needle in line:
                    arrived = at
                    break
            time.sleep(0.02)
        judged = http.get(f"/v1/submissions/{submission}", headers=stack.admin).json()
        if arrived is None or judged.get("judged_at") is None:
            print(f"  trial {n}: not shown within 30 s ({judged.get('state')})")
            continue
        delays.append(arrived - clock.parse_time(judged["judged_at"]).timestamp())
        time.sleep(1.0)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--interval", type=float, default=2.0, help="s between a reader's reads")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--followers", type=int, default=500)
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()
    env = UNLIMITED | {"FORWARDED_ALLOW_IPS": "127.0.0.1"}
    with (
        bench_stack("scoreboard-bench-", workers=2, env=env) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        words = "".join(w + "\n" for w in WORDS).encode()
        tokens = open_contest(http, stack, contest=CONTEST, lists={"bench-words": words},
                              lexicon="bench-words", teams=args.teams)  # fmt: skip
        base = args.teams - args.trials  # the last teams upload only in the live trials
        uploads_p95(http, tokens[:base], corpus(base, 8, 0))
        wait_judged(http, stack, base, 300)
        print(f"scoreboard bench: {args.teams:,} teams, {base:,} ranked; a shared machine")

        times, refused = asyncio.run(readers(stack.url, args.clients, args.interval, args.seconds))
        print(f"1. page read by {args.clients} clients (one read each per {args.interval:g} s): "
              f"p95 {p95(times):.1f} ms over {len(times):,} reads, {refused} refused "
              f"(goal ≤ {GOAL_READ_MS:.0f} ms)")  # fmt: skip

        spare = corpus(args.uploads * 2, 8, 10_000)
        idle = uploads_p95(http, tokens[:base], spare[: args.uploads])
        with Following(stack.url, args.followers).running() as following:
            opened = following.open
            followed = uploads_p95(http, tokens[:base], spare[args.uploads :])
            delays = live_delays(http, stack, following, tokens, args.trials)
            events = following.events
        print(f"2. upload p95: idle {idle:.1f} ms, with {opened} followers {followed:.1f} ms: "
              f"{followed / idle:.2f}× (goal ≤ {GOAL_SLOWDOWN:g}×)")  # fmt: skip
        shown = (
            f"p95 {p95(delays):.2f} s, median {statistics.median(delays):.2f} s"
            if delays
            else "none"
        )
        print(f"3. judged upload to the change on an open page: {shown} over {len(delays)} "
              f"trials (goal ≤ {GOAL_LIVE_S:g} s); {events:,} events sent to the followers")  # fmt: skip


if __name__ == "__main__":
    main()
