"""The OpenAPI schema says what the API really answers: every error is {"error", "detail"}, and
each operation names the bearer token it takes (so Swagger UI's Authorize button sends it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute

from api.services import admin, bearer_token, caller, metrics_access

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
ADMIN_TOKEN, TEAM_TOKEN, METRICS_TOKEN = "adminToken", "teamToken", "metricsToken"
SECURITY_SCHEMES = {
    ADMIN_TOKEN: {
        "type": "http",
        "scheme": "bearer",
        "description": "The organiser's token: `$TILEJUDGE_ADMIN_TOKEN`, or the file "
        "`admin-token` in the stack's home directory. (The dashboard's session cookie stands "
        "for it on the dashboard's own reads, GET /v1/stats and GET /v1/rejudges/{run_id}.)",
    },
    TEAM_TOKEN: {
        "type": "http",
        "scheme": "bearer",
        "description": "A team's token, given once when the organiser creates the team: "
        "uploads take it, and it reads that team's own submissions.",
    },
    METRICS_TOKEN: {
        "type": "http",
        "scheme": "bearer",
        "description": "`$TILEJUDGE_METRICS_TOKEN`, for a Prometheus scraper of /metrics.",
    },
}
# Which tokens an operation takes, by the auth dependency it has (the first found, in this
# order): a list of alternatives, as OpenAPI's `security` reads; `{}` is "no token at all".
SECURITY_BY_DEPENDENCY: tuple[tuple[Callable[..., Any], list[dict[str, list[str]]]], ...] = (
    (admin, [{ADMIN_TOKEN: []}]),
    (caller, [{TEAM_TOKEN: []}, {ADMIN_TOKEN: []}]),
    (bearer_token, [{TEAM_TOKEN: []}]),
    (metrics_access, [{}, {METRICS_TOKEN: []}, {ADMIN_TOKEN: []}]),
)


def document_errors(app: FastAPI) -> None:
    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            components = doc.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            schemas["Error"] = ERROR_BODY
            schemas["HTTPValidationError"] = ERROR_BODY  # FastAPI's name for its 422 body
            components["securitySchemes"] = SECURITY_SCHEMES
            error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
            security = security_of(app.routes)
            for path, operations in doc.get("paths", {}).items():
                for method, operation in operations.items():
                    responses = operation.setdefault("responses", {})
                    for code, description in ERRORS.items():
                        responses.setdefault(code, {"description": description, "content": error})
                    if (path, method) in security:
                        operation["security"] = security[(path, method)]
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]


def security_of(routes: Iterable[BaseRoute]) -> dict[tuple[str, str], list[dict[str, list[str]]]]:
    """(path, lower-case method) -> the operation's `security`, for each route that takes a
    token; public routes are left out (the schema declares no global requirement)."""
    found = {}
    for route in iter_route_contexts(list(routes)):  # an included router's routes, each alone
        if not isinstance(route.original_route, APIRoute) or not route.path_format:
            continue
        calls = dependency_calls(route.dependant)
        needs = next((sec for call, sec in SECURITY_BY_DEPENDENCY if call in calls), None)
        if needs is None:
            continue
        for method in route.methods or ():
            found[(route.path_format, method.lower())] = needs
    return found


def dependency_calls(dependant: Dependant) -> set[Callable[..., Any]]:
    """Every function a route depends on, however deeply (`Admin` is `admin` over `caller`)."""
    return {dep.call for dep in _dependencies(dependant) if dep.call is not None}


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dep in dependant.dependencies:
        yield dep
        yield from _dependencies(dep)
