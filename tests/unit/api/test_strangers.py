"""Strangers cost nothing: a token no team holds is remembered as unknown, a client address
sending them is paced (429 past its turn) while a team's remembered token never is, the Contest
API's viewer uses the same memory and pacing, and the event feed keeps room for teams and the
organiser whatever the anonymous followers; the sign-in throttle's key is the connecting
address whatever X-Forwarded-For a client sends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import Request

from api.clics_feed import FeedHub
from api.routes.dashboard import client_key
from api.strangers import Strangers, TooManyFailures
from core.clics import Role, Viewer
from devstack.testing.pipeline import Pipeline, TeamLogin

ROUTE = "/v1/contests/open/submissions"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingStore:
    """The store, counting the token look-ups asked of it."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.asked = 0

    def team_with_contest(self, token_hash: str) -> Any:
        self.asked += 1
        return self._store.team_with_contest(token_hash)


def strict(pipe: Pipeline) -> tuple[Clock, CountingStore]:
    """One look-up a second per failing address, no waiting: the pacing made deterministic."""
    clock = Clock()
    pipe.services.strangers = Strangers(per_address=1, overall=10, queue_s=0, monotonic=clock)
    counting = CountingStore(pipe.store)
    pipe.services.uploaders._store = counting  # type: ignore[assignment]
    return clock, counting


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}


# -- pacing ---------------------------------------------------------------------------------


def test_an_address_that_failed_is_paced_and_refused_past_its_turn() -> None:
    clock = Clock()
    strangers = Strangers(per_address=2, overall=100, queue_s=0, monotonic=clock)

    async def run() -> None:
        for _ in range(5):
            await strangers.turn("a")  # never failed: never paced
        strangers.failed("a")
        for _ in range(3):  # a second's worth at once, and the turn due now
            await strangers.turn("a")
        with pytest.raises(TooManyFailures) as refused:
            await strangers.turn("a")
        assert refused.value.status == 429 and refused.value.headers == {"Retry-After": "1"}
        await strangers.turn("b")  # another address is not paced
        clock.now += 1.0
        await strangers.turn("a")  # its turn has come

    asyncio.run(run())


def test_all_failing_addresses_share_one_budget_and_a_fresh_one_is_never_paced() -> None:
    clock = Clock()
    strangers = Strangers(per_address=100, overall=1, queue_s=0, monotonic=clock)

    async def run() -> None:
        strangers.failed("a")
        strangers.failed("b")
        await strangers.turn("a")  # the overall second's worth
        await strangers.turn("b")
        with pytest.raises(TooManyFailures):
            await strangers.turn("b")
        await strangers.turn("c")

    asyncio.run(run())


def test_the_addresses_remembered_are_bounded() -> None:
    strangers = Strangers(most=3, monotonic=Clock())
    for n in range(10):
        strangers.failed(f"10.0.0.{n}")
    assert len(strangers._next) <= 3


# -- over the API ---------------------------------------------------------------------------


def test_an_unknown_token_retried_costs_one_look_up(pipe: Pipeline) -> None:
    clock, counting = strict(pipe)
    first = pipe.client.post(ROUTE, content=b"x", headers=bearer("tj_made_up"))
    clock.now += 10  # its turns come: only the memory is tested here
    second = pipe.client.post(ROUTE, content=b"x", headers=bearer("tj_made_up"))

    assert (first.status_code, second.status_code) == (401, 401)
    assert counting.asked == 1


def test_random_tokens_from_one_address_are_refused_429_without_a_look_up_and_a_team_goes_on(
    pipe: Pipeline, team: TeamLogin
) -> None:
    assert pipe.upload(team, b"-1 0 1 0 cat\n").status_code == 202  # its token remembered
    _, counting = strict(pipe)
    answers = [
        pipe.client.post(ROUTE, content=b"x", headers=bearer(f"tj_guess_{n}")).status_code
        for n in range(10)
    ]

    # The first failure, then a second's worth of the address's turns and the one due now.
    assert answers[:3] == [401, 401, 401]
    assert set(answers[3:]) == {429}
    assert counting.asked == 3
    refused = pipe.client.post(ROUTE, content=b"x", headers=bearer("tj_guess_more"))
    assert refused.json()["error"] == "rate_limited" and "retry-after" in refused.headers
    assert pipe.upload(team, b"-1 0 1 0 tab\n").status_code == 202  # same address, not paced


