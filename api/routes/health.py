"""Liveness (`/healthz`: the process answers) and readiness (`/readyz`: SQL, S3 and Redis do).

Readiness stays true through a failover: SQL counts as up only when the server reached takes
writes (not a standby, not read-only), Redis only when the server reached is the primary. A
process still reaching an old primary is not ready until a new connection finds the new one.

`/readyz`'s checks run at most once a second per API process, on the public thread budget, and
answer every caller meanwhile: a probe or a crowd polling it costs the stores the same."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

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
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    tags=["health"],
    responses={
        200: {"description": "Redis and SQL primaries and S3 answer", **_READINESS},
        503: {"description": "a dependency is down (which one: `checks`)", **_READINESS},
    },
)
async def readyz(svc: Svc) -> JSONResponse:
    checks = await svc.public.get(("readyz",), partial(dependency_checks, svc))
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


def dependency_checks(svc: Services) -> dict[str, str]:
    return {
        "sql": _probe(lambda: _sql_writable(svc)),
        "s3": _probe(svc.blobs.ping),
        "redis": _probe(lambda: _redis_primary(svc)),
    }


def _probe(ping: Callable[[], object]) -> str:
    """ "ok", or which kind of failure: a probe reports any error rather than raising it."""
    try:
        ping()
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}"
    return "ok"


def _sql_writable(svc: Services) -> None:
    probe = svc.replication.database if svc.replication else None
    if probe is not None and probe.replicated:
        probe.check_writable()  # a standby, or a read-only server, answers a ping too
    else:
        svc.store.ping()


def _redis_primary(svc: Services) -> None:
    # The composition root gives a Redis probe wherever it gives a Redis client.
    if svc.replication is None or svc.replication.redis is None:
        raise Unavailable("no Redis configured")
    svc.replication.redis.check_primary()
