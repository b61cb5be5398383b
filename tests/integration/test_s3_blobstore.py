"""S3BlobStore against a real SeaweedFS S3 gateway, and against an endpoint nobody serves."""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from core.errors import BlobNotFound, BlobStoreUnavailable
from core.intake import UPLOAD_CONTENT_TYPE
from devstack.ports import free_port
from devstack.process import Service
from infra.blobstore import S3BlobStore
from tests.connect_counts import connects_to
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


def test_an_upload_is_stored_as_sent_and_not_gzipped_by_seaweedfs(
    blobs: S3BlobStore, services_dir: Path
) -> None:
    # SeaweedFS gzips what it takes for text on every PUT and unpacks it on every GET (CPU at
    # the deadline); stored under intake's type, a move list's bytes go to the volume as sent.
    data = b"0 0 H cat\n" * 20_000  # 200 KB that gzip would pack to about 1 KB
    before = _volume_bytes(services_dir)

    blobs.put(a_key(), data, UPLOAD_CONTENT_TYPE)

    assert _volume_bytes(services_dir) - before >= len(data)


def _volume_bytes(services_dir: Path) -> int:
    """The size of SeaweedFS's volume files, which grow by what each PUT stores."""
    return sum(path.stat().st_size for path in (services_dir / "seaweedfs").rglob("*.dat"))


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


# Connections tried before an unreachable endpoint is given up on: botocore's two attempts
# (each may connect twice) or the presigned client's two.
MOST_ATTEMPTS = 4


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
def test_an_unreachable_endpoint_raises_blob_store_unavailable_after_a_few_attempts(
    unreachable: S3BlobStore,
    call: Callable[[S3BlobStore], object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Quickly, counted rather than timed: a bounded number of connection attempts (the
    botocore client's and the presigned client's retries), each refused at once, then
    BlobStoreUnavailable; never a loop of retries."""
    port = urlsplit(unreachable._client.meta.endpoint_url).port
    assert port is not None
    attempts = connects_to(port, monkeypatch)

    with pytest.raises(BlobStoreUnavailable):
        call(unreachable)

    assert 1 <= len(attempts) <= MOST_ATTEMPTS


def test_a_put_keeps_its_content_type_and_encoding(blobs: S3BlobStore) -> None:
    key = a_key()

    blobs.put(key, gzip.compress(b"{}"), "application/json", content_encoding="gzip")

    head = blobs._client.head_object(Bucket=blobs._bucket, Key=key)
    assert (head["ContentType"], head["ContentEncoding"]) == ("application/json", "gzip")


def test_a_key_with_characters_a_url_escapes_round_trips(blobs: S3BlobStore) -> None:
    key = f"uploads/a b+c%d/é?#&=/{uuid.uuid4().hex}"

    blobs.put(key, b"odd key")

    assert blobs.get(key) == b"odd key"
    assert blobs._client.get_object(Bucket=blobs._bucket, Key=key)["Body"].read() == b"odd key"


def test_a_put_whose_bytes_differ_from_their_signed_digest_is_refused_and_not_stored(
    blobs: S3BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As bytes damaged on the way would: the store checks the Content-MD5 the URL signs.
    key = a_key()
    digest = hashlib.md5
    monkeypatch.setattr("infra.blobstore.hashlib.md5", lambda data: digest(data + b"!"))

    with pytest.raises(BlobStoreUnavailable, match="BadDigest"):
        blobs.put(key, b"the bytes sent")

    with pytest.raises(BlobNotFound):
        blobs.get(key)


def test_a_put_sent_with_other_headers_than_it_signs_is_refused_and_not_stored(
    blobs: S3BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SigV4 signs the Content-Encoding too (SigV2, botocore's presigning default, did not):
    # a PUT whose headers were changed after signing (by a proxy, say) is refused.
    key = a_key()
    assert blobs._http is not None
    send = blobs._http.request

    def changed_on_the_way(method: str, url: str, **options: Any) -> Any:
        options["headers"] = {**options["headers"], "Content-Encoding": "identity"}
        return send(method, url, **options)

    monkeypatch.setattr(blobs._http, "request", changed_on_the_way)

    with pytest.raises(BlobStoreUnavailable, match="HTTP 403"):
        blobs.put(key, gzip.compress(b"{}"), "application/json", content_encoding="gzip")

    with pytest.raises(BlobNotFound):
        blobs.get(key)


def test_calls_signed_with_a_wrong_secret_are_refused_as_unavailable_not_missing(
    seaweedfs: Service, blobs: S3BlobStore
) -> None:
    key = a_key()
    blobs.put(key, b"there")
    settings = replace(s3_settings(seaweedfs.url), s3_secret_key="not-the-secret")
    wrong = S3BlobStore.from_settings(settings, seaweedfs.url)
    try:
        with pytest.raises(BlobStoreUnavailable, match="HTTP 403"):
            wrong.get(key)
        with pytest.raises(BlobStoreUnavailable, match="HTTP 403"):
            wrong.put(key, b"overwritten")
    finally:
        wrong._client.close()
    assert blobs.get(key) == b"there"


class _Flaky(BaseHTTPRequestHandler):
    """Answers `failures` 503s, then 200 with a body, counting the requests."""

    failures = 0
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        failing = len(self.seen) <= self.failures
        body = b"<Error><Code>SlowDown</Code></Error>" if failing else b"the object"
        self.send_response(503 if failing else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize(("failures", "outcome"), [(1, "the object"), (2, "HTTP 503 (SlowDown)")])
def test_a_5xx_answer_is_retried_once(failures: int, outcome: str) -> None:
    handler = type("Flaky", (_Flaky,), {"failures": failures, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    store = S3BlobStore.from_settings(s3_settings(endpoint), endpoint)
    try:
        if failures == 1:
            assert store.get("k") == outcome.encode()
        else:
            with pytest.raises(BlobStoreUnavailable, match=re.escape(outcome)):
                store.get("k")
        assert len(handler.seen) == 2
    finally:
        store._client.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
