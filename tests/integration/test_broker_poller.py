"""The worker's broker poller against a real Redis (`infra.broker.Poller`): a descriptor mapped
to the wrong reader, as a socket replaced behind kombu's back leaves it, is dropped and the
channel registered again, so a task message is still read; and the pub/sub channel never waits
on a socket with nothing to read. With kombu's own poller each test waits forever on the
pub/sub socket (the worker seen in the cluster failover test, whose event loop stood still
while it took no task), and the test timeout ends it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest
from kombu import Connection, Consumer, Exchange, Queue

from infra.broker import TRANSPORT

pytestmark = pytest.mark.integration

TRIES = 50  # drain rounds of up to a second each, for one message already in Redis


@pytest.fixture
def consuming(redis_url: str) -> Iterator[tuple[Connection, Any, Queue, list[Any]]]:
    """A consumer of one queue (BRPOP) and of one broadcast (pub/sub), both registered with
    the poller by a first drain."""
    name = f"poller-test-{uuid.uuid4().hex}"
    queue = Queue(name, Exchange(name), routing_key=name)
    broadcast = Queue(f"{name}-all", Exchange(f"{name}-all", type="fanout"))
    connection = Connection(redis_url, transport=TRANSPORT)
    channel = connection.default_channel
    got: list[Any] = []
    consumer = Consumer(
        channel, [queue, broadcast], callbacks=[lambda body, message: got.append(body)]
    )
    consumer.consume()
    with suppress(TimeoutError):  # nothing to deliver yet
        connection.drain_events(timeout=0.2)
    assert (channel, channel.client, "BRPOP") in connection.transport.cycle._chan_to_sock
    try:
        yield connection, channel, queue, got
    finally:
        consumer.cancel()
        connection.release()


def test_a_task_socket_mapped_to_the_pubsub_reader_is_still_read_as_a_task_socket(
    consuming: tuple[Connection, Any, Queue, list[Any]],
) -> None:
    connection, channel, queue, got = consuming
    cycle = connection.transport.cycle
    brpop = cycle._chan_to_sock[(channel, channel.client, "BRPOP")]
    assert cycle._fd_to_chan[brpop.fileno()] == (channel, "BRPOP")
    # What a pub/sub socket replaced behind kombu's back leaves: its old descriptor number,
    # now the task socket's, still mapped to the pub/sub reader.
    cycle._fd_to_chan[brpop.fileno()] = (channel, "LISTEN")
    with connection.Producer() as producer:
        producer.publish({"n": 1}, exchange=queue.exchange, routing_key=queue.routing_key)
    for _ in range(TRIES):
        if got:
            break
        with suppress(TimeoutError):
            connection.drain_events(timeout=1)
    assert got == [{"n": 1}]
    brpop = cycle._chan_to_sock[(channel, channel.client, "BRPOP")]
    assert cycle._fd_to_chan[brpop.fileno()] == (channel, "BRPOP")


def test_the_pubsub_reader_returns_at_once_when_its_socket_has_nothing(
    consuming: tuple[Connection, Any, Queue, list[Any]],
) -> None:
    _, channel, _, got = consuming
    assert channel._receive() is False
    assert got == []
