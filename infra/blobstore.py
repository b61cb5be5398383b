"""The blob store on S3 (any S3-compatible endpoint; SeaweedFS locally), behind `core.ports.BlobStore`."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import urllib3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from core.errors import BlobNotFound, BlobStoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from infra.settings import Settings


# Both ways of calling S3 (boto3's client, presigned URLs) keep these the same.
CONNECT_TIMEOUT_S = 3  # fail fast: intake answers 503 rather than holding the client
READ_TIMEOUT_S = 20.0
CONNECTIONS = 64


def client_config(read_timeout: float = READ_TIMEOUT_S, connections: int = CONNECTIONS) -> Config:
    """How every S3 client of the project talks to the store (the spike benchmark's raw PUTs
    too, so that they cost what intake's own write costs)."""
    return Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=read_timeout,
        retries={"max_attempts": 2, "mode": "standard"},
        max_pool_connections=connections,
        s3={"addressing_style": "path"},
        # SigV4 for presigned URLs too: botocore presigns S3 URLs with SigV2 unless told
        # (boto/boto3#2680, boto/botocore#3791), which AWS S3 is retiring and which leaves
        # some of the signed call's fields unsigned.
        signature_version="s3v4",
        # No CRC-32 trailer on every PUT nor check on every GET (botocore's default since
        # 1.36): the payload is signed, and the workers check each upload's SHA-256
        # themselves, so the checksums would only cost CPU on every request.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )


# How long a URL presigned for one object GET or PUT stays good: it is sent at once.
PRESIGNED_S = 300
_ERROR_CODE = re.compile(rb"<Code>([^<]{1,64})</Code>")


class S3BlobStore:
    """One bucket of any S3-compatible endpoint (SeaweedFS locally).

    With `http` (as `from_settings` builds it), an object's GET and PUT, the calls on every
    upload's path, go as URLs boto3 presigns, sent with urllib3 (botocore's own HTTP library):
    that skips botocore's per-call machinery around the request (its event hooks, header
    signing, response parsing), about 1.3 ms of CPU of the ~2-3 each call cost. A PUT carries
    a signed Content-MD5 the store checks, as a signed payload hash would be. Everything else,
    and every call without `http` (moto's tests), goes through the boto3 client."""

    def __init__(
        self, client: S3Client, bucket: str, http: urllib3.PoolManager | None = None
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._http = http

    @classmethod
    def from_settings(
        cls, settings: Settings, endpoint: str, read_timeout: float = READ_TIMEOUT_S
    ) -> S3BlobStore:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key,
            aws_secret_access_key=settings.s3_secret_key,
            config=client_config(read_timeout),
        )
        return cls(client, settings.s3_bucket, http=presigned_http(read_timeout))

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
        if self._http is not None:
            self._put_presigned(key, data, {"ContentType": content_type, **extra})
            return
        try:
            self._client.put_object(
                Bucket=self._bucket, Key=key, Body=data, ContentType=content_type, **extra
            )
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 put {key}: {exc}") from exc

    def get(self, key: str) -> bytes:
        if self._http is not None:
            return self._get_presigned(key)
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

    def _get_presigned(self, key: str) -> bytes:
        response = self._send("GET", key, {}, None)
        if response.status == 200:
            return response.data
        if response.status == 404:
            raise BlobNotFound(key)
        raise BlobStoreUnavailable(f"S3 get {key}: {_refusal(response)}")

    def _put_presigned(self, key: str, data: bytes, fields: dict[str, str]) -> None:
        fields["ContentMD5"] = base64.b64encode(hashlib.md5(data).digest()).decode("ascii")
        response = self._send("PUT", key, fields, data)
        if response.status != 200:
            raise BlobStoreUnavailable(f"S3 put {key}: {_refusal(response)}")

    def _send(
        self, method: str, key: str, fields: dict[str, str], body: bytes | None
    ) -> urllib3.BaseHTTPResponse:
        """`method` ("GET" or "PUT") on `key`, presigned with the object call's `fields`
        (ContentType, ...), which are then sent as the headers they sign."""
        assert self._http is not None
        operation = "get_object" if method == "GET" else "put_object"
        headers = {_HEADERS[name]: value for name, value in fields.items()}
        try:
            url = self._client.generate_presigned_url(
                operation,
                Params={"Bucket": self._bucket, "Key": key, **fields},
                ExpiresIn=PRESIGNED_S,
            )
            return self._http.request(
                method, url, body=body, headers=headers, redirect=False, decode_content=False
            )
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 {method.lower()} {key}: {exc}") from exc
        except urllib3.exceptions.HTTPError as exc:
            # The text of the retries' error would show the signed URL; its cause's does not.
            reason = getattr(exc, "reason", None)
            why = str(reason) if reason is not None else type(exc).__name__
            raise BlobStoreUnavailable(f"S3 {method.lower()} {key}: {why}") from exc

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


# The put_object fields a presigned PUT signs, as the headers it must then be sent with.
_HEADERS = {
    "ContentType": "Content-Type",
    "ContentEncoding": "Content-Encoding",
    "ContentMD5": "Content-MD5",
}


def presigned_http(
    read_timeout: float = READ_TIMEOUT_S, connections: int = CONNECTIONS
) -> urllib3.PoolManager:
    """The connections presigned GETs and PUTs go over: the timeouts and the one retry (of a
    connection refused or dropped, or a 5xx answer) of `client_config`'s."""
    return urllib3.PoolManager(
        maxsize=connections,
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S, read=read_timeout),
        retries=urllib3.Retry(
            total=1,
            redirect=0,
            status_forcelist=(500, 502, 503, 504),
            allowed_methods=frozenset({"GET", "PUT"}),
            raise_on_status=False,
        ),
    )


def _refusal(response: urllib3.BaseHTTPResponse) -> str:
    """The S3 error code of a refused presigned call (`AccessDenied`), else its status."""
    found = _ERROR_CODE.search(response.data[:4096])
    code = found.group(1).decode("ascii", "replace") if found else "no error code"
    return f"HTTP {response.status} ({code})"


def _pieces(body: Any, key: str, piece: int) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(piece)
    except BotoCoreError as exc:
        raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc
    finally:
        body.close()
