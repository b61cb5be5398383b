"""The composition root: builds the clients (SQL, S3, Redis, Celery) from settings, and from
them what the API, the workers and the sweeper run with. Nothing else builds a client, and
importing a module connects nothing."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel
from starlette.concurrency import run_in_threadpool

from core import report_blobs
from core.group_commit import GroupCommit
from core.intake import Intake
from core.judging import NoUploadCache, WorkerDeps
from core.log_signing import LogSigner, SequencerThread
from core.ports import (
    BlobStore,
    PublishBatch,
    Publisher,
    QueueProbe,
    RejudgeRuns,
    SubmissionStore,
)
from core.quota import StorageQuota
from core.reports import AskedReports, Reports
from core.sweeping import SweeperThread
from infra import broker_copies
from infra.api_parts import ApiParts
from infra.blobstore import S3BlobStore
from infra.bulk_hosts import BulkHosts
from infra.celery_config import celery_config
from infra.leader import SWEEPER_LOCK, Election
from infra.presigned_http import READ_TIMEOUT_S
from infra.publisher import CeleryPublisher
from infra.queues import broker_epoch, light_backlog, live_backlog, queue_depths
from infra.quota import RedisDailyBytes
from infra.ratelimit import Limiter, RateLimiter, report_reads, sign_in_failures
from infra.replication import DatabaseProbe, RedisProbe, ReplicationProbe
from infra.report_asks import RedisReportAsks
from infra.rulesets import RulesetCache
from infra.sentinel import HEALTH_CHECK_S, SENTINEL_TIMEOUT_S, PrimaryCheckedConnection
from infra.settings import Settings, SettingsError, SweeperMode, sentinel_address
from infra.sql.base import Database
from infra.sql.clics import ClicsReader
from infra.sql.dashboard import DashboardReader
from infra.sql.database import open_database
from infra.sql.engine import make_engine
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.result_reads import SqlResultReads
from infra.sql.rulesets import SqlRulesets
from infra.sql.store import SqlStore
from infra.sql.submission_store import SqlSubmissions
from infra.sql.transparency import SqlTransparencyLogs
from infra.team_news import RedisTeamNews
from infra.upload_cache import DiskUploadCache

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy.engine import Engine

    from infra.sql.migrate import Upgraded

SENTINEL_PROBE_TIMEOUT_S = 0.5  # each sentinel the dashboard asks, once a second at most


def load_games(settings: Settings) -> None:
    """Import the modules of the games from outside the project (TILEJUDGE_GAMES), each of
    which registers its game; SettingsError naming one that cannot be imported."""
    for name in settings.games:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise SettingsError(f"TILEJUDGE_GAMES: cannot import {name}: {exc}") from exc


def make_database(settings: Settings, durable: bool = True) -> Database:
    """The `Database` a process's parts of the results store share. `durable=False` (workers)
    lets SQLite skip the fsync per commit: a result lost to a power cut only sends its
    submission back to be judged again, while intake rows must survive."""
    settings.home.mkdir(parents=True, exist_ok=True)
    return open_database(make_engine(settings.resolved_database_url(), durable=durable))


def make_store(settings: Settings) -> SqlStore:
    """The results store whole (`core.ports.ApiStore`), on a database of its own."""
    settings.home.mkdir(parents=True, exist_ok=True)
    return SqlStore(make_engine(settings.resolved_database_url()))


def make_blobs(settings: Settings, read_timeout: float = READ_TIMEOUT_S) -> S3BlobStore:
    """`read_timeout`: the API passes a short one, so a hung S3 answers an upload with 503
    in seconds rather than holding it."""
    if not settings.s3_endpoint:
        raise SettingsError("TILEJUDGE_S3_ENDPOINT is not set (`tilejudge up` starts a local S3)")
    return S3BlobStore.from_settings(settings, settings.s3_endpoint, read_timeout=read_timeout)


def make_redis(settings: Settings, timeout: float = 3.0, retry: Retry | None = None) -> redis.Redis:
    """A client of the Redis primary: the server REDIS_URL names, or, where it lists sentinels,
    whichever server they name the primary of TILEJUDGE_REDIS_MASTER now. Such a client asks the
    sentinels again on each new connection, and drops its connections when the server it
    reaches says it is a replica now, so every use of Redis follows a failover."""
    url = settings.required_redis_url()
    # One retry at once, on a new connection (to the new primary, where Sentinel named one),
    # rather than redis-py's three with backoff: a Redis that is gone costs a caller two
    # timeouts, not twenty seconds, and every caller has its own way around an outage.
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": retry if retry is not None else Retry(NoBackoff(), 1),
    }
    found = sentinel_address(url)
    if found is None:
        return redis.Redis.from_url(url, **options)
    credentials: dict[str, Any] = {"password": found.password, "username": found.username}
    sentinels = Sentinel(
        list(found.sentinels),
        sentinel_kwargs={
            **credentials,
            "socket_timeout": min(timeout, SENTINEL_TIMEOUT_S),
            "socket_connect_timeout": min(timeout, SENTINEL_TIMEOUT_S),
        },
        **credentials,
    )
    client: redis.Redis = sentinels.master_for(
        settings.redis_master,
        db=found.db,
        connection_class=PrimaryCheckedConnection,
        health_check_interval=HEALTH_CHECK_S,
        **options,
    )
    return client


def migrate(database_url: str) -> Upgraded:
    """The SQL store at the newest revision (`tilejudge migrate`, and `up` before its roles).
    Alembic is imported here, by the one process that migrates."""
    from infra.sql.migrate import upgrade

    engine = make_engine(database_url)
    try:
        return upgrade(engine)
    finally:
        engine.dispose()


def worker_celery() -> Celery:
    """The workers' Celery app, configured from the environment when Celery first reads its
    configuration (the worker starting), not when it is built: `celery -A` imports the module
    that holds it before the worker's settings are final."""
    from celery import Celery

    app = Celery("tilejudge")
    app.add_defaults(lambda: celery_config(Settings.from_env()))
    return app


