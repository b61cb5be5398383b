"""The local service launcher starts real Redis and SeaweedFS that persist and stay isolated."""

from __future__ import annotations

import os
import signal
import socket
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
import redis
from botocore.config import Config

from devstack import seaweedfs
from devstack.ports import GRPC_PORT_OFFSET, LOOPBACK, free_port
from devstack.process import Service, ServiceStartError
from devstack.redis_server import start_redis
from devstack.seaweedfs import (
    S3Credentials,
    go_threads,
    s3_credentials,
    start_seaweedfs,
    weed_environment,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mypy_boto3_s3 import S3Client

pytestmark = pytest.mark.integration

BUCKET = "tilejudge-test"


def s3_client(url: str, data_dir: Path) -> S3Client:
    """A client with the key pair the store started on `data_dir` generated there."""
    keys = s3_credentials(data_dir / "s3-credentials")
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=keys.access_key,
        aws_secret_access_key=keys.secret_key,
        config=Config(s3={"addressing_style": "path"}),
    )


def accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


def assert_fully_stopped(service: Service) -> None:
    assert service.process.returncode is not None
    with pytest.raises(ProcessLookupError):  # exited and reaped, not a zombie
        os.kill(service.process.pid, 0)
    assert not any(accepts_connections(port) for port in service.ports)
    assert not any(path.exists() for path in service.leftovers)


def test_free_port_with_avoid_twin_leaves_room_for_the_grpc_port() -> None:
    port = free_port(avoid_twin=True)
    assert port <= 65_535 - GRPC_PORT_OFFSET
    for candidate in (port, port + GRPC_PORT_OFFSET):
        with socket.socket() as sock:
            sock.bind((LOOPBACK, candidate))


def test_redis_keeps_keys_across_a_restart_on_the_same_directory(tmp_path: Path) -> None:
    with start_redis(tmp_path) as first, redis.Redis.from_url(first.url) as client:
        client.set("submission:1", "queued")
    assert_fully_stopped(first)

    with (
        start_redis(tmp_path, port=first.port) as second,
        redis.Redis.from_url(second.url) as client,
    ):
        assert second.url == first.url
        assert client.get("submission:1") == b"queued"
    assert_fully_stopped(second)


def test_starting_on_a_taken_port_fails_clearly_and_leaves_the_owner_alone(
    tmp_path: Path,
) -> None:
    # A port SeaweedFS could use too (its +10000 twin must exist), so both refusals are tested.
    with start_redis(tmp_path / "first", port=free_port(avoid_twin=True)) as first:
        with pytest.raises(ServiceStartError, match="already in use"):
            start_redis(tmp_path / "second", port=first.port)
        with pytest.raises(ServiceStartError, match="already in use"):
            start_seaweedfs(tmp_path / "third", BUCKET, s3_port=first.port)
        assert first.running


def test_a_server_that_exits_during_start_up_is_reported_with_its_log(tmp_path: Path) -> None:
    (tmp_path / "appendonly.aof").write_bytes(b"this is not an append-only file")

    with pytest.raises(ServiceStartError, match=r"(?s)exited with code 1.*append only file"):
        start_redis(tmp_path)


def test_seaweedfs_keeps_objects_across_a_restart_on_the_same_directory(tmp_path: Path) -> None:
    with (
        start_seaweedfs(tmp_path, BUCKET) as first,
        closing(s3_client(first.url, tmp_path)) as s3,
    ):
        s3.put_object(Bucket=BUCKET, Key="boards/1.json", Body=b'{"tiles": 15}')
    assert_fully_stopped(first)

    with (
        start_seaweedfs(tmp_path, BUCKET, s3_port=first.port) as second,
        closing(s3_client(second.url, tmp_path)) as s3,
    ):
        assert second.url == first.url
        body = s3.get_object(Bucket=BUCKET, Key="boards/1.json")["Body"]
        with closing(body):
            assert body.read() == b'{"tiles": 15}'
    assert_fully_stopped(second)


def test_a_restart_on_a_fixed_s3_port_chooses_again_when_a_chosen_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The S3 port is fixed on a restart, but weed's other ports are chosen anew; another process
    # can take one before weed binds it. The first launch is handed a port that a listener holds.
    s3_port = free_port(avoid_twin=True)
    choices: list[list[int]] = []
    real_reserve = seaweedfs.reserve_ports
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as squatter:
        squatter.bind((LOOPBACK, free_port(avoid_twin=True)))
        squatter.listen()
        taken = squatter.getsockname()[1]

        def reserve(count: int, *, avoid_twin: bool, exclude: Iterable[int] = ()) -> list[int]:
            ports = real_reserve(count, avoid_twin=avoid_twin, exclude=exclude)
            if not choices:
                ports[0] = taken  # the master's HTTP port
            choices.append(ports)
            return ports

        monkeypatch.setattr(seaweedfs, "reserve_ports", reserve)
        with (
            start_seaweedfs(tmp_path, BUCKET, s3_port=s3_port) as store,
            closing(s3_client(store.url, tmp_path)) as s3,
        ):
            assert store.port == s3_port
            s3.put_object(Bucket=BUCKET, Key="k", Body=b"v")
            assert taken not in store.ports
        assert_fully_stopped(store)
    assert len(choices) == 2, f"expected one failed launch and one retry, got {choices}"


def test_two_seaweedfs_instances_run_side_by_side_without_sharing_ports_or_data(
    tmp_path: Path,
) -> None:
    with (
        start_seaweedfs(tmp_path / "a", BUCKET) as a,
        start_seaweedfs(tmp_path / "b", BUCKET) as b,
        closing(s3_client(a.url, tmp_path / "a")) as s3_a,
        closing(s3_client(b.url, tmp_path / "b")) as s3_b,
    ):
        assert not set(a.ports) & set(b.ports)
        s3_a.put_object(Bucket=BUCKET, Key="only-in-a", Body=b"a")
        assert s3_b.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
        assert s3_a.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 1
    assert_fully_stopped(a)
    assert_fully_stopped(b)


def test_seaweedfs_runs_on_a_quarter_of_the_cores_unless_the_caller_says(tmp_path: Path) -> None:
    assert [go_threads(cores) for cores in (1, 2, 4, 7, 8, 64)] == [1, 1, 1, 1, 2, 16]
    keys = S3Credentials("key", "secret")
    assert weed_environment(keys, {"GOMAXPROCS": "3"})["GOMAXPROCS"] == "3"
    caller = {"PATH": "/bin", "S3_BUCKET": "other", "AWS_ACCESS_KEY_ID": "theirs"}
    assert weed_environment(keys, caller) == {
        "PATH": "/bin",
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "GOMAXPROCS": str(go_threads()),
    }
    with start_seaweedfs(tmp_path, BUCKET) as service:
        environ = Path(f"/proc/{service.process.pid}/environ").read_bytes().split(b"\0")
    assert f"GOMAXPROCS={os.environ.get('GOMAXPROCS') or go_threads()}".encode() in environ


def test_stop_kills_a_service_that_ignores_sigterm_and_cleans_up_after_it(
    tmp_path: Path,
) -> None:
    service = start_seaweedfs(tmp_path, BUCKET)
    os.kill(service.process.pid, signal.SIGSTOP)  # a frozen process cannot act on SIGTERM

    service.stop(timeout=0.5)

    assert service.process.returncode == -signal.SIGKILL
    assert_fully_stopped(service)
