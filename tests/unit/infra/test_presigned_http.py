"""`PresignedHttp`, the sender of presigned GETs and PUTs, against a loopback server that
answers, drops or closes connections as told."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from infra.presigned_http import PresignedHttp

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
UNAVAILABLE = b"HTTP/1.1 503 Slow Down\r\nContent-Length: 4\r\n\r\nbusy"

# What the server does with the nth request it reads (n counted over all connections), and
# the index of that request on its own connection: an answer to send (then the connection
# stays open), or None to close the connection without one.
Plan = Callable[[int, int], bytes | None]


@dataclass
class Server:
    plan: Plan
    close_after_answer: bool = False  # a keep-alive the server does not keep, unannounced
    sock: socket.socket = field(default_factory=socket.socket)
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    open_conns: list[socket.socket] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/bucket/key?X-Amz-Signature=x"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.open_conns.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn:
            buffered = b""
            on_this = 0
            while True:
                while b"\r\n\r\n" not in buffered:
                    try:
                        got = conn.recv(65536)
                    except OSError:
                        return
                    if not got:
                        return
                    buffered += got
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(buffered) < length:
                    buffered += conn.recv(65536)
                buffered = buffered[length:]
                self.requests.append(head.split(b"\r\n")[0])
                answer = self.plan(len(self.requests), on_this)
                on_this += 1
                if answer is None:
                    return
                conn.sendall(answer)
                if self.close_after_answer:
                    return


@pytest.fixture
def serving() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(plan: Plan, close_after_answer: bool = False) -> Server:
        server = Server(plan, close_after_answer)
        server.sock.bind(("127.0.0.1", 0))
        server.sock.listen(16)
        threading.Thread(target=server.serve, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.sock.close()
        for conn in server.open_conns:
            conn.close()


@pytest.fixture
def sender() -> Iterator[PresignedHttp]:
    http = PresignedHttp(read_timeout=2.0, connect_timeout=2.0)
    yield http
    http.close()


def test_calls_in_turn_share_one_kept_alive_connection_and_send_the_path_and_query(
    serving: Callable[..., Server], sender: PresignedHttp
) -> None:
    server = serving(lambda n, on_this: OK)

    answers = [sender.request("PUT", server.url, body=b"bytes") for _ in range(5)]

    assert [(a.status, a.data) for a in answers] == [(200, b"ok")] * 5
    assert server.connections == 1
    assert server.requests == [b"PUT /bucket/key?X-Amz-Signature=x HTTP/1.1"] * 5


def test_a_connection_the_endpoint_closed_while_idle_is_not_used_again(
    serving: Callable[..., Server], sender: PresignedHttp
) -> None:
    # The server closes each connection right after its answer (a keep-alive it did not keep,
    # without saying so): every call needs a new connection, and none is sent on a closed one.
    server = serving(lambda n, on_this: OK, close_after_answer=True)

    for _ in range(3):
        sender.request("GET", server.url)
        time.sleep(0.05)  # the close reaches the client while the connection is idle

    assert server.connections == 3
    assert len(server.requests) == 3


def test_a_kept_alive_connection_closed_on_the_way_is_sent_again_without_using_the_retry(
    serving: Callable[..., Server], sender: PresignedHttp
) -> None:
    # The second request reaches a kept-alive connection the server then closes unanswered;
    # sent again on a new connection, it meets a 503, and the one retry still answers it.
    answers = {1: OK, 2: None, 3: UNAVAILABLE, 4: OK}
    server = serving(lambda n, on_this: answers.get(n, OK))

    sender.request("GET", server.url)
    second = sender.request("GET", server.url)

    assert (second.status, second.data) == (200, b"ok")
    assert len(server.requests) == 4


@pytest.mark.parametrize(("failures", "status"), [(1, 200), (2, 503)])
def test_a_5xx_answer_is_tried_once_more_and_the_second_answer_is_the_answer(
    serving: Callable[..., Server], sender: PresignedHttp, failures: int, status: int
) -> None:
    server = serving(lambda n, on_this: UNAVAILABLE if n <= failures else OK)

    answer = sender.request("PUT", server.url, body=b"x")

    assert answer.status == status
    assert len(server.requests) == 2


def test_a_connection_dropped_twice_raises_after_one_retry(
    serving: Callable[..., Server], sender: PresignedHttp
) -> None:
    server = serving(lambda n, on_this: None)

    with pytest.raises(ConnectionError):
        sender.request("GET", server.url)

    assert len(server.requests) == 2


def test_an_endpoint_that_never_answers_fails_after_the_read_timeout_twice(
    serving: Callable[..., Server],
) -> None:
    hold = threading.Event()
    server = serving(lambda n, on_this: hold.wait(10) and None)
    http = PresignedHttp(read_timeout=0.3, connect_timeout=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            http.request("GET", server.url)
    finally:
        hold.set()
        http.close()

    # Each of the two attempts waited out its read timeout (a lower bound: load only adds to
    # it); a client without one would have hung until the server gave up and closed, which
    # raises a connection error, not TimeoutError.
    assert time.monotonic() - started > 0.55
    assert len(server.requests) == 2


def test_idle_connections_beyond_the_limit_are_closed_not_kept(
    serving: Callable[..., Server],
) -> None:
    gate = threading.Barrier(3)
    # Answers held a moment, so the three calls are under way at once, each on a connection.
    server = serving(lambda n, on_this: time.sleep(0.3) or OK)
    http = PresignedHttp(connections=1)
    try:

        def call() -> None:
            gate.wait(5)
            http.request("GET", server.url)

        threads = [threading.Thread(target=call) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        kept = sum(len(conns) for conns in http._idle.values())
    finally:
        http.close()

    assert server.connections == 3
    assert kept == 1
    assert http._idle == {}


def test_an_https_endpoint_is_reached_over_tls(serving: Callable[..., Server]) -> None:
    # A plain-HTTP server behind an https URL never completes the TLS handshake the client
    # starts: the call fails (after its one retry) rather than going out in the clear.
    server = serving(lambda n, on_this: OK)
    http = PresignedHttp(read_timeout=0.3, connect_timeout=0.3)
    try:
        with pytest.raises(OSError):
            http.request("GET", server.url.replace("http://", "https://"))
    finally:
        http.close()

    assert server.connections == 2
    assert server.requests == []