def make_celery(settings: Settings, publisher_only: bool = False) -> Celery:
    """`publisher_only` (the API): a publish fails at once when Redis is down instead of
    reconnecting for seconds; the upload is stored already and the sweeper publishes it later."""
    from celery import Celery

    app = Celery("tilejudge")
    app.conf.update(celery_config(settings))
    if publisher_only:
        app.conf.broker_transport_options = {**app.conf.broker_transport_options, "max_retries": 0}
    return app


def api_parts(
    settings: Settings,
    *,
    store: SqlStore | None = None,
    blobs: BlobStore | None = None,
    publisher: Publisher | None = None,
    with_redis: bool = True,
    limiter: Limiter | None = None,
) -> ApiParts:
    """An API process's parts, on the store's database. Tests hand in fakes (a store on a file of
    their own, in-memory S3 and broker, no Redis); everything else is built as in production."""
    load_games(settings)
    store = store or make_store(settings)
    database, submissions = store.database, SqlSubmissions(store.database)
    blobs = blobs or make_blobs(settings, read_timeout=5.0)  # a short one (`make_blobs`)
    client = make_redis(settings) if with_redis else None
    publisher = publisher or CeleryPublisher(make_celery(settings, publisher_only=True), client)
    # Heavy reports asked of the workers; a test's publisher sends no such request, so its
    # process makes every report itself.
    asks = (
        RedisReportAsks(client, publisher.make_report)
        if client is not None and isinstance(publisher, CeleryPublisher)
        else None
    )
    nothing_waits: QueueProbe = lambda: None  # noqa: E731  (no broker to ask)
    # Intake writes through the routes' `store`: what stands in for it (a test's) does for both.
    commits = GroupCommit(
        store,
        publisher=publisher,
        # With the workers idle a group is spread over at least as many messages as a worker
        # machine has judging processes; behind a backlog, GROUP_MOST uploads to a message.
        # Heavy uploads waiting behind no light one do not count: light ones jump them.
        spread=settings.workers,
        backlog=partial(light_backlog, client) if client else nothing_waits,
    )
    return ApiParts(
        settings=settings,
        store=store,
        rejudges=SqlRejudgeRuns(database),
        dashboard=DashboardReader(store),
        blobs=blobs,
        intake=Intake(
            store,
            blobs,
            publisher,
            settings.receipt_key_value(),
            commits,
            run_in_threadpool,
            StorageQuota(RedisDailyBytes(client) if client else None, settings.team_bytes_per_day),
        ),
        limiter=limiter or RateLimiter(client, settings.rate_limit_per_minute),
        report_reads=report_reads(client, settings.report_reads_per_minute),
        login_failures=sign_in_failures(client, settings.login_failures_per_minute),
        admin_token=settings.admin_token_value(),
        reports=Reports(
            submissions,
            blobs,
            # Loaded on a first read; at most two word lists held by an API process.
            RulesetCache(SqlRulesets(database), blobs, settings.home / "lexicon-cache", 2),
            report_blobs.max_report_bytes(settings.max_upload_bytes),
            asks,
        ),
        submissions=submissions,
        logs=SqlTransparencyLogs(database),
        backlog=partial(live_backlog, client) if client else nothing_waits,
        forget_copies=partial(broker_copies.forget, client),
        log_signer=LogSigner(settings.log_key_value()),
        clics=ClicsReader(database),
        replication=replication_probe(settings, database.engine, client),
        worker_events=make_celery(settings) if client is not None else None,
        team_news=RedisTeamNews(client) if client is not None else None,
        queue_depths=partial(queue_depths, client),
        close_clients=client.close if client is not None else lambda: None,
    )


