"""One behaviour suite for the dashboard's signed-out sessions (`core.ports.SessionStore`), run
on the in-memory fake (`core.fake_logs.InMemorySessionStore`), SQLite and PostgreSQL
(`infra.sql.sessions`): each test states what the SQL adapter answers, so a fake that drifts
fails here. The sides are in `log_port_sides.py`."""

from __future__ import annotations

import pytest

from core.ports import SessionStore
from tests.integration.log_port_sides import session_side
from tests.integration.port_sides import HOUR, START, SUITE, Clock, moving_clock

pytestmark = SUITE
IN_AN_HOUR = "2030-01-01T13:00:00.000000Z"  # an hour after START
IN_THREE_HOURS = "2030-01-01T15:00:00.000000Z"


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return moving_clock(monkeypatch)


@pytest.fixture
def sessions(kind: str, sql_url: str, now: Clock, request: pytest.FixtureRequest) -> SessionStore:
    return session_side(kind, now, request)


def test_a_signed_out_session_is_refused_and_no_other(sessions: SessionStore) -> None:
    assert not sessions.session_revoked("s1")

    sessions.revoke_session("s1", IN_AN_HOUR)

    assert sessions.session_revoked("s1")
    assert not sessions.session_revoked("s2")


def test_signing_out_twice_keeps_the_first_expiry(sessions: SessionStore, now: Clock) -> None:
    sessions.revoke_session("s1", IN_AN_HOUR)
    sessions.revoke_session("s1", IN_THREE_HOURS)  # revoked already: nothing changes
    assert sessions.session_revoked("s1")

    now.advance(2 * HOUR)
    sessions.revoke_session("s2", IN_THREE_HOURS)  # drops what expired: s1, by its first expiry

    assert not sessions.session_revoked("s1")
    assert sessions.session_revoked("s2")


def test_an_expired_revocation_stays_until_the_next_sign_out_drops_it(
    sessions: SessionStore, now: Clock
) -> None:
    sessions.revoke_session("s1", IN_AN_HOUR)
    sessions.revoke_session("s2", IN_THREE_HOURS)
    now.advance(2 * HOUR)
    assert sessions.session_revoked("s1")  # a read drops nothing

    sessions.revoke_session("s3", IN_THREE_HOURS)

    assert [sessions.session_revoked(s) for s in ("s1", "s2", "s3")] == [False, True, True]


def test_a_session_signed_out_after_its_expiry_is_refused_until_the_next_sign_out(
    sessions: SessionStore,
) -> None:
    sessions.revoke_session("s1", START)  # expired already: dropped before it is added

    assert sessions.session_revoked("s1")
    sessions.revoke_session("s2", IN_AN_HOUR)
    assert not sessions.session_revoked("s1")
