"""A team's sign-in sessions on its own page (`/team`): a signed cookie naming the team, never
its token, accepted only by the page's own routes (`api.team_pages.routes`).

A cookie is `team.id.expiry.signature`: the team's id, a random session id, the expiry in Unix
seconds and an HMAC-SHA256 of them under a key derived from the session key, so it cannot be
forged or extended, and its signature is checked without the store (`signed`: the request-limits
middleware lets a signed cookie's requests past the public pace, as a token's are). Every full
check reads the team from the store: a team deleted meanwhile has no session left.
Signing out records the session id in the store until its expiry (`SessionStore`, shared with
the dashboard's sessions, whose ids are random alike), so every API process refuses it."""

from __future__ import annotations

import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from core import clock
from core.ports import SessionStore, TeamStore
from core.records import Team

TEAM_COOKIE = "tilejudge_team"
# The path the browser sends the cookie on: the team page's own routes and no other.
TEAM_COOKIE_PATH = "/team"
TEAM_SESSION_MAX_AGE_S = 12 * 3600  # as long as the dashboard's
_PART = re.compile(r"[A-Za-z0-9_-]{1,64}")


class TeamStores(SessionStore, TeamStore, Protocol):
    """What a team session is checked against: the team, and the sessions signed out."""


@dataclass(frozen=True)
class TeamSession:
    id: str
    team_id: str
    expires: int  # Unix seconds


class TeamSessions:
    def __init__(
        self,
        key: str,
        store: TeamStores,
        lifetime_s: int = TEAM_SESSION_MAX_AGE_S,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._key = hmac.new(key.encode(), b"tilejudge team session", "sha256").digest()
        self._store = store
        self.lifetime_s = lifetime_s
        self.now = now

    def issue(self, team: Team) -> str:
        body = f"{team.id}.{secrets.token_urlsafe(24)}.{int(self.now()) + self.lifetime_s}"
        return f"{body}.{self._sign(body)}"

    def check(self, cookie: str) -> tuple[TeamSession, Team] | None:
        """The session the cookie holds and its team, or None if the cookie is forged, expired
        or signed out, or its team is gone. The store is asked only for a well-formed cookie
        that has not expired."""
        parts = cookie.split(".")
        if len(parts) != 4:
            return None
        team_id, session_id, expires, signature = parts
        if not (_PART.fullmatch(team_id) and _PART.fullmatch(session_id) and expires.isdigit()):
            return None
        if len(expires) > 12 or int(expires) <= self.now():
            return None
        if not _same(signature, self._sign(f"{team_id}.{session_id}.{expires}")):
            return None
        team = self._store.get_team(team_id)
        if team is None or self._store.session_revoked(session_id):
            return None
        return TeamSession(session_id, team_id, int(expires)), team

    def signed(self, cookie: str) -> bool:
        """Whether the cookie is one this server signed and has not expired, asking no store
        (so on the event loop): it may still be signed out, or its team gone."""
        team_id, _, rest = cookie.partition(".")
        body, _, signature = rest.rpartition(".")
        session_id, _, expires = body.partition(".")
        if not (_PART.fullmatch(team_id) and _PART.fullmatch(session_id) and expires.isdigit()):
            return False
        if len(expires) > 12 or int(expires) <= self.now():
            return False
        return _same(signature, self._sign(f"{team_id}.{body}"))

    def revoke(self, session: TeamSession) -> None:
        expires = clock.format_time(datetime.fromtimestamp(session.expires, UTC))
        self._store.revoke_session(session.id, expires)

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode("utf-8", "surrogatepass"), "sha256").hexdigest()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )
