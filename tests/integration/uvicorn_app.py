"""A tiny ASGI app for the tests of the server's limits: it answers every request with 200, so
whatever else a client gets came from the server, not the app. `/wait-for-body` answers once the
whole body has come (a request under way for as long as its client likes), and `/client-key`
with the dashboard sign-in throttle's key for the request's client address."""

from __future__ import annotations

from typing import Any


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b"ok"
    if scope["path"] == "/wait-for-body":
        while (await receive()).get("more_body", False):
            pass
    elif scope["path"] == "/client-key":
        from starlette.requests import Request

        from api.routes.dashboard import client_key

        body = client_key(Request(scope)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
