"""Presigned S3 calls over the standard library's `http.client` (`PresignedHttp`): what
`infra.blobstore.S3BlobStore` sends the URLs `infra.blobstore.Presigner` signs with."""

from __future__ import annotations

import http.client
import re
import select
import socket
import ssl
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError

from core.errors import BlobStoreUnavailable

# Both ways of calling S3 (boto3's client, presigned URLs) keep these the same.
CONNECT_TIMEOUT_S = 3  # fail fast: intake answers 503 rather than holding the client
READ_TIMEOUT_S = 20.0
CONNECTIONS = 64
_ERROR_CODE = re.compile(rb"<Code>([^<]{1,64})</Code>")


@dataclass(frozen=True)
class Answer:
    """An S3 endpoint's answer to a presigned call, read whole."""

    status: int
    data: bytes


class PresignedHttp:
    """Presigned GETs and PUTs over the standard library's `http.client`, on kept-alive
    connections shared by the threads (at most `connections` kept idle an endpoint).

    Not urllib3, botocore's own HTTP library: it parses each URL and re-encodes its long
    signed query character by character in Python, and builds retry, timeout and response
    objects around every request, about 0.2 ms of CPU a call more (`benchmarks.s3_calls`,
    a 51 KB PUT). Kept from it: the connect and
    read timeouts, a kept-alive connection the endpoint has closed found before it is used
    (one `poll`) or, closed on the way, sent again on a new one, and one retry of a
    connection refused or dropped, or of a 5xx answer. GET and PUT of a whole object are both
    idempotent, so sending one again is safe. Straight to the endpoint, through no proxy; over
    https, checked against the system's certificate authorities."""

    def __init__(
        self,
        read_timeout: float = READ_TIMEOUT_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        connections: int = CONNECTIONS,
    ) -> None:
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._most = connections
        self._idle: dict[tuple[str, str], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None  # made once, on the first https connection
        # Its idle connections closed when it is dropped, as urllib3 closes a pool's.
        weakref.finalize(self, _close_idle, self._idle, self._lock)

    def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """`method` on `url`, the whole answer read; the error of the last try where none
        answered (OSError, http.client.HTTPException)."""
        parts = urlsplit(url)
        endpoint = (parts.scheme, parts.netloc)
        target = f"{parts.path}?{parts.query}" if parts.query else parts.path
        retries = 1
        while True:
            conn, reused = self._take(endpoint)
            try:
                if not reused:
                    self._open(conn)
                conn.request(method, target, body=body, headers=dict(headers or {}))
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if reused and isinstance(exc, _CLOSED_ON_THE_WAY):
                    continue  # the endpoint closed an idle connection: not a failed try
                if retries == 0:
                    raise
                retries -= 1
                continue
            if response.will_close:
                conn.close()
            else:
                self._give_back(endpoint, conn)
            if response.status < 500 or retries == 0:
                return Answer(response.status, data)
            retries -= 1

    def close(self) -> None:
        _close_idle(self._idle, self._lock)

    def _take(self, endpoint: tuple[str, str]) -> tuple[http.client.HTTPConnection, bool]:
        """A kept-alive connection to `endpoint` still open (and True), else a new one, not
        yet open (and False)."""
        while True:
            with self._lock:
                idle = self._idle.get(endpoint)
                conn = idle.pop() if idle else None
            if conn is None:
                return self._new(endpoint), False
            if conn.sock is not None and not _readable(conn.sock):
                return conn, True
            conn.close()  # closed by the endpoint (readable: its end of file) while idle

    def _new(self, endpoint: tuple[str, str]) -> http.client.HTTPConnection:
        scheme, netloc = endpoint
        conn: http.client.HTTPConnection
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            conn = http.client.HTTPSConnection(
                netloc, timeout=self._connect_timeout, context=self._tls
            )
        elif scheme == "http":
            conn = http.client.HTTPConnection(netloc, timeout=self._connect_timeout)
        else:
            raise ValueError(f"not an http(s) URL: {scheme}://{netloc}")
        return conn

    def _open(self, conn: http.client.HTTPConnection) -> None:
        """Connect within the connect timeout (and, over https, shake hands), then wait for
        answers up to the read timeout."""
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(self._read_timeout)

    def _give_back(self, endpoint: tuple[str, str], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(endpoint, [])
            if len(idle) < self._most:
                idle.append(conn)
                return
        conn.close()


def _close_idle(
    idle: dict[tuple[str, str], list[http.client.HTTPConnection]], lock: threading.Lock
) -> None:
    with lock:
        conns = [conn for kept in idle.values() for conn in kept]
        idle.clear()
    for conn in conns:
        conn.close()


# A kept-alive connection the endpoint closed shows as one of these when it is used.
_CLOSED_ON_THE_WAY = (
    http.client.RemoteDisconnected,
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
)


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has something to read: its peer closed it (or
    broke the protocol); either way it is not to be used again."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def refusal(response: Answer) -> str:
    """The S3 error code of a refused presigned call (`AccessDenied`), else its status."""
    found = _ERROR_CODE.search(response.data[:4096])
    code = found.group(1).decode("ascii", "replace") if found else "no error code"
    return f"HTTP {response.status} ({code})"


def pieces(body: Any, key: str, piece: int) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(piece)
    except BotoCoreError as exc:
        raise BlobStoreUnavailable(f"S3 get {key}: {exc}") from exc
    finally:
        body.close()
