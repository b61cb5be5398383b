"""kombu's restore of expired messages runs under a Redis lock: one taken by a host that then
vanished keeps the other workers out only until the lock expires, one restore interval."""

from __future__ import annotations

import time

import pytest
from kombu import Connection
from kombu.transport.redis import Mutex, MutexHeld

from infra.celery_config import celery_config, restore_interval
from infra.settings import Settings


def test_a_restore_lock_left_by_a_vanished_host_frees_within_one_restore_interval(
    redis_url: str,
) -> None:
    settings = Settings.from_env(
        {
            "REDIS_URL": redis_url,
            "TILEJUDGE_VISIBILITY_TIMEOUT": "10",
            "TILEJUDGE_TASK_TIME_LIMIT": "5",
        }
    )
    interval = restore_interval(settings)  # 2 s: a quarter of the visibility timeout
    config = celery_config(settings)
    options = config["broker_transport_options"]
    transport = config.get("broker_transport")
    with (
        Connection(redis_url, transport=transport, transport_options=options) as vanished,
        Connection(redis_url, transport=transport, transport_options=options) as other,
    ):
        left, asking = vanished.default_channel, other.default_channel
        key, expire = left.unacked_mutex_key, left.unacked_mutex_expire
        held = Mutex(left.client, key, expire)
        held.__enter__()  # and never given back: its host went away
        # It lives one restore interval at most: what Redis holds, not a clock on this side.
        assert 0 < left.client.pttl(key) <= interval * 1000, "the lock outlives one interval"
        with pytest.raises(MutexHeld), Mutex(asking.client, key, asking.unacked_mutex_expire):
            pass
        # Then another worker takes it, once Redis lets the lock expire (a hang is the test
        # timeout's to catch).
        while True:
            try:
                with Mutex(asking.client, key, asking.unacked_mutex_expire):
                    break
            except MutexHeld:
                time.sleep(0.05)
