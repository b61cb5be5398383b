"""Per-team upload rate limit: a fixed one-minute window counted in Redis."""

from __future__ import annotations

import time

import redis
import structlog

from core.errors import Throttled

log = structlog.get_logger("tilejudge.ratelimit")


class RateLimiter:
    def __init__(self, client: redis.Redis | None, per_minute: int) -> None:
        self._client = client
        self._per_minute = per_minute

    def check(self, team_id: str) -> None:
        if self._client is None or self._per_minute <= 0:
            return
        now = time.time()
        window = int(now // 60)
        key = f"tilejudge:rate:{team_id}:{window}"
        try:
            pipe = self._client.pipeline(transaction=False)  # one round trip, no MULTI/EXEC
            pipe.incr(key)
            pipe.expire(key, 120)
            count = int(pipe.execute()[0])
        except redis.RedisError as exc:
            # Fail open: refusing uploads because the limiter's store is down would punish
            # contestants for our outage; intake itself does not need Redis.
            log.warning("ratelimit.unavailable", error=str(exc))
            return
        if count > self._per_minute:
            retry_after = max(1, int(60 - now % 60) + 1)
            raise Throttled(
                f"at most {self._per_minute} uploads a minute per team; retry in {retry_after} s",
                retry_after,
            )
