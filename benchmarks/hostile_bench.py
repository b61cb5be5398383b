"""Heavy uploads against the local stack (prints, asserts nothing):

1. the largest report an upload can have (`a\\n` to the upload limit: one illegal verdict per
   two bytes): the worker's peak memory while it judges and stores it, and the API's memory while
   8 clients without gzip read it at once, streamed;
2. fairness: another team's one-line upload-to-result time on an idle pipeline, and while one
   team floods six distinct uploads of the largest size;
3. bogus bearers: 1,000 connections each sending `Authorization: Bearer x`, a declared 1 MiB
   upload and most of it, then stalling: the API processes' RSS growth, and an honest
   one-line upload's answer time (p50/p99) idle and meanwhile;
4. public readers: 200 clients reading the leaderboard, `/readyz`, `/metrics` and the contest
   pages for 30 s: an honest one-line upload's answer time idle and meanwhile.

    python -m benchmarks.hostile_bench [--checks report,fairness,bogus,readers] [--rounds 5]
        [--readers 8] [--flood 6] [--bogus 1000] [--public 200] [--seconds 30]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import socket
import statistics
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import psutil

from benchmarks.fixtures import bench_stack, open_contest
from benchmarks.sampling import Sampler
from devstack.testing.stack_process import RunningStack

MIB = 1024 * 1024
POLL_S = 0.01


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5, help="flood rounds (and idle uploads)")
    parser.add_argument("--readers", type=int, default=8, help="clients reading the report")
    parser.add_argument("--flood", type=int, default=6, help="largest uploads per flood")
    parser.add_argument(
        "--checks", default="report,fairness,bogus,readers", help="which, comma-separated"
    )
    parser.add_argument("--bogus", type=int, default=1000, help="stalled bogus-bearer uploads")
    parser.add_argument("--public", type=int, default=200, help="concurrent public readers")
    parser.add_argument("--seconds", type=float, default=30, help="how long the readers read")
    args = parser.parse_args()
    checks = set(args.checks.split(","))
    env = {"TILEJUDGE_RATE_LIMIT": "100000"}
    with bench_stack("tj-hostile-", workers=2, env=env) as stack:
        processes = psutil.Process(stack.process.pid).children(recursive=True)
        api = [p for p in processes if "uvicorn" in " ".join(p.cmdline())]
        workers = [p for p in processes if "celery" in " ".join(p.cmdline())]
        with httpx.Client(base_url=stack.url, timeout=120) as http:
            flooder, other = open_contest(http, stack, teams=2)
            largest = b"a\n" * (2 * MIB // 2)
            if "report" in checks:
                largest_report(http, stack, flooder, largest, api, workers, args.readers)
            if "fairness" in checks:
                fairness(http, flooder, other, args.rounds, args.flood)
            if "bogus" in checks:
                bogus_bearers(http, stack.url, other, api + _children(api), args.bogus)
            if "readers" in checks:
                public_readers(http, stack, other, args.public, args.seconds)


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
    with Peak(lambda: _children(workers)) as report_peak:
        made = made_in(http, url, headers)
    print(
        f"its report, made by a worker when first asked for: {made:.1f} s; worker processes' "
        f"peak RSS meanwhile {report_peak.largest / MIB:.0f} MiB"
    )
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


_honest = itertools.count()


def honest_uploads(http: httpx.Client, token: str, count: int) -> list[float]:
    """The answer times (s) of `count` distinct one-line uploads, one after another."""
    times = []
    for _ in range(count):
        body = b"0 0 2 0 cat\n#honest %d\n" % next(_honest)
        started = time.monotonic()
        response = http.post(
            "/v1/contests/bench/submissions",
            content=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
        )
        times.append(time.monotonic() - started)
        response.raise_for_status()
    return times


def _quantiles(times: list[float]) -> str:
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return f"p50 {cuts[49] * 1000:.0f} ms, p99 {cuts[98] * 1000:.0f} ms"


def bogus_bearers(
    http: httpx.Client, url: str, token: str, api: list[psutil.Process], connections: int
) -> None:
    """Connections that declare a 1 MiB upload under `Bearer x`, send what the socket takes of
    it and stall, held while honest uploads are timed."""
    idle = honest_uploads(http, token, 200)
    before = sum(_rss(api).values())
    parts = urlsplit(url)
    head = (
        b"POST /v1/contests/bench/submissions HTTP/1.1\r\nHost: %s\r\n"
        b"Authorization: Bearer x\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
    ) % (parts.netloc.encode(), MIB)
    most_of_it = b"a" * (MIB - 64 * 1024)
    held: list[socket.socket] = []
    refused = 0
    with Peak(lambda: api) as peak:
        for _ in range(connections):
            sock = socket.create_connection((parts.hostname, parts.port or 80))
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError, ConnectionError):
                sock.send(head + most_of_it)
            held.append(sock)
        time.sleep(2)  # let the server read what it will
        loaded = honest_uploads(http, token, 200)
        for sock in held:
            with contextlib.suppress(BlockingIOError, ConnectionError):
                if sock.recv(64).startswith((b"HTTP/1.1 401", b"HTTP/1.1 503")):
                    refused += 1
        during = sum(_rss(api).values())
    for sock in held:
        sock.close()
    print(
        f"{connections} stalled uploads under a bogus bearer ({refused} answered 401/503): API "
        f"processes' RSS {before / MIB:.0f} MiB before, {during / MIB:.0f} MiB while held "
        f"(+{(during - before) / MIB:.0f} MiB; largest process peak "
        f"{peak.largest / MIB:.0f} MiB); honest upload idle {_quantiles(idle)}, meanwhile "
        f"{_quantiles(loaded)}"
    )


def public_readers(
    http: httpx.Client, stack: RunningStack, token: str, readers: int, seconds: float
) -> None:
    """`readers` clients each reading the public pages in turn for `seconds`, while honest
    uploads are timed."""
    idle = honest_uploads(http, token, 200)
    paths = [
        "/v1/contests/bench/leaderboard", "/readyz", "/metrics", "/v1/contests",
        "/v1/contests/bench",
    ]  # fmt: skip
    stop = threading.Event()
    statuses: collections.Counter[int] = collections.Counter()
    counting = threading.Lock()

    def read() -> None:
        with httpx.Client(base_url=stack.url, timeout=60) as client:
            for path in itertools.cycle(paths):
                if stop.is_set():
                    return
                with contextlib.suppress(httpx.HTTPError):
                    status = client.get(path).status_code
                    with counting:
                        statuses[status] += 1

    threads = [threading.Thread(target=read, daemon=True) for _ in range(readers)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    loaded: list[float] = []
    while time.monotonic() - started < seconds:
        loaded += honest_uploads(http, token, 10)
    elapsed = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    answered = sum(statuses.values())
    print(
        f"{readers} public readers for {elapsed:.0f} s ({answered / elapsed:.0f} answers/s, "
        f"{statuses[503] / elapsed:.0f}/s of them 503 busy): "
        f"honest upload idle {_quantiles(idle)}, meanwhile {_quantiles(loaded)} "
        f"({len(loaded)} uploads)"
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


class Peak(Sampler):
    """The largest RSS of any of the processes `find` returns, sampled every 20 ms."""

    def __init__(self, find: Callable[[], list[psutil.Process]]) -> None:
        super().__init__()
        self._find = find
        self.largest = 0

    def sample(self) -> None:
        rss = _rss(self._find())
        if rss:
            self.largest = max(self.largest, *rss.values())


def made_in(http: httpx.Client, url: str, headers: dict[str, str]) -> float:
    """Seconds from the first read of a heavy upload's report (202: asked of a worker) to the
    read that is answered with it, each read made after the Retry-After the last one said, as
    a client does (so to within that many seconds)."""
    started = time.monotonic()
    while True:
        with http.stream("GET", url, headers=headers) as answer:
            if answer.status_code not in (202, 429):
                return time.monotonic() - started
            time.sleep(float(answer.headers.get("retry-after", "1")))


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
