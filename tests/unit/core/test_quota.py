"""The per-team storage quota against the in-memory counts: bytes per UTC day, the first
upload of a day always taken, refusals that say when the day rolls over."""

from __future__ import annotations

import pytest

from core.errors import Throttled
from core.quota import InMemoryDailyBytes, StorageQuota, seconds_to_next_day

NOON = "2030-01-01T12:00:00.000000Z"
NEXT_DAY = "2030-01-02T00:00:00.000000Z"


def test_a_team_may_store_up_to_its_quota_in_a_day_and_then_waits_for_midnight_utc() -> None:
    quota = StorageQuota(InMemoryDailyBytes(), 100)
    quota.charge("ravens", 60, NOON)
    quota.charge("ravens", 40, NOON)

    with pytest.raises(Throttled, match="would pass it for 2030-01-01") as refused:
        quota.charge("ravens", 1, NOON)

    assert refused.value.retry_after == 12 * 3600
    quota.charge("ravens", 100, NEXT_DAY)  # a new day, a new allowance


def test_each_team_has_its_own_quota() -> None:
    quota = StorageQuota(InMemoryDailyBytes(), 100)
    quota.charge("ravens", 100, NOON)

    quota.charge("owls", 100, NOON)

    with pytest.raises(Throttled):
        quota.charge("ravens", 1, NOON)


def test_the_first_upload_of_a_day_is_taken_even_when_larger_than_the_quota() -> None:
    quota = StorageQuota(InMemoryDailyBytes(), 10)
    quota.charge("ravens", 50, NOON)

    with pytest.raises(Throttled):
        quota.charge("ravens", 1, NOON)


def test_a_refund_makes_room_again_and_never_takes_the_count_below_zero() -> None:
    counts = InMemoryDailyBytes()
    quota = StorageQuota(counts, 100)
    quota.charge("ravens", 80, NOON)
    quota.refund("ravens", 80, NOON)
    quota.refund("ravens", 80, NOON)

    quota.charge("ravens", 100, NOON)

    assert counts.counts == {("ravens", "2030-01-01"): 100}


@pytest.mark.parametrize("quota", [StorageQuota.off(), StorageQuota(InMemoryDailyBytes(), 0)])
def test_a_quota_of_zero_or_without_counts_takes_everything(quota: StorageQuota) -> None:
    for _ in range(3):
        quota.charge("ravens", 10**9, NOON)


@pytest.mark.parametrize(
    ("received_at", "seconds"),
    [
        ("2030-01-01T00:00:00.000000Z", 86_400),
        ("2030-01-01T23:59:59.500000Z", 1),
        ("2030-01-01T23:00:00+02:00", 3 * 3600),  # 21:00 UTC
    ],
)
def test_the_wait_runs_to_the_next_midnight_utc(received_at: str, seconds: int) -> None:
    assert seconds_to_next_day(received_at) == seconds
