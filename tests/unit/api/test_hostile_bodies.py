"""Bodies and headers sent to hurt the API: refused from the headers where they can be, and
otherwise read only up to a bound, in size and in time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import ASGIApp, Message

from api import middleware
from devstack.testing.pipeline import ADMIN, Pipeline

CHUNK = 64 * 1024
HUGE = 32 * 1024 * 1024  # streamed lazily: only what the app asks for is ever made


class Sender:
    """An ASGI `receive` that streams `size` bytes in chunks and counts what the app took."""

    def __init__(self, size: int, stall_after: int | None = None) -> None:
        self.size = size
        self.stall_after = stall_after
        self.taken = 0

    async def __call__(self) -> Message:
        if self.stall_after is not None and self.taken >= self.stall_after:
            await asyncio.sleep(3)  # a client that stops sending; bounded so a test cannot hang
            return {"type": "http.disconnect"}
        if self.taken >= self.size:
            await asyncio.sleep(3)
            return {"type": "http.disconnect"}
        chunk = min(CHUNK, self.size - self.taken)
        self.taken += chunk
        return {"type": "http.request", "body": b" " * chunk, "more_body": self.taken < self.size}


def call(app: ASGIApp, path: str, receive: Sender, headers: dict[str, str]) -> dict[str, Any]:
    """One POST straight into the ASGI app (no content-length: the body arrives chunked)."""
    answer: dict[str, Any] = {}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }

    async def run() -> None:
        async with asyncio.timeout(10):
            await app(scope, receive, send)

    asyncio.run(run())
    return answer


def test_a_large_json_body_without_a_token_gets_401_before_the_body_is_read(
    pipe: Pipeline,
) -> None:
    sender = Sender(HUGE)

    answer = call(pipe.client.app, "/v1/contests", sender, headers={})

    assert answer["status"] == 401
    assert answer["headers"]["www-authenticate"] == "Bearer"
    assert sender.taken <= middleware.JSON_MAX_BYTES


def test_a_large_chunked_json_body_with_the_admin_token_gets_413_after_a_bounded_read(
    pipe: Pipeline,
) -> None:
    sender = Sender(HUGE)

    answer = call(pipe.client.app, "/v1/contests", sender, headers=ADMIN)

    assert answer["status"] == 413
    assert sender.taken <= middleware.JSON_MAX_BYTES + CHUNK


def test_an_oversized_json_body_with_the_admin_token_gets_413(pipe: Pipeline) -> None:
    body = b'{"title": "' + b"x" * (2 * 1024 * 1024) + b'"}'

    answer = pipe.client.post(
        "/v1/contests", content=body, headers={**ADMIN, "Content-Type": "application/json"}
    )

    assert answer.status_code == 413
    assert answer.json()["error"] == "too_large"


def test_a_json_body_that_stalls_gets_408(pipe: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(middleware, "BODY_READ_SECONDS", 0.3)
    sender = Sender(HUGE, stall_after=CHUNK)

    answer = call(pipe.client.app, "/v1/contests/open/teams", sender, headers=ADMIN)

    assert answer["status"] == 408


def test_an_oversized_header_gets_431(pipe: Pipeline) -> None:
    answer = pipe.client.get("/healthz", headers={"X-Padding": "x" * (1024 * 1024)})

    assert answer.status_code == 431
    assert answer.json()["error"] == "headers_too_large"


def test_too_many_headers_get_431(pipe: Pipeline) -> None:
    answer = pipe.client.get("/healthz", headers={f"X-Padding-{i}": "x" for i in range(200)})

    assert answer.status_code == 431


def test_a_small_json_body_with_the_admin_token_still_reaches_the_route(pipe: Pipeline) -> None:
    answer = pipe.client.post("/v1/contests/open/teams", json={"name": "owls"}, headers=ADMIN)

    assert answer.status_code == 201
    assert answer.json()["name"] == "owls"
