"""Which worker hosts take rejudge batches of their own (`infra.bulk_hosts`), on a real Redis:
the hosts that said they are up, the queue a batch held on one goes to, the order a worker
consumes the hosts' queues in, and the bulk depth the dashboard reads."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from core.messages import BULK_QUEUE, REJUDGE_BATCH_TASK
from infra.bulk_hosts import (
    HOSTS_KEY,
    UP_WITHIN_S,
    BulkHosts,
    announce,
    keep_announcing,
    up_hosts,
)
from infra.publisher import CeleryPublisher
from infra.queues import queue_depths

pytestmark = pytest.mark.integration

WAIT_S = 60.0  # catches a hang; the thread below turns every 50 ms


@pytest.fixture
def client(redis_url: str) -> Any:
    with redis.Redis.from_url(redis_url) as found:
        yield found


def test_a_host_is_up_while_heard_of_lately_and_forgotten_after_a_day(client: Any) -> None:
    now = time.time()
    client.hset(HOSTS_KEY, "gone", repr(now - 2 * 86400))
    client.hset(HOSTS_KEY, "quiet", repr(now - UP_WITHIN_S - 1))
    announce(client, "h1", now)

    assert up_hosts(client, now) == ["h1"]
    assert sorted(client.hkeys(HOSTS_KEY)) == [b"h1", b"quiet"]


def test_a_batch_goes_to_its_holders_queue_if_it_is_up_else_to_the_shared_one(
    client: Any,
) -> None:
    announce(client, "h1")
    hosts = BulkHosts(client)

    assert hosts.queue_for("h1") == "bulk.h1"
    assert hosts.queue_for("h2") == BULK_QUEUE  # never heard of
    assert hosts.queue_for(None) == BULK_QUEUE  # no holder known


def test_no_redis_sends_every_batch_to_the_shared_queue() -> None:
    with redis.Redis(port=1, socket_connect_timeout=0.2) as nowhere:
        assert BulkHosts(nowhere).queue_for("h1") == BULK_QUEUE


class SentTasks:
    """A Celery app that only notes what it was asked to send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, list[Any], str]] = []

    def send_task(self, name: str, args: list[Any], queue: str, **_: Any) -> None:
        self.sent.append((name, args, queue))


def test_the_publisher_sends_a_batch_to_the_queue_its_holder_has(client: Any) -> None:
    announce(client, "h1")
    app = SentTasks()
    publisher = CeleryPublisher(app, hosts=BulkHosts(client))

    publisher.publish_batch("run", ["a"], "h1")
    publisher.publish_batch("run", ["b"], "h9")
    publisher.publish_batch("run", ["c"])
    CeleryPublisher(app).publish_batch("run", ["d"], "h1")  # told of no hosts

    assert app.sent == [
        (REJUDGE_BATCH_TASK, ["run", ["a"]], "bulk.h1"),
        (REJUDGE_BATCH_TASK, ["run", ["b"]], BULK_QUEUE),
        (REJUDGE_BATCH_TASK, ["run", ["c"]], BULK_QUEUE),
        (REJUDGE_BATCH_TASK, ["run", ["d"]], BULK_QUEUE),
    ]


def test_a_worker_consumes_its_hosts_queue_first_then_each_other_host_as_it_comes_up(
    client: Any,
) -> None:
    announce(client, "other")
    asked: list[str] = []
    consumed: list[str] = []

    def consume(queue: str) -> None:
        asked.append(queue)
        if queue != "bulk.other" or asked.count(queue) > 1:  # the first ask for it is lost
            consumed.append(queue)

    stop = threading.Event()
    thread = keep_announcing(client, "mine", consume, consumed.__contains__, every=0.05, stop=stop)
    try:
        wait_for(lambda: len(consumed) >= 2)
        assert consumed == ["bulk.mine", "bulk.other"]
        assert asked == ["bulk.mine", "bulk.other", "bulk.other"]  # asked again until heard
        assert "mine" in up_hosts(client)

        announce(client, "newer")
        wait_for(lambda: len(consumed) >= 3)
        time.sleep(0.2)  # a few more turns: a queue consumed is not asked for again
        assert consumed == ["bulk.mine", "bulk.other", "bulk.newer"]
        assert len(asked) == 4
    finally:
        stop.set()
        thread.join(WAIT_S)


def test_the_bulk_depth_counts_the_hosts_queues_each_also_by_host(client: Any) -> None:
    announce(client, "h1")
    announce(client, "h2")
    client.lpush("bulk.h1", "m1", "m2")
    client.lpush(BULK_QUEUE, "m3")

    depths = queue_depths(client)

    assert depths[BULK_QUEUE]["depth"] == 3
    assert depths[BULK_QUEUE]["by_host"] == {"h1": 2, "h2": 0}
    assert depths["total"] == 3


def wait_for(done: Any) -> None:
    """Until `done()`: a hang is the test timeout's to catch."""
    while not done():
        time.sleep(0.02)
