"""What the behaviour suites (tests/integration/test_session_port.py, test_transparency_port.py)
cannot ask of the SQL side: the fakes of `core.fake_logs` fail as an outage would."""

from __future__ import annotations

import pytest

from core import transparency
from core.errors import StoreUnavailable
from core.fakes import InMemorySessionStore, InMemorySubmissionStore, InMemoryTransparencyLogs
from core.records import Contest

NOW = "2030-01-01T12:00:00.000000Z"


def test_the_session_store_down_fails_every_call() -> None:
    sessions = InMemorySessionStore(lambda: NOW)
    sessions.down = True
    with pytest.raises(StoreUnavailable):
        sessions.revoke_session("s1", NOW)
    with pytest.raises(StoreUnavailable):
        sessions.session_revoked("s1")


def test_the_logs_fail_with_their_database_and_one_fake_holds_a_database() -> None:
    db = InMemorySubmissionStore(now=lambda: NOW)
    db.add_contest(
        Contest(
            id="c1", title="c1", opens_at=NOW, closes_at=NOW, lexicon_id="l", rules_id="y",
            created_at=NOW, game="wordytaire",
        )
    )  # fmt: skip
    logs = InMemoryTransparencyLogs(db)
    db.down = True
    for call in (
        lambda: logs.sequence(lambda contest, size, root: "signed"),
        lambda: logs.log_head("c1"),
        lambda: logs.log_hashes("c1", [0]),
        lambda: logs.log_entries("c1", 0, 1),
        lambda: logs.log_leaves("s1"),
    ):
        with pytest.raises(StoreUnavailable):
            call()
    db.down = False
    assert logs.sequence(lambda contest, size, root: "signed") == 0
    assert logs.log_leaves("s1") == []
    closed = transparency.encode({"type": "close", "closes_at": NOW})  # by the clock, just now
    assert logs.log_entries("c1", 0, 1) == ([closed], None)
    with pytest.raises(ValueError):
        InMemoryTransparencyLogs(db)
