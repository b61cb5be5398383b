"""Celery settings, chosen together: late acks, prefetch 1, and a visibility timeout above the
hard time limit, so a running task is never handed to a second worker while the first still runs.
"""

from __future__ import annotations

import socket
from typing import Any

from core.messages import (
    BULK_QUEUE,
    JUDGE_GROUP_TASK,
    LIVE_QUEUE,
    REJUDGE_BATCH_TASK,
    REJUDGE_PRODUCE_TASK,
)
from infra.broker import transport_for
from infra.sentinel import HEALTH_CHECK_S, SENTINEL_TIMEOUT_S
from infra.settings import Settings, sentinel_address

# The broker's connections when its server vanishes without closing them (its host cut off,
# or a failover): by default kombu waits forever on a synchronous command (a publish), and
# drops a consumer's blocking pop only 51 s after its reply is overdue, so a worker would sit
# on the old primary's dead socket long after Sentinel named a new one (celery/celery#6348).
# Here a command gives up after SOCKET_TIMEOUT_S, an overdue pop (its reply due within kombu's
# 1 s) is dropped after another HEALTH_CHECK_S, and TCP keepalive ends an idle connection
# about 6 s after its server's host vanished; the next connection goes to the primary the
# sentinels name by then.
SOCKET_TIMEOUT_S = 5.0
BROKER_SOCKETS: dict[str, Any] = {
    "socket_keepalive": True,
    "socket_keepalive_options": {
        socket.TCP_KEEPIDLE: 3,
        socket.TCP_KEEPINTVL: 1,
        socket.TCP_KEEPCNT: 3,
    },
    "socket_connect_timeout": 3,
    "socket_timeout": SOCKET_TIMEOUT_S,
    "health_check_interval": HEALTH_CHECK_S,
}


def celery_config(settings: Settings) -> dict[str, Any]:
    # `priority`: a worker consuming "live,bulk" always takes a live upload first.
    transport = {
        "visibility_timeout": settings.visibility_timeout,
        "queue_order_strategy": "priority",
        # kombu looks for messages past their visibility timeout every interval times throttle
        # seconds (by default 10 times 10): a quarter of the timeout, so a message whose worker
        # died is handed on within 1.25 timeouts rather than up to 100 s after it expired.
        "unacked_restore_interval": restore_interval(settings),
        "unacked_restore_throttle": 1,
        # A restore holds a Redis lock for its few milliseconds. A host that vanishes holding it
        # (cut off between taking and giving it back) kept every other worker from restoring
        # anything for kombu's 300 s; now for one restore interval. Two restores overlapping
        # after an early expiry are safe: each message is restored in a transaction that
        # watches the unacked hash.
        "unacked_mutex_expire": restore_interval(settings),
        # The message body (Celery's JSON) goes into kombu's JSON envelope as text rather than
        # base64 (a message's inline uploads are base64 already): a quarter fewer bytes for
        # the broker, the worker parent that receives each message and copies it to the
        # unacked hash, and the pipe to its process, and no decoding pass in between.
        "body_encoding": None,
    }
    url = settings.required_redis_url()
    transport |= BROKER_SOCKETS
    if (sentinels := sentinel_address(url)) is not None:
        transport |= {
            "master_name": settings.redis_master,
            "sentinel_kwargs": {
                "password": sentinels.password,
                "username": sentinels.username,
                "socket_timeout": SENTINEL_TIMEOUT_S,
                "socket_connect_timeout": SENTINEL_TIMEOUT_S,
            },
        }
    config: dict[str, Any] = {
        "broker_url": url,
        "broker_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        "visibility_timeout": settings.visibility_timeout,
        "task_ignore_result": True,  # the SQL store is the record, not a result backend
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "worker_prefetch_multiplier": 1,
        # Take a message only when a process is free, so no bulk batch sits reserved in front
        # of a live upload.
        "worker_disable_prefetch": True,
        # The preload control command reforks the pool so new children share new word lists.
        "worker_pool_restarts": True,
        "task_time_limit": settings.task_time_limit,
        # The soft limit leaves the task time to release its claims before the hard one: 10 s,
        # or a quarter of a short limit (a 13 s limit gets a 10 s soft one, not 3 s).
        "task_soft_time_limit": settings.task_time_limit
        - min(10, max(1, settings.task_time_limit // 4)),
        "task_default_queue": LIVE_QUEUE,
        "task_routes": {
            JUDGE_GROUP_TASK: {"queue": LIVE_QUEUE},
            REJUDGE_PRODUCE_TASK: {"queue": BULK_QUEUE},
            REJUDGE_BATCH_TASK: {"queue": BULK_QUEUE},
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        # Per-task events (sent, received, started, succeeded) cost the API, the worker parent
        # and the broker CPU on every upload; the dashboard needs only worker heartbeats, which
        # Celery sends either way. TILEJUDGE_TASK_EVENTS=1 turns them on for Flower.
        "worker_send_task_events": settings.task_events,
        "task_send_sent_event": settings.task_events,
        "worker_hijack_root_logger": False,
        "worker_deduplicate_successful_tasks": False,
        # A judging task does not need the broker until it acks; cancelling it on a lost
        # connection only strands its claim. A second delivery is skipped by the claim.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
    }
    # An ack that races a lost connection must not take the worker down (infra/broker.py).
    if (patched := transport_for(url)) is not None:
        config["broker_transport"] = patched
    return config


def restore_interval(settings: Settings) -> int:
    """Seconds between kombu's looks for messages past their visibility timeout."""
    return max(1, settings.visibility_timeout // 4)
