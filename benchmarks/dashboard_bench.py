"""What watching the dashboard costs Redis (prints, asserts nothing): commands per second on the
stack's Redis, workers idle, with no page, then 1 and 20 simulated pages polling /v1/stats.

Counted from `INFO commandstats` deltas (the bench's own INFO calls left out). Pages poll every
`--interval` seconds (2 s, as the issue's figure asks) and at the page's own 1 s.

    python -m benchmarks.dashboard_bench [--seconds 30] [--interval 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis

from devstack.testing.stack_process import RunningStack, running_stack

PAGE_INTERVAL_S = 1.0  # what api/static/dashboard.js polls at


@dataclass
class Window:
    label: str
    seconds: float
    commands: Counter[str]
    requests: int
    response_ms: list[float]

    def rate(self, baseline: Window | None = None) -> float:
        total = sum(self.commands.values()) / self.seconds
        return total - (baseline.rate() if baseline else 0.0)


def command_calls(client: redis.Redis) -> Counter[str]:
    stats = client.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})


def watch(
    stack: RunningStack, client: redis.Redis, pages: int, interval: float, seconds: float
) -> Window:
    """Run `pages` pollers for `seconds` and count the Redis commands meanwhile."""
    stop = threading.Event()
    timings: list[float] = []
    lock = threading.Lock()

    def page() -> None:
        with httpx.Client(base_url=stack.url, headers=stack.admin, timeout=10) as http:
            stop.wait(random.uniform(0, interval))  # real pages were not all opened at once
            while not stop.is_set():
                started = time.perf_counter()
                http.get("/v1/stats").raise_for_status()
                with lock:
                    timings.append((time.perf_counter() - started) * 1000)
                stop.wait(interval)

    threads = [threading.Thread(target=page) for _ in range(pages)]
    before, started = command_calls(client), time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    after, elapsed = command_calls(client), time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    calls = after - before
    del calls["info"]  # ours
    label = f"{pages} page(s) every {interval:g} s" if pages else "no page open"
    return Window(label, elapsed, calls, len(timings), timings)


def report(windows: list[Window], baseline: Window) -> None:
    print(f"{'':34} {'Redis cmd/s':>12} {'dashboard':>10} {'refreshes/s':>12} {'requests':>9} "
          f"{'p50 ms':>7}")  # fmt: skip
    for window in [baseline, *windows]:
        refreshes = window.commands["exists"] / window.seconds  # one EXISTS per refresh
        dashboard = window.rate(baseline) if window is not baseline else 0.0
        p50 = statistics.median(window.response_ms) if window.response_ms else float("nan")
        print(f"{window.label:34} {window.rate():12.2f} {dashboard:10.2f} {refreshes:12.2f} "
              f"{window.requests:9d} {p50:7.1f}")  # fmt: skip
    print("\ncommands/s by name:")
    for window in [baseline, *windows]:
        top = ", ".join(
            f"{name} {n / window.seconds:.2f}" for name, n in window.commands.most_common(8)
        )
        print(f"  {window.label:32} {top}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dashboard_bench")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each window")
    parser.add_argument(
        "--interval", type=float, default=2.0, help="simulated pages' poll interval"
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="tilejudge-dash-bench-") as home,
        running_stack(Path(home) / "home", workers=2) as stack,
    ):
        client = redis.Redis.from_url(stack.redis_url)
        # The first request starts the heartbeat listener and asks each worker its pool size
        # once; let that settle so it is not counted against the pages.
        httpx.get(f"{stack.url}/v1/stats", headers=stack.admin).raise_for_status()
        time.sleep(5)
        baseline = watch(stack, client, 0, args.interval, args.seconds)
        windows = [
            watch(stack, client, pages, interval, args.seconds)
            for interval in dict.fromkeys((args.interval, PAGE_INTERVAL_S))
            for pages in (1, 20)
        ]
        client.close()
    print(f"dashboard bench: {args.seconds:g} s windows, 2 idle worker processes (1 Celery node)\n")
    report(windows, baseline)


if __name__ == "__main__":
    main()
