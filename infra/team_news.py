"""News of team tokens to every API process (`core.ports.TeamNews`) over Redis publish/subscribe:
one channel per Redis database, since publish/subscribe spans a server's databases and each
stack sharing a server hears only its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.client import PubSub

from core.errors import Unavailable

CHANNEL = "tilejudge:tokens"


def channel(client: redis.Redis) -> str:
    """The channel of the stack using this Redis database."""
    return f"{CHANNEL}:{client.connection_pool.connection_kwargs.get('db', 0)}"


class RedisTeamNews:
    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._channel = channel(client)

    def tell(self, news: str) -> None:
        try:
            self._client.publish(self._channel, news)
        except redis.RedisError as exc:
            raise Unavailable(f"Redis did not take the news: {exc}") from exc

    @contextmanager
    def subscribe(self, timeout: float) -> Iterator[RedisSubscription]:
        with self._client.pubsub() as pubsub:
            try:
                pubsub.subscribe(self._channel)
                _confirmed(pubsub, timeout)
            except redis.RedisError as exc:
                raise Unavailable(f"Redis did not take the subscription: {exc}") from exc
            yield RedisSubscription(pubsub)


class RedisSubscription:
    def __init__(self, pubsub: PubSub) -> None:
        self._pubsub = pubsub

    def next(self, timeout: float) -> str | None:
        try:
            message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout)
        except redis.RedisError as exc:
            raise Unavailable(f"the subscription to Redis was lost: {exc}") from exc
        if message is None or message.get("type") != "message":
            return None
        data = message["data"]
        return data.decode() if isinstance(data, bytes) else str(data)


def _confirmed(pubsub: PubSub, timeout: float) -> None:
    """Waits for Redis to confirm the subscription: news told before it is not heard."""
    deadline = time.monotonic() + timeout
    while True:
        message = pubsub.get_message(timeout=max(deadline - time.monotonic(), 0.0))
        if message is not None and message.get("type") == "subscribe":
            return
        if time.monotonic() >= deadline:
            raise Unavailable(f"Redis did not confirm the subscription within {timeout} s")
