"""One keep-alive HTTP/1.1 connection on a blocking socket: the transport of the API client
(`infra.api_client.Client`) for the load generator's bursts.

A burst runs on the same cores as the stack it measures, so every cycle its client spends is taken
from the server; httpx's per-request work (and its pool's locking, with many threads) would be a
large share of what is measured. This does only what a burst needs: a request with a body, an
answer with Content-Length or chunked, keep-alive, and transport errors named as httpx names them
so reports read the same whichever transport carried a call.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from typing import BinaryIO
from urllib.parse import urlsplit

from infra.api_client import Answer, TransportError

MAX_LINE = 64 * 1024
DEFAULT_TIMEOUT_S = 60.0


class Connection:
    """One connection, opened on first use and again after the server closes it; for one
    thread at a time."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._url = url.rstrip("/")
        self._host = parts.hostname or "127.0.0.1"
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/")  # an API served under a path
        self._socket: socket.socket | None = None
        self._reader: BinaryIO | None = None

    @property
    def url(self) -> str:
        return self._url

    def send(
        self,
        method: str,
        target: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float | None,
    ) -> Answer:
        """The answer, whatever its status; TransportError (connection closed) if none came.
        `timeout` bounds connecting and each wait for the server."""
        limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
        try:
            return self._exchange(method, target, body, headers, limit)
        except TransportError:
            self.close()
            raise
        except TimeoutError as exc:
            self.close()
            raise TransportError("ReadTimeout", f"no answer within {limit:g} s") from exc
        except (OSError, ValueError) as exc:
            self.close()
            raise TransportError("ReadError", repr(exc)) from exc

    def close(self) -> None:
        # The reader first: the socket's descriptor stays open while a file made from it is.
        if self._reader is not None:
            self._reader.close()
        if self._socket is not None:
            self._socket.close()
        self._socket = self._reader = None

    def _exchange(
        self, method: str, target: str, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> Answer:
        if self._socket is None:
            self._connect(timeout)
        assert self._socket is not None and self._reader is not None
        self._socket.settimeout(timeout)
        head = f"{method} {self._prefix}{target} HTTP/1.1\r\nHost: {self._authority}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        # Head and body in one send: with TCP_NODELAY, two writes would be two segments.
        self._socket.sendall(head.encode("latin-1") + body)
        status, reason = self._status_line(self._reader)
        answer_headers = self._headers(self._reader)
        payload = self._body(self._reader, answer_headers)
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return Answer(status, reason, answer_headers, payload)

    def _connect(self, timeout: float) -> None:
        try:
            sock = socket.create_connection((self._host, self._port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self._host)
        except OSError as exc:
            raise TransportError("ConnectError", repr(exc)) from exc
        self._socket = sock
        self._reader = sock.makefile("rb")

    @staticmethod
    def _status_line(reader: BinaryIO) -> tuple[int, str]:
        line = reader.readline(MAX_LINE)
        if not line:
            raise TransportError("ReadError", "the server closed the connection without an answer")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise TransportError("RemoteProtocolError", f"bad status line {line[:80]!r}")
        return int(code), reason

    @staticmethod
    def _headers(reader: BinaryIO) -> dict[str, str]:
        headers: dict[str, str] = {}
        while True:
            line = reader.readline(MAX_LINE)
            if line in (b"\r\n", b"\n"):
                return headers
            if not line.endswith(b"\n"):
                raise TransportError("ReadError", "the answer's headers were cut short")
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()

    @staticmethod
    def _body(reader: BinaryIO, headers: Mapping[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(reader.readline(MAX_LINE).split(b";")[0], 16)
                chunk = _read_exactly(reader, size + 2)
                if size == 0:
                    return b"".join(chunks)
                chunks.append(chunk[:-2])
        length = headers.get("content-length")
        if length is None or not length.isdigit():
            raise TransportError("RemoteProtocolError", "answer without a Content-Length")
        return _read_exactly(reader, int(length))


def _read_exactly(reader: BinaryIO, size: int) -> bytes:
    data = reader.read(size)
    if len(data) != size:
        raise TransportError("ReadError", "the answer's body was cut short")
    return data
