"""The Redis-backed adapters against a real Redis: the upload rate limiter, the daily byte
counts of the storage quota and the Celery publisher, while Redis is up and after it stops."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from celery import Celery
from kombu.utils import json as kombu_json

from core.errors import PublishFailed, Throttled
from core.messages import JUDGE_GROUP_TASK, KEPT_MARK, LIVE_QUEUE, carried, unpack_group
from core.quota import Charge
from core.tuning import GROUP_INLINE, GROUP_MOST, INLINE_LIMIT, KEPT_UPLOAD_TTL_S
from devstack.process import Service
from devstack.redis_server import start_redis
from infra import broker_copies
from infra.compose import make_celery, make_redis
from infra.publisher import CeleryPublisher
from infra.quota import KEEP_COUNT_S, RedisDailyBytes, daily_key
from infra.ratelimit import RateLimiter
from infra.settings import Settings
from tests.connect_counts import connects_to

pytestmark = pytest.mark.integration

# An outage must not hold an upload: a Redis client gives up after a bounded number of
# connection attempts, each refused at once (counted, not timed: `tests.connect_counts`). A
# command is tried on its connection and once more on a new one (`infra.compose.make_redis`).
CONNECTS_A_CALL = 2
# Publishing finds its pooled connection dead, then connects afresh a bounded number of times.
CONNECTS_A_PUBLISH = 3


def settings_for(url: str) -> Settings:
    return Settings.from_env({"REDIS_URL": url})


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    with make_redis(settings_for(redis_url)) as connection:
        yield connection


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Service]:
    """A Redis this test may stop (the session's one stays up for the others)."""
    with start_redis(tmp_path / "redis") as service:
        yield service


@pytest.fixture
def celery_app(redis_url: str) -> Iterator[Celery]:
    app = make_celery(settings_for(redis_url))
    yield app
    app.close()


class Clock:
    """The limiter's clock, moved by the test: a run never depends on where in a minute it is."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, start: float) -> None:
        self.now = start
        monkeypatch.setattr("infra.ratelimit.time", SimpleNamespace(time=lambda: self.now))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    # Just before a minute's boundary, where a fixed window would open a fresh allowance.
    return Clock(monkeypatch, start=(time.time() // 60) * 60 + 59.5)


# -- the rate limiter ---------------------------------------------------------------------------


def test_the_fourth_upload_in_a_minute_is_refused_until_the_first_is_a_minute_old(
    client: redis.Redis, clock: Clock
) -> None:
    limiter = RateLimiter(client, per_minute=3)
    for _ in range(3):
        limiter.check("team-a")
        clock.now += 10

    with pytest.raises(Throttled) as refused:
        limiter.check("team-a")

    assert refused.value.retry_after == 30  # the first upload leaves the window in 30 s
    assert "at most 3 uploads a minute" in str(refused.value)
    key = "tilejudge:rate:team-a"
    assert client.zcard(key) == 3  # refused attempts are not recorded
    assert 0 < client.pttl(key) <= 60_000  # a quiet team's log expires rather than piles up


def test_each_team_has_its_own_allowance(client: redis.Redis, clock: Clock) -> None:
    limiter = RateLimiter(client, per_minute=3)
    for _ in range(3):
        limiter.check("team-a")
    with pytest.raises(Throttled):
        limiter.check("team-a")

    for _ in range(3):
        limiter.check("team-b")


def test_the_allowance_comes_back_a_minute_after_the_upload_that_used_it(
    client: redis.Redis, clock: Clock
) -> None:
    limiter = RateLimiter(client, per_minute=1)
    limiter.check("team-a")
    clock.now += 0.5  # past the calendar minute's boundary
    with pytest.raises(Throttled) as refused:
        limiter.check("team-a")
    assert refused.value.retry_after == 60

    clock.now += 59.6
    limiter.check("team-a")


def test_no_sixty_second_span_admits_more_than_the_limit_across_a_minute_boundary(
    client: redis.Redis, clock: Clock
) -> None:
    limiter = RateLimiter(client, per_minute=60)
    admitted: list[float] = []
    for _ in range(300):  # 3 s of attempts, 100 a second, straddling the boundary
        try:
            limiter.check("team-a")
            admitted.append(clock.now)
        except Throttled:
            pass
        clock.now += 0.01

    clock.now += 60  # and a second burst once the first has left the window
    for _ in range(100):
        try:
            limiter.check("team-a")
            admitted.append(clock.now)
        except Throttled:
            pass
        clock.now += 0.01

    assert len(admitted) == 120
    for i, first in enumerate(admitted):
        assert sum(1 for t in admitted[i:] if t < first + 60) <= 60


def test_with_redis_stopped_the_limiter_lets_uploads_through(
    own_redis: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_redis(settings_for(own_redis.url)) as connection:
        limiter = RateLimiter(connection, per_minute=1)
        limiter.check("team-a")
        own_redis.stop()

        tried = connects_to(own_redis.port, monkeypatch)
        for _ in range(3):
            limiter.check("team-a")  # over the limit, but the count cannot be kept: fail open

        assert len(tried) <= 3 * CONNECTS_A_CALL


# -- the storage quota's daily byte counts ------------------------------------------------------


def test_a_days_byte_count_refuses_a_charge_that_would_pass_the_limit_and_expires(
    client: redis.Redis,
) -> None:
    counts = RedisDailyBytes(client)
    day = "2030-01-01"
    assert counts.add_within(Charge("team-a", day, 60), 100)
    assert counts.add_within(Charge("team-a", day, 40), 100)

    assert not counts.add_within(Charge("team-a", day, 1), 100)

    key = daily_key(Charge("team-a", day, 0))
    assert client.get(key) == b"100"  # the refused charge is not counted
    assert KEEP_COUNT_S * 1000 - 60_000 < client.pttl(key) <= KEEP_COUNT_S * 1000
    assert counts.add_within(Charge("team-b", day, 100), 100)  # a team of its own
    assert counts.add_within(Charge("team-a", "2030-01-02", 500), 100)  # a day's first


def test_a_subtracted_charge_makes_room_and_the_count_never_goes_below_zero(
    client: redis.Redis,
) -> None:
    counts = RedisDailyBytes(client)
    charge = Charge("team-a", "2030-01-01", 80)
    counts.add_within(charge, 100)
    counts.subtract(charge)
    counts.subtract(charge)

    key = daily_key(charge)
    assert client.get(key) == b"0"
    assert client.pttl(key) > 0  # the expiry is kept
    assert counts.add_within(Charge("team-a", "2030-01-01", 100), 100)


def test_with_redis_stopped_the_byte_counts_let_uploads_through(
    own_redis: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_redis(settings_for(own_redis.url)) as connection:
        counts = RedisDailyBytes(connection)
        assert counts.add_within(Charge("team-a", "2030-01-01", 100), 100)
        own_redis.stop()

        tried = connects_to(own_redis.port, monkeypatch)
        assert counts.add_within(Charge("team-a", "2030-01-01", 100), 100)  # fail open
        counts.subtract(Charge("team-a", "2030-01-01", 100))

        assert len(tried) <= 2 * CONNECTS_A_CALL


# -- the Celery publisher -----------------------------------------------------------------------


def live_messages(client: redis.Redis) -> list[dict[str, Any]]:
    """The messages waiting in the `live` list (kombu's Redis transport pushes on the left)."""
    raw = client.lrange(LIVE_QUEUE, 0, -1)
    return [kombu_json.loads(message) for message in reversed(raw)]


def task_args(message: dict[str, Any]) -> list[Any]:
    assert message["properties"]["body_encoding"] is None  # the body as it is, not base64
    args, kwargs, _embed = json.loads(message["body"])
    assert kwargs == {}
    return list(args)


def test_a_message_with_a_base64_body_as_published_before_still_reads(
    celery_app: Celery, client: redis.Redis
) -> None:
    """Messages queued by an intake that base64-encoded the body (kombu's default) are read
    by its own property after an upgrade: the two kinds mix in a queue."""
    before = make_celery(settings_for(celery_app.conf.broker_url))
    before.conf.broker_transport_options = {
        **before.conf.broker_transport_options,
        "body_encoding": "base64",
    }
    try:
        CeleryPublisher(before).publish_group([("old", b"0 0 2 0 cat\n")])
    finally:
        before.close()
    CeleryPublisher(celery_app).publish_group([("new", b"0 0 2 0 dog\n")])

    raw = list(reversed(client.lrange(LIVE_QUEUE, 0, -1)))
    assert [kombu_json.loads(m)["properties"]["body_encoding"] for m in raw] == ["base64", None]
    with celery_app.connection_for_read() as connection:
        channel = connection.default_channel
        bodies = [channel.Message(kombu_json.loads(m), channel=channel).decode() for m in raw]
    assert [(args[0], unpack_group(args[0], args[1])) for args, _, _ in bodies] == [
        (["old"], {"old": b"0 0 2 0 cat\n"}),
        (["new"], {"new": b"0 0 2 0 dog\n"}),
    ]


def test_a_published_submission_lands_in_the_live_queue_with_its_bytes_inline(
    celery_app: Celery, client: redis.Redis
) -> None:
    data = b"0 0 2 0 cat\n"

    CeleryPublisher(celery_app).publish("sub-1", data)

    assert client.llen(LIVE_QUEUE) == 1
    [message] = live_messages(client)
    assert message["headers"]["task"] == JUDGE_GROUP_TASK
    assert message["content-type"] == "application/json"
    assert task_args(message) == [["sub-1"], ["~0 0 2 0 cat\n"]]  # text as text


def test_uploads_up_to_the_inline_limit_ride_along_and_larger_ones_or_none_do_not(
    celery_app: Celery, client: redis.Redis
) -> None:
    publisher = CeleryPublisher(celery_app)
    at_limit, above_limit = b"a" * INLINE_LIMIT, b"a" * (INLINE_LIMIT + 1)

    publisher.publish("at-limit", at_limit)
    publisher.publish("above-limit", above_limit)
    publisher.publish("from-the-sweeper")

    assert client.llen(LIVE_QUEUE) == 3
    assert [task_args(m) for m in live_messages(client)] == [
        [["at-limit"], [carried(at_limit)]],
        [["above-limit"], [None]],
        [["from-the-sweeper"], [None]],
    ]


def test_a_group_goes_out_a_few_uploads_to_a_message_in_one_round_trip_with_bytes_inline_up_to_a_budget(
    celery_app: Celery, client: redis.Redis
) -> None:
    big = b"m" * INLINE_LIMIT  # four of them fill one message's budget
    assert 4 * INLINE_LIMIT == GROUP_INLINE
    group: list[tuple[str, bytes | None]] = [
        (f"s{n}", big if n < 4 else b"small") for n in range(GROUP_MOST + 2)
    ]
    group.append(("no-bytes", None))
    publisher = CeleryPublisher(celery_app)
    publisher.publish("warm-up")  # the connection's setup and the queue's declaration
    client.delete(LIVE_QUEUE)
    commands_before = client.info("stats")["total_commands_processed"]

    publisher.publish_group(group, spread=2)

    commands = client.info("stats")["total_commands_processed"] - commands_before
    assert commands == 2 + 1  # an LPUSH a message, nothing else (and the INFO asking)
    messages = [task_args(m) for m in live_messages(client)]
    assert all(m["headers"]["task"] == JUDGE_GROUP_TASK for m in live_messages(client))
    half = -(-len(group) // 2)
    assert [ids for ids, _ in messages] == [
        [sid for sid, _ in group[:half]],
        [sid for sid, _ in group[half:]],
    ]  # GROUP_MOST + 3 uploads: two messages (spread 2) of at most GROUP_MOST, in order
    first, second = messages[0][1], messages[1][1]
    assert first[:4] == [carried(big)] * 4
    assert first[4:] == [None] * (half - 4)  # over the message's budget: the worker reads S3
    small = [unpack_group(["s"], [b])["s"] for b in second[:-1]]
    assert small == [b"small"] * (len(group) - half - 1)
    assert second[-1] is None


def test_with_the_brokers_redis_at_hand_bytes_wait_beside_their_messages_for_a_while(
    celery_app: Celery, client: redis.Redis
) -> None:
    data, other = b"0 0 2 0 cat\n", b"0 0 2 0 dog\n"
    group = [("k1", data), ("too-big", b"a" * (INLINE_LIMIT + 1)), ("from-s3", None), ("k2", other)]
    publisher = CeleryPublisher(celery_app, client)
    publisher.publish("warm-up")  # the connection's setup and the queue's declaration
    client.delete(LIVE_QUEUE)
    commands_before = client.info("stats")["total_commands_processed"]

    publisher.publish_group(group, spread=2)

    commands = client.info("stats")["total_commands_processed"] - commands_before
    assert commands == 2 + 2 + 1  # a SET an upload kept, an LPUSH a message (and the INFO)
    assert [task_args(m) for m in live_messages(client)] == [
        [["k1", "too-big"], [KEPT_MARK, None]],
        [["from-s3", "k2"], [None, KEPT_MARK]],
    ]
    assert broker_copies.kept(client, ["k1", "too-big", "from-s3", "k2"]) == {
        "k1": data,
        "k2": other,
    }
    assert 0 < client.ttl(broker_copies.UPLOAD_KEY + "k1") <= KEPT_UPLOAD_TTL_S
    broker_copies.drop(client, ["k1"])
    assert broker_copies.kept(client, ["k1", "k2"]) == {"k2": other}


@pytest.mark.parametrize("beside", [False, True], ids=["bytes in the message", "kept beside"])
def test_with_redis_stopped_publishing_fails_quickly_every_time(
    own_redis: Service, beside: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_celery(settings_for(own_redis.url))
    try:
        copies = make_redis(settings_for(own_redis.url)) if beside else None
        publisher = CeleryPublisher(app, copies)
        publisher.publish("before-the-outage", b"data")
        own_redis.stop()

        # The first call finds its pooled connection dead; later ones must connect afresh.
        for n in range(2):
            tried = connects_to(own_redis.port, monkeypatch)
            with pytest.raises(PublishFailed):
                publisher.publish(f"during-the-outage-{n}", b"data")
            assert len(tried) <= CONNECTS_A_PUBLISH, f"publish {n} tried {len(tried)} times"
    finally:
        app.close()
