"""Limits enforced before a route runs, from the request's headers: a call that needs a token
and carries none is refused before its body is read, headers are capped, and a JSON body is read
within a size and a time limit. FastAPI reads a body parameter before the route's dependencies
(the auth check included) run, so these limits cannot live in a dependency."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.body import UPLOAD_READ_SECONDS
from api.errors import Unauthorized
from api.openapi import dependency_calls
from api.services import bearer_token, caller, require_credential

JSON_MAX_BYTES = 1024 * 1024  # a contest, team or rejudge request is a few hundred bytes
HEADER_MAX_BYTES = 64 * 1024  # names and values together; a browser's cookies fit many times
HEADER_MAX_COUNT = 100
BODY_READ_SECONDS = UPLOAD_READ_SECONDS  # a JSON body still arriving after this gets 408
_NEEDS_TOKEN = (caller, bearer_token)  # every dependency that refuses a request without a token


class RequestLimits:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        """`routes`: the routers' own routes (the app's list holds them wrapped per include)."""
        self.app = app
        self._candidates = [route for route in routes if isinstance(route, APIRoute)]
        self._routes: dict[int, tuple[bool, bool]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        if len(headers) > HEADER_MAX_COUNT or sum(len(k) + len(v) for k, v in headers) > (
            HEADER_MAX_BYTES
        ):
            detail = f"at most {HEADER_MAX_COUNT} headers of {HEADER_MAX_BYTES} bytes in all"
            await _refuse(431, "headers_too_large", detail)(scope, receive, send)
            return
        needs_token, json_body = self._route_needs(scope)
        if needs_token:
            try:
                require_credential(Request(scope))
            except Unauthorized as exc:
                await _refuse(401, "unauthorized", exc.detail)(scope, receive, send)
                return
        if json_body:
            await self._with_json_body(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _route_needs(self, scope: Scope) -> tuple[bool, bool]:
        """Whether the route `scope` goes to needs a token, and whether it takes a JSON body."""
        for route in self._candidates:
            if route.matches(scope)[0] is Match.FULL:
                if id(route) not in self._routes:
                    calls = dependency_calls(route.dependant)
                    self._routes[id(route)] = (
                        any(call in calls for call in _NEEDS_TOKEN),
                        route.body_field is not None,
                    )
                return self._routes[id(route)]
        return False, False

    async def _with_json_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = Request(scope).headers.get("content-length", "")
        too_large = _refuse(
            413, "too_large", f"a JSON body is over the {JSON_MAX_BYTES}-byte limit"
        )
        if declared.isdigit() and int(declared) > JSON_MAX_BYTES:
            await too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(BODY_READ_SECONDS):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return  # nobody left to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > JSON_MAX_BYTES:
                        await too_large(scope, receive, send)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            detail = f"the body took over {BODY_READ_SECONDS:.0f} s to arrive"
            await _refuse(408, "request_timeout", detail)(scope, receive, send)
            return
        await self.app(scope, _replay(b"".join(chunks), receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, as one message, then the connection's own messages (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _refuse(status: int, code: str, detail: str) -> JSONResponse:
    """The error body `api.errors` gives; the connection is closed, so an unread body stops."""
    headers = {"Connection": "close"}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)
