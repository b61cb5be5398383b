"""Public reads cost what the server decides, not what callers want: one computation at a time
per key however many ask, at most a few a second for a popular key, on a thread budget of their
own; leaderboards a page at a time; report reads limited per caller."""

from __future__ import annotations

import asyncio
import base64
import inspect
import threading
import time
from collections.abc import Callable

import anyio
import anyio.to_thread
import pytest
from fastapi.routing import APIRoute

from api.app import ROUTERS
from api.openapi import dependency_calls
from api.public import SharedReads
from api.routes.games import game_routers
from api.routes.standings import BOARD_PAGE_MOST
from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain
from infra.ratelimit import LocalLimiter

CAT = b"0 0 2 0 cat\n"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counting(
    value: object = "answer", seconds: float = 0.0
) -> tuple[Callable[[], object], list[int]]:
    calls: list[int] = []

    def compute() -> object:
        calls.append(1)
        time.sleep(seconds)
        return value

    return compute, calls


# -- the shared reads themselves ----------------------------------------------------------------


def test_two_hundred_callers_at_once_share_one_computation() -> None:
    reads = SharedReads()
    compute, calls = counting(seconds=0.05)

    async def crowd() -> list[object]:
        return await asyncio.gather(*(reads.get("board", compute, fresh=4) for _ in range(200)))

    answers = asyncio.run(crowd())

    assert answers == ["answer"] * 200
    assert len(calls) == 1


def test_a_key_asked_often_is_answered_from_its_last_computation_until_the_window_ends() -> None:
    clock = Clock()
    reads = SharedReads(monotonic=clock, window=1.0)
    compute, calls = counting()

    async def ask(times: int) -> None:
        for _ in range(times):
            await reads.get("board", compute, fresh=3)

    asyncio.run(ask(50))
    assert len(calls) == 3  # the first three of the window fresh, the rest shared
    clock.now = 1.5
    asyncio.run(ask(1))
    assert len(calls) == 4  # a new window: fresh again


def test_a_key_asked_rarely_is_computed_afresh_every_time() -> None:
    clock = Clock()
    reads = SharedReads(monotonic=clock)
    compute, calls = counting()

    async def ask() -> None:
        for _ in range(3):
            await reads.get("board", compute, fresh=3)

    asyncio.run(ask())
    assert len(calls) == 3


def test_fresh_zero_caches_every_answer_for_the_window() -> None:
    clock = Clock()
    reads = SharedReads(monotonic=clock)
    compute, calls = counting()

    async def ask() -> None:
        for _ in range(10):
            await reads.get("readyz", compute)

    asyncio.run(ask())
    assert len(calls) == 1


def test_a_failure_answers_the_window_and_is_tried_again_after_it() -> None:
    clock = Clock()
    reads = SharedReads(monotonic=clock)
    calls: list[int] = []

    def failing() -> object:
        calls.append(1)
        raise RuntimeError("store down")

    async def ask() -> None:
        for _ in range(5):
            with pytest.raises(RuntimeError, match="store down"):
                await reads.get("board", failing)

    asyncio.run(ask())
    assert len(calls) == 1
    clock.now = 2.0
    asyncio.run(ask())
    assert len(calls) == 2


def test_forgetting_a_key_computes_it_afresh() -> None:
    reads = SharedReads()
    compute, calls = counting()

    async def ask() -> None:
        await reads.get("contest", compute)
        reads.forget("contest")
        await reads.get("contest", compute)

    asyncio.run(ask())
    assert len(calls) == 2


def test_public_reads_are_answered_while_every_thread_of_the_default_pool_is_taken() -> None:
    async def main() -> object:
        default = anyio.to_thread.current_default_thread_limiter()
        default.total_tokens = 1
        async with default:  # the pool uploads use, exhausted
            with anyio.fail_after(5):
                return await SharedReads(threads=2).get("board", lambda: 42)

    assert anyio.run(main) == 42


