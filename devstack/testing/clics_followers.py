"""Clients following a contest's CLICS event feed, in a process of their own (so their reading
takes no CPU from a load generator's threads), and the checks of what each one received.

    python -m devstack.testing.clics_followers URL CONTEST N OUTDIR

follows the feed N times at once from 127.0.0.1, writing what stream n receives, as it comes,
to OUTDIR/n.ndjson; it writes OUTDIR/ready once every stream has its first bytes, and ends
(closing every stream) when OUTDIR/stop appears.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

STOP_POLL_S = 0.2
FOLLOWERS = "devstack.testing.clics_followers"  # this module, run in a child process


async def _follow(client: httpx.AsyncClient, path: str, out: Path, started: asyncio.Event) -> None:
    with out.open("wb") as sink:
        async with client.stream("GET", path) as response:
            response.raise_for_status()
            async for chunk in response.aiter_raw():
                sink.write(chunk)
                sink.flush()
                started.set()


async def follow(url: str, contest: str, count: int, outdir: Path) -> None:
    timeout = httpx.Timeout(30.0, read=300.0)  # the feed sends a newline at least every 120 s
    limits = httpx.Limits(max_connections=count + 1)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        started = [asyncio.Event() for _ in range(count)]
        path = f"/clics/contests/{contest}/event-feed"
        tasks = [
            asyncio.create_task(_follow(client, path, outdir / f"{n}.ndjson", started[n]))
            for n in range(count)
        ]
        all_started = asyncio.ensure_future(asyncio.gather(*(e.wait() for e in started)))
        waiting: list[asyncio.Future[Any]] = [all_started, *tasks]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                task.result()  # a stream that could not start: raise its error
        (outdir / "ready").touch()
        while not (outdir / "stop").exists():
            if failed := [t for t in tasks if t.done()]:
                failed[0].result()  # a stream that ended: raise its error
                raise RuntimeError("a feed ended while followed")
            await asyncio.sleep(STOP_POLL_S)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@contextmanager
def following(url: str, contest: str, count: int, outdir: Path) -> Iterator[Path]:
    """`count` followers in a child process for as long as the block runs."""
    outdir.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", FOLLOWERS, url, contest, str(count), str(outdir)],
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        deadline = time.monotonic() + 60
        while not (outdir / "ready").exists():
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the followers did not start (exit {child.poll()})")
            time.sleep(0.1)
        yield outdir
    finally:
        (outdir / "stop").touch()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


# -- what a follower received, against the final state --------------------------------------


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def final_state(events: list[dict[str, Any]]) -> dict[tuple[str, str | None], Any]:
    """The objects the events leave, by (type, id): the last notification of each, deletions
    removed; a collection's notification (a list, no id) replaces the whole collection."""
    state: dict[tuple[str, str | None], Any] = {}
    for event in events:
        key, data = (event["type"], event["id"]), event["data"]
        if key[1] is None and isinstance(data, list):
            for old in [k for k in state if k[0] == key[0]]:
                del state[old]
            state.update({(key[0], item["id"]): item for item in data})
        elif data is None:
            state.pop(key, None)
        else:
            state[key] = event["data"]
    return state


def order_problems(events: list[dict[str, Any]]) -> list[str]:
    """What is out of order: a token not above the one before it, a judgement before its
    submission."""
    problems, last, sent = [], -1, set()
    for n, event in enumerate(events):
        if "token" in event:
            if int(event["token"]) <= last:
                problems.append(f"line {n}: token {event['token']} after {last}")
            last = int(event["token"])
        if event["type"] == "submissions":
            sent.add(event["id"])
        elif event["type"] == "judgements" and event["data"] is not None:
            submission = event["data"]["submission_id"]
            if submission not in sent:
                problems.append(f"line {n}: judgement {event['id']} before {submission}")
    return problems


def differences(
    state: dict[tuple[str, str | None], Any], rest: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Where the feed's final objects differ from the REST collections."""
    found = []
    for kind, objects in rest.items():
        fed = {key[1]: value for key, value in state.items() if key[0] == kind}
        served = {obj["id"]: obj for obj in objects}
        missing = served.keys() - fed.keys()
        extra = fed.keys() - served.keys()
        changed = [i for i in served.keys() & fed.keys() if served[i] != fed[i]]
        for what, ids in (("missing", missing), ("extra", extra), ("differing", changed)):
            if ids:
                found.append(f"{kind}: {len(ids)} {what}, e.g. {sorted(ids)[:3]}")
    return found


if __name__ == "__main__":
    asyncio.run(follow(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])))
