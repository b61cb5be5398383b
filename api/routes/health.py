"""Liveness (`/healthz`: the process answers) and readiness (`/readyz`: SQL, S3 and Redis do)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.services import Services, Svc
from core.errors import Unavailable

router = APIRouter()

_READINESS = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "ready": {"type": "boolean"},
                    "checks": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["ready", "checks"],
            }
        }
    }
}


@router.get("/healthz", tags=["health"])
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    tags=["health"],
    responses={
        200: {"description": "Redis, S3 and SQL answer", **_READINESS},
        503: {"description": "a dependency is down (which one: `checks`)", **_READINESS},
    },
)
def readyz(svc: Svc) -> JSONResponse:
    checks = {
        "sql": _probe(svc.store.ping),
        "s3": _probe(svc.blobs.ping),
        "redis": _probe(lambda: _ping_redis(svc)),
    }
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


def _probe(ping: Callable[[], object]) -> str:
    """ "ok", or which kind of failure: a probe reports any error rather than raising it."""
    try:
        ping()
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}"
    return "ok"


def _ping_redis(svc: Services) -> None:
    if svc.redis is None:
        raise Unavailable("no Redis configured")
    svc.redis.ping()
