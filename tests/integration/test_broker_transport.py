"""The worker's broker transport against a real Redis: an ack that arrives after its connection
was closed (a task finishing while Celery reconnects) is a connection error the worker logs and
survives, where kombu's own transport raises AttributeError and Celery shuts the worker down."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue
from kombu.common import ignore_errors
from kombu.message import Message

from devstack.process import Service
from devstack.redis_server import start_redis
from infra.broker import SENTINEL_TRANSPORT, TRANSPORT, transport_for
from infra.compose import make_celery
from infra.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Service]:
    """A Redis of its own: the test kills it."""
    service = start_redis(tmp_path / "redis")
    try:
        yield service
    finally:
        service.stop()


def ack_after_reconnect_cleanup(
    redis: Service, transport: str | None
) -> tuple[Connection, Message]:
    """Take one message without acking it, lose Redis, and clean up the connection the way
    Celery's consumer does before it reconnects (collect, then close). The message's channel is
    left as the crashed worker's was: its transport closed, its connection pools dropped."""
    name = f"transport-test-{uuid.uuid4().hex}"
    queue = Queue(name, Exchange(name), routing_key=name)
    connection = Connection(redis.url, transport=transport)
    with connection.Producer() as producer:
        producer.publish({"n": 1}, declare=[queue], exchange=queue.exchange, routing_key=name)
    channel = connection.channel()
    message = queue(channel).get(no_ack=False)
    assert message is not None, "the published message never arrived"
    redis.process.kill()
    redis.process.wait()
    ignore_errors(connection, connection.collect, socket_timeout=0.5)
    ignore_errors(connection, connection.close)
    channel._disconnect_pools()
    return connection, message


def test_an_ack_after_the_connection_closed_is_a_connection_error(own_redis: Service) -> None:
    connection, message = ack_after_reconnect_cleanup(own_redis, TRANSPORT)
    errors = connection.connection_errors
    assert errors, "the transport names no connection errors"
    with pytest.raises(errors, match="closed"):
        message.ack()


def test_celery_logs_such_an_ack_and_goes_on(
    own_redis: Service, caplog: pytest.LogCaptureFixture
) -> None:
    connection, message = ack_after_reconnect_cleanup(own_redis, TRANSPORT)
    logger = logging.getLogger("test.ack")
    message.ack_log_error(logger, connection.connection_errors)  # what Celery's request does
    assert "Couldn't ack" in caplog.text


def test_kombus_own_transport_still_has_the_bug_this_works_around(own_redis: Service) -> None:
    """When this fails, kombu fixed it upstream and infra/broker.py can go."""
    _, message = ack_after_reconnect_cleanup(own_redis, None)
    with pytest.raises(AttributeError, match="hostname"):
        message.ack()


def test_the_worker_and_api_use_it_for_redis_and_sentinel_urls(redis_url: str) -> None:
    app = make_celery(Settings.from_env({"REDIS_URL": redis_url}))
    assert app.conf.broker_transport == TRANSPORT
    with app.connection_for_write() as connection:
        assert type(connection.transport).__module__ == "infra.broker"
    assert transport_for("rediss://example.invalid:6380/0") == TRANSPORT
    assert transport_for("sentinel://127.0.0.1:26379;sentinel://127.0.0.2:26379") == (
        SENTINEL_TRANSPORT
    )
    assert transport_for("memory://") is None