def test_public_computations_never_run_more_at_once_than_their_budget() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def compute() -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return 1

    reads = SharedReads(threads=2)

    async def crowd() -> None:
        await asyncio.gather(*(reads.get(n, compute) for n in range(10)))

    asyncio.run(crowd())
    assert most == 2


def test_remembered_keys_are_bounded() -> None:
    reads = SharedReads(keys_most=10)

    async def ask() -> None:
        for n in range(100):
            await reads.get(("leaderboard", str(n)), lambda: None)

    asyncio.run(ask())
    assert len(reads._entries) <= 10


# -- the routes ---------------------------------------------------------------------------------


def test_public_routes_and_their_dependencies_take_no_thread_from_the_default_pool() -> None:
    routes = [
        route
        for router in (*ROUTERS, *game_routers())
        for route in router.routes
        if isinstance(route, APIRoute) and {"public", "health"} & set(route.tags)
    ]
    assert {route.path for route in routes} >= {
        "/v1/contests/{contest}/leaderboard", "/readyz", "/metrics", "/v1/contests",
    }  # fmt: skip
    for route in routes:
        assert inspect.iscoroutinefunction(route.endpoint), route.path
        for call in dependency_calls(route.dependant):
            assert inspect.iscoroutinefunction(call), (route.path, call)


def judged_teams(pipe: Pipeline, count: int) -> list[TeamLogin]:
    teams = [pipe.add_team(f"team{n:02d}") for n in range(count)]
    for team in teams:
        pipe.accepted(team, CAT)
    drain(pipe.services)
    return teams


def test_the_leaderboard_comes_a_page_at_a_time_with_a_link_to_the_next(pipe: Pipeline) -> None:
    judged_teams(pipe, 5)

    first = pipe.client.get("/v1/contests/open/leaderboard", params={"limit": 2}).json()
    second = pipe.client.get(first["next"]).json()
    last = pipe.client.get(second["next"]).json()

    assert [len(page["entries"]) for page in (first, second, last)] == [2, 2, 1]
    assert first["next"] == "/v1/contests/open/leaderboard?offset=2&limit=2"
    assert last["next"] is None
    names = [e["team"] for page in (first, second, last) for e in page["entries"]]
    assert sorted(names) == [f"team{n:02d}" for n in range(5)]


def test_a_leaderboard_page_larger_than_the_cap_is_refused(pipe: Pipeline) -> None:
    response = pipe.client.get(
        "/v1/contests/open/leaderboard", params={"limit": BOARD_PAGE_MOST + 1}
    )

    assert response.status_code == 422


def test_many_leaderboard_readers_cost_a_few_computations(pipe: Pipeline) -> None:
    judged_teams(pipe, 2)
    calls: list[int] = []
    standings = pipe.services.store.standings

    def counted(contest: object) -> object:
        calls.append(1)
        return standings(contest)  # type: ignore[arg-type]

    pipe.services.store.standings = counted  # type: ignore[method-assign]
    for _ in range(40):
        assert pipe.client.get("/v1/contests/open/leaderboard").status_code == 200

    assert 1 <= len(calls) <= 8  # at most four a second, however many read


def test_readyz_checks_its_dependencies_at_most_once_a_second(pipe: Pipeline) -> None:
    pings: list[int] = []
    pipe.services.store.ping = lambda: pings.append(1)  # type: ignore[method-assign]

    answers = {pipe.client.get("/readyz").status_code for _ in range(30)}

    assert answers == {503}  # no Redis in the in-process pipeline
    assert 1 <= len(pings) <= 2


def test_a_team_over_its_report_reads_gets_429(pipe: Pipeline, team: TeamLogin) -> None:
    pipe.services.report_reads = LocalLimiter(2, what="report reads a minute")
    sid = pipe.accepted(team, CAT)["id"]
    drain(pipe.services)
    url = f"/v1/submissions/{sid}/report"

    answers = [pipe.client.get(url, headers=team.headers).status_code for _ in range(3)]

    assert answers == [200, 200, 429]
    assert pipe.client.get(url, headers=ADMIN).status_code == 200  # the limit is per caller


