"""A retried task's countdown and its run together stay below the broker's visibility timeout,
so an outage never has the broker hand out a second copy of a message a worker still holds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from infra.settings import Settings
from workers import celery_app
from workers.celery_app import MAX_BACKOFF_S, _backoff, _retry, retry_ceiling


class FakeTask:
    """Records what `retry` was asked, as Celery's bound task would be."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    def retry(self, **options: Any) -> Exception:
        self.asked = options
        return RuntimeError("retry")


@pytest.mark.parametrize(
    ("visibility", "time_limit"), [(10, 5), (60, 30), (130, 120), (300, 120), (3600, 120)]
)
def test_every_retry_delay_and_the_time_limit_stay_below_the_visibility_timeout(
    visibility: int, time_limit: int
) -> None:
    ceiling = retry_ceiling(visibility, time_limit)

    delays = [min(_backoff(retries), ceiling) for retries in range(12)]

    assert min(delays) >= 1
    assert all(delay + time_limit < visibility for delay in delays)
    assert max(delays) <= MAX_BACKOFF_S


def test_at_the_defaults_the_longest_delay_is_150_seconds_not_300() -> None:
    assert retry_ceiling(300, 120) == 150


def test_a_task_retried_after_many_failures_waits_no_longer_than_the_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings.from_env(
        {"TILEJUDGE_VISIBILITY_TIMEOUT": "60", "TILEJUDGE_TASK_TIME_LIMIT": "30"}
    )
    monkeypatch.setattr(celery_app, "host", lambda: SimpleNamespace(settings=settings))
    task = FakeTask()

    _retry(task, RuntimeError("S3 down"), countdown=_backoff(7))  # 300 s unbounded

    assert task.asked["countdown"] == retry_ceiling(60, 30) == 24
    assert task.asked["countdown"] + settings.task_time_limit < settings.visibility_timeout
    assert task.asked["max_retries"] == settings.max_attempts
