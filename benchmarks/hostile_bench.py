"""Heavy uploads against the local stack (prints, asserts nothing):

1. the largest report an upload can have (`a\\n` to the upload limit: one illegal verdict per
   two bytes): the worker's peak memory while it judges and stores it, and the API's memory while
   8 clients without gzip read it at once, streamed;
2. fairness: another team's one-line upload-to-result time on an idle pipeline, and while one
   team floods six distinct uploads of the largest size.

    python -m benchmarks.hostile_bench [--rounds 5] [--readers 8] [--flood 6]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

import httpx
import psutil

from benchmarks.fixtures import bench_stack, open_contest
from tests.stack_process import RunningStack

MIB = 1024 * 1024
POLL_S = 0.01


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5, help="flood rounds (and idle uploads)")
    parser.add_argument("--readers", type=int, default=8, help="clients reading the report")
    parser.add_argument("--flood", type=int, default=6, help="largest uploads per flood")
    args = parser.parse_args()
    env = {"TILEJUDGE_RATE_LIMIT": "1000"}
    with bench_stack("tj-hostile-", workers=2, env=env) as stack:
        processes = psutil.Process(stack.process.pid).children(recursive=True)
        api = [p for p in processes if "uvicorn" in " ".join(p.cmdline())]
        workers = [p for p in processes if "celery" in " ".join(p.cmdline())]
        with httpx.Client(base_url=stack.url, timeout=120) as http:
            flooder, other = open_contest(http, stack, teams=2)
            largest = b"a\n" * (2 * MIB // 2)
            largest_report(http, stack, flooder, largest, api, workers, args.readers)
            fairness(http, flooder, other, args.rounds, args.flood)


def largest_report(
    http: httpx.Client,
    stack: RunningStack,
    token: str,
    data: bytes,
    api: list[psutil.Process],
    workers: list[psutil.Process],
    readers: int,
) -> None:
    pool = _children(workers)
    before = _rss(pool)
    with Peak(lambda: _children(workers)) as worker_peak:
        sid, seconds = upload_and_wait(http, token, data)
    print(f"largest upload: {len(data)} bytes, {len(data) // 2} lines, judged in {seconds:.1f} s")
    print(
        f"worker processes: largest RSS {max(before.values()) / MIB:.0f} MiB before, "
        f"peak {worker_peak.largest / MIB:.0f} MiB while judging"
    )
    url = f"{stack.url}/v1/submissions/{sid}/report"
    headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": "identity"}
    sizes: list[int] = []

    def read() -> None:
        with httpx.stream("GET", url, headers=headers, timeout=300) as response:
            sizes.append(sum(len(piece) for piece in response.iter_raw(1 << 16)))

    serving = api + _children(api)  # uvicorn's parent and its worker processes
    api_before = _rss(serving)
    started = time.monotonic()
    with Peak(lambda: serving) as api_peak:
        threads = [threading.Thread(target=read) for _ in range(readers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elapsed = time.monotonic() - started
    with http.stream("GET", url, headers=headers | {"Accept-Encoding": "gzip"}) as packed:
        gzip_size = sum(len(piece) for piece in packed.iter_raw(1 << 16))
    runs = http.get(url, params={"lines": "runs"}, headers=headers)
    print(
        f"report: {sizes[0] / MIB:.1f} MiB of JSON, {gzip_size / MIB:.2f} MiB gzipped, "
        f"{len(runs.content)} bytes as runs"
    )
    print(
        f"{readers} clients reading it without gzip: {elapsed:.1f} s; API processes' largest "
        f"RSS {max(api_before.values()) / MIB:.0f} MiB before, peak {api_peak.largest / MIB:.0f} MiB"
    )


def fairness(http: httpx.Client, flooder: str, other: str, rounds: int, flood: int) -> None:
    line = b"0 0 2 0 cat\n"
    idle = [upload_and_wait(http, other, line + b"#idle %d\n" % n)[1] for n in range(rounds)]
    loaded = []
    for round_ in range(rounds):
        ids = []
        for n in range(flood):
            body = b"a\n" * (MIB - 8) + b"#%03d%03d\n" % (round_, n)
            response = http.post(
                "/v1/contests/bench/submissions",
                content=body,
                headers={"Authorization": f"Bearer {flooder}", "Content-Type": "text/plain"},
            )
            response.raise_for_status()
            ids.append(response.json()["id"])
        loaded.append(upload_and_wait(http, other, line + b"#flood %d\n" % round_)[1])
        for sid in ids:  # each round starts on an idle pipeline
            wait_judged(http, flooder, sid)
    idle_median, loaded_median = statistics.median(idle), statistics.median(loaded)
    print(
        f"other team's upload-to-result: idle median {idle_median * 1000:.0f} ms "
        f"(max {max(idle) * 1000:.0f}); during a flood of {flood} x 2 MiB median "
        f"{loaded_median * 1000:.0f} ms (max {max(loaded) * 1000:.0f}); "
        f"ratio {loaded_median / idle_median:.1f}"
    )


def upload_and_wait(http: httpx.Client, token: str, data: bytes) -> tuple[str, float]:
    started = time.monotonic()
    response = http.post(
        "/v1/contests/bench/submissions",
        content=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
    )
    response.raise_for_status()
    sid = response.json()["id"]
    wait_judged(http, token, sid)
    return sid, time.monotonic() - started


def wait_judged(http: httpx.Client, token: str, sid: str, timeout: float = 600) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = http.get(f"/v1/submissions/{sid}", headers=headers).json()["state"]
        if state in ("judged", "failed"):
            return
        time.sleep(POLL_S)
    raise TimeoutError(f"{sid} not judged in {timeout} s")


class Peak:
    """The largest RSS of any of the processes `find` returns, sampled every 20 ms."""

    def __init__(self, find: Callable[[], list[psutil.Process]]) -> None:
        self._find = find
        self.largest = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            rss = _rss(self._find())
            if rss:
                self.largest = max(self.largest, *rss.values())


def _children(parents: list[psutil.Process]) -> list[psutil.Process]:
    found = []
    for parent in parents:
        try:
            found += parent.children(recursive=True)
        except psutil.Error:
            continue
    return found or parents


def _rss(processes: list[psutil.Process]) -> dict[int, int]:
    sizes = {}
    for process in processes:
        try:
            sizes[process.pid] = process.memory_info().rss
        except psutil.Error:
            continue
    return sizes


if __name__ == "__main__":
    main()
