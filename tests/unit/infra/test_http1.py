"""The load generator's HTTP/1.1 connection, and its burst over it, against a scripted loopback
server (asyncio, in a thread of its own, so the blocking client can run in the test's)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from devstack.burst import send_all
from devstack.http1 import Connection
from devstack.plan import Plan
from infra.api_client import TransportError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {}
    for line in head[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return head[0], headers, body


def _run(handler: Handler, client: Callable[[str], None]) -> None:
    """Serve with `handler` on a loopback port while `client(url)` runs, then stop."""
    ready = threading.Event()
    serving: dict[str, Any] = {}

    async def serve() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        serving.update(
            port=server.sockets[0].getsockname()[1], loop=loop, stop=loop.create_future()
        )
        ready.set()
        async with server:
            await serving["stop"]

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    try:
        assert ready.wait(5)
        client(f"http://127.0.0.1:{serving['port']}")
    finally:
        serving["loop"].call_soon_threadsafe(serving["stop"].set_result, None)
        thread.join(10)


def test_requests_share_one_connection_and_bodies_come_back_whole() -> None:
    seen: list[tuple[str, str, bytes]] = []
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                line, headers, body = await _read_request(reader)
                seen.append((line, headers["authorization"], body))
                answer = b'{"id": "%d"}' % len(seen)
                writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\n" % len(answer))
                writer.write(b"X-Tilejudge-Duplicate: true\r\n\r\n" + answer)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass  # the client closed its connection
        finally:
            writer.close()

    def client(url: str) -> None:
        connection = Connection(url + "/api/")
        for n in range(3):
            answer = connection.send(
                "POST", "/v1/x", b"move %d" % n, {"Authorization": "Bearer t"}, timeout=5
            )
            assert answer.status == 202
            assert answer.body == b'{"id": "%d"}' % (n + 1)
            assert answer.headers["x-tilejudge-duplicate"] == "true"
        connection.close()

    _run(handler, client)
    assert connections == 1
    assert seen == [("POST /api/v1/x HTTP/1.1", "Bearer t", b"move %d" % n) for n in range(3)]


def test_a_chunked_answer_and_a_closing_server_are_followed() -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _read_request(reader)
        writer.write(b"HTTP/1.1 413 Too Large\r\nTransfer-Encoding: chunked\r\n")
        writer.write(b"Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    def client(url: str) -> None:
        connection = Connection(url)
        for _ in range(2):
            answer = connection.send("POST", "/", b"x", {}, timeout=5)
            assert (answer.status, answer.body) == (413, b"hello world")

    _run(handler, client)
    assert connections == 2  # a new connection after the server said close


@pytest.mark.parametrize(
    ("reply", "name"),
    [
        (b"", "ReadError"),  # closed without an answer
        (b"SMTP ready\r\n\r\n", "RemoteProtocolError"),
        (b"HTTP/1.1 200 OK\r\n\r\nno length", "RemoteProtocolError"),
    ],
)
def test_a_broken_answer_is_a_named_transport_error(reply: bytes, name: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(reply)
        await writer.drain()
        writer.close()

    def client(url: str) -> None:
        with pytest.raises(TransportError) as caught:
            Connection(url).send("POST", "/", b"x", {}, timeout=5)
        assert caught.value.name == name

    _run(handler, client)


def test_a_silent_server_times_out_and_a_closed_port_refuses() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.sleep(5)
        finally:
            writer.close()

    def client(url: str) -> None:
        with pytest.raises(TransportError) as caught:
            Connection(url).send("POST", "/", b"x", {}, timeout=0.2)
        assert caught.value.name == "ReadTimeout"

    _run(handler, client)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connecting is refused

    with pytest.raises(TransportError) as caught:
        Connection(f"http://127.0.0.1:{port}").send("POST", "/", b"", {}, timeout=5)
    assert caught.value.name == "ConnectError"


def test_a_burst_sends_an_upload_again_after_a_503_and_records_every_attempt() -> None:
    busy = [b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 5\r\n\r\n"]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                _, headers, body = await _read_request(reader)
                assert headers["authorization"] == "Bearer team"
                if busy:
                    writer.write(busy.pop())
                else:
                    receipt = b'{"id": "s-%s", "received_at": "T"}' % body
                    writer.write(
                        b"HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\n\r\n" % len(receipt)
                    )
                    writer.write(receipt)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass  # the client closed its connection
        finally:
            writer.close()

    def client(url: str) -> None:
        plan = Plan(url, "c", uploads=2, concurrency=1, teams=1, admin_token="", retries=1)
        burst = send_all(plan, ["team"], [b"a", b"b"], time.monotonic() + 30)
        assert [(u.outcome, u.submission) for u in burst.uploads] == [
            ("202", "s-a"),
            ("202", "s-b"),
        ]
        assert [(a.upload, a.outcome) for a in burst.attempts] == [
            (0, "503"),
            (0, "202"),
            (1, "202"),
        ]
        # The burst keeps its own short pause, not the 5 s Retry-After asks for.
        assert burst.attempts[1].started - burst.attempts[0].started < 2

    _run(handler, client)
