"""S3BlobStore against moto's in-process S3: the adapter's calls and its error mapping."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
import pytest
from moto import mock_aws

from core.errors import BlobNotFound, BlobStoreUnavailable
from infra.blobstore import S3BlobStore
from infra.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

BUCKET = "tilejudge-unit"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Client]:
    # Never let a developer's own AWS profile or keys near the mock.
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        yield client
        client.close()


@pytest.fixture
def blobs(s3: S3Client) -> S3BlobStore:
    store = S3BlobStore(s3, BUCKET)
    store.ensure_bucket()
    return store


def test_ensure_bucket_creates_the_bucket_and_is_a_no_op_once_it_exists(s3: S3Client) -> None:
    store = S3BlobStore(s3, BUCKET)
    with pytest.raises(BlobStoreUnavailable):
        store.ping()

    store.ensure_bucket()
    store.put("k", b"v")
    store.ensure_bucket()

    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == [BUCKET]
    assert store.get("k") == b"v"  # the second call did not replace the bucket
    store.ping()


def test_put_stores_the_bytes_with_their_content_type_and_get_returns_them(
    blobs: S3BlobStore, s3: S3Client
) -> None:
    data = bytes(range(256)) * 10

    blobs.put("uploads/c/t/1", data, "text/plain")

    assert blobs.get("uploads/c/t/1") == data
    assert s3.head_object(Bucket=BUCKET, Key="uploads/c/t/1")["ContentType"] == "text/plain"


def test_a_put_without_a_content_type_stores_octet_stream(blobs: S3BlobStore, s3: S3Client) -> None:
    blobs.put("k", b"\x00\x01")

    assert s3.head_object(Bucket=BUCKET, Key="k")["ContentType"] == "application/octet-stream"


def test_delete_removes_the_object_and_a_missing_key_is_no_error(
    blobs: S3BlobStore, s3: S3Client
) -> None:
    blobs.put("k", b"v")

    blobs.delete("k")
    blobs.delete("k")

    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_getting_a_missing_key_raises_blob_not_found_which_is_a_key_error(
    blobs: S3BlobStore,
) -> None:
    with pytest.raises(BlobNotFound) as raised:
        blobs.get("reports/none.json")

    assert isinstance(raised.value, KeyError)
    assert raised.value.args == ("reports/none.json",)


def test_calls_on_a_missing_bucket_are_unavailable_not_not_found(s3: S3Client) -> None:
    store = S3BlobStore(s3, "no-such-bucket")

    for call in (lambda: store.get("k"), lambda: store.put("k", b"v"), store.ping):
        with pytest.raises(BlobStoreUnavailable):
            call()


def test_from_settings_builds_a_working_client_with_path_style_addressing(
    s3: S3Client,
) -> None:
    settings = Settings.from_env({"TILEJUDGE_S3_BUCKET": BUCKET})
    built = S3BlobStore.from_settings(settings, "https://s3.us-east-1.amazonaws.com")
    # Its GETs and PUTs go out as presigned URLs over http.client, which moto does not intercept:
    # the client's own calls are tried here, the URLs only looked at.
    store = S3BlobStore(built._client, BUCKET)
    try:
        store.ensure_bucket()
        store.put("k", b"v")

        assert store.get("k") == b"v"
        assert s3.get_object(Bucket=BUCKET, Key="k")["Body"].read() == b"v"
        url = built._client.generate_presigned_url("get_object", {"Bucket": BUCKET, "Key": "k"})
        assert url.startswith(f"https://s3.us-east-1.amazonaws.com/{BUCKET}/k?")
        # Signed with SigV4, which botocore's presigning uses only when told to.
        assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url
        assert "Signature=" not in url.replace("X-Amz-Signature=", "")
    finally:
        store._client.close()
