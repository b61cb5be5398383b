"""The API and the Celery workers as `up` runs them: their command lines and environment, and
what must be in place before they start (a migrated SQL store, the judge's word list). The fault
harness and `tilejudge api|worker` start theirs with these too, so each runs what `up` runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from core.messages import BULK_QUEUE, LIVE_QUEUE
from devstack.ports import LOOPBACK
from infra.settings import ClientSettings, Settings

# How long an idle keep-alive connection stays open: longer than clients keep one (httpx: 5 s),
# so the client, not the server, ends it (with both at 5 s a client could send its next upload
# just as the server closed the connection, and get a reset), and short, since every idle one
# counts against CONNECTIONS_MOST (api.connection_book closes the longest idle ones first when
# connections crowd).
KEEP_ALIVE_S = 15
# Connections (and requests in progress) one API process holds at once; past it uvicorn answers
# 503 and closes. Each costs at most a request head (64 KiB) and the body uvicorn reads ahead
# (64 KiB) before the app, which refuses a wrong token before reading any, so the process's
# memory stays within about 128 MiB of connections whoever connects; a deadline spike's few
# hundred uploaders fit many times. Once half are open one client address holds at most a tenth
# of them, and once four fifths are, idle ones are closed for new ones (core.tuning,
# api.connection_book).
CONNECTIONS_MOST = 1000
# What a worker takes by default: live uploads first, then rejudge work.
QUEUES = (LIVE_QUEUE, BULK_QUEUE)


def api_argv(port: int, processes: int = 1, host: str = LOOPBACK) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory",
        "--host", host, "--port", str(port), "--workers", str(processes),
        *uvicorn_options(),
    ]  # fmt: skip


def uvicorn_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """How every uvicorn that serves the API runs; the tests of its limits start theirs so too.
    The client's address (the sign-in throttle's key, the per-address limits) is the one that
    connects, unless FORWARDED_ALLOW_IPS names the proxy in front (its addresses or networks):
    then uvicorn takes X-Forwarded-For (and -Proto) from that proxy alone, which must set the
    header itself rather than pass on a client's (docs/deploy.md). Unset, no forwarded header
    counts, where uvicorn would otherwise trust any process on the host (127.0.0.1)."""
    env = os.environ if environ is None else environ
    proxies = env.get("FORWARDED_ALLOW_IPS", "").strip()
    forwarded = ["--forwarded-allow-ips", proxies] if proxies else ["--no-proxy-headers"]
    return [
        # uvicorn's own httptools protocol buffers a request head of any size and waits for
        # it forever; this one caps its bytes and its time (named, since devstack may not
        # import the API).
        "--http", "api.http_protocol:LimitedHttpToolsProtocol",
        # The access log would write every client's address (X-Forwarded-For from a local
        # proxy included) to logs/api.log; the privacy page promises no IP addresses are kept.
        "--no-access-log",
        "--timeout-keep-alive", str(KEEP_ALIVE_S),
        "--limit-concurrency", str(CONNECTIONS_MOST),
        *forwarded,
    ]  # fmt: skip


def worker_argv(concurrency: int, queues: Sequence[str] = QUEUES) -> list[str]:
    # TILEJUDGE_WORKERS judge in bulk; the standby ones wait for live uploads during a rejudge
    # (workers/bulk_slots.py) and otherwise judge live uploads like the others. Celery names
    # the worker after its host (%h), so workers on several hosts are told apart.
    return [
        sys.executable, "-m", "celery", "-A", "workers.celery_app:app", "worker",
        "-Q", ",".join(queues), "-c", str(concurrency), "--pool", "prefork",
        "--loglevel", "INFO", "-n", "tilejudge@%h",
    ]  # fmt: skip


def child_env(
    *,
    redis_url: str,
    s3_endpoint: str,
    database_url: str,
    home: Path,
    api_port: int,
    s3_keys: tuple[str, str] | None = None,
) -> dict[str, str]:
    """The caller's environment plus where the stack's services are, for the API and workers.
    `redis_url` carries the local Redis's password; `s3_keys` (access key, secret key), given
    when the stack started its own S3 store, replace any TILEJUDGE_S3_ACCESS_KEY/_SECRET_KEY
    of the caller's, which then belong to no store in use."""
    keys = {}
    if s3_keys is not None:
        keys = {"TILEJUDGE_S3_ACCESS_KEY": s3_keys[0], "TILEJUDGE_S3_SECRET_KEY": s3_keys[1]}
    return os.environ | {
        "REDIS_URL": redis_url,
        "TILEJUDGE_S3_ENDPOINT": s3_endpoint,
        "TILEJUDGE_DATABASE_URL": database_url,
        "TILEJUDGE_HOME": str(home),
        "TILEJUDGE_API_PORT": str(api_port),
        **keys,
    }


def register_judge_lexicon(settings: Settings, s3_endpoint: str, database_url: str) -> None:
    """Register the judge's word list before the workers start, so their parent preloads it
    and the pool shares one copy from the first upload on (a list registered later is loaded
    by each child that needs it until the workers restart)."""
    from core.registry import register_lexicon
    from infra import lexicon_files
    from infra.compose import make_blobs, make_store
    from judge import Lexicon

    try:
        path = lexicon_files.resolve(None, ClientSettings.from_env())
    except lexicon_files.LexiconNotFound:
        return
    wired = replace(settings, s3_endpoint=s3_endpoint, database_url=database_url)
    store = make_store(wired)
    try:
        register_lexicon(
            store,
            make_blobs(wired),
            Lexicon.from_bytes(path.read_bytes()),
            name="words_alpha",
            source=str(path),
            by="tilejudge up",
        )
    finally:
        store.engine.dispose()
