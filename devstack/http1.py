"""One keep-alive HTTP/1.1 connection that sends a request and reads the answer: the load
generator's client.

The burst runs on the same cores as the stack it measures, so every millisecond the client spends
is taken from the server. httpx's asyncio client spent ~12.6 ms of CPU per upload here (more than
the API itself); this spends a fraction of one. It does only what the burst needs: a request with
a body, an answer with Content-Length or chunked, keep-alive, and transport errors named as
httpx names them (ConnectError, ReadError, ReadTimeout, RemoteProtocolError) so the reports read
the same.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024


class TransportError(Exception):
    """The request got no complete answer; `name` says how, as httpx would."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes


class Connection:
    """One connection, opened on first use and again after the server closes it."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/")  # an API served under a path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> Answer:
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(method, path, body, headers)
        except TransportError:
            self.close()
            raise
        except TimeoutError as exc:
            self.close()
            raise TransportError("ReadTimeout", f"no answer within {timeout:.0f} s") from exc
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            self.close()
            raise TransportError("ReadError", repr(exc)) from exc

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def _exchange(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> Answer:
        if self._writer is None:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        head = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._authority}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await self._writer.drain()
        status, answer_headers = await self._head(self._reader)
        payload = await self._body(self._reader, answer_headers)
        if answer_headers.get("connection", "").lower() == "close":
            self.close()
        return Answer(status, answer_headers, payload)

    async def _connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.open_connection(
                self._host,
                self._port,
                ssl=ssl.create_default_context() if self._tls else None,
                limit=MAX_HEAD,
            )
        except OSError as exc:
            raise TransportError("ConnectError", repr(exc)) from exc

    @staticmethod
    async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise TransportError("RemoteProtocolError", f"bad status line {lines[0][:80]!r}")
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        return int(code), headers

    @staticmethod
    async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    return b"".join(chunks)
                chunks.append(chunk[:-2])
        length = headers.get("content-length")
        if length is None or not length.isdigit():
            raise TransportError("RemoteProtocolError", "answer without a Content-Length")
        return await reader.readexactly(int(length))
