"""The API's uvicorn, started with the options `up` uses, against hostile clients: a request
head too large is refused before it is all read, a head that stalls ends its connection,
connections past the concurrency limit are answered 503 and closed, and ordinary requests,
kept-alive ones included, still get their answer."""

from __future__ import annotations

import http.client
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from devstack.children import CONNECTIONS_MOST, uvicorn_options
from devstack.ports import LOOPBACK, free_port, port_accepts

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HEAD_DEADLINE_S = 2  # short for the test, long enough for a busy machine to send one head
START_TIMEOUT_S = 30
MIB = 1024 * 1024
CHUNK = 64 * 1024


FEW_CONNECTIONS = 6  # the concurrency limit of the server that tests it, in place of the real one


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with serving(uvicorn_options(), tmp_path_factory.mktemp("uvicorn")) as chosen:
        yield chosen


@pytest.fixture(scope="module")
def few_connections_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    options = uvicorn_options()
    at = options.index("--limit-concurrency")
    assert options[at + 1] == str(CONNECTIONS_MOST)
    options[at + 1] = str(FEW_CONNECTIONS)
    with serving(options, tmp_path_factory.mktemp("uvicorn-few")) as chosen:
        yield chosen


@contextmanager
def serving(options: list[str], directory: Path) -> Iterator[int]:
    chosen = free_port()
    log = directory / "server.log"
    argv = [
        sys.executable, "-m", "uvicorn", "tests.integration.uvicorn_app:app",
        "--host", LOOPBACK, "--port", str(chosen), *options,
    ]  # fmt: skip
    env = os.environ | {"TILEJUDGE_HEADER_READ_SECONDS": str(HEAD_DEADLINE_S)}
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not port_accepts(chosen):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield chosen
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def _rest(sock: socket.socket) -> bytes:
    """What the server sends until it closes; b"" when it resets the connection."""
    sock.settimeout(HEAD_DEADLINE_S + 3)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        return b""
    return received


def test_a_megabyte_header_is_refused_with_431_before_the_server_has_read_it(port: int) -> None:
    answer: bytes | None = None
    sent = 0
    started = time.monotonic()
    with socket.create_connection((LOOPBACK, port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
        while sent < MIB:
            try:
                sock.sendall(b"a" * CHUNK)
            except (BrokenPipeError, ConnectionResetError):
                answer = b""
                break
            sent += CHUNK
            if select.select([sock], [], [], 0.1)[0]:
                answer = _rest(sock)
                break
    elapsed = time.monotonic() - started
    assert answer is not None, "the server took the whole MiB of header and kept waiting"
    assert sent < MIB
    assert elapsed < HEAD_DEADLINE_S, "closed by the head deadline, not by the size cap"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert answer == b"" or b"connection: close" in answer.lower()


@pytest.mark.parametrize(
    "prelude",
    [b"", b"GET /heal"],
    ids=["nothing sent", "half a request line sent"],
)
def test_a_head_that_stalls_ends_its_connection_within_the_deadline(
    port: int, prelude: bytes
) -> None:
    with socket.create_connection((LOOPBACK, port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(prelude)
        try:
            assert _rest(sock) == b""
        except TimeoutError:
            pytest.fail("the server kept a stalled connection open past its head deadline")
        assert time.monotonic() - started < HEAD_DEADLINE_S + 2


def test_a_second_head_that_stalls_on_a_kept_alive_connection_ends_it(port: int) -> None:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        assert connection.getresponse().read() == b"ok"
        assert connection.sock is not None
        connection.sock.sendall(b"GET /heal")
        try:
            assert _rest(connection.sock) == b""
        except TimeoutError:
            pytest.fail("the server kept a stalled kept-alive connection open")
    finally:
        connection.close()


def test_requests_on_a_kept_alive_connection_answer_even_after_an_idle_pause(port: int) -> None:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        connection.request("GET", "/healthz", headers={"X-Ordinary": "x" * 4000})
        first = connection.getresponse()
        assert (first.status, first.read()) == (200, b"ok")
        kept = connection.sock
        # Idle between requests is the keep-alive timeout's business, not the head deadline's.
        time.sleep(HEAD_DEADLINE_S + 0.5)
        connection.request("GET", "/healthz")
        second = connection.getresponse()
        assert (second.status, second.read()) == (200, b"ok")
        assert connection.sock is kept, "the server closed the kept-alive connection"
    finally:
        connection.close()


def test_a_small_head_arriving_with_a_large_body_is_not_taken_for_a_large_head(port: int) -> None:
    body = b"b" * (5 * CHUNK)
    head = b"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(body)
    with socket.create_connection((LOOPBACK, port), timeout=10) as sock:
        sock.sendall(head + body + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = b""
        while received.count(b"HTTP/1.1 200 OK") < 2:
            chunk = sock.recv(65536)
            assert chunk, f"closed after {received!r}"
            received += chunk


def test_connections_past_the_concurrency_limit_are_answered_503_and_closed(
    few_connections_port: int,
) -> None:
    with ExitStack() as held:
        for _ in range(FEW_CONNECTIONS):
            held.enter_context(socket.create_connection((LOOPBACK, few_connections_port)))
        time.sleep(0.2)
        with socket.create_connection((LOOPBACK, few_connections_port), timeout=5) as extra:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = _rest(extra)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert b"connection: close" in answer.lower()
    # Once they are gone, the server answers again.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection(LOOPBACK, few_connections_port, timeout=5)
        try:
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        finally:
            connection.close()
        time.sleep(0.1)
    pytest.fail("the server did not answer once the connections were closed")