def test_the_contest_api_viewer_uses_the_same_memory_and_pacing(pipe: Pipeline) -> None:
    _, counting = strict(pipe)
    answers = [
        pipe.client.get("/clics/contests/open", headers={"Authorization": f"Bearer tj_{n}"})
        for n in range(6)
    ]

    assert [a.status_code for a in answers[:3]] == [401, 401, 401]
    assert {a.status_code for a in answers[3:]} == {429}
    assert answers[-1].json()["code"] == 429
    assert counting.asked == 3


# -- event-feed followers -------------------------------------------------------------------


def hub_of(pipe: Pipeline, most: int) -> FeedHub:
    hub = pipe.services.clics_feed
    assert hub is not None
    hub.most = most
    return hub


def test_an_anonymous_flood_of_followers_never_refuses_a_team_or_the_organiser(
    pipe: Pipeline, team: TeamLogin
) -> None:
    hub = hub_of(pipe, 10)
    for n in range(20):  # each from an address of its own, until anonymous ones are refused
        if hub.refusal(Viewer(), f"10.0.0.{n}") is None:
            hub.hold(Viewer(), f"10.0.0.{n}")

    busy = pipe.client.get("/clics/contests/open/event-feed")
    assert busy.status_code == 503 and "anonymous" in busy.json()["message"]
    assert hub.refusal(Viewer(Role.TEAM, team.id), "10.0.0.1") is None
    assert hub.refusal(Viewer(Role.ADMIN), "10.0.0.1") is None
    for n in range(3):  # teams fill their share: the organiser still has room
        hub.hold(Viewer(Role.TEAM, f"t{n}"), "10.0.0.1")
    assert hub.refusal(Viewer(Role.TEAM, "another"), "10.0.0.1") is not None
    assert hub.refusal(Viewer(Role.ADMIN), "10.0.0.1") is None


def test_one_address_follows_at_most_its_share(pipe: Pipeline) -> None:
    hub = hub_of(pipe, 100)
    for _ in range(hub.per_holder()):
        assert hub.refusal(Viewer(), "10.0.0.9") is None
        hub.hold(Viewer(), "10.0.0.9")

    assert "this address" in (hub.refusal(Viewer(), "10.0.0.9") or "")
    assert hub.refusal(Viewer(), "10.0.0.10") is None
    hub.let_go(Viewer(), "10.0.0.9")
    assert hub.refusal(Viewer(), "10.0.0.9") is None


def test_a_streaming_follower_counts_while_it_follows_and_not_after(pipe: Pipeline) -> None:
    hub = hub_of(pipe, 10)
    contest = pipe.store.get_contest("open")
    assert contest is not None

    async def run() -> None:
        feed = hub.follow(contest, Viewer(), 0, None, True, "10.0.0.5")
        await anext(feed)
        assert hub._holders["address 10.0.0.5"] == 1
        await feed.aclose()  # type: ignore[attr-defined]
        assert hub._holders["address 10.0.0.5"] == 0 and hub._audiences[Role.PUBLIC] == 0

    asyncio.run(run())


# -- the sign-in throttle's key ---------------------------------------------------------------


def test_the_sign_in_key_is_the_connecting_address_whatever_forwarded_for_says() -> None:
    def request(host: str, **headers: str) -> Request:
        raw = [(k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        return Request({"type": "http", "client": (host, 1234), "headers": raw})

    plain = client_key(request("203.0.113.7"))
    assert client_key(request("203.0.113.7", X_Forwarded_For="10.9.9.9")) == plain
    assert client_key(request("203.0.113.7", X_Real_IP="10.9.9.9")) == plain
    assert client_key(request("203.0.113.8")) != plain
