"""What the API's routes use, built once in the app's lifespan, and the auth dependencies."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.routing import compile_path

from api.clics_feed import FeedHub
from api.errors import Forbidden, Unauthorized
from api.public import SharedReads
from api.strangers import Strangers, UnknownTokens
from api.team_sessions import TeamSessions
from api.token_news import TokenNews
from core import clock, tuning
from core.contests import token_hash
from core.errors import NotAuthenticated
from core.ports import SessionStore, TeamStore
from core.records import Contest, Submission, Team
from infra.api_parts import ApiParts

ADMIN_COOKIE = "tilejudge_admin"
SESSION_MAX_AGE_S = 12 * 3600
# The only API routes a dashboard session is accepted on: the page's own reads (GET). Every
# write of the API, and every other read, takes the admin token in an Authorization header,
# which no other site can make a browser send, so a cross-site form carrying the cookie is
# refused. The dashboard's own forms (sign-out, settling a disputed game) take the cookie,
# SameSite=Strict, and check the request's Origin (`api.routes.dashboard`).
DASHBOARD_READS = tuple(
    compile_path(path)[0] for path in ("/dashboard", "/v1/stats", "/v1/rejudges/{run_id}")
)


class Uploaders:
    """Who a team token belongs to, and its contest, remembered for `ttl` seconds in each API
    process: a deadline spike is a few hundred uploads a second from the same teams, and the
    query behind every one of them would be an upload's largest cost after its S3 write.

    Safe to remember, because the store has the last word on what can change meanwhile. A
    contest's window only ever closes early (`POST /v1/contests/{id}/close`): intake's group
    commit reads the closing time in its transaction (one query a group, not an upload), so an
    upload received after the close is refused in every process, 403 as for any late upload,
    whatever this memory says. A team's one changeable field, its right to upload game logs,
    is read the same way for every game log; a team remembered without it is looked up again
    before it is refused, so a grant holds at once. A team deleted meanwhile has its uploads
    refused by the submission's foreign key to its team, answered 401 and their bytes deleted,
    as for a team deleted while its upload was being taken. And the process that closes a
    contest, or deletes or changes a team, tells every API process (`api.token_news`), which
    forgets it at once. A token no team holds is remembered too, briefly (`unknown`,
    `api.strangers`)."""

    def __init__(
        self,
        store: TeamStore,
        ttl: float = tuning.UPLOADER_TTL_S,
        most: int = tuning.UPLOADERS_KEPT,
        unknown: UnknownTokens | None = None,
    ) -> None:
        self._store = store
        self._ttl = ttl
        self._most = most
        self._known: dict[str, tuple[float, Team, Contest]] = {}
        self.unknown = unknown if unknown is not None else UnknownTokens()
        # Forgettings so far: a look-up that began before one does not remember its answer,
        # which may be the team just deleted.
        self._forgotten = 0

    def remembered(self, token_hash: str) -> bool:
        """Whether the token is known without asking the store (so on the event loop)."""
        return self.recall(token_hash) is not None

    def recall(self, token_hash: str) -> tuple[Team, Contest] | None:
        """The token's team and contest if remembered, without asking the store."""
        known = self._known.get(token_hash)
        if known is not None and time.monotonic() - known[0] < self._ttl:
            return known[1], known[2]
        return None

    def find(self, token_hash: str) -> tuple[Team, Contest] | None:
        found = self.recall(token_hash)
        if found is not None:
            return found
        if token_hash in self.unknown:
            return None
        forgotten = self._forgotten
        found = self._store.team_with_contest(token_hash)
        if found is None:
            self._known.pop(token_hash, None)
            self.unknown.add(token_hash)
            return None
        if forgotten != self._forgotten:
            return found  # news came meanwhile: the answer may be older than it
        if len(self._known) >= self._most:
            self._known.clear()  # more live tokens than that in `ttl`: start over
        self._known[token_hash] = (time.monotonic(), *found)
        return found

    def forget_team(self, team_id: str) -> None:
        self._forgotten += 1
        for key, (_, team, _) in list(self._known.items()):
            if team.id == team_id:
                self._known.pop(key, None)

    def forget_contest(self, contest_id: str) -> None:
        self._forgotten += 1
        for key, (_, _, contest) in list(self._known.items()):
            if contest.id == contest_id:
                self._known.pop(key, None)

    def forget_all(self) -> None:
        self._forgotten += 1
        self._known = {}
        self.unknown.forget()


@dataclass(frozen=True)
class Session:
    id: str
    expires: int  # Unix seconds


