"""Connections to the Redis primary that Sentinel names, which notice when it is one no more.

redis-py asks the sentinels where the primary is only when it opens a connection. One opened
before a failover and idle through it (a host cut off and back, its TCP connections intact)
still reaches the old primary once Sentinel has made it a replica: a write there is refused
(READONLY, and redis-py reconnects), but PING answers and PUBLISH is taken, and a replica hands
a message published there to its own subscribers alone. Celery's broadcasts (remote control,
the preload and cache commands) and worker heartbeats would be lost without a word. Here the
periodic health check of an idle connection asks ROLE instead of PING, and a connection whose
server is a replica now is dropped: the next one asks the sentinels.
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.sentinel import SentinelManagedConnection
from redis.utils import str_if_bytes

# Seconds a connection may sit idle before its next command first checks the server's role.
HEALTH_CHECK_S = 4
# Each sentinel asked where the primary is: one whose host is cut off costs this, once per
# client (redis-py asks the one that answered first next time).
SENTINEL_TIMEOUT_S = 1.0


class PrimaryCheckedConnection(SentinelManagedConnection):
    def _send_ping(self) -> None:
        if not self.connection_pool.is_master:
            super()._send_ping()  # type: ignore[no-untyped-call]
            return
        self.send_command("ROLE", check_health=False)  # type: ignore[no-untyped-call]
        try:
            role = self.read_response()
        except ResponseError:  # a subscribed connection may send PING alone: it is alive
            return
        if str_if_bytes(role[0]) != "master":
            raise RedisConnectionError(
                f"{self.host}:{self.port} is a {str_if_bytes(role[0])} now, not the primary"
            )
