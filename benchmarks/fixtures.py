"""What the benchmarks share: the shared word lists, a whole stack in a temporary home, and a
contest with its teams made through the HTTP API as an organiser would."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from core import clock
from devstack.plan import Plan
from devstack.testing.stack_process import RunningStack, running_stack
from devstack.testing.word_lists import cached_list
from judge import Lexicon

JUDGE_LIST = "words_alpha.txt"
BEFORE_FIX = "words_alpha_2020-08-24.txt"


def shared_lexicon(name: str = JUDGE_LIST) -> Lexicon:
    return Lexicon.from_bytes(cached_list(name).read_bytes())


@contextmanager
def bench_stack(
    prefix: str, workers: int, env: Mapping[str, str] | None = None
) -> Iterator[RunningStack]:
    """`tilejudge up` in a fresh temporary home, removed afterwards."""
    with (
        tempfile.TemporaryDirectory(prefix=prefix) as home,
        running_stack(Path(home), workers=workers, env=dict(env or {})) as stack,
    ):
        yield stack


def open_contest(
    http: httpx.Client,
    stack: RunningStack,
    *,
    contest: str = "bench",
    lists: Mapping[str, bytes] | None = None,
    lexicon: str = "words_alpha",
    teams: int = 1,
) -> list[str]:
    """Register word lists by name (default: the judge's list as "words_alpha"; none for an
    empty mapping, when they are registered already), open a contest on `lexicon` for a day,
    and add `teams` teams; their tokens."""
    if lists is None:
        lists = {"words_alpha": cached_list(JUDGE_LIST).read_bytes()}
    for name, words in lists.items():
        http.post(
            "/v1/lexicons",
            params={"name": name},
            content=words,
            headers=stack.admin | {"content-type": "text/plain"},
        ).raise_for_status()
    now = datetime.now(UTC)
    body = {
        "id": contest,
        "title": contest.title(),
        "lexicon": lexicon,
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(days=1)),
    }
    http.post("/v1/contests", json=body, headers=stack.admin).raise_for_status()
    return [
        http.post(
            f"/v1/contests/{contest}/teams", json={"name": f"t{n}"}, headers=stack.admin
        ).json()["token"]
        for n in range(teams)
    ]


# Every upload still passes the rate limit (a Redis round trip), set too high to refuse any of
# a benchmark's bursts; with UNLIMITED the daily storage quota is off as well.
UNLIMITED_RATE = {"TILEJUDGE_RATE_LIMIT": "1000000"}
UNLIMITED = UNLIMITED_RATE | {"TILEJUDGE_TEAM_BYTES_PER_DAY": "0"}


@contextmanager
def intake_stack(prefix: str, api_workers: int) -> Iterator[RunningStack]:
    """A stack for intake's benchmarks: no rate limit, `api_workers` API processes, 2 workers."""
    env = UNLIMITED | api_workers_env(api_workers)
    with bench_stack(prefix, workers=2, env=env) as stack:
        yield stack


def burst_plan(
    stack: RunningStack,
    contest: str,
    *,
    uploads: int,
    concurrency: int,
    teams: int,
    moves: int,
    timeout: float,
) -> Plan:
    """A load generator's burst against the stack, as `tilejudge load` plans one."""
    return Plan(
        url=stack.url,
        contest=contest,
        uploads=uploads,
        concurrency=concurrency,
        teams=teams,
        admin_token=stack.admin_token,
        timeout=timeout,
        moves=moves,
    )


def api_workers_option(parser: argparse.ArgumentParser, default: int | None = None) -> None:
    """--api-workers: how many API processes the stack runs; by default `default`, or as many
    as `tilejudge up` starts (None)."""
    shown = "as `tilejudge up` starts" if default is None else str(default)
    parser.add_argument(
        "--api-workers", type=int, default=default, help=f"API processes (default: {shown})"
    )


def api_workers_env(api_workers: int | None) -> dict[str, str]:
    """The stack's environment for `api_workers` API processes; nothing for the default."""
    return {"TILEJUDGE_API_WORKERS": str(api_workers)} if api_workers else {}


def burst_arguments(parser: argparse.ArgumentParser, uploads: int) -> None:
    """The options every intake benchmark takes: how many uploads, how many at once, and how
    many API processes take them."""
    parser.add_argument("--uploads", type=int, default=uploads)
    parser.add_argument("--concurrency", type=int, default=200)
    api_workers_option(parser, default=2)