class DashboardSessions:
    """The dashboard's sign-in sessions. A cookie is `id.expiry.signature`: a random id, its
    expiry in Unix seconds and an HMAC-SHA256 of both, so it carries no token and cannot be
    extended or forged. The signing key is derived from the session key and a digest of the
    admin token, so a new admin token ends every session at once. Signing out records the id
    in the store until its expiry, so every API process refuses it from then on."""

    def __init__(
        self,
        key: str,
        store: SessionStore,
        admin_token: str,
        lifetime_s: int = SESSION_MAX_AGE_S,
        now: Callable[[], float] = time.time,
    ) -> None:
        bound_to = hashlib.sha256(admin_token.encode("utf-8", "surrogatepass")).digest()
        self._key = hmac.new(key.encode(), b"tilejudge session:" + bound_to, "sha256").digest()
        self._store = store
        self._lifetime_s = lifetime_s
        self.now = now

    def issue(self) -> str:
        body = f"{secrets.token_urlsafe(24)}.{int(self.now()) + self._lifetime_s}"
        return f"{body}.{self._sign(body)}"

    def check(self, cookie: str) -> Session | None:
        """The session the cookie holds, or None if it is forged, expired or signed out."""
        session_id, _, rest = cookie.partition(".")
        expires, _, signature = rest.partition(".")
        if not (session_id and signature) or not same_token(
            signature, self._sign(f"{session_id}.{expires}")
        ):
            return None
        session = Session(session_id, int(expires))  # signed here, so digits
        if session.expires <= self.now() or self._store.session_revoked(session.id):
            return None
        return session

    def revoke(self, session: Session) -> None:
        expires = clock.format_time(datetime.fromtimestamp(session.expires, UTC))
        self._store.revoke_session(session.id, expires)

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode("utf-8", "surrogatepass"), "sha256").hexdigest()


@dataclass
class Services(ApiParts):
    """What the routes use: the composition root's parts (its clients, and the limits it built
    on them) and what this process keeps on top of them: its token memory, the dashboard's and
    the team page's sessions, and the public reads' shared answers."""

    uploaders: Uploaders = field(init=False)
    sessions: DashboardSessions = field(init=False)
    team_sessions: TeamSessions = field(init=False)
    public: SharedReads = field(init=False)
    clics_feed: FeedHub | None = field(init=False)
    strangers: Strangers = field(init=False)
    token_news: TokenNews = field(init=False)

    def __post_init__(self) -> None:
        self.uploaders = Uploaders(self.store)
        self.strangers = Strangers()
        self.token_news = TokenNews(self.team_news, self.uploaders)
        self.sessions = DashboardSessions(
            self.settings.session_key_value(), self.store, self.admin_token
        )
        self.team_sessions = TeamSessions(self.settings.session_key_value(), self.store)
        self.public = SharedReads(rate=self.settings.public_reads_per_second)
        self.clics_feed = FeedHub(self.clics, self.public.run) if self.clics else None


@dataclass(frozen=True)
class ApiCaches:
    """`core.ports.Caches` as an API process keeps them: its token memory (told to every
    process through `api.token_news`), its shared public reads (the keys showing a contest's
    standings or ruleset: `api.routes.standings.views`), and the broker's copies of uploads."""

    svc: Services
    standings_views: Callable[[str], Iterable[Hashable]]

    def forget_team(self, team_id: str) -> None:
        self.svc.token_news.team_changed(team_id)

    def forget_contest(self, contest_id: str) -> None:
        self.svc.uploaders.forget_contest(contest_id)

    def forget_standings(self, contest_id: str) -> None:
        self.svc.public.forget(*self.standings_views(contest_id))

    def forget_broker_copies(self, submission_ids: Sequence[str]) -> None:
        self.svc.forget_copies(submission_ids)


async def services(request: Request) -> Services:
    """Async, so that finding the app's services takes no thread from the pool."""
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

    def may_read(self, submission: Submission) -> bool:
        """The organiser reads every submission, a team its own; and a game log (shared: one
        submission whichever team sent it) any team of its contest, since any of them may
        have sent the same log and its verdict is on the public standings anyway."""
        if self.admin:
            return True
        if self.team is None:
            return False
        if submission.shared:
            return self.team.contest_id == submission.contest_id
        return self.team.id == submission.team_id


def same_token(given: str, expected: str) -> bool:
    """A constant-time comparison of bytes: `hmac.compare_digest` refuses a str that is not
    ASCII, and a header or cookie may carry any byte."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def caller(request: Request, svc: Annotated[Services, Depends(services)]) -> Caller:
    if _bearer(request) is None and dashboard_read(request):
        cookie = request.cookies.get(ADMIN_COOKIE)
        if cookie is not None:
            if svc.sessions.check(cookie) is None:
                raise Unauthorized("the dashboard session has expired or was signed out")
            return Caller(admin=True, team=None)
    token = _token(request)
    if same_token(token, svc.admin_token):
        return Caller(admin=True, team=None)
    return Caller(admin=False, team=_team(svc, token))


async def bearer_token(request: Request) -> str:
    """The caller's token, read without touching the store (so on the event loop)."""
    return _token(request)


def dashboard_read(request: Request) -> bool:
    """Whether this request is one the dashboard's session cookie may authorise."""
    path = request.url.path
    return request.method == "GET" and any(read.match(path) for read in DASHBOARD_READS)


