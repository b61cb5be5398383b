"""A token is verified before any byte of a body is read: a wrong bearer token on an admin
route or an upload is refused without the body being asked for, and a public POST's body is
capped at a few KiB, refused once it is known to pass the cap."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from starlette.types import ASGIApp, Message

from api.middleware import PUBLIC_BODY_MAX_BYTES
from devstack.testing.pipeline import ADMIN_TOKEN, Pipeline, TeamLogin

MIB = 1024 * 1024


@dataclass
class Answer:
    status: int
    reads: int  # how many times the app asked for the body
    body: bytes = b""
    headers: dict[bytes, bytes] = field(default_factory=dict)


def call(
    app: ASGIApp,
    method: str,
    path: str,
    token: str | None,
    *,
    declared: int | None = MIB,
    chunk: bytes = b"{" + b" " * 1023,
    content_type: str = "application/json",
) -> Answer:
    """The request as uvicorn hands it to the app, its body an endless stream of `chunk`
    (it never completes): only a refusal or a limit can answer it."""
    headers = [(b"host", b"testserver"), (b"content-type", content_type.encode())]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("192.0.2.1", 4000),
        "server": ("testserver", 80),
    }  # fmt: skip
    reads = 0
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    async def run() -> None:
        await asyncio.wait_for(app(scope, receive, send), timeout=10)

    asyncio.run(run())
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Answer(start["status"], reads, body, dict(start["headers"]))


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/contests"),
        ("POST", "/v1/contests/open/teams"),
        ("PATCH", "/v1/teams/abc"),
        ("POST", "/v1/lexicons"),
        ("POST", "/v1/contests/open/submissions"),
    ],
    ids=["contest", "team", "team change", "lexicon", "upload"],
)
def test_a_wrong_bearer_token_is_refused_with_401_before_the_body_is_read(
    pipe: Pipeline, method: str, path: str
) -> None:
    answer = call(pipe.client.app, method, path, "x")

    assert answer.status == 401
    assert answer.reads == 0
    assert answer.headers[b"connection"] == b"close"
    assert b"unknown token" in answer.body


def test_a_team_token_on_an_admin_json_route_is_refused_with_403_before_the_body_is_read(
    pipe: Pipeline, team: TeamLogin
) -> None:
    answer = call(pipe.client.app, "POST", "/v1/contests", team.token)

    assert (answer.status, answer.reads) == (403, 0)


def test_the_admin_token_on_an_upload_is_refused_with_403_before_the_body_is_read(
    pipe: Pipeline,
) -> None:
    answer = call(pipe.client.app, "POST", "/v1/contests/open/submissions", ADMIN_TOKEN)

    assert (answer.status, answer.reads) == (403, 0)


def test_no_token_at_all_is_refused_before_the_body_is_read(pipe: Pipeline) -> None:
    answer = call(pipe.client.app, "POST", "/v1/contests", None)

    assert (answer.status, answer.reads) == (401, 0)


def test_the_right_tokens_get_their_bodies_read(pipe: Pipeline, team: TeamLogin) -> None:
    # The same endless bodies, declared at a size each route takes: read until the deadline
    # or the cap, which shows the token was let through.
    admin = call(pipe.client.app, "POST", "/v1/contests", ADMIN_TOKEN, declared=None)
    upload = call(
        pipe.client.app,
        "POST",
        "/v1/contests/open/submissions",
        team.token,
        declared=None,
        chunk=b"a\n" * 32 * 1024,
        content_type="text/plain",
    )

    assert admin.status == 413 and admin.reads > 1
    assert upload.status == 413 and upload.reads > 1


@pytest.mark.parametrize("path", ["/v1/receipts/verify", "/dashboard/login"])
def test_a_public_post_declaring_a_body_over_the_cap_is_refused_unread(
    pipe: Pipeline, path: str
) -> None:
    answer = call(pipe.client.app, "POST", path, None, declared=PUBLIC_BODY_MAX_BYTES + 1)

    assert (answer.status, answer.reads) == (413, 0)


@pytest.mark.parametrize("path", ["/v1/receipts/verify", "/dashboard/login"])
def test_a_public_post_streaming_past_the_cap_is_refused_once_it_passes_it(
    pipe: Pipeline, path: str
) -> None:
    answer = call(pipe.client.app, "POST", path, None, declared=None)

    assert answer.status == 413
    assert answer.reads == PUBLIC_BODY_MAX_BYTES // 1024 + 1  # 1 KiB a read: the cap, then one


def test_a_public_post_within_the_cap_is_answered(pipe: Pipeline) -> None:
    body = {
        "id": "s", "team": "t", "contest": "c", "sha256": "0" * 64,
        "received_at": "2026-01-01T00:00:00Z", "receipt": "r",
    }  # fmt: skip

    response = pipe.client.post("/v1/receipts/verify", json=body)

    assert response.status_code == 200
    assert response.json() == {"valid": False}
