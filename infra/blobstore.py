"""The blob store on S3 (any S3-compatible endpoint; SeaweedFS locally), behind `core.ports.BlobStore`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core.errors import BlobNotFound, BlobStoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from infra.settings import Settings


def client_config(read_timeout: float = 20.0, connections: int = 64) -> Config:
    """How every S3 client of the project talks to the store (the spike benchmark's raw PUTs
    too, so that they cost what intake's own write costs)."""
    return Config(
        # Fail fast: intake answers 503 rather than holding the client while S3 is down.
        connect_timeout=3,
        read_timeout=read_timeout,
        retries={"max_attempts": 2, "mode": "standard"},
        max_pool_connections=connections,
        s3={"addressing_style": "path"},
        # No CRC-32 trailer on every PUT nor check on every GET (botocore's default since
        # 1.36): the payload is signed, and the workers check each upload's SHA-256
        # themselves, so the checksums would only cost CPU on every request.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )


class S3BlobStore:
    """One bucket of any S3-compatible endpoint (SeaweedFS locally)."""

    def __init__(self, client: S3Client, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    @classmethod
    def from_settings(
        cls, settings: Settings, endpoint: str, read_timeout: float = 20.0
    ) -> S3BlobStore:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key,
            aws_secret_access_key=settings.s3_secret_key,
            config=client_config(read_timeout),
        )
        return cls(client, settings.s3_bucket)

    def ensure_bucket(self) -> None:
        try:
            self._client.head_bucket(Bucket=self._bucket)
        except ClientError:
            self._client.create_bucket(Bucket=self._bucket)
        except BotoCoreError as exc:
            raise BlobStoreUnavailable(str(exc)) from exc

    def put(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        content_encoding: str | None = None,
    ) -> None:
        """Store `data` as is; `content_encoding` ("gzip") only labels it for other S3 readers,
        `get` returns the stored bytes either way."""
        extra: dict[str, Any] = {"ContentEncoding": content_encoding} if content_encoding else {}
        try:
            self._client.put_object(
                Bucket=self._bucket, Key=key, Body=data, ContentType=content_type, **extra
            )
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 put {key}: {exc}") from exc

    def get(self, key: str) -> bytes:
        body = self._body(key)
        try:
            data: bytes = body.read()
            return data
        except BotoCoreError as exc:
            raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc
        finally:
            body.close()

    def stream(self, key: str, piece: int = 64 * 1024) -> Iterator[bytes]:
        """The object in pieces of up to `piece` bytes, found on the call (BlobNotFound) and
        read from S3 as they are taken; a read that breaks off is BlobStoreUnavailable."""
        return _pieces(self._body(key), key, piece)

    def _body(self, key: str) -> Any:
        """The object's body, not yet read: BlobNotFound, or BlobStoreUnavailable for an outage."""
        try:
            return self._client.get_object(Bucket=self._bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                raise BlobNotFound(key) from exc
            raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc
        except BotoCoreError as exc:
            raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc

    def delete(self, key: str) -> None:
        try:
            self._client.delete_object(Bucket=self._bucket, Key=key)
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 delete {key}: {exc}") from exc

    def ping(self) -> None:
        try:
            self._client.head_bucket(Bucket=self._bucket)
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 bucket {self._bucket}: {exc}") from exc


def _pieces(body: Any, key: str, piece: int) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(piece)
    except BotoCoreError as exc:
        raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc
    finally:
        body.close()
