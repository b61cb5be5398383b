"""Limits enforced before a route runs, from the request's headers: headers are capped; a call
that needs a token is refused unless its token is verified (the admin token, or a team's found)
before any byte of its body is read; and a body parameter (JSON or a form) is read within a size
and a time limit, a few KiB on the public routes. FastAPI reads a body parameter before the
route's dependencies (the auth check included) run, so these limits cannot live in a dependency."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.body import UPLOAD_READ_SECONDS
from api.errors import CORE_ERRORS, RETRY_AFTER_S, ApiError
from api.openapi import dependency_calls
from api.services import (
    Needs,
    Services,
    admin,
    bearer_token,
    caller,
    known_caller,
    verify_token,
)
from api.team_sessions import TEAM_COOKIE, TEAM_COOKIE_PATH
from core.errors import StoreUnavailable

JSON_MAX_BYTES = 1024 * 1024  # a contest, team or rejudge request is a few hundred bytes
# A receipt to check or a sign-in form, from anyone: a few hundred bytes each.
PUBLIC_BODY_MAX_BYTES = 4 * 1024
HEADER_MAX_BYTES = 64 * 1024  # names and values together; a browser's cookies fit many times
HEADER_MAX_COUNT = 100
BODY_READ_SECONDS = UPLOAD_READ_SECONDS  # a JSON body still arriving after this gets 408
PUBLIC_BODY_READ_SECONDS = 10.0  # a few KiB take a client well under a second
# Public routes answered at once whatever the pace of the others: the probes, each cheap (the
# readiness checks are shared), must answer an orchestrator within its timeout.
UNPACED = ("/healthz", "/readyz")
# The dependencies that refuse a request without a token, the most demanding first.
_NEEDS = ((admin, Needs.ADMIN), (caller, Needs.ANYONE_KNOWN), (bearer_token, Needs.TEAM))


class _Route:
    """What the middleware needs to know of a route: whom it answers, and how much of a body
    parameter it reads in how long (None: it takes none, or reads its own)."""

    def __init__(self, route: APIRoute) -> None:
        calls = dependency_calls(route.dependant)
        self.needs = next((needs for call, needs in _NEEDS if call in calls), None)
        self.paced = self.needs is None and route.path not in UNPACED
        self.body: tuple[int, float] | None = None
        if route.body_field is not None and self.needs is None:
            self.body = (PUBLIC_BODY_MAX_BYTES, PUBLIC_BODY_READ_SECONDS)
        elif route.body_field is not None:
            self.body = (JSON_MAX_BYTES, BODY_READ_SECONDS)


class RequestLimits:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        """`routes`: the routers' own routes (the app's list holds them wrapped per include)."""
        self.app = app
        self._candidates = [route for route in routes if isinstance(route, APIRoute)]
        self._routes: dict[int, _Route] = {}

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
        route = self._route(scope)
        if (
            (route is None or route.paced)
            and not _signed_in(scope)
            and not _known(scope)
            and not await _turn(scope)
        ):
            await _busy(scope, receive, send)
            return
        if route is not None and route.needs is not None:
            refusal = await _verified(scope, route.needs)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if route is not None and route.body is not None:
            await self._with_body(scope, receive, send, *route.body)
            return
        await self.app(scope, receive, send)

    def _route(self, scope: Scope) -> _Route | None:
        """What the route `scope` goes to needs, or None for a path no API route takes (FastAPI
        answers it 404 or 405 without reading a body)."""
        for route in self._candidates:
            if route.matches(scope)[0] is Match.FULL:
                if id(route) not in self._routes:
                    self._routes[id(route)] = _Route(route)
                return self._routes[id(route)]
        return None

    async def _with_body(
        self, scope: Scope, receive: Receive, send: Send, limit: int, seconds: float
    ) -> None:
        declared = Request(scope).headers.get("content-length", "")
        too_large = _refuse(413, "too_large", f"the body is over this call's {limit}-byte limit")
        if declared.isdigit() and int(declared) > limit:
            await too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return  # nobody left to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        await too_large(scope, receive, send)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            detail = f"the body took over {seconds:.0f} s to arrive"
            await _refuse(408, "request_timeout", detail)(scope, receive, send)
            return
        await self.app(scope, _replay(b"".join(chunks), receive), send)


def _signed_in(scope: Scope) -> bool:
    """Whether the request carries a team page session this server signed (checked without the
    store): a team's own page, its uploads included, is no stranger's public read and is not
    paced with them. A forged or expired cookie is paced like any public request."""
    svc: Services | None = getattr(scope["app"].state, "services", None)
    if svc is None or not scope["path"].startswith(TEAM_COOKIE_PATH + "/"):
        return False
    cookie = Request(scope).cookies.get(TEAM_COOKIE)
    return cookie is not None and svc.team_sessions.signed(cookie)


def _known(scope: Scope) -> bool:
    """Whether the request presents the admin token or a team token this process remembers
    (`api.services.known_caller`): a team following its feed, or the organiser's tools, are not
    paced with strangers, however many of those knock."""
    svc: Services | None = getattr(scope["app"].state, "services", None)
    return svc is not None and known_caller(Request(scope), svc)


async def _turn(scope: Scope) -> bool:
    """Whether a public request may go on, once its turn comes (`api.public`)."""
    svc: Services | None = getattr(scope["app"].state, "services", None)
    return svc is None or await svc.public.pace()


_busy = JSONResponse(
    {"error": "busy", "detail": "too many public requests at once; retry in a second"},
    status_code=503,
    headers={"Retry-After": "1"},
)


async def _verified(scope: Scope, needs: Needs) -> JSONResponse | None:
    """The refusal of a request whose token may not call its route, or None to go on."""
    svc: Services | None = getattr(scope["app"].state, "services", None)
    if svc is None:  # no lifespan ran: the route's own dependencies will refuse it
        return None
    try:
        await verify_token(Request(scope), svc, needs)
    except ApiError as exc:
        return _refuse(exc.status, exc.code, exc.detail, exc.headers)
    except StoreUnavailable:
        status, code, detail = CORE_ERRORS[StoreUnavailable]
        return _refuse(status, code, detail or "", {"Retry-After": RETRY_AFTER_S})
    return None


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


def _refuse(
    status: int, code: str, detail: str, more: dict[str, str] | None = None
) -> JSONResponse:
    """The error body `api.errors` gives; the connection is closed, so an unread body stops."""
    headers = {"Connection": "close", **(more or {})}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)
