"""The OpenAPI schema says what the API really answers: every error is {"error", "detail"}."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_BODY = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "a short code: invalid, not_found, ..."},
        "detail": {"type": "string", "description": "what went wrong, in words"},
    },
    "required": ["error", "detail"],
}
ERRORS = {
    "400": "bad request",
    "401": "missing or unknown token",
    "403": "not allowed with this token, or outside the contest's window",
    "404": "no such resource (or not yours)",
    "405": "method not allowed",
    "408": "the upload took too long to arrive",
    "409": "conflicts with the current state",
    "413": "upload over the size limit",
    "415": "unsupported content type",
    "422": "invalid input",
    "429": "rate limited; see Retry-After",
    "503": "a dependency is down; nothing was stored; retry",
}


def document_errors(app: FastAPI) -> None:
    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            components = doc.setdefault("components", {}).setdefault("schemas", {})
            components["Error"] = ERROR_BODY
            components["HTTPValidationError"] = ERROR_BODY  # FastAPI's name for its 422 body
            error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
            for operations in doc.get("paths", {}).values():
                for operation in operations.values():
                    responses = operation.setdefault("responses", {})
                    for code, description in ERRORS.items():
                        responses.setdefault(code, {"description": description, "content": error})
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
