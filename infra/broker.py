"""kombu's Redis transport, with one fix: an ack on a connection that is already closed is a
connection error, not a crash.

When Redis goes away, Celery closes the consumer's connection and reconnects. A task that
finishes in between still has its ack queued on the event loop; kombu then builds a client from
the closed connection and fails with `AttributeError: 'NoneType' object has no attribute
'hostname'`. Celery treats that as unrecoverable and the whole worker shuts down (seen in the
Redis-restart fault test). Raised as a Redis `ConnectionError` instead, the ack is logged as
"Couldn't ack" and the worker carries on: the message stays in Redis's unacked set, comes back
after the visibility timeout, and its second delivery finds the submission judged.

And one more, in the poller that maps each socket's file descriptor to the channel that reads
it (`Poller`). kombu registers a channel's socket once and trusts the mapping until it hears of
a disconnect; redis-py may replace a connection's socket on its own meanwhile (a health check
or a retried command reconnects), and the descriptor number of the closed socket is soon
another socket's. Seen in the cluster failover test after a Redis primary failed over: a
worker's pub/sub channel kept the number its new BRPOP socket had been given, so each task
message that arrived made the worker wait to read a broadcast on its pub/sub socket instead,
its event loop stood still for up to 90 s at a time, and it took no task for minutes while it
still answered remote control. Here a descriptor is read only through the socket registered
for it, that socket must be its connection's current one (else it is registered again), a
mapping left over from a replaced socket is dropped before the event loop polls again, and the
pub/sub channel reads only when its socket has something to read.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

from infra.sentinel import PrimaryCheckedConnection

TRANSPORT = "infra.broker:Transport"
SENTINEL_TRANSPORT = "infra.broker:SentinelTransport"
# The patched transport for each scheme kombu serves with its Redis transports.
_TRANSPORTS = {"redis": TRANSPORT, "rediss": TRANSPORT, "sentinel": SENTINEL_TRANSPORT}


def _open_params(channel: Any) -> None:
    transport = channel.connection
    if transport is None or getattr(transport, "client", None) is None:
        raise RedisConnectionError("the broker connection of this channel is closed")


def _receive_ready(channel: Any) -> bool:
    """Whether the pub/sub connection has a reply to read now: kombu reads one unconditionally
    when the poller says its descriptor is readable, and blocks the event loop when nothing
    comes."""
    connection = channel.subclient.connection
    if connection is None or connection._sock is None:
        return False
    try:
        return bool(connection.can_read(timeout=0))
    except RedisConnectionError:
        return True  # the read raises it, and kombu handles a lost connection


class _Fixed:
    """Both fixes for a kombu Redis channel: an ack on a closed connection is a connection
    error, and the pub/sub reader reads only what is there."""

    def _connparams(self, asynchronous: bool = False) -> Any:
        _open_params(self)
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]

    def _receive(self) -> bool:
        return _receive_ready(self) and bool(super()._receive())  # type: ignore[misc]


class Channel(_Fixed, kombu_redis.Channel):
    pass


def _client_of(channel: Any, kind: str) -> Any:
    """The client a channel reads `kind` ("BRPOP" or "LISTEN") with, if it has one yet (its
    pub/sub client is made on first use)."""
    return channel.__dict__.get("client" if kind == "BRPOP" else "subclient")


class Poller(kombu_redis.MultiChannelPoller):
    """kombu's poller of the channels' sockets, reading a descriptor only through the socket
    registered for it, and that only while it is its connection's socket (module docstring)."""

    def _current(self, fileno: int, channel: Any, kind: str) -> bool:
        client = _client_of(channel, kind)
        if client is None or client.connection is None:
            return False
        sock = self._chan_to_sock.get((channel, client, kind))
        return sock is not None and sock is client.connection._sock and sock.fileno() == fileno

    def _drop_stale(self) -> None:
        for fileno, (channel, kind) in list(self._fd_to_chan.items()):
            if fileno not in self._paused_brpop and not self._current(fileno, channel, kind):
                del self._fd_to_chan[fileno]

    def _client_registered(self, channel: Any, client: Any, cmd: str) -> bool:
        registered = super()._client_registered(channel, client, cmd)  # type: ignore[no-untyped-call]
        sock = self._chan_to_sock.get((channel, client, cmd))
        return (
            bool(registered)
            and sock is client.connection._sock
            and self._fd_to_chan.get(sock.fileno()) == (channel, cmd)
        )

    def _register(self, channel: Any, client: Any, type: str) -> None:
        for fileno, owner in list(self._fd_to_chan.items()):
            if owner == (channel, type):
                del self._fd_to_chan[fileno]
        super()._register(channel, client, type)  # type: ignore[no-untyped-call]

    def on_poll_start(self) -> None:
        self._drop_stale()
        super().on_poll_start()  # type: ignore[no-untyped-call]

    def on_readable(self, fileno: int) -> Any:
        owner = self._fd_to_chan.get(fileno)
        stale = owner is not None and not self._current(fileno, *owner)
        if stale and fileno not in self._paused_brpop:
            del self._fd_to_chan[fileno]
            return None
        return super().on_readable(fileno)  # type: ignore[no-untyped-call]


class _Polled:
    """A kombu Redis transport whose channels share the fixed poller."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cycle = Poller()  # type: ignore[no-untyped-call]


class Transport(_Polled, kombu_redis.Transport):  # type: ignore[misc]
    Channel = Channel


class SentinelChannel(_Fixed, kombu_redis.SentinelChannel):
    """The same fixes for the sentinel transport, whose channels reach the primary the
    sentinels name at each new connection, and check that an idle one still does
    (`infra.sentinel`)."""

    connection_class = PrimaryCheckedConnection


class SentinelTransport(_Polled, kombu_redis.SentinelTransport):  # type: ignore[misc]
    Channel = SentinelChannel


def transport_for(url: str) -> str | None:
    """The transport class for a broker URL, or None to let kombu pick by scheme."""
    return _TRANSPORTS.get(urlsplit(url.split(";", 1)[0]).scheme)
