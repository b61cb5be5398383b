"""uvicorn's httptools protocol with limits on the request head, which uvicorn would otherwise
buffer at any size and wait for without end before the app (and `api.middleware`) sees it: a
head over `HEAD_MAX_BYTES` gets 431, and one not complete in time ends the connection; and with
a book of the process's connections (`api.connection_book`), so that idle keep-alive connections
never crowd out work: a new connection closes the longest idle one of its address past the
address's share, and the longest idle one of all once most of the limit is open, rather than
uvicorn answering 503 to every request meanwhile. `devstack.children.uvicorn_options` selects
it with `--http`."""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.connection_book import ConnectionBook, TrustedProxies
from api.middleware import HEADER_MAX_BYTES
from infra.settings import Settings

# The middleware's own cap, on the raw head: a head under it reaches the middleware, which
# answers the finer limits (header count, names and values) with the same 431.
HEAD_MAX_BYTES = HEADER_MAX_BYTES

# What the subclass overrides or calls on the parent. Checked at import, so a uvicorn release
# that renames one fails the tests that start a server rather than every connection in service.
_PARENT_METHODS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_headers_complete",
    "on_message_complete",
    "on_response_complete",
    "handle_websocket_upgrade",
)
_PARENT_ATTRIBUTES = (
    "transport", "cycle", "loop", "logger", "server_state", "client", "config", "pipeline",
    "connections", "limit_concurrency",
)  # fmt: skip
_missing = [
    name for name in _PARENT_METHODS if not callable(getattr(HttpToolsProtocol, name, None))
]
if _missing:
    raise ImportError(f"uvicorn's HttpToolsProtocol has no {', '.join(_missing)}")


@functools.cache
def head_read_seconds() -> float:
    return float(Settings.from_env().header_read_seconds)


# One book per server (a process runs one), made by its first connection.
_books: weakref.WeakKeyDictionary[Any, ConnectionBook] = weakref.WeakKeyDictionary()


def connection_book(protocol: HttpToolsProtocol) -> ConnectionBook | None:
    """The book of the server `protocol` serves, or None when it has no connection limit."""
    limit = protocol.limit_concurrency
    if not limit:
        return None
    book = _books.get(protocol.server_state)
    if book is None:
        config = protocol.config
        trusted = TrustedProxies(config.forwarded_allow_ips if config.proxy_headers else None)
        book = _books[protocol.server_state] = ConnectionBook(limit, trusted)
    return book


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        missing = [name for name in _PARENT_ATTRIBUTES if not hasattr(self, name)]
        if missing:
            raise RuntimeError(f"uvicorn's HttpToolsProtocol sets no {', '.join(missing)}")
        # Bytes of the request head fed to the parser so far; None between the end of a head
        # and the end of its message, when what arrives is a body and the app's to limit.
        self._head_bytes: int | None = 0
        self._heads_done = 0
        self._head_clock: asyncio.TimerHandle | None = None
        self._book: ConnectionBook | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_clock()  # a connection that never sends a byte is timed too
        book = self._book = connection_book(self)
        if book is None:
            return
        book.opened(self, self.client[0] if self.client else "")
        closing, refused = book.to_close(self, len(self.connections))
        for other in closing:
            if isinstance(other, LimitedHttpToolsProtocol) and not other.transport.is_closing():
                other.transport.close()
        if refused:
            self._refuse_connection()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        if self._book is not None:
            self._book.closed(self)
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        if self._book is not None:  # the connection is another protocol's from now on
            self._book.closed(self)
            self._book = None
        super().handle_websocket_upgrade()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._book is not None and not self.pipeline and not self.transport.is_closing():
            self._book.idle(self)  # waits for its next request: the keep-alive timeout runs

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        if self._book is not None and self._book.is_idle(self):
            self._book.busy(self)
        if self._head_bytes is None:
            super().data_received(data)
            return
        if self._head_clock is None:
            # On a kept-alive connection the clock starts with the next head's first byte:
            # until then the connection is idle, and `--timeout-keep-alive` ends it.
            self._start_head_clock()
        room = HEAD_MAX_BYTES - self._head_bytes
        if len(data) <= room:
            self._head_bytes += len(data)
            super().data_received(data)
            return
        heads_done = self._heads_done
        self._head_bytes = HEAD_MAX_BYTES
        super().data_received(data[:room])
        if self._heads_done == heads_done:
            self._refuse_head()
        elif self.transport.get_protocol() is self:  # not handed to a WebSocket protocol
            self.data_received(data[room:])  # a body, or the next head, counted afresh

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._heads_done += 1
        self._stop_head_clock()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0

    def _start_head_clock(self) -> None:
        self._stop_head_clock()
        self._head_clock = self.loop.call_later(head_read_seconds(), self._head_overdue)

    def _stop_head_clock(self) -> None:
        if self._head_clock is not None:
            self._head_clock.cancel()
            self._head_clock = None

    def _head_overdue(self) -> None:
        self._head_clock = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A pipelined head stalls behind a response still being sent: finish that one.
            self.cycle.keep_alive = False
            return
        self.transport.close()

    def _refuse_head(self) -> None:
        self._stop_head_clock()
        self.logger.warning("A request head over %d bytes was refused with 431.", HEAD_MAX_BYTES)
        detail = f"the request line and headers are over {HEAD_MAX_BYTES} bytes"
        self._answer_and_close(b"431 Request Header Fields Too Large", "headers_too_large", detail)

    def _refuse_connection(self) -> None:
        """A connection past its address's share, none of the address's others idle: answered
        503 before its request, which the client reads as the answer to it."""
        self._stop_head_clock()
        assert self._book is not None
        detail = (
            f"this address holds {self._book.per_address} connections to this server, "
            "each with a request under way; retry once one has ended"
        )
        self._answer_and_close(b"503 Service Unavailable", "busy", detail, b"retry-after: 1\r\n")

    def _answer_and_close(self, status: bytes, code: str, detail: str, extra: bytes = b"") -> None:
        body = json.dumps({"error": code, "detail": detail}).encode()
        head = [b"HTTP/1.1 " + status + b"\r\n"]
        head += [
            name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers
        ]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            extra,
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
