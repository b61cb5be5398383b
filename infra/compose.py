"""The composition root: builds the clients (SQL, S3, Redis, Celery) from settings, and from
them what the API, the workers and the sweeper run with. Nothing else builds a client, and
importing a module connects nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from starlette.concurrency import run_in_threadpool

from core import report_blobs
from core.group_commit import GroupCommit
from core.intake import Intake
from core.judging import WorkerDeps
from core.ports import BlobStore, Publisher, QueueProbe
from core.sweeping import SweeperThread
from infra import broker_copies
from infra.blobstore import S3BlobStore
from infra.celery_config import celery_config
from infra.leader import SWEEPER_LOCK, Election
from infra.publisher import CeleryPublisher
from infra.queues import light_backlog, live_backlog
from infra.ratelimit import RateLimiter
from infra.rulesets import RulesetCache
from infra.settings import Settings, SettingsError, SweeperMode
from infra.sql.engine import make_engine
from infra.sql.rejudges import RejudgeStore
from infra.sql.store import SqlStore

if TYPE_CHECKING:
    from celery import Celery


def make_store(settings: Settings, durable: bool = True) -> SqlStore:
    """`durable=False` (workers) lets SQLite skip the fsync per commit: a result lost to a power
    cut only sends its submission back to be judged again, while intake rows must survive."""
    settings.home.mkdir(parents=True, exist_ok=True)
    return SqlStore(make_engine(settings.resolved_database_url(), durable=durable))


def make_blobs(settings: Settings, read_timeout: float = 20.0) -> S3BlobStore:
    """`read_timeout`: the API passes a short one, so a hung S3 answers an upload with 503
    in seconds rather than holding it."""
    if not settings.s3_endpoint:
        raise SettingsError("TILEJUDGE_S3_ENDPOINT is not set (`tilejudge up` starts a local S3)")
    return S3BlobStore.from_settings(settings, settings.s3_endpoint, read_timeout=read_timeout)


def make_redis(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(
        settings.required_redis_url(), socket_timeout=3, socket_connect_timeout=3
    )


def make_celery(settings: Settings, publisher_only: bool = False) -> Celery:
    """`publisher_only` (the API): a publish fails at once when Redis is down instead of
    reconnecting for seconds; the upload is stored already and the sweeper publishes it later."""
    from celery import Celery

    app = Celery("tilejudge")
    app.conf.update(celery_config(settings))
    if publisher_only:
        app.conf.broker_transport_options = {**app.conf.broker_transport_options, "max_retries": 0}
    return app


@dataclass
class ApiParts:
    """What an API process serves with; `api.services.Services` adds the per-process caches."""

    settings: Settings
    store: SqlStore
    blobs: BlobStore
    redis: redis.Redis | None
    intake: Intake
    limiter: RateLimiter
    admin_token: str
    backlog: QueueProbe = field(default=lambda: None)


def api_parts(settings: Settings) -> ApiParts:
    store = make_store(settings)
    # A hung S3 answers an upload with 503 in seconds rather than holding it.
    blobs = make_blobs(settings, read_timeout=5.0)
    publisher = CeleryPublisher(make_celery(settings, publisher_only=True))
    client = make_redis(settings)
    backlog = partial(live_backlog, client)
    commits = GroupCommit(
        store,
        publisher=publisher,
        # With the workers idle a group is spread over at least as many messages as a worker
        # machine has judging processes; behind a backlog, GROUP_MOST uploads to a message.
        # Heavy uploads waiting behind no light one do not count: light ones jump them.
        spread=settings.workers,
        backlog=partial(light_backlog, client),
    )
    return ApiParts(
        settings=settings,
        store=store,
        blobs=blobs,
        redis=client,
        intake=Intake(
            store, blobs, publisher, settings.receipt_key_value(), commits, run_in_threadpool
        ),
        limiter=RateLimiter(client, settings.rate_limit_per_minute),
        admin_token=settings.admin_token_value(),
        backlog=backlog,
    )


def sweeper(parts: ApiParts) -> SweeperThread | None:
    """The sweeper an API process runs, unless TILEJUDGE_SWEEPER=off: elected, so that of all
    the API processes and `tilejudge sweeper`s sharing the Redis, one sweeps at a time."""
    if parts.settings.sweeper is SweeperMode.OFF:
        return None
    return _elected_sweeper(parts.settings, parts.store, parts.intake.publisher, parts.backlog)


def lone_sweeper(settings: Settings) -> SweeperThread:
    """`tilejudge sweeper`'s: the same elected sweeper, with connections of its own."""
    client = make_redis(settings)
    return _elected_sweeper(
        settings,
        make_store(settings),
        CeleryPublisher(make_celery(settings, publisher_only=True)),
        partial(live_backlog, client),
    )


def _elected_sweeper(
    settings: Settings, store: SqlStore, publisher: Publisher, backlog: QueueProbe
) -> SweeperThread:
    """Sweeps only while it holds the sweeper lock: stored uploads not yet published after
    10 s, queued ones after TILEJUDGE_REQUEUE_AFTER, claims older than the hard time limit."""
    ttl = settings.sweeper_lock_ttl
    # A client of the election's own, with no retries and timeouts within a renewal period: a
    # Redis that does not answer ends the try, rather than holding it past the lock's expiry.
    client = redis.Redis.from_url(
        settings.required_redis_url(),
        socket_timeout=ttl / 3,
        socket_connect_timeout=ttl / 3,
        retry=Retry(NoBackoff(), 0),
    )
    return SweeperThread(
        store,
        RejudgeStore(store),
        publisher,
        interval=5.0,
        stored_for=10.0,
        queued_for=settings.requeue_after,
        judging_for=settings.task_time_limit + 5,
        backlog=backlog,
        mandate=Election(client, SWEEPER_LOCK, ttl),
        chores=partial(broker_copies.forget_if_due, client),
    )


def rulesets(settings: Settings) -> RulesetCache:
    """The worker host's word lists and layouts (loaded by the parent, shared by the pool)."""
    return RulesetCache(
        make_store(settings, durable=False), make_blobs(settings), settings.home / "lexicon-cache"
    )


def worker_deps(settings: Settings, app: Celery, cache: RulesetCache) -> WorkerDeps:
    """A pool process's connections (opened after the fork) around the host's shared cache."""
    store, blobs = make_store(settings, durable=False), make_blobs(settings)
    cache.rebind(store, blobs)
    return WorkerDeps(
        store=store,
        rejudges=RejudgeStore(store),
        blobs=blobs,
        rulesets=cache,
        max_attempts=settings.max_attempts,
        # The hard time limit has killed any attempt older than this.
        claim_stale_after=settings.task_time_limit + 5,
        publish_batch=CeleryPublisher(app).publish_batch,
        max_report_bytes=report_blobs.max_report_bytes(settings.max_upload_bytes),
        forget_copies=partial(broker_copies.forget_soon, make_redis(settings)),
    )
