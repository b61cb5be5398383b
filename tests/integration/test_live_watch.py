"""The live watch wakes as soon as a live upload is queued, on a real Redis, and never moves,
hides or takes the upload from the worker that consumes it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.exceptions import ResponseError

from workers import live_watch
from workers.live_watch import LiveWatch

pytestmark = pytest.mark.integration

QUEUE = "live"


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url, socket_timeout=3) as client:
        yield client


def test_a_queued_upload_wakes_the_watch_at_once_and_stays_where_it_was(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "At once" without a clock: the watch is blocked in BLMOVE (not polling) when the upload
    # is pushed, with no re-block due meanwhile, so Redis wakes it with the upload; the wait
    # below is a bound on an event that must come, far beyond the time it takes.
    monkeypatch.setattr(live_watch, "BLOCK_S", 30)
    watch = LiveWatch(client, QUEUE)
    with watch.watching() as queued:
        assert not queued(0)
        wait_for(lambda: blocked_in(client, "blmove"))
        client.lpush(QUEUE, "first", "second", "third")
        assert queued(60)
    assert client.lrange(QUEUE, 0, -1) == [b"third", b"second", b"first"]
    assert client.brpop([QUEUE], timeout=1) == (QUEUE.encode(), b"first")  # still next in line


def test_an_upload_already_queued_is_seen_at_once(client: redis.Redis) -> None:
    client.lpush(QUEUE, "waiting")
    with LiveWatch(client, QUEUE).watching() as queued:
        assert queued(5)
    assert client.lrange(QUEUE, 0, -1) == [b"waiting"]


def test_an_upload_seen_in_an_earlier_watch_counts_only_while_it_is_still_queued(
    client: redis.Redis,
) -> None:
    watch = LiveWatch(client, QUEUE)
    client.lpush(QUEUE, "taken-later")
    with watch.watching() as queued:
        assert queued(5)
    client.delete(QUEUE)  # the worker took it
    with watch.watching() as queued:
        assert not queued(0.3)
        assert not queued(0)
    client.lpush(QUEUE, "still-there")
    with watch.watching() as queued:
        assert queued(5)


def blocked_in(client: redis.Redis, command: str) -> bool:
    return any(c.get("cmd") == command for c in client.client_list())


def wait_for(condition: Any) -> None:
    """Poll until `condition` holds; a hang is the test timeout's to catch."""
    while not condition():
        time.sleep(0.01)


def test_a_consumer_blocked_after_the_watch_still_gets_the_upload(
    client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Redis serves blocked clients in the order they blocked: the watch first. Its BLMOVE puts
    # the upload back, and the worker's BRPOP, blocked behind it, must then get it.
    monkeypatch.setattr(live_watch, "BLOCK_S", 30)  # no re-block between the two
    watch = LiveWatch(client, QUEUE)
    got: list[Any] = []
    with redis.Redis.from_url(redis_url, socket_timeout=10) as consumer, watch.watching() as queued:
        wait_for(lambda: blocked_in(client, "blmove"))
        taker = threading.Thread(target=lambda: got.append(consumer.brpop([QUEUE], 5)))
        taker.start()
        wait_for(lambda: blocked_in(client, "brpop"))
        client.lpush(QUEUE, "upload")
        taker.join()
        assert queued(5)
    assert got == [(QUEUE.encode(), b"upload")]
    assert client.llen(QUEUE) == 0


class NoBlmove(redis.Redis):
    """A broker older than 6.2, as the client sees it; or, with `failure` set, a watch that
    breaks for any other reason."""

    failure: Exception = ResponseError("unknown command 'BLMOVE'")

    def blmove(self, *args: Any, **kwargs: Any) -> Any:
        raise self.failure


@pytest.mark.parametrize(
    "failure",
    [ResponseError("unknown command 'BLMOVE'"), RuntimeError("a bug in the watch")],
    ids=["broker-without-blmove", "watch-broken"],
)
def test_a_watch_that_cannot_block_polls_instead(redis_url: str, failure: Exception) -> None:
    with NoBlmove.from_url(redis_url) as old:
        old.failure = failure
        watch = LiveWatch(old, QUEUE)
        with watch.watching() as queued:
            time.sleep(0.1)  # the thread finds BLMOVE failing
            assert not queued(0.05)
            old.lpush(QUEUE, "upload")
            assert queued(0.05)
        with watch.watching() as queued:  # and no thread starts again
            assert queued(0)
        assert old.lrange(QUEUE, 0, -1) == [b"upload"]