def presented_token(request: Request) -> str | None:
    """The token a request presents: the Bearer token, or the password of HTTP basic auth (any
    user name: the Contest API's clients send it so); None without one. Malformed basic
    credentials: Unauthorized."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return value
    if scheme.lower() == "basic" and value:
        try:
            _, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, ValueError):  # not base64 (any byte may come), or not UTF-8
            raise Unauthorized("malformed basic credentials") from None
        return password or None
    return None


def known_caller(request: Request, svc: Services) -> bool:
    """Whether the request presents the admin token or a team token this process remembers,
    told without the store (so on the event loop): such a caller is no stranger, and is not
    paced with the public (`api.middleware`). Whether it may call its route is checked later."""
    try:
        token = presented_token(request)
    except Unauthorized:
        return False
    if token is None or not token.isascii():
        return False
    return same_token(token, svc.admin_token) or svc.uploaders.remembered(token_hash(token))


def _token(request: Request) -> str:
    token = _bearer(request)
    if not token:
        raise Unauthorized("missing token: send 'Authorization: Bearer <token>'")
    if not token.isascii():
        # Every token this server issues is URL-safe ASCII: anything else matches none.
        raise Unauthorized("unknown token")
    return token


async def metrics_access(request: Request, svc: Annotated[Services, Depends(services)]) -> bool:
    """Whether the caller of `/metrics` sees contest and rejudge run ids: only with the admin
    token or the metrics token, as a Bearer token (the dashboard's cookie counts for nothing
    here). With a metrics token set, nobody else is answered; without one, anyone gets the
    counts without ids. A token given that matches neither is refused either way, so a
    misconfigured scraper hears about it."""
    token = _bearer(request)
    required = svc.settings.metrics_token
    if not token:
        if required:
            raise Unauthorized("/metrics needs 'Authorization: Bearer <metrics token>'")
        return False
    if token.isascii() and any(
        expected and same_token(token, expected) for expected in (svc.admin_token, required)
    ):
        return True
    raise Unauthorized("unknown token")


async def organiser(request: Request, svc: Annotated[Services, Depends(services)]) -> bool:
    """Whether a public route's caller is the organiser: the admin token as a Bearer token.
    Any other token, or none, is the public (a public route refuses no one)."""
    token = _bearer(request)
    return token is not None and same_token(token, svc.admin_token)


class Needs(StrEnum):
    """Whom a route answers: the organiser, the organiser or a team, or a team alone (an
    upload); `api.middleware` tells them apart by the route's dependencies."""

    ADMIN = "admin"
    ANYONE_KNOWN = "anyone known"
    TEAM = "team"


async def verify_token(request: Request, svc: Services, needs: Needs) -> None:
    """Unauthorized (or Forbidden) unless the request's token may call a route that `needs`
    it: the admin token compared in constant time, a team token looked up (in this process's
    memory of uploaders, else in the store on a thread). The request-limits middleware asks
    before any body byte is read. A dashboard read with its session cookie passes here; the
    route's `caller` checks the cookie (such a read is a GET and has no body)."""
    if _bearer(request) is None and dashboard_read(request) and ADMIN_COOKIE in request.cookies:
        return
    token = _token(request)
    if same_token(token, svc.admin_token):
        if needs is Needs.TEAM:
            raise Forbidden("uploads are made with a team token, not the admin token")
        return
    if await team_of(request, svc, token) is None:
        raise Unauthorized("unknown token")
    if needs is Needs.ADMIN:
        raise Forbidden("this call needs the admin token")


async def team_of(request: Request, svc: Services, token: str) -> tuple[Team, Contest] | None:
    """The team holding `token` and its contest, or None: from this process's memory, else from
    the store on a thread. A client address whose token matched no team is paced from then on
    (`api.strangers`; 429 past its turn), and its look-ups take the public threads, so made-up
    tokens cost teams neither the event loop nor the threads their uploads use."""
    hashed = token_hash(token)
    found = svc.uploaders.recall(hashed)
    if found is not None:
        return found
    address = request.client.host if request.client else ""
    await svc.strangers.turn(address)
    if hashed in svc.uploaders.unknown:
        found = None
    elif svc.strangers.failing(address):
        found = await svc.public.run(partial(svc.uploaders.find, hashed))
    else:
        found = await run_in_threadpool(svc.uploaders.find, hashed)
    if found is None:
        svc.strangers.failed(address)
    return found


def uploader(svc: Services, token: str) -> tuple[Team, Contest]:
    """The uploading team and its contest: 401 if none, 403 for the admin token."""
    if same_token(token, svc.admin_token):
        raise Forbidden("uploads are made with a team token, not the admin token")
    found = svc.uploaders.find(token_hash(token))
    if found is None:
        raise NotAuthenticated("unknown token")
    return found


def _team(svc: Services, token: str) -> Team:
    team = svc.store.team_by_token_hash(token_hash(token))
    if team is None:
        raise NotAuthenticated("unknown token")
    return team


def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    if not who.admin:
        raise Forbidden("this call needs the admin token")
    return who


AnyCaller = Annotated[Caller, Depends(caller)]
BearerToken = Annotated[str, Depends(bearer_token)]
Admin = Annotated[Caller, Depends(admin)]
MetricsAccess = Annotated[bool, Depends(metrics_access)]
Organiser = Annotated[bool, Depends(organiser)]
Svc = Annotated[Services, Depends(services)]
