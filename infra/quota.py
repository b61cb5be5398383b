"""The storage quota's daily byte counts in Redis (`core.quota.DailyBytes`): a counter per team
per UTC day, checked and updated by one Lua script (one round trip, atomic across API
processes)."""

from __future__ import annotations

import redis
import structlog

from core.quota import Charge

log = structlog.get_logger("tilejudge.quota")

# KEYS[1] the team's count for the day; ARGV: size, limit, seconds to keep the count. Returns 1
# when counted, 0 when the day's count would pass the limit (nothing counted then). A day with
# nothing counted takes any one upload (core.quota.StorageQuota says why).
ADD_WITHIN = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local size = tonumber(ARGV[1])
if used > 0 and used + size > tonumber(ARGV[2]) then
  return 0
end
redis.call('INCRBY', KEYS[1], size)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
# KEYS[1] the team's count for the day; ARGV[1] the size to take back, never below zero.
SUBTRACT = """
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used > 0 then
  redis.call('SET', KEYS[1], math.max(0, used - tonumber(ARGV[1])), 'KEEPTTL')
end
return 0
"""
# Two days: the count outlives its own day wherever in it the first upload came, and a refund
# for an upload received just before midnight still finds it.
KEEP_COUNT_S = 2 * 24 * 3600


class RedisDailyBytes:
    """Fails open: a team's upload is not refused because the count cannot be kept (intake
    itself does not need Redis), as the upload rate limit does."""

    def __init__(self, client: redis.Redis) -> None:
        self._add = client.register_script(ADD_WITHIN)
        self._subtract = client.register_script(SUBTRACT)

    def add_within(self, charge: Charge, limit: int) -> bool:
        try:
            added = self._add(keys=[daily_key(charge)], args=[charge.size, limit, KEEP_COUNT_S])
        except redis.RedisError as exc:
            log.warning("quota.unavailable", error=str(exc))
            return True
        return int(added) == 1

    def subtract(self, charge: Charge) -> None:
        try:
            self._subtract(keys=[daily_key(charge)], args=[charge.size])
        except redis.RedisError as exc:
            log.warning("quota.unavailable", error=str(exc))


def daily_key(charge: Charge) -> str:
    return f"tilejudge:bytes:{charge.team_id}:{charge.day}"
