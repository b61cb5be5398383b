"""Builds the clients (SQL, S3, Redis, Celery) from settings: the one place things get wired."""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis

from infra.blobstore import S3BlobStore
from infra.settings import Settings, SettingsError
from infra.sql.engine import make_engine
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


def redis_url(settings: Settings) -> str:
    if not settings.redis_url:
        raise SettingsError("REDIS_URL is not set (`tilejudge up` starts a local Redis)")
    return settings.redis_url


def make_redis(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(redis_url(settings), socket_timeout=3, socket_connect_timeout=3)


def make_celery(settings: Settings, publisher_only: bool = False) -> Celery:
    """`publisher_only` (the API): a publish fails at once when Redis is down instead of
    reconnecting for seconds; the upload is stored already and the sweeper publishes it later."""
    from celery import Celery

    from workers.config import celery_config

    app = Celery("tilejudge")
    app.conf.update(celery_config(settings))
    if publisher_only:
        app.conf.broker_transport_options = {**app.conf.broker_transport_options, "max_retries": 0}
    return app
