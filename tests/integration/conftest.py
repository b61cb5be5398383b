"""Real services for the adapter tests: one Redis and one SeaweedFS per session (each refusing
clients without its credentials), and a fresh SQL database per test on SQLite and on
PostgreSQL: TILEJUDGE_TEST_POSTGRES_URL's server, else a local one answering on 127.0.0.1:5432
(its `test` database, as user postgres).

Each PostgreSQL test gets a schema of its own (the URL's search_path points at it), dropped at
teardown, so the tests never touch other data and can run again and again on the same server.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest
import redis
from psycopg import sql

from devstack.process import Service
from devstack.redis_server import start_redis
from devstack.seaweedfs import S3Credentials, start_seaweedfs
from infra.blobstore import S3BlobStore
from infra.settings import Settings
from infra.sql.engine import make_engine
from infra.sql.migrate import upgrade
from infra.sql.store import SqlStore

LOCAL_POSTGRES = ("127.0.0.1", 5432)
LOCAL_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
BUCKET = "tilejudge-it"
_REDIS_DATABASES = 16  # redis-server's default `databases`
_next_redis_db = count()


def _postgres_url() -> str:
    """TILEJUDGE_TEST_POSTGRES_URL, else the local server's URL if anything listens on its port,
    else "" (those tests are skipped). Something that listens but refuses the tests fails them:
    a server that is there but misconfigured is not a reason to skip."""
    given = os.environ.get("TILEJUDGE_TEST_POSTGRES_URL", "").strip()
    if given:
        return given
    try:
        with socket.create_connection(LOCAL_POSTGRES, timeout=0.5):
            return LOCAL_POSTGRES_URL
    except OSError:
        return ""


def _where(url: str) -> str:
    """Host, port and database of a URL, without its password."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5432}{parts.path}"


POSTGRES_URL = _postgres_url()


@pytest.fixture(scope="session")
def services_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("services")


@pytest.fixture(scope="session")
def redis_service(services_dir: Path) -> Iterator[Service]:
    """Its URL carries the password the server generated; clients without it are refused."""
    with start_redis(services_dir / "redis") as service:
        yield service


@pytest.fixture(scope="session")
def seaweedfs(services_dir: Path) -> Iterator[Service]:
    """It accepts only the key pair that Settings holds when none is configured, so a test's
    Settings (s3_settings) and a worker given just the endpoint reach it, and nothing else."""
    defaults = Settings.from_env({})
    keys = S3Credentials(defaults.s3_access_key, defaults.s3_secret_key)
    with start_seaweedfs(services_dir / "seaweedfs", BUCKET, credentials=keys) as service:
        yield service


@pytest.fixture
def redis_url(redis_service: Service) -> str:
    """A Redis database of this test's own, emptied first, so queues never carry over."""
    base = redis_service.url.rsplit("/", 1)[0]
    url = f"{base}/{next(_next_redis_db) % _REDIS_DATABASES}"
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


def s3_settings(endpoint: str, bucket: str = BUCKET) -> Settings:
    return Settings.from_env({"TILEJUDGE_S3_ENDPOINT": endpoint, "TILEJUDGE_S3_BUCKET": bucket})


@pytest.fixture
def blobs(seaweedfs: Service) -> Iterator[S3BlobStore]:
    store = S3BlobStore.from_settings(s3_settings(seaweedfs.url), seaweedfs.url)
    yield store
    store._client.close()


_POSTGRES = pytest.param(
    "postgres",
    marks=[
        pytest.mark.postgres,
        pytest.mark.skipif(
            not POSTGRES_URL,
            reason="TILEJUDGE_TEST_POSTGRES_URL is not set and nothing answers on 127.0.0.1:5432",
        ),
    ],
)
# A test of what only PostgreSQL allows (two writers at once, say): no SQLite case to skip.
POSTGRES_ONLY = pytest.mark.parametrize("sql_url", [_POSTGRES], indirect=True)


@pytest.fixture(params=["sqlite", _POSTGRES])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database, not yet migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tilejudge.sqlite3'}"
        return
    schema = f"tj_{uuid.uuid4().hex[:16]}"
    try:
        conn = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL at {_where(POSTGRES_URL)} refused the tests ({exc}); set "
            "TILEJUDGE_TEST_POSTGRES_URL to a database they may create schemas in"
        )
    with conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}options={quote(f'-csearch_path={schema}', safe='')}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def migrated_url(sql_url: str) -> str:
    engine = make_engine(sql_url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return sql_url


@pytest.fixture
def store(migrated_url: str) -> Iterator[SqlStore]:
    sql_store = SqlStore(make_engine(migrated_url))
    yield sql_store
    sql_store.engine.dispose()


@pytest.fixture
def worker_env(
    tmp_path: Path, redis_url: str, seaweedfs: Service, migrated_url: str
) -> dict[str, str]:
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith("TILEJUDGE_") and k != "REDIS_URL"
    }
    return inherited | {
        "REDIS_URL": redis_url,
        "TILEJUDGE_S3_ENDPOINT": seaweedfs.url,
        "TILEJUDGE_S3_BUCKET": BUCKET,
        "TILEJUDGE_HOME": str(tmp_path / "home"),
        "TILEJUDGE_DATABASE_URL": migrated_url,
    }
