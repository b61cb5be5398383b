"""The load generator's HTTP/1.1 connection against a scripted loopback server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import pytest

from devstack.http1 import Connection, TransportError

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


def _run(handler: Handler, client: Callable[[str], Awaitable[None]]) -> None:
    async def main() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            await client(f"http://127.0.0.1:{port}")

    asyncio.run(main())


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

    async def client(url: str) -> None:
        connection = Connection(url + "/api/")
        for n in range(3):
            answer = await connection.request(
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

    async def client(url: str) -> None:
        connection = Connection(url)
        for _ in range(2):
            answer = await connection.request("POST", "/", b"x", {}, timeout=5)
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

    async def client(url: str) -> None:
        with pytest.raises(TransportError) as caught:
            await Connection(url).request("POST", "/", b"x", {}, timeout=5)
        assert caught.value.name == name

    _run(handler, client)


def test_a_silent_server_times_out_and_a_closed_port_refuses() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.sleep(5)
        finally:
            writer.close()

    async def client(url: str) -> None:
        with pytest.raises(TransportError) as caught:
            await Connection(url).request("POST", "/", b"x", {}, timeout=0.2)
        assert caught.value.name == "ReadTimeout"

    _run(handler, client)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connecting is refused

    async def refused() -> None:
        with pytest.raises(TransportError) as caught:
            await Connection(f"http://127.0.0.1:{port}").request("POST", "/", b"", {}, timeout=5)
        assert caught.value.name == "ConnectError"

    asyncio.run(refused())
