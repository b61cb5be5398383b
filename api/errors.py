"""API errors, mapped to HTTP in one place: {"error": code, "detail": text}."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException

from core.errors import (
    AskAgain,
    BlobStoreUnavailable,
    Conflict,
    Invalid,
    NotAllowed,
    NotAuthenticated,
    NotFound,
    ReportPending,
    StoreUnavailable,
    Throttled,
    Unavailable,
)
from core.games import game, names
from judge import LexiconError


class ApiError(Exception):
    """A refusal that only exists at the HTTP edge (a body too large, a wrong media type, a
    request too slow); the pipeline's own errors are in `core.errors` and mapped below."""

    status = 400
    code = "bad_request"

    def __init__(self, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class Forbidden(ApiError):
    status, code = 403, "forbidden"


class RequestTimeout(ApiError):
    status, code = 408, "request_timeout"


class TooLarge(ApiError):
    status, code = 413, "too_large"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported_media_type"


# The pipeline's errors by class: status, code, and the detail to show (None: the error's own).
# Starlette picks the handler of the nearest class in an exception's MRO, so a subclass listed
# here wins over its base.
CORE_ERRORS: dict[type[Exception], tuple[int, str, str | None]] = {
    NotAuthenticated: (401, "unauthorized", None),
    NotAllowed: (403, "forbidden", None),
    NotFound: (404, "not_found", None),
    Conflict: (409, "conflict", None),
    Invalid: (422, "invalid", None),
    Throttled: (429, "rate_limited", None),
    # Not a refusal: a heavy upload's report is being made by a worker (`core.reports`).
    ReportPending: (202, "report_pending", None),
    Unavailable: (503, "unavailable", None),
    # Also while a database failover is under way (no primary yet): the upload is not
    # acknowledged, and sending the same bytes again is safe (a copy that did get in is found).
    StoreUnavailable: (
        503,
        "unavailable",
        "the results store cannot record this now (its primary may be failing over); "
        "send the same request again after Retry-After",
    ),
    BlobStoreUnavailable: (
        503,
        "unavailable",
        "object storage is unavailable; nothing was stored, retry",
    ),
}


def ruleset_errors() -> dict[type[Exception], str]:
    """A word list or a game's rules data (a layout, a board) that does not parse is the
    sender's mistake: 422, its reason prefixed."""
    found: dict[type[Exception], str] = {LexiconError: "not a word list"}
    for name in names():
        played = game(name)
        for error in played.rules_errors:
            found.setdefault(error, f"not a {played.rules_noun}")
    return found


RETRY_AFTER_S = "5"  # what an outage's 503 asks a client to wait


def _json(
    status: int, code: str, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status == 401:
            headers.setdefault("WWW-Authenticate", "Bearer")
        return _json(exc.status, exc.code, exc.detail, headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error.get('loc', ()) if p != 'body') or 'body'}: {_message(error)}"
            for error in exc.errors()
        )
        return _json(422, "invalid", problems or "invalid request")

    @app.exception_handler(MultiPartException)
    async def _multipart(_: Request, exc: MultiPartException) -> JSONResponse:
        # The code Starlette's own form parsing answers a broken multipart body with.
        return _json(400, "http_error", exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _json(exc.status_code, code, str(exc.detail))

    for cls, (status, code, shown) in CORE_ERRORS.items():
        app.add_exception_handler(cls, _core_handler(status, code, shown))
    for cls, what in ruleset_errors().items():
        app.add_exception_handler(cls, _ruleset_handler(what))


def _message(error: dict[str, object]) -> object:
    """A schema validator's own ValueError text, without pydantic's "Value error, " prefix."""
    context = error.get("ctx")
    if error.get("type") == "value_error" and isinstance(context, dict) and "error" in context:
        return context["error"]
    return error.get("msg")


def _core_handler(status: int, code: str, shown: str | None) -> Callable[..., Awaitable[Response]]:
    async def handle(_: Request, exc: Exception) -> Response:
        headers: dict[str, str] = {}
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        elif status == 503:
            headers["Retry-After"] = RETRY_AFTER_S
        elif isinstance(exc, AskAgain):
            headers["Retry-After"] = str(exc.retry_after)
        detail = shown or (exc.args[0] if exc.args else str(exc))
        return _json(status, code, str(detail), headers)

    return handle


def _ruleset_handler(what: str) -> Callable[..., Awaitable[Response]]:
    async def handle(_: Request, exc: Exception) -> Response:
        return _json(422, "invalid", f"{what}: {exc}")

    return handle
