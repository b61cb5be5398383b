"""A team's storage quota: the bytes of its uploads per UTC day, charged at intake and given
back for bytes that are not kept. The counts live behind `DailyBytes` (Redis in production)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from core.clock import parse_time
from core.errors import Throttled


@dataclass(frozen=True)
class Charge:
    """`size` bytes of `team_id`'s uploads on `day` (YYYY-MM-DD, UTC)."""

    team_id: str
    day: str
    size: int


class DailyBytes(Protocol):
    """Bytes counted per team per UTC day; a day's count is kept at least until the day ends."""

    def add_within(self, charge: Charge, limit: int) -> bool:
        """Count the charge unless it would take the day's count over `limit`, in one step;
        whether it was counted. A day with nothing counted takes any one charge."""
        ...

    def subtract(self, charge: Charge) -> None:
        """Take a counted charge back (never below zero)."""
        ...


class InMemoryDailyBytes:
    """A fake for unit tests: the counts in a dict."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def add_within(self, charge: Charge, limit: int) -> bool:
        with self._lock:
            used = self.counts.get((charge.team_id, charge.day), 0)
            if used and used + charge.size > limit:
                return False
            self.counts[(charge.team_id, charge.day)] = used + charge.size
            return True

    def subtract(self, charge: Charge) -> None:
        with self._lock:
            key = (charge.team_id, charge.day)
            self.counts[key] = max(0, self.counts.get(key, 0) - charge.size)


@dataclass(frozen=True)
class StorageQuota:
    """At most `bytes_per_day` of uploads per team per UTC day (of the upload's receipt time);
    off when it is 0 or there are no counts. The first upload of a day is always taken, so a
    quota below the largest upload still lets a team send one a day, and a refusal's
    Retry-After (the next midnight, UTC) is always an honest answer."""

    counts: DailyBytes | None
    bytes_per_day: int

    @classmethod
    def off(cls) -> StorageQuota:
        return cls(None, 0)

    def charge(self, team_id: str, size: int, received_at: str) -> None:
        """Count an upload received at `received_at`; Throttled (429) when it would take the
        team over its day's quota, with the seconds until the day ends."""
        if self.counts is None or self.bytes_per_day <= 0:
            return
        day = parse_time(received_at).date().isoformat()
        if not self.counts.add_within(Charge(team_id, day, size), self.bytes_per_day):
            retry_after = seconds_to_next_day(received_at)
            raise Throttled(
                f"at most {self.bytes_per_day} bytes of uploads per team per day (UTC): this "
                f"upload of {size} bytes would pass it for {day}; retry after midnight UTC, "
                f"in {retry_after} s",
                retry_after,
            )

    def refund(self, team_id: str, size: int, received_at: str) -> None:
        """Give back a charged upload whose bytes were not kept (the same bytes again, or a
        failed store)."""
        if self.counts is None or self.bytes_per_day <= 0:
            return
        self.counts.subtract(Charge(team_id, parse_time(received_at).date().isoformat(), size))


def seconds_to_next_day(received_at: str) -> int:
    """Whole seconds from `received_at` to the next midnight UTC, at least 1."""
    moment = parse_time(received_at)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    return max(1, math.ceil((midnight - moment).total_seconds()))