def replication_probe(
    settings: Settings, engine: Engine, client: redis.Redis | None
) -> ReplicationProbe:
    """Probes of the engine's database and of the client's Redis, with clients of their own
    for the sentinels REDIS_URL lists (short timeouts: one that is down delays the dashboard's
    refresh by that much)."""
    found = settings.redis_sentinels() if client is not None else None
    sentinels = []
    if found is not None:
        sentinels = [
            redis.Redis(
                host=host,
                port=port,
                password=found.password,
                username=found.username,
                socket_timeout=SENTINEL_PROBE_TIMEOUT_S,
                socket_connect_timeout=SENTINEL_PROBE_TIMEOUT_S,
                decode_responses=True,
            )
            for host, port in found.sentinels
        ]
    return ReplicationProbe(
        DatabaseProbe(engine),
        RedisProbe(client, sentinels, settings.redis_master) if client is not None else None,
    )


def log_sequencer(parts: ApiParts) -> SequencerThread | None:
    """The thread that hashes and signs the transparency logs in an API process."""
    if parts.log_signer is None:
        return None
    return SequencerThread(parts.logs, parts.log_signer)


def sweeper(parts: ApiParts) -> SweeperThread | None:
    """The sweeper an API process runs, unless TILEJUDGE_SWEEPER=off: elected, so that of all
    the API processes and `tilejudge sweeper`s sharing the Redis, one sweeps at a time."""
    if parts.settings.sweeper is SweeperMode.OFF:
        return None
    return _elected_sweeper(
        parts.settings, parts.submissions, parts.rejudges, parts.intake.publisher, parts.backlog
    )


def lone_sweeper(settings: Settings) -> SweeperThread:
    """`tilejudge sweeper`'s: the same elected sweeper, with connections of its own."""
    load_games(settings)
    client = make_redis(settings)
    database = make_database(settings)
    return _elected_sweeper(
        settings,
        SqlSubmissions(database),
        SqlRejudgeRuns(database),
        CeleryPublisher(make_celery(settings, publisher_only=True)),
        partial(live_backlog, client),
    )


