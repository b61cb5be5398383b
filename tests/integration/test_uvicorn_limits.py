"""The API's uvicorn, started with the options `up` uses, against hostile clients: a request
head too large is refused before it is all read, a head that stalls ends its connection,
requests under way past the concurrency limit are answered 503 and closed, idle keep-alive
connections (from many addresses, or many from one) are closed for new ones rather than
crowding them out, a client-sent X-Forwarded-For counts only from the trusted proxy, and
ordinary requests, kept-alive ones included, still get their answer."""

from __future__ import annotations

import contextlib
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

from api.connection_book import crowded_at, per_address_most
from api.routes.dashboard import client_key
from devstack.children import CONNECTIONS_MOST, uvicorn_options
from devstack.ports import LOOPBACK, free_port, port_accepts

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HEAD_DEADLINE_S = 2  # short for the test, long enough for a busy machine to send one head
# A head deadline that never comes into play within a test: a connection such a server ends is
# ended by something else (the size cap).
NO_HEAD_DEADLINE_S = 300  # the most TILEJUDGE_HEADER_READ_SECONDS takes
# How long a test waits for a server to end a connection it must end: a bound on an event, far
# beyond the deadlines that end it.
ENDED_WITHIN_S = 60
START_TIMEOUT_S = 30
MIB = 1024 * 1024
CHUNK = 64 * 1024


FEW_CONNECTIONS = 10  # the concurrency limit of the server that tests it, in place of the real one
PER_ADDRESS = per_address_most(FEW_CONNECTIONS)
CROWDED = crowded_at(FEW_CONNECTIONS)


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


@pytest.fixture(scope="module")
def proxied_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server behind a proxy at 127.0.0.1 (FORWARDED_ALLOW_IPS)."""
    options = uvicorn_options({"FORWARDED_ALLOW_IPS": "127.0.0.1"})
    with serving(options, tmp_path_factory.mktemp("uvicorn-proxied")) as chosen:
        yield chosen


@pytest.fixture(scope="module")
def patient_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server whose head deadline never comes into play."""
    directory = tmp_path_factory.mktemp("uvicorn-patient")
    with serving(uvicorn_options(), directory, NO_HEAD_DEADLINE_S) as chosen:
        yield chosen


@contextmanager
def serving(
    options: list[str], directory: Path, head_deadline: float = HEAD_DEADLINE_S
) -> Iterator[int]:
    chosen = free_port()
    log = directory / "server.log"
    argv = [
        sys.executable, "-m", "uvicorn", "tests.integration.uvicorn_app:app",
        "--host", LOOPBACK, "--port", str(chosen), *options,
    ]  # fmt: skip
    env = os.environ | {"TILEJUDGE_HEADER_READ_SECONDS": str(head_deadline)}
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
    sock.settimeout(ENDED_WITHIN_S)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        return b""
    return received


def test_a_megabyte_header_is_refused_with_431_before_the_server_has_read_it(
    patient_port: int,
) -> None:
    # A server without a head deadline: ending the connection at all is the size cap's doing.
    answer: bytes | None = None
    sent = 0
    with socket.create_connection((LOOPBACK, patient_port), timeout=10) as sock:
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
    assert answer is not None, "the server took the whole MiB of header and kept waiting"
    assert sent < MIB
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
        sock.sendall(prelude)
        try:
            assert _rest(sock) == b""
        except TimeoutError:
            pytest.fail("the server kept a stalled connection open past its head deadline")


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


def source(n: int) -> tuple[str, int]:
    """A loopback source address of its own (all of 127.0.0.0/8 is this host's)."""
    return (f"127.0.0.{n}", 0)


def busy(port: int, n: int) -> socket.socket:
    """A connection from 127.0.0.`n` with a request under way: a body that never ends."""
    sock = socket.create_connection((LOOPBACK, port), timeout=5, source_address=source(n))
    sock.sendall(b"POST /wait-for-body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
    return sock


def idle(port: int, n: int) -> http.client.HTTPConnection:
    """A kept-alive connection from 127.0.0.`n` that had one request answered."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5, source_address=source(n))
    connection.request("GET", "/healthz")
    answer = connection.getresponse()
    assert (answer.status, answer.read()) == (200, b"ok")
    return connection


def answered(port: int, n: int = 1, path: str = "/healthz", **headers: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=5, source_address=source(n))
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """Whether the server has closed this kept-alive connection (it reads as EOF)."""
    assert connection.sock is not None
    return _rest(connection.sock) == b""


def test_requests_under_way_past_the_concurrency_limit_are_answered_503_and_closed(
    few_connections_port: int,
) -> None:
    with ExitStack() as held:
        for n in range(FEW_CONNECTIONS):  # one an address, so no address is past its share
            held.enter_context(busy(few_connections_port, 100 + n))
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


def test_idle_connections_from_many_addresses_are_closed_longest_idle_first_for_new_ones(
    few_connections_port: int,
) -> None:
    kept = [idle(few_connections_port, 2 + n) for n in range(3 * FEW_CONNECTIONS)]
    try:
        assert answered(few_connections_port) == (200, b"ok")
        assert closed_by_server(kept[0])  # the longest idle
        assert not closed_by_server_now(kept[-1])  # the newest stays
    finally:
        for connection in kept:
            connection.close()


def closed_by_server_now(connection: http.client.HTTPConnection) -> bool:
    assert connection.sock is not None
    return bool(select.select([connection.sock], [], [], 0)[0])


def test_one_address_past_its_share_has_its_own_longest_idle_connection_closed(
    few_connections_port: int,
) -> None:
    # From CROWDED connections on, the address's own longest idle one goes for each new one.
    kept = [idle(few_connections_port, 50) for _ in range(CROWDED + 2)]
    try:
        assert closed_by_server(kept[0]) and closed_by_server(kept[2])
        assert not closed_by_server_now(kept[-1])
        assert answered(few_connections_port, 51) == (200, b"ok")
    finally:
        for connection in kept:
            connection.close()


def test_one_address_past_its_share_with_every_request_under_way_is_answered_503(
    few_connections_port: int,
) -> None:
    with ExitStack() as held:
        for n in range(CROWDED - PER_ADDRESS):  # others, so the server is crowded
            held.enter_context(contextlib.closing(idle(few_connections_port, 70 + n)))
        for _ in range(PER_ADDRESS):
            held.enter_context(busy(few_connections_port, 60))
        time.sleep(0.2)
        with socket.create_connection(
            (LOOPBACK, few_connections_port), timeout=5, source_address=source(60)
        ) as extra:
            answer = _rest(extra)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert b'"busy"' in answer and b"retry-after: 1" in answer.lower()
        assert answered(few_connections_port, 61) == (200, b"ok")  # other addresses go on


def key_of(host: str) -> bytes:
    return client_key(type("Request", (), {"client": type("C", (), {"host": host})})()).encode()


def test_a_client_sent_forwarded_for_never_changes_the_sign_in_key_without_a_trusted_proxy(
    port: int,
) -> None:
    assert answered(port, 1, "/client-key") == (200, key_of("127.0.0.1"))
    forged = answered(port, 1, "/client-key", **{"X-Forwarded-For": "10.9.9.9"})
    assert forged == (200, key_of("127.0.0.1"))


def test_only_the_trusted_proxy_s_forwarded_for_names_the_client(proxied_port: int) -> None:
    forwarded = {"X-Forwarded-For": "10.9.9.9"}
    assert answered(proxied_port, 1, "/client-key", **forwarded) == (200, key_of("10.9.9.9"))
    assert answered(proxied_port, 7, "/client-key", **forwarded) == (200, key_of("127.0.0.7"))
