"""The blob store on S3 (any S3-compatible endpoint; SeaweedFS locally), behind `core.ports.BlobStore`."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.client
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import boto3
from botocore import auth as botocore_auth
from botocore.auth import SIGNED_HEADERS_BLACKLIST, SIGV4_TIMESTAMP, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from botocore.utils import percent_encode

from core.errors import BlobNotFound, BlobStoreUnavailable
from infra.presigned_http import (
    CONNECT_TIMEOUT_S,
    CONNECTIONS,
    READ_TIMEOUT_S,
    Answer,
    PresignedHttp,
    pieces,
    refusal,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from infra.settings import Settings


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


class S3BlobStore:
    """One bucket of any S3-compatible endpoint (SeaweedFS locally).

    With `http` (as `from_settings` builds it), an object's GET and PUT, the calls on every
    upload's path, go as presigned URLs sent by `PresignedHttp`, signed
    by `Presigner` where `credentials` are given, else by the client: that skips botocore's
    per-call machinery around the request (its event hooks, endpoint resolution, response
    parsing), most of the CPU a call costs its caller. A PUT carries a signed Content-MD5 the
    store checks, as a signed payload hash would be. Everything else, and every call without
    `http` (moto's tests), goes through the boto3 client."""

    def __init__(
        self,
        client: S3Client,
        bucket: str,
        http: PresignedHttp | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._http = http
        # With the client's credentials, URLs are signed without its per-call machinery (where
        # the client's own URLs are the kind Presigner makes: SigV4 in the query).
        self._presigner = None
        if credentials is not None:
            with contextlib.suppress(ValueError):
                self._presigner = Presigner(client, bucket, credentials)

    @classmethod
    def from_settings(
        cls, settings: Settings, endpoint: str, read_timeout: float = READ_TIMEOUT_S
    ) -> S3BlobStore:
        return cls.connect(
            endpoint,
            settings.s3_bucket,
            settings.s3_region,
            (settings.s3_access_key, settings.s3_secret_key),
            read_timeout,
        )

    @classmethod
    def connect(
        cls,
        endpoint: str | None,
        bucket: str,
        region: str | None,
        keys: tuple[str | None, str | None] = (None, None),
        read_timeout: float = READ_TIMEOUT_S,
        connections: int = CONNECTIONS,
    ) -> S3BlobStore:
        """The store as the project uses it: GETs and PUTs as URLs it signs (`PresignedHttp`).
        `keys` (access key, secret key), or botocore's own chain where they are None."""
        session = boto3.Session(
            region_name=region, aws_access_key_id=keys[0], aws_secret_access_key=keys[1]
        )
        client = session.client(
            "s3", endpoint_url=endpoint, config=client_config(read_timeout, connections)
        )
        # The session's credentials are the client's (renewed as theirs are, where they come
        # from a provider that renews them).
        return cls(
            client,
            bucket,
            http=PresignedHttp(read_timeout=read_timeout, connections=connections),
            credentials=session.get_credentials(),
        )

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
        return pieces(self._body(key), key, piece)

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
        raise BlobStoreUnavailable(f"S3 get {key}: {refusal(response)}")

    def _put_presigned(self, key: str, data: bytes, fields: dict[str, str]) -> None:
        fields["ContentMD5"] = base64.b64encode(hashlib.md5(data).digest()).decode("ascii")
        response = self._send("PUT", key, fields, data)
        if response.status != 200:
            raise BlobStoreUnavailable(f"S3 put {key}: {refusal(response)}")

    def _send(self, method: str, key: str, fields: dict[str, str], body: bytes | None) -> Answer:
        """`method` ("GET" or "PUT") on `key`, presigned with the object call's `fields`
        (ContentType, ...), which are then sent as the headers they sign."""
        assert self._http is not None
        headers = {_HEADERS[name]: value for name, value in fields.items()}
        try:
            if self._presigner is not None and self._presigner.signs(key):
                url = self._presigner.url(method, key, headers)
            else:
                url = self._client.generate_presigned_url(
                    "get_object" if method == "GET" else "put_object",
                    Params={"Bucket": self._bucket, "Key": key, **fields},
                    ExpiresIn=PRESIGNED_S,
                )
            return self._http.request(method, url, body=body, headers=headers)
        except (BotoCoreError, ClientError) as exc:
            raise BlobStoreUnavailable(f"S3 {method.lower()} {key}: {exc}") from exc
        except (OSError, http.client.HTTPException) as exc:
            # The error's text, never the signed URL, which would let its reader make the call.
            why = str(exc) or type(exc).__name__
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


class Presigner:
    """URLs for one bucket's objects, signed (SigV4, in the query) to the byte as the client's
    `generate_presigned_url` signs them (`tests/unit/infra/test_presigner.py` holds the two
    side by side), without what botocore does around it each time: resolving the endpoint from
    its rule set, validating and serialising the parameters, its event hooks, then building a
    request object whose URL it splits and parses again and again while signing. What does not
    change between calls is worked out once: where the bucket's URLs start, the Host header, the
    region and service (read off one URL the client presigns, so the endpoint, addressing style
    and region are the client's), and each day's signing key. What is left a call is one SHA-256
    and one HMAC: 12 to 15 µs a URL, against 160 to 180 for the client's (`python -m
    benchmarks.s3_calls`). The time is botocore's
    (`botocore.auth.get_current_datetime`), the credentials the client's, renewed as theirs are.
    A key with characters outside `_PLAIN_KEY` (none of the project's) is left to the client."""

    def __init__(self, client: S3Client, bucket: str, credentials: Credentials) -> None:
        url = client.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": _PROBE_KEY}, ExpiresIn=PRESIGNED_S
        )
        base, _, query = url.partition("?")
        scope = parse_qs(query).get("X-Amz-Credential", [""])[0].split("/")
        if not base.endswith("/" + _PROBE_KEY) or len(scope) != 5:
            raise ValueError(f"not a SigV4 presigned URL of {_PROBE_KEY!r}: {base}")
        self._prefix = base[: -len(_PROBE_KEY)]
        self._path = urlsplit(self._prefix).path
        # The credential scope: access key / date / region / service / aws4_request.
        self._region, self._service = scope[2], scope[3]
        # The Host header botocore signs for these URLs (no default port, no user info).
        probe = AWSRequest("GET", url)
        self._host = S3SigV4QueryAuth(credentials, self._service, self._region).headers_to_sign(
            probe
        )["host"]
        self._credentials = credentials
        self._keys: tuple[str, str, bytes] | None = None  # secret, date, that day's key

    @staticmethod
    def signs(key: str) -> bool:
        return _PLAIN_KEY.fullmatch(key) is not None

    def url(self, method: str, key: str, headers: dict[str, str]) -> str:
        """`method` on `key`, valid PRESIGNED_S, signing `headers` (sent with it as they are).
        `key` is one `signs` accepts: its characters need no percent-encoding."""
        frozen = self._credentials.get_frozen_credentials()
        if frozen.access_key is None or frozen.secret_key is None:
            raise NoCredentialsError()
        # Looked up on the module each time, as botocore's signers do (and tests freeze it).
        now = botocore_auth.get_current_datetime()  # type: ignore[attr-defined]
        stamp = now.strftime(SIGV4_TIMESTAMP)
        day = stamp[:8]
        scope = f"{day}/{self._region}/{self._service}/aws4_request"
        signed = {"host": self._host}
        for name, value in headers.items():
            lower = name.lower()
            if lower not in SIGNED_HEADERS_BLACKLIST and not (
                lower == "content-type" and value == _FORM_CONTENT_TYPE
            ):
                signed[lower] = " ".join(value.split())
        names = sorted(signed)
        signed_names = ";".join(names)
        params = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", percent_encode(f"{frozen.access_key}/{scope}")),
            ("X-Amz-Date", stamp),
            ("X-Amz-Expires", str(PRESIGNED_S)),
            ("X-Amz-SignedHeaders", percent_encode(signed_names)),
        ]
        if frozen.token is not None:
            params.append(("X-Amz-Security-Token", percent_encode(frozen.token)))
        query = "&".join(f"{name}={value}" for name, value in params)
        canonical = "\n".join(
            (
                method,
                self._path + key,
                "&".join(f"{name}={value}" for name, value in sorted(params)),
                "".join(f"{name}:{signed[name]}\n" for name in names),
                signed_names,
                "UNSIGNED-PAYLOAD",
            )
        )
        to_sign = "\n".join(
            (
                "AWS4-HMAC-SHA256",
                stamp,
                scope,
                hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
            )
        )
        signature = hmac.new(
            self._signing_key(frozen.secret_key, day), to_sign.encode("utf-8"), "sha256"
        )
        return f"{self._prefix}{key}?{query}&X-Amz-Signature={signature.hexdigest()}"

    def _signing_key(self, secret: str, day: str) -> bytes:
        """SigV4's key for `day`, kept until the day or the secret changes."""
        kept = self._keys
        if kept is not None and kept[0] == secret and kept[1] == day:
            return kept[2]
        key = f"AWS4{secret}".encode()
        for part in (day, self._region, self._service, "aws4_request"):
            key = hmac.new(key, part.encode("utf-8"), "sha256").digest()
        self._keys = (secret, day, key)
        return key


# What botocore drops from a presigned call's signed headers: the form type it sets itself.
_FORM_CONTENT_TYPE = "application/x-www-form-urlencoded; charset=utf-8"


# The key the bucket's URL prefix is read off, and the keys signed without the client: path
# segments of letters, digits and -_.~ (no empty, "." or ".." segment, which URL handling
# anywhere on the way could fold away).
_PROBE_KEY = "tilejudge-presign-probe"
_PLAIN_KEY = re.compile(
    r"(?!\.{1,2}(?:/|$))[A-Za-z0-9_.~-]+(?:/(?!\.{1,2}(?:/|$))[A-Za-z0-9_.~-]+)*"
)
