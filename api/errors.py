"""API errors, mapped to HTTP in one place: {"error": code, "detail": text}."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from infra.blobstore import BlobStoreUnavailable
from infra.sql.store import Duplicate


class ApiError(Exception):
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


class NotFound(ApiError):
    status, code = 404, "not_found"


class Conflict(ApiError):
    status, code = 409, "conflict"


class TooLarge(ApiError):
    status, code = 413, "too_large"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported_media_type"


class Invalid(ApiError):
    status, code = 422, "invalid"


class RateLimited(ApiError):
    status, code = 429, "rate_limited"


class Unavailable(ApiError):
    status, code = 503, "unavailable"


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
            f"{'.'.join(str(p) for p in error.get('loc', ()) if p != 'body') or 'body'}: {error.get('msg')}"
            for error in exc.errors()
        )
        return _json(422, "invalid", problems or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _json(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Duplicate)
    async def _duplicate(_: Request, exc: Duplicate) -> JSONResponse:
        return _json(409, "conflict", str(exc))

    @app.exception_handler(BlobStoreUnavailable)
    async def _s3_down(_: Request, exc: BlobStoreUnavailable) -> JSONResponse:
        return _json(
            503,
            "unavailable",
            "object storage is unavailable; nothing was stored, retry",
            {"Retry-After": "5"},
        )

    from sqlalchemy.exc import DataError, DBAPIError

    @app.exception_handler(DataError)
    async def _bad_value(_: Request, exc: DataError) -> JSONResponse:
        # The store is up and refused a value (PostgreSQL: a NUL byte in text): bad input, not 503.
        return _json(422, "invalid", "a value in this request cannot be stored (a NUL character?)")

    @app.exception_handler(DBAPIError)
    async def _sql_down(_: Request, exc: DBAPIError) -> JSONResponse:
        return _json(
            503, "unavailable", "the results store is unavailable; retry", {"Retry-After": "5"}
        )