def test_a_malformed_contest_id_is_404_and_remembered_nowhere(pipe: Pipeline) -> None:
    for n in range(20):
        bad = f"{'x' * 100}{n}"
        assert pipe.client.get(f"/v1/contests/{bad}/leaderboard").status_code == 404
        assert pipe.client.get(f"/v1/contests/{bad}").status_code == 404

    assert not [key for key in pipe.services.public._entries if "x" * 100 in str(key)]


def test_closing_a_contest_shows_at_once_on_its_public_page(pipe: Pipeline) -> None:
    for _ in range(10):  # a popular page, answered from its last computation
        assert pipe.client.get("/v1/contests/open").json()["status"] == "open"

    assert pipe.client.post("/v1/contests/open/close", headers=ADMIN).status_code == 200

    assert pipe.client.get("/v1/contests/open").json()["status"] == "closed"


# -- pacing -------------------------------------------------------------------------------------


def test_public_requests_past_a_seconds_worth_wait_their_turn_then_are_refused() -> None:
    reads = SharedReads(rate=10, queue_s=0.5, monotonic=Clock())

    async def crowd() -> list[bool]:
        return await asyncio.gather(*(reads.pace() for _ in range(20)))

    turns = asyncio.run(crowd())

    # Eleven at once (a second's worth, and the one due now), five within half a second.
    assert turns == [True] * 16 + [False] * 4


def test_a_public_request_past_its_pace_gets_503_and_the_probes_still_answer(
    pipe: Pipeline,
) -> None:
    pipe.services.public = SharedReads(rate=1, queue_s=0)

    answers = [pipe.client.get("/v1/contests").status_code for _ in range(3)]
    refused = pipe.client.get("/v1/contests/open/leaderboard")

    assert answers == [200, 200, 503]
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "1"
    assert refused.json()["error"] == "busy"
    assert pipe.client.get("/healthz").status_code == 200
    assert pipe.client.get("/readyz").json()["ready"] is False  # answered (no Redis here)
    assert pipe.client.get("/v1/stats", headers=ADMIN).status_code == 200  # the organiser's


def test_the_organiser_and_a_remembered_team_are_not_paced_with_strangers(
    pipe: Pipeline, team: TeamLogin
) -> None:
    """However many strangers knock, a team following its Contest API feed (Bearer or basic
    credentials) and the organiser's tools go ahead; a token never seen, or made up, waits its
    turn like the public."""
    feed = "/clics/contests/open/event-feed?stream=false"
    assert pipe.client.get(feed, headers=team.headers).status_code == 200  # now remembered
    pipe.services.public = SharedReads(rate=1, queue_s=0)
    for _ in range(2):  # a second's worth of turns, taken
        assert pipe.client.get("/v1/contests").status_code == 200
    basic = "Basic " + base64.b64encode(f"ravens:{team.token}".encode()).decode()

    assert pipe.client.get(feed).status_code == 503
    assert pipe.client.get(feed, headers={"Authorization": "Bearer made-up"}).status_code == 503
    for headers in (team.headers, {"Authorization": basic}, ADMIN) * 3:
        assert pipe.client.get(feed, headers=headers).status_code == 200, headers
    assert pipe.client.get("/v1/contests/open/leaderboard", headers=ADMIN).status_code == 200


def test_a_caller_waiting_on_a_computation_that_is_cancelled_computes_its_own_answer() -> None:
    clock = Clock()
    reads = SharedReads(monotonic=clock, rate=0)
    answers = iter(["old", "never seen", "new"])
    release = threading.Event()

    def compute() -> object:
        answer = next(answers)
        if answer == "never seen":
            release.wait(5)
        return answer

    async def scenario() -> object:
        assert await reads.get("board", compute) == "old"
        clock.now += 10  # the old answer is out of its window
        first = asyncio.create_task(reads.get("board", compute))
        await asyncio.sleep(0.05)  # the first caller is computing
        second = asyncio.create_task(reads.get("board", compute))
        await asyncio.sleep(0.05)  # the second waits on the first's computation
        first.cancel()
        release.set()
        return await second

    assert asyncio.run(scenario()) == "new"
