"""S3BlobStore against a real SeaweedFS S3 gateway, and against an endpoint nobody serves."""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from core.errors import BlobNotFound, BlobStoreUnavailable
from devstack.ports import free_port
from devstack.process import Service
from infra.blobstore import S3BlobStore
from tests.integration.conftest import s3_settings

pytestmark = pytest.mark.integration


def a_key() -> str:
    return f"uploads/it/{uuid.uuid4().hex}"


def test_put_then_get_returns_the_same_bytes_and_delete_removes_them(blobs: S3BlobStore) -> None:
    key, data = a_key(), bytes(range(256)) * 1000  # binary, and more than one read's worth

    blobs.put(key, data, "text/plain")
    assert blobs.get(key) == data

    blobs.delete(key)
    with pytest.raises(BlobNotFound):
        blobs.get(key)


def test_gzip_bytes_come_back_as_stored_not_unpacked_on_the_way(blobs: S3BlobStore) -> None:
    # Reports are stored gzipped; SeaweedFS must neither unpack them nor pack them again.
    key, data = a_key(), gzip.compress(b'{"lines": []}' * 1000, compresslevel=1, mtime=0)

    blobs.put(key, data, "application/json", content_encoding="gzip")

    assert blobs.get(key) == data


def test_a_second_put_under_the_same_key_replaces_the_object(blobs: S3BlobStore) -> None:
    key = a_key()
    blobs.put(key, b"first")

    blobs.put(key, b"second")

    assert blobs.get(key) == b"second"


def test_getting_a_key_never_written_raises_blob_not_found_naming_the_key(
    blobs: S3BlobStore,
) -> None:
    key = a_key()

    with pytest.raises(BlobNotFound) as raised:
        blobs.get(key)

    assert raised.value.args == (key,)


def test_deleting_a_missing_key_is_not_an_error(blobs: S3BlobStore) -> None:
    blobs.delete(a_key())


def test_ping_answers_for_the_bucket_and_fails_for_a_missing_one(seaweedfs: Service) -> None:
    present = S3BlobStore.from_settings(s3_settings(seaweedfs.url), seaweedfs.url)
    missing = S3BlobStore.from_settings(
        s3_settings(seaweedfs.url, bucket=f"missing-{uuid.uuid4().hex[:8]}"), seaweedfs.url
    )
    try:
        present.ping()
        with pytest.raises(BlobStoreUnavailable):
            missing.ping()
    finally:
        present._client.close()
        missing._client.close()


def test_ensure_bucket_creates_a_missing_bucket_once(seaweedfs: Service) -> None:
    bucket = f"fresh-{uuid.uuid4().hex[:8]}"
    store = S3BlobStore.from_settings(s3_settings(seaweedfs.url, bucket=bucket), seaweedfs.url)
    try:
        store.ensure_bucket()
        store.ensure_bucket()  # there already: nothing to do

        store.ping()
        store.put("k", b"v")
        assert store.get("k") == b"v"
    finally:
        store._client.close()


@pytest.fixture
def unreachable() -> Iterator[S3BlobStore]:
    """The production client configuration aimed at a port with nothing listening."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    store = S3BlobStore.from_settings(s3_settings(endpoint), endpoint)
    yield store
    store._client.close()


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s: s.put("k", b"data"), id="put"),
        pytest.param(lambda s: s.get("k"), id="get"),
        pytest.param(lambda s: s.delete("k"), id="delete"),
        pytest.param(lambda s: s.ping(), id="ping"),
        pytest.param(lambda s: s.ensure_bucket(), id="ensure_bucket"),
    ],
)
def test_an_unreachable_endpoint_raises_blob_store_unavailable_quickly(
    unreachable: S3BlobStore, call: Callable[[S3BlobStore], object]
) -> None:
    started = time.monotonic()

    with pytest.raises(BlobStoreUnavailable):
        call(unreachable)

    assert time.monotonic() - started < 10
