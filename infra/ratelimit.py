"""Per-team upload rate limit: a sliding one-minute log in a Redis sorted set per team, checked
and updated by one Lua script (one round trip, atomic across API processes)."""

from __future__ import annotations

import math
import time
import uuid

import redis
import structlog

from core.errors import Throttled

log = structlog.get_logger("tilejudge.ratelimit")

WINDOW_S = 60.0
# Any 60 s span, not a calendar minute: a fixed window admits twice the limit to a team that
# sends just before and just after a minute's boundary. The log holds at most `limit` accepted
# uploads per team (refused ones are not recorded) and expires a minute after the last one.
# KEYS[1] the team's log; ARGV: now (s), window (s), limit, a unique member for this upload.
# Returns {1, 0} when admitted, {0, seconds until the oldest entry leaves the window} if not.
SLIDING_LOG = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
  return {1, '0'}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tostring(tonumber(oldest[2]) + window - now)}
"""


class RateLimiter:
    def __init__(self, client: redis.Redis | None, per_minute: int) -> None:
        self._client = client
        self._per_minute = per_minute
        self._script = client.register_script(SLIDING_LOG) if client is not None else None

    def check(self, team_id: str) -> None:
        if self._script is None or self._per_minute <= 0:
            return
        now = time.time()
        try:
            admitted, wait = self._script(
                keys=[f"tilejudge:rate:{team_id}"],
                args=[repr(now), repr(WINDOW_S), self._per_minute, uuid.uuid4().hex],
            )
        except redis.RedisError as exc:
            # Fail open: refusing uploads because the limiter's store is down would punish
            # contestants for an outage of the service; intake itself does not need Redis.
            log.warning("ratelimit.unavailable", error=str(exc))
            return
        if int(admitted) != 1:
            retry_after = max(1, math.ceil(float(wait)))
            raise Throttled(
                f"at most {self._per_minute} uploads a minute per team; retry in {retry_after} s",
                retry_after,
            )
