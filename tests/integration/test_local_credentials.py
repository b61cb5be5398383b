"""The local Redis and S3 store refuse every client without the credentials generated into the
home, keep those credentials private and stable across starts, and `tilejudge up` hands them to
the API and the workers without ever printing them."""

from __future__ import annotations

import json
import socket
import stat
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import httpx
import pytest
import redis
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from devstack.children import child_env
from devstack.ports import LOOPBACK
from devstack.redis_server import redis_password, start_redis
from devstack.seaweedfs import S3Credentials, s3_credentials, start_seaweedfs
from devstack.testing.stack_process import children_of, running_stack
from infra.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

pytestmark = pytest.mark.integration

BUCKET = "tilejudge-credentials"
SECRET_BODY = b"queued upload bytes nobody else may read"


def s3_client(url: str, keys: S3Credentials | None) -> S3Client:
    """Signed with `keys`; None sends requests unsigned (anonymous)."""
    config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
    if keys is None:
        return boto3.client(
            "s3", endpoint_url=url, region_name="us-east-1",
            config=config.merge(Config(signature_version=UNSIGNED)),
        )  # fmt: skip
    return boto3.client(
        "s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id=keys.access_key,
        aws_secret_access_key=keys.secret_key, config=config,
    )  # fmt: skip


def refusal(url: str, keys: S3Credentials | None, bucket: str, key: str) -> tuple[int, str]:
    """The HTTP status and S3 error code a GET of the object gets; fails if it is served."""
    with closing(s3_client(url, keys)) as s3:
        try:
            s3.get_object(Bucket=bucket, Key=key)
        except ClientError as error:
            return (
                error.response["ResponseMetadata"]["HTTPStatusCode"],
                error.response["Error"]["Code"],
            )
    pytest.fail(f"the object was served to {keys}")


def raw_redis_reply(port: int, command: bytes) -> bytes:
    """The first reply line of a RESP command sent on a connection that never authenticated."""
    with socket.create_connection((LOOPBACK, port), timeout=5) as sock:
        sock.sendall(command)
        return sock.recv(4096).split(b"\r\n")[0]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def seaweedfs_with_an_object(tmp_path: Path) -> Iterator[tuple[str, list[int], S3Credentials]]:
    """A local S3 store holding one object; its URL, every port it listens on, its key pair."""
    keys = s3_credentials(tmp_path / "s3-credentials")
    with start_seaweedfs(tmp_path / "s3", BUCKET, credentials=keys) as service:
        with closing(s3_client(service.url, keys)) as s3:
            s3.put_object(Bucket=BUCKET, Key="uploads/c/t/1", Body=SECRET_BODY)
        yield service.url, list(service.ports), keys


def test_the_local_redis_refuses_every_client_without_its_password(tmp_path: Path) -> None:
    password = redis_password(tmp_path / "redis-password")
    with start_redis(tmp_path / "redis", password=password) as service:
        with redis.Redis.from_url(service.url) as client:
            client.set("submission:1", "queued")

        assert raw_redis_reply(service.port, b"*2\r\n$3\r\nGET\r\n$12\r\nsubmission:1\r\n") == (
            b"-NOAUTH Authentication required."
        )
        for wrong in (None, "not-" + password):
            with (
                redis.Redis(host=LOOPBACK, port=service.port, password=wrong) as client,
                pytest.raises(redis.AuthenticationError),
            ):
                client.get("submission:1")
        with redis.Redis(host=LOOPBACK, port=service.port, password=password) as client:
            assert client.get("submission:1") == b"queued"

        # Other local users can read a process's command line; the password is not in it,
        # nor in the server's files under the home.
        assert "redis-server" in cmdline(service.process.pid)
        assert password not in cmdline(service.process.pid)
        for path in filter(Path.is_file, (tmp_path / "redis").iterdir()):
            assert password.encode() not in path.read_bytes(), path


def test_the_redis_password_is_private_and_the_same_on_the_next_start(tmp_path: Path) -> None:
    with start_redis(tmp_path) as first, redis.Redis.from_url(first.url) as client:
        client.set("submission:1", "queued")
    password_file = tmp_path / "redis-password"
    password = password_file.read_text().strip()

    assert mode(password_file) == 0o600
    assert mode(tmp_path / "users.acl") == 0o600
    assert len(password) >= 32
    assert f":{password}@" in first.url
    with (
        start_redis(tmp_path, port=first.port) as second,
        redis.Redis.from_url(first.url) as client,  # a client holding the old URL
    ):
        assert second.url == first.url
        assert client.get("submission:1") == b"queued"
    assert password_file.read_text().strip() == password
    assert redis_password(tmp_path / "another-home" / "redis-password") != password


def test_the_local_s3_refuses_a_wrong_key_and_anonymous_requests(
    seaweedfs_with_an_object: tuple[str, list[int], S3Credentials],
) -> None:
    url, _, keys = seaweedfs_with_an_object
    key = "uploads/c/t/1"

    assert refusal(url, None, BUCKET, key) == (403, "AccessDenied")
    assert refusal(url, keys._replace(secret_key=keys.secret_key + "x"), BUCKET, key) == (
        403,
        "SignatureDoesNotMatch",
    )
    assert refusal(url, keys._replace(access_key="tilejudge"), BUCKET, key) == (
        403,
        "InvalidAccessKeyId",
    )
    defaults = Settings.from_env({})  # the pair a client with nothing configured would use
    assert (
        refusal(url, S3Credentials(defaults.s3_access_key, defaults.s3_secret_key), BUCKET, key)[0]
        == 403
    )
    plain = httpx.get(f"{url}/{BUCKET}/{key}", timeout=5)
    assert plain.status_code == 403 and SECRET_BODY not in plain.content
    with closing(s3_client(url, keys)) as s3:
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
        with closing(body):
            assert body.read() == SECRET_BODY


