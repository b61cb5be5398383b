"""Hostile input the other API tests leave out: bodies too big to read and clients too slow to
wait for (against a real uvicorn on loopback, since only a socket shows what the server reads),
malformed JSON of every kind, wrong content types, path tricks, out-of-range numbers and times,
and receipts replayed for other fields or uploads replayed at once.

Every refusal must be a 4xx with the `{"error", "detail"}` body, and nothing may be stored.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

import api.body
from core import receipts
from devstack.ports import free_port
from devstack.testing.pipeline import ADMIN, RECEIPT_KEY, Pipeline, TeamLogin, drain

MOVES = b"0 0 2 0 cat\n"
LIMIT = 256 * 1024


@pytest.fixture
def pipe(pipe: Pipeline) -> Pipeline:
    """The shared pipeline, whose server-side exceptions become the 500 a client would see
    instead of being re-raised."""
    pipe.client = TestClient(pipe.client.app, raise_server_exceptions=False)
    return pipe


def assert_refused(response: httpx.Response, status: int | None = None) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert status is None or response.status_code == status, (response.status_code, response.text)
    assert set(response.json()) == {"error", "detail"}, response.text


# --- a real server, for what only a socket shows -----------------------------------------------


@contextmanager
def served(pipe: Pipeline) -> Iterator[int]:
    """The pipeline's app behind uvicorn on a free loopback port (its lifespan already ran)."""
    port = free_port()
    config = uvicorn.Config(
        pipe.client.app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:  # a hang is the test timeout's to catch
        assert thread.is_alive(), "uvicorn stopped before it started"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def upload_head(team: TeamLogin, headers: dict[str, str]) -> bytes:
    lines = [
        "POST /v1/contests/open/submissions HTTP/1.1",
        "Host: 127.0.0.1",
        f"Authorization: Bearer {team.token}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(sock: socket.socket) -> int:
    """The status of the answer that must come (a hang is the test timeout's to catch)."""
    sock.settimeout(None)
    head = sock.recv(4096)
    return int(head.split(b" ", 2)[1])


@pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data; boundary=x"])
def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(
    pipe: Pipeline, team: TeamLogin, content_type: str
) -> None:
    pipe.services.settings = dataclasses.replace(pipe.services.settings, max_upload_bytes=LIMIT)
    head = {"Content-Type": content_type, "Content-Length": str(10 * 1024**3)}
    with served(pipe) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(upload_head(team, head) + b"x" * 1024)  # 1 KiB of the 10 GiB promised

        # Answered while the client has sent 1 KiB of the 10 GiB: refused before the body is read.
        assert status_of(sock) == 413
    assert pipe.uploads() == {}


def test_a_chunked_stream_past_the_limit_is_cut_off_with_memory_bounded(
    pipe: Pipeline, team: TeamLogin
) -> None:
    pipe.services.settings = dataclasses.replace(pipe.services.settings, max_upload_bytes=LIMIT)
    offered, chunk = 256 * 1024**2, b"0 0 2 0 cat\n" * 5000  # 60 KB a chunk
    head = {"Content-Type": "text/plain", "Transfer-Encoding": "chunked"}
    sent, status = 0, None
    tracemalloc.start()
    try:
        with served(pipe) as port, socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(upload_head(team, head))
            sock.settimeout(2)  # a server that stopped reading makes sendall block: stop there
            while sent < offered and status is None:
                if select.select([sock], [], [], 0)[0]:
                    status = status_of(sock)
                    break
                try:
                    sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except (TimeoutError, ConnectionError):
                    break
                sent += len(chunk)
            status = status or status_of(sock)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert status == 413
    assert sent < 32 * 1024**2, f"the server read {sent} bytes of a {LIMIT}-byte limit"
    assert peak < 32 * 1024**2, f"{peak} bytes allocated while refusing a {LIMIT}-byte upload"
    assert pipe.uploads() == {}


STALLED = 50  # more than the 40 threads of the pool that runs the API's blocking calls


def stalled_uploads(port: int, team: TeamLogin) -> list[socket.socket]:
    """STALLED uploads that send 9 of their 1000 bytes, then nothing."""
    head = upload_head(team, {"Content-Type": "text/plain", "Content-Length": "1000"})
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(STALLED)]
    for sock in slow:
        sock.sendall(head + b"0 0 2 0 c")
    return slow


def test_slow_uploads_hold_no_worker(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While more uploads stall than the pool has threads, a normal upload and a read are
    answered: the stalled ones never time out during the test (their limit is far off), so an
    answer proves they hold no thread, however long it takes on a busy machine."""
    monkeypatch.setattr(api.body, "UPLOAD_READ_SECONDS", 3600.0)
    with served(pipe) as port:
        slow = stalled_uploads(port, team)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                quick = http.post(
                    "/v1/contests/open/submissions",
                    content=MOVES,
                    headers={**team.headers, "Content-Type": "text/plain"},
                )
                board = http.get("/v1/contests/open/leaderboard")
            still_waiting = select.select(slow, [], [], 0)[0]
        finally:
            for sock in slow:
                sock.close()

    assert quick.status_code == 202 and board.status_code == 200
    assert still_waiting == [], "a stalled upload was answered before the normal one"
    assert list(pipe.uploads().values()) == [MOVES]


def test_slow_uploads_time_out_with_408(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api.body, "UPLOAD_READ_SECONDS", 0.5)
    with served(pipe) as port:
        slow = stalled_uploads(port, team)
        try:
            statuses = [status_of(sock) for sock in slow]
        finally:
            for sock in slow:
                sock.close()

    assert statuses == [408] * STALLED
    assert pipe.uploads() == {}


# --- malformed JSON ----------------------------------------------------------------------------

MALFORMED = {
    "empty": b"",
    "null": b"null",
    "array": b"[]",
    "number": b"123",
    "string": b'"name"',
    "truncated": b'{"name": ',
    "nested-100k": b"[" * 100_000 + b"]" * 100_000,
    "invalid-utf8": b'{"name": "\xff\xfe"}',
    "lone-surrogate": b'{"name": "\\ud800"}',
    "wrong-type": b'{"name": 7}',
    "extra-field": b'{"name": "x", "admin": true}',
    "huge-string": b'{"name": "' + b"x" * 100_000 + b'"}',
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_json_creating_a_team_is_a_4xx_and_creates_nothing(
    pipe: Pipeline, body: bytes
) -> None:
    before = len(pipe.events())

    response = pipe.client.post(
        "/v1/contests/open/teams",
        content=body,
        headers={**ADMIN, "Content-Type": "application/json"},
    )

    assert_refused(response)
    assert len(pipe.events()) == before


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_json_verifying_a_receipt_is_a_4xx(pipe: Pipeline, body: bytes) -> None:
    response = pipe.client.post(
        "/v1/receipts/verify", content=body, headers={"Content-Type": "application/json"}
    )

    assert_refused(response)


# --- content types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/html", "application/x-www-form-urlencoded", "image/png", "application/xml"],
)
def test_an_upload_of_another_content_type_is_415_and_stores_nothing(
    pipe: Pipeline, team: TeamLogin, content_type: str
) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions",
        content=MOVES,
        headers={**team.headers, "Content-Type": content_type},
    )

    assert_refused(response, 415)
    assert pipe.uploads() == {}


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("multipart/form-data", MOVES),
        ("multipart/form-data; boundary=zz", b"--zz\r\nno headers, no end"),
        ("multipart/form-data; boundary=zz", b"--zz--\r\n"),
    ],
    ids=["no-boundary", "garbage", "no-parts"],
)
def test_a_broken_multipart_upload_is_a_4xx_and_stores_nothing(
    pipe: Pipeline, team: TeamLogin, content_type: str, body: bytes
) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions",
        content=body,
        headers={**team.headers, "Content-Type": content_type},
    )

    assert_refused(response)
    assert pipe.uploads() == {}


@pytest.mark.parametrize("content_type", ["text/plain; charset=utf-8", "TEXT/PLAIN", None])
def test_plain_text_is_accepted_with_parameters_in_any_case_or_no_content_type(
    pipe: Pipeline, team: TeamLogin, content_type: str | None
) -> None:
    headers = dict(team.headers) | ({"Content-Type": content_type} if content_type else {})

    response = pipe.client.post("/v1/contests/open/submissions", content=MOVES, headers=headers)

    assert response.status_code == 202, response.text
    assert list(pipe.uploads().values()) == [MOVES]


# --- path tricks, numbers and times ------------------------------------------------------------

TRICKS = {
    "double-encoded": "%252e%252e%252fetc",
    "dot-segments": "%2e%2e",
    "fullwidth-dots": "%EF%BC%8E%EF%BC%8E%EF%BC%8F",
    "newline": "open%0a",
    "crlf": "open%0d%0aX-Injected:%201",
    "semicolon": "open;drop",
}


@pytest.mark.parametrize("trick", TRICKS.values(), ids=TRICKS.keys())
def test_path_tricks_in_team_and_contest_ids_find_nothing(
    pipe: Pipeline, team: TeamLogin, trick: str
) -> None:
    before = len(pipe.events())

    answers = [
        pipe.client.delete(f"/v1/teams/{trick}", headers=ADMIN),
        pipe.client.post(f"/v1/contests/{trick}/teams", json={"name": "x"}, headers=ADMIN),
        pipe.client.get(f"/v1/contests/{trick}"),
        pipe.client.get(f"/v1/contests/{trick}/teams", headers=ADMIN),
    ]

    for response in answers:
        assert_refused(response, 404)
        assert "X-Injected" not in response.headers
    assert len(pipe.events()) == before


@pytest.mark.parametrize("contest_id", ["../open", "a/b", "Open", "", "-x", "x" * 64])
def test_a_contest_id_that_could_name_a_path_is_refused_at_creation(
    pipe: Pipeline, contest_id: str
) -> None:
    body = {
        "id": contest_id,
        "title": "t",
        "lexicon": "tiny",
        "opens_at": "2026-01-01T00:00:00Z",
        "closes_at": "2026-01-02T00:00:00Z",
    }

    assert_refused(pipe.client.post("/v1/contests", json=body, headers=ADMIN), 422)


def test_a_word_list_name_never_reaches_a_storage_key(pipe: Pipeline) -> None:
    response = pipe.client.post(
        "/v1/lexicons",
        params={"name": "../../etc/passwd"},
        content=b"cat\ndog\n",
        headers={**ADMIN, "Content-Type": "text/plain"},
    )

    assert response.status_code == 201
    assert f"lexicons/{response.json()['id']}.txt" in pipe.blobs.objects
    assert not any(".." in key or "passwd" in key for key in pipe.blobs.objects)


@pytest.mark.parametrize("after", [str(2**63), "9" * 30, "-1", "1e3", "0x10"])
def test_an_event_cursor_out_of_range_or_not_a_number_is_422(pipe: Pipeline, after: str) -> None:
    response = pipe.client.get("/v1/events", params={"after": after}, headers=ADMIN)

    assert_refused(response, 422)


@pytest.mark.parametrize(
    "opens_at, closes_at",
    [
        ("0001-01-01T00:00:00+01:00", "2026-01-02T00:00:00Z"),
        ("2026-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00+99:00"),
    ],
    ids=["before-year-1", "after-year-9999", "bad-offset"],
)
def test_a_contest_time_outside_what_a_clock_can_hold_is_422(
    pipe: Pipeline, opens_at: str, closes_at: str
) -> None:
    body = {
        "id": "edge",
        "title": "t",
        "lexicon": "tiny",
        "opens_at": opens_at,
        "closes_at": closes_at,
    }

    response = pipe.client.post("/v1/contests", json=body, headers=ADMIN)

    assert_refused(response, 422)
    assert pipe.store.get_contest("edge") is None


# --- receipts and replays ----------------------------------------------------------------------


def fields_of(team: TeamLogin, accepted: dict[str, str]) -> dict[str, str]:
    return {
        "id": accepted["id"],
        "team": team.id,
        "contest": "open",
        "sha256": accepted["sha256"],
        "received_at": accepted["received_at"],
        "receipt": accepted["receipt"],
    }


def test_a_receipt_replayed_with_another_uploads_fields_does_not_verify(
    pipe: Pipeline, team: TeamLogin
) -> None:
    first = fields_of(team, pipe.accepted(team, MOVES))
    second = fields_of(team, pipe.accepted(team, b"0 0 1 0 at\n"))

    replayed = second | {"receipt": first["receipt"]}

    assert pipe.client.post("/v1/receipts/verify", json=replayed).json() == {"valid": False}
    assert pipe.client.post("/v1/receipts/verify", json=second).json() == {"valid": True}


def test_a_receipt_signed_with_another_servers_key_does_not_verify(
    pipe: Pipeline, team: TeamLogin
) -> None:
    fields = fields_of(team, pipe.accepted(team, MOVES))
    signed = {k: fields[k] for k in ("team", "contest", "sha256", "received_at")}
    forged = receipts.sign(RECEIPT_KEY + "-other", submission=fields["id"], **signed)

    response = pipe.client.post("/v1/receipts/verify", json=fields | {"receipt": forged})

    assert response.json() == {"valid": False}


@pytest.mark.parametrize(
    "receipt",
    ["é" * 64, "", "0" * 1_000, "\u0000" * 64],  # "long": within the public body cap
    ids=["non-ascii", "empty", "long", "nul"],
)
def test_a_receipt_that_is_not_hex_is_simply_invalid(
    pipe: Pipeline, team: TeamLogin, receipt: str
) -> None:
    fields = fields_of(team, pipe.accepted(team, MOVES))

    response = pipe.client.post("/v1/receipts/verify", json=fields | {"receipt": receipt})

    assert response.status_code == 200, response.text
    assert response.json() == {"valid": False}


def test_the_same_bytes_again_after_judging_give_the_same_receipt_and_judge_nothing(
    pipe: Pipeline, team: TeamLogin
) -> None:
    first = pipe.accepted(team, MOVES)
    drain(pipe.services)
    events, published = len(pipe.events()), list(pipe.publisher.published)

    again = pipe.upload(team, MOVES)

    assert again.status_code == 202 and again.json() == first
    assert len(pipe.events()) == events
    assert pipe.publisher.published == published
    assert pipe.state(first["id"]) == "judged"


def test_the_same_bytes_sent_eight_times_at_once_make_one_submission(
    pipe: Pipeline, team: TeamLogin
) -> None:
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: pipe.upload(team, MOVES), range(8)))

    assert [a.status_code for a in answers] == [202] * 8
    assert len({a.json()["receipt"] for a in answers}) == 1
    assert pipe.store.count_by_state() == {"queued": 1}
    assert list(pipe.uploads().values()) == [MOVES]


def test_closing_a_socket_mid_upload_stores_nothing(pipe: Pipeline, team: TeamLogin) -> None:
    head = upload_head(team, {"Content-Type": "text/plain", "Content-Length": "1000"})
    with served(pipe) as port:
        with closing(socket.create_connection(("127.0.0.1", port))) as sock:
            sock.sendall(head + MOVES)
        time.sleep(0.5)
        healthy = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=60)

    assert healthy.status_code == 200
    assert pipe.uploads() == {}
    assert pipe.store.count_by_state() == {}