def _elected_sweeper(
    settings: Settings,
    store: SubmissionStore,
    rejudges: RejudgeRuns,
    publisher: Publisher,
    backlog: QueueProbe,
) -> SweeperThread:
    """Sweeps only while it holds the sweeper lock: stored uploads not yet published after
    10 s, queued ones after TILEJUDGE_REQUEUE_AFTER, claims older than the hard time limit."""
    ttl = settings.sweeper_lock_ttl
    # A client of the election's own, with no retries and timeouts within a renewal period: a
    # Redis that does not answer ends the try, rather than holding it past the lock's expiry.
    client = make_redis(settings, timeout=ttl / 3, retry=Retry(NoBackoff(), 0))
    return SweeperThread(
        store,
        rejudges,
        publisher,
        interval=5.0,
        stored_for=10.0,
        queued_for=settings.requeue_after,
        judging_for=settings.task_time_limit + 5,
        backlog=backlog,
        mandate=Election(client, SWEEPER_LOCK, ttl),
        chores=partial(broker_copies.forget_if_due, client),
        broker_epoch=partial(broker_epoch, client),
    )


def rulesets(
    settings: Settings, store: SqlRulesets | None = None, blobs: BlobStore | None = None
) -> RulesetCache:
    """The worker host's word lists and rules data (loaded by the parent, shared by the
    pool)."""
    return RulesetCache(
        store or SqlRulesets(make_database(settings, durable=False)),
        blobs or make_blobs(settings),
        settings.home / "lexicon-cache",
    )


@dataclass
class WorkerHost:
    """What a worker host's processes share: its settings, the word lists its parent preloads,
    one publisher and one Redis client; `deps` opens a pool process's own connections."""

    settings: Settings
    rulesets: RulesetCache
    publisher: CeleryPublisher
    redis: redis.Redis
    pool_size: int = 0  # the prefork pool's, once the worker starts (0 before, or solo)

    def deps(self) -> WorkerDeps:
        return worker_deps(
            self.settings, rulesets=self.rulesets, publish_batch=self.publisher.publish_batch
        )

    def asked_reports(self, deps: WorkerDeps) -> AskedReports:
        """What makes the heavy reports the API asks for, on a pool process's connections."""
        store = cast(SqlSubmissions, deps.store)
        reports = Reports(store, deps.blobs, deps.rulesets, deps.max_report_bytes)
        reads = SqlResultReads(store.database)
        return AskedReports(reports, reads.current_result, RedisReportAsks(self.redis))


def worker_host(settings: Settings, app: Celery) -> WorkerHost:
    load_games(settings)
    client = make_redis(settings)
    publisher = CeleryPublisher(app, hosts=BulkHosts(client))
    return WorkerHost(settings, rulesets(settings), publisher, client)


def worker_deps(
    settings: Settings,
    *,
    rulesets: RulesetCache,
    publish_batch: PublishBatch,
    store: SqlStore | None = None,
    blobs: BlobStore | None = None,
    with_redis: bool = True,
) -> WorkerDeps:
    """A pool process's connections (opened after the fork) around the host's shared cache.
    Tests hand in the store (its database) and blobs their API uses, and their `publish_batch`."""
    load_games(settings)
    database = store.database if store is not None else make_database(settings, durable=False)
    blobs = blobs or make_blobs(settings)
    rulesets.rebind(SqlRulesets(database), blobs)
    return WorkerDeps(
        store=SqlSubmissions(database),
        rejudges=SqlRejudgeRuns(database),
        blobs=blobs,
        rulesets=rulesets,
        max_attempts=settings.max_attempts,
        # The hard time limit has killed any attempt older than this.
        claim_stale_after=settings.task_time_limit + 5,
        publish_batch=publish_batch,
        max_report_bytes=report_blobs.max_report_bytes(settings.max_upload_bytes),
        forget_copies=(
            partial(broker_copies.forget_soon, make_redis(settings)) if with_redis else _no_copies
        ),
        upload_cache=upload_cache(settings),
    )


def upload_cache(settings: Settings) -> DiskUploadCache | NoUploadCache:
    """The worker host's cache of the uploads it judged or read (`infra.upload_cache`)."""
    if not settings.upload_cache_mb:
        return NoUploadCache()
    return DiskUploadCache(
        settings.home / "upload-cache",
        settings.upload_cache_mb << 20,
        max_age=settings.upload_cache_hours * 3600.0,
    )


def _no_copies() -> None:
    """No broker holds copies of messages to forget (a test's in-memory one)."""
