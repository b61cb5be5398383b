"""Fifty clients follow a contest's CLICS event feed through an upload spike against a real
stack (two API processes, from 127.0.0.1), and each ends with exactly the final state the REST
endpoints serve, in order: no event missed, none before what it refers to, tokens rising.

The test sends UPLOADS uploads to keep the suite's time modest; `benchmarks/clics_feed_bench.py`
sends the full 5,000 and measures what the followers cost intake."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.burst import run_burst
from devstack.load import prepare
from devstack.plan import Plan, build_corpus
from devstack.proof import event_mark, follow_events
from devstack.testing.clics_followers import (
    differences,
    events_of,
    final_state,
    following,
    order_problems,
)
from devstack.testing.stack_process import running_stack
from devstack.testing.word_lists import cached_list
from judge import Lexicon

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UPLOADS, FOLLOWERS, TEAMS = 1000, 50, 20
KINDS = ("teams", "submissions", "judgements", "problems")
CONVERGE_S = 60.0
# As the intake benchmarks run the stack: no rate limit, no daily byte quota, two API processes.
STACK_ENV = {
    "TILEJUDGE_RATE_LIMIT": "1000000",
    "TILEJUDGE_TEAM_BYTES_PER_DAY": "0",
    "TILEJUDGE_API_WORKERS": "2",
}


def _rest(http: httpx.Client, contest: str) -> dict[str, list[dict[str, Any]]]:
    return {kind: http.get(f"/clics/contests/{contest}/{kind}").json() for kind in KINDS}


def _wrong(feeds: Path, rest: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    found = {}
    for path in sorted(feeds.glob("*.ndjson")):
        events = events_of(path)
        if problems := order_problems(events) + differences(final_state(events), rest):
            found[path.name] = problems
    return found


def test_fifty_followers_of_the_event_feed_miss_nothing_during_an_upload_spike(
    tmp_path: Path,
) -> None:
    lexicon = Lexicon.from_bytes(cached_list("words_alpha.txt").read_bytes())
    with (
        running_stack(tmp_path / "home", workers=2, env=STACK_ENV) as stack,
        httpx.Client(base_url=stack.url, timeout=60) as http,
    ):
        plan = Plan(url=stack.url, contest="spike", uploads=UPLOADS, concurrency=50, teams=TEAMS,
                    admin_token=stack.admin_token, timeout=600, moves=30)  # fmt: skip
        tokens = prepare(http, plan, lexicon)
        corpus = build_corpus(lexicon, plan)
        mark = event_mark(http, plan)
        with following(stack.url, plan.contest, FOLLOWERS, tmp_path / "feeds") as feeds:
            burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
            ids = [u.submission for u in burst.acknowledged if u.submission]
            assert len(ids) == UPLOADS, burst.outcomes()
            follow_events(http, plan, mark, ids, time.monotonic() + plan.timeout)
            time.sleep(1.1)  # past the second public reads are shared for
            rest = _rest(http, plan.contest)
            assert len(rest["judgements"]) == UPLOADS
            deadline = time.monotonic() + CONVERGE_S
            while (wrong := _wrong(feeds, rest)) and time.monotonic() < deadline:
                time.sleep(2)
        assert len(list(feeds.glob("*.ndjson"))) == FOLLOWERS
        assert not wrong, {name: problems[:3] for name, problems in list(wrong.items())[:3]}
