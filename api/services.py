"""What the API's routes use, built once in the app's lifespan, and the auth dependencies."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Annotated

import redis
from fastapi import Depends, Request

from api.errors import Forbidden, Unauthorized
from api.intake import Intake
from api.ratelimit import RateLimiter
from infra.blobstore import BlobStore
from infra.settings import Settings
from infra.sql.store import Contest, SqlStore, Team

ADMIN_COOKIE = "tilejudge_admin"


@dataclass
class Services:
    settings: Settings
    store: SqlStore
    blobs: BlobStore
    redis: redis.Redis | None
    intake: Intake
    limiter: RateLimiter
    admin_token: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


@dataclass(frozen=True)
class Caller:
    admin: bool
    team: Team | None

    def may_read(self, team_id: str) -> bool:
        return self.admin or (self.team is not None and self.team.id == team_id)


def caller(request: Request, svc: Annotated[Services, Depends(services)]) -> Caller:
    token = _token(request)
    if hmac.compare_digest(token, svc.admin_token):
        return Caller(admin=True, team=None)
    return Caller(admin=False, team=_team(svc, token))


async def bearer_token(request: Request) -> str:
    """The caller's token, read without touching the store (so on the event loop)."""
    return _token(request)


def _token(request: Request) -> str:
    token = _bearer(request) or request.cookies.get(ADMIN_COOKIE)
    if not token:
        raise Unauthorized("missing token: send 'Authorization: Bearer <token>'")
    return token


def uploader(svc: Services, token: str) -> tuple[Team, Contest]:
    """The uploading team and its contest (one query): 401 if none, 403 for the admin token."""
    if hmac.compare_digest(token, svc.admin_token):
        raise Forbidden("uploads are made with a team token, not the admin token")
    found = svc.store.team_with_contest(token_hash(token))
    if found is None:
        raise Unauthorized("unknown token")
    return found


def _team(svc: Services, token: str) -> Team:
    team = svc.store.team_by_token_hash(token_hash(token))
    if team is None:
        raise Unauthorized("unknown token")
    return team


def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    if not who.admin:
        raise Forbidden("this call needs the admin token")
    return who


AnyCaller = Annotated[Caller, Depends(caller)]
BearerToken = Annotated[str, Depends(bearer_token)]
Admin = Annotated[Caller, Depends(admin)]
Svc = Annotated[Services, Depends(services)]