def test_no_port_of_the_local_s3_store_serves_an_object_unsigned(
    seaweedfs_with_an_object: tuple[str, list[int], S3Credentials],
) -> None:
    # Behind the S3 gateway, weed's filer serves /buckets/<bucket>/<key> over HTTP; it must
    # refuse unsigned reads too, or the gateway's key pair protects nothing.
    _, ports, _ = seaweedfs_with_an_object
    served = {}
    for port in ports:
        for path in (f"/buckets/{BUCKET}/uploads/c/t/1", f"/{BUCKET}/uploads/c/t/1"):
            try:
                answer = httpx.get(f"http://{LOOPBACK}:{port}{path}", timeout=5)
            except httpx.HTTPError:
                continue  # a gRPC port: not HTTP/1.1
            if SECRET_BODY in answer.content:
                served[port] = path
    assert served == {}


def test_the_s3_key_pair_is_private_and_the_same_on_the_next_start(tmp_path: Path) -> None:
    with start_seaweedfs(tmp_path, BUCKET) as first:
        keys = s3_credentials(tmp_path / "s3-credentials")
        with closing(s3_client(first.url, keys)) as s3:
            s3.put_object(Bucket=BUCKET, Key="kept", Body=b"kept")
    stored = json.loads((tmp_path / "s3-credentials").read_text())

    assert mode(tmp_path / "s3-credentials") == 0o600
    assert stored == {"access_key": keys.access_key, "secret_key": keys.secret_key}
    assert keys.access_key.isalnum() and len(keys.secret_key) >= 32
    with (
        start_seaweedfs(tmp_path, BUCKET, s3_port=first.port) as second,
        start_seaweedfs(tmp_path / "other", BUCKET) as other,
    ):
        with closing(s3_client(second.url, keys)) as s3:
            assert s3.get_object(Bucket=BUCKET, Key="kept")["Body"].read() == b"kept"
        other_keys = s3_credentials(tmp_path / "other" / "s3-credentials")
        assert other_keys != keys
        assert refusal(other.url, keys, BUCKET, "kept")[0] == 403  # one home's pair only


def test_child_env_replaces_the_s3_keys_only_for_the_local_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TILEJUDGE_S3_ACCESS_KEY", "configured")
    monkeypatch.setenv("TILEJUDGE_S3_SECRET_KEY", "configured-secret")

    def env(keys: S3Credentials | None) -> dict[str, str]:
        return child_env(
            redis_url="redis://:pw@127.0.0.1:1/0", s3_endpoint="http://127.0.0.1:2",
            database_url="sqlite://", home=tmp_path, api_port=3, s3_keys=keys,
        )  # fmt: skip

    configured = env(None)  # the stack started no S3 store: the caller's keys stand
    local = env(S3Credentials("local-key", "local-secret"))

    assert configured["TILEJUDGE_S3_ACCESS_KEY"] == "configured"
    assert configured["TILEJUDGE_S3_SECRET_KEY"] == "configured-secret"
    assert local["TILEJUDGE_S3_ACCESS_KEY"] == "local-key"
    assert local["TILEJUDGE_S3_SECRET_KEY"] == "local-secret"
    assert local["REDIS_URL"] == "redis://:pw@127.0.0.1:1/0"


def test_up_gives_the_credentials_to_its_children_and_never_prints_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with running_stack(home, workers=1) as stack:
        worker_log = home / "logs" / "worker.log"
        while " ready." not in stack.log("worker"):  # a hang is the test timeout's to catch
            time.sleep(0.3)
        password = (home / "redis-password").read_text().strip()
        keys = stack.s3_credentials
        ports = stack.ports
        child_cmdlines = [
            cmdline(pid)
            for child in children_of(stack.process.pid)
            for pid in (child, *children_of(child))
        ]

        # The services `up` started accept the generated credentials and nothing else.
        assert mode(home / "redis-password") == 0o600
        assert mode(home / "s3-credentials") == 0o600
        assert raw_redis_reply(ports["redis"], b"*1\r\n$4\r\nPING\r\n").startswith(b"-NOAUTH")
        with redis.Redis.from_url(stack.redis_url) as client:
            assert client.ping()
        defaults = Settings.from_env({})
        with closing(s3_client(stack.s3_endpoint, keys)) as s3:
            s3.head_bucket(Bucket="tilejudge")
        assert (
            refusal(
                stack.s3_endpoint,
                S3Credentials(defaults.s3_access_key, defaults.s3_secret_key),
                "tilejudge",
                "anything",
            )[0]
            == 403
        )
        # /readyz answered 200, so the API reached both with them; the worker connected too.
        assert httpx.get(f"{stack.url}/readyz", timeout=5).status_code == 200

    printed = (home / "up.out").read_text()
    assert f"redis://127.0.0.1:{ports['redis']}/0" in printed  # the banner's URL, bare
    assert "stopped" in printed
    for secret in (password, keys.secret_key):
        assert secret not in printed
        assert secret not in stack.log("api")
        assert secret not in worker_log.read_text()
        assert not [line for line in child_cmdlines if secret in line]
    assert any("redis-server" in line for line in child_cmdlines)
