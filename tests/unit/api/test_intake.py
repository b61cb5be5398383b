"""Intake: an upload is acknowledged only once it is durable, and refused without a trace."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from core import clock
from core.errors import StoreUnavailable
from core.sweeping import sweep
from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, open_pipeline
from infra import ratelimit
from infra.ratelimit import RateLimiter
from infra.sql.rejudges import SqlRejudgeRuns

MOVES = b"-1 0 1 0 cat\n"


def assert_nothing_stored(pipe: Pipeline, events_before: int) -> None:
    assert pipe.uploads() == {}
    assert pipe.store.count_by_state() == {}
    assert len(pipe.events()) == events_before
    assert pipe.publisher.published == []


def test_a_raw_upload_is_accepted_with_id_digest_receipt_time_and_receipt(
    pipe: Pipeline, team: TeamLogin
) -> None:
    response = pipe.upload(team, MOVES)

    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"id", "sha256", "received_at", "receipt", "log_leaf"}
    assert body["log_leaf"] == 0  # the contest's first entry
    assert body["sha256"] == hashlib.sha256(MOVES).hexdigest()
    assert body["received_at"].endswith("Z")
    assert len(body["receipt"]) == 64
    assert pipe.publisher.published == [body["id"]]
    assert pipe.publisher.inline == {body["id"]: MOVES}  # a small upload rides in the message
    assert pipe.state(body["id"]) == "queued"


def test_a_multipart_upload_stores_the_file_fields_bytes(pipe: Pipeline, team: TeamLogin) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions", headers=team.headers,
        files={"file": ("moves.txt", MOVES, "text/plain")},
    )  # fmt: skip

    assert response.status_code == 202, response.text
    assert response.json()["sha256"] == hashlib.sha256(MOVES).hexdigest()
    assert list(pipe.uploads().values()) == [MOVES]


def test_a_multipart_upload_without_a_file_field_is_refused(
    pipe: Pipeline, team: TeamLogin
) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions", headers=team.headers, data={"other": "x"},
        files={"attachment": ("moves.txt", MOVES, "text/plain")},
    )  # fmt: skip

    assert response.status_code == 422
    assert "file" in response.json()["detail"]
    assert pipe.uploads() == {}


def test_the_same_bytes_from_the_same_team_give_back_the_same_submission(
    pipe: Pipeline, team: TeamLogin
) -> None:
    first = pipe.accepted(team, MOVES)
    again = pipe.upload(team, MOVES)

    assert again.status_code == 202
    assert again.json() == first
    assert again.headers["X-Tilejudge-Duplicate"] == "true"
    assert pipe.store.count_by_state() == {"queued": 1}
    assert len(pipe.uploads()) == 1
    assert pipe.publisher.published == [first["id"]]


def test_the_same_bytes_from_another_team_are_another_submission(
    pipe: Pipeline, team: TeamLogin
) -> None:
    other = pipe.add_team("crows")

    mine, theirs = pipe.accepted(team, MOVES), pipe.accepted(other, MOVES)

    assert mine["id"] != theirs["id"]
    assert mine["sha256"] == theirs["sha256"]
    assert len(pipe.uploads()) == 2


@pytest.mark.parametrize(
    ("opens_in", "closes_in", "word"), [(3600, 7200, "opens"), (-7200, -3600, "closed")]
)
def test_an_upload_outside_the_contest_window_is_refused_and_nothing_is_stored(
    pipe: Pipeline, opens_in: float, closes_in: float, word: str
) -> None:
    pipe.add_contest("shut", opens_in=opens_in, closes_in=closes_in)
    late = pipe.add_team("owls", contest="shut")
    before = len(pipe.events())

    response = pipe.upload(late, MOVES)

    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert word in response.json()["detail"]
    assert_nothing_stored(pipe, before)


def test_after_the_deadline_only_a_retry_of_an_upload_made_in_time_is_answered(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe.add_contest("ending", opens_in=-3600, closes_in=60)
    team = pipe.add_team("larks", contest="ending")
    in_time = pipe.accepted(team, MOVES)
    later = clock.format_time(datetime.now(UTC) + timedelta(seconds=120))
    monkeypatch.setattr(clock, "now", lambda: later)
    uploads, events = pipe.uploads(), len(pipe.events())

    again = pipe.upload(team, MOVES)  # its answer was lost, say: the client sends it again
    new = pipe.upload(team, MOVES + b"-1 1 1 1 dog\n")

    assert again.status_code == 202
    assert again.json() == in_time
    assert again.headers["X-Tilejudge-Duplicate"] == "true"
    assert new.status_code == 403
    assert f"received at {later}" in new.json()["detail"]
    assert pipe.uploads() == uploads
    assert len(pipe.events()) == events


@pytest.mark.parametrize("multipart", [False, True])
def test_an_upload_over_the_size_limit_is_refused_with_413_and_nothing_is_stored(
    pipe: Pipeline, team: TeamLogin, multipart: bool
) -> None:
    pipe.services.settings = dataclasses.replace(pipe.services.settings, max_upload_bytes=8)
    before = len(pipe.events())

    if multipart:
        response = pipe.client.post(
            "/v1/contests/open/submissions", headers=team.headers,
            files={"file": ("moves.txt", MOVES, "text/plain")},
        )  # fmt: skip
    else:
        response = pipe.upload(team, MOVES)

    assert response.status_code == 413
    assert response.json() == {"error": "too_large", "detail": "upload is over the 8-byte limit"}
    assert_nothing_stored(pipe, before)


def test_an_upload_sent_as_json_is_refused_with_415(pipe: Pipeline, team: TeamLogin) -> None:
    before = len(pipe.events())

    response = pipe.client.post(
        "/v1/contests/open/submissions", json={"moves": "cat"}, headers=team.headers
    )

    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]
    assert_nothing_stored(pipe, before)


def test_with_blob_storage_down_an_upload_gets_503_and_nothing_reaches_sql(
    pipe: Pipeline, team: TeamLogin
) -> None:
    before = len(pipe.events())
    pipe.blobs.down = True

    response = pipe.upload(team, MOVES)

    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"
    assert "Retry-After" in response.headers
    pipe.blobs.down = False
    assert_nothing_stored(pipe, before)


def test_an_upload_whose_team_is_deleted_while_it_is_taken_gets_401_and_leaves_nothing(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    def deleted_meanwhile(team_id: str) -> None:  # right after the token was found
        pipe.store.delete_team(team_id, by="admin")

    monkeypatch.setattr(pipe.services.limiter, "check", deleted_meanwhile)
    response = pipe.upload(team, MOVES)

    assert response.status_code == 401, response.text
    assert response.json()["error"] == "unauthorized"
    assert "deleted" in response.json()["detail"]
    assert pipe.uploads() == {}
    assert pipe.store.count_by_state() == {}
    assert pipe.publisher.published == []


def test_a_team_deleted_by_another_api_process_is_refused_though_this_one_knows_its_token(
    pipe: Pipeline, team: TeamLogin
) -> None:
    assert pipe.upload(team, MOVES).status_code == 202  # its token is now remembered here
    pipe.store.delete_team(team.id, by="admin")  # as the other process's DELETE does

    response = pipe.upload(team, b"0 0 2 0 cat\n")

    assert response.status_code == 401, response.text
    assert "deleted" in response.json()["detail"]  # refused by the row's foreign key
    assert b"0 0 2 0 cat\n" not in pipe.uploads().values()  # its bytes deleted again
    assert pipe.store.count_by_state() == {}


def test_a_team_deleted_through_this_process_is_forgotten_at_once(
    pipe: Pipeline, team: TeamLogin
) -> None:
    assert pipe.upload(team, MOVES).status_code == 202
    assert pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN).status_code == 200

    response = pipe.upload(team, b"0 0 2 0 cat\n")

    assert response.status_code == 401, response.text
    assert response.json()["detail"] == "unknown token"  # refused before its bytes were read
    assert pipe.uploads() == {}


def test_with_sql_down_an_upload_gets_503_and_is_not_half_accepted(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = len(pipe.events())

    def refuse(*_: Any, **__: Any) -> None:
        raise StoreUnavailable("the results store failed: disk I/O error")  # as the adapter says

    monkeypatch.setattr(pipe.store, "store_submissions", refuse)
    response = pipe.upload(team, MOVES)

    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"
    assert_nothing_stored(pipe, before)

    monkeypatch.undo()
    assert pipe.upload(team, MOVES).status_code == 202  # a retry once SQL is back is accepted


def test_with_the_database_unreachable_an_upload_gets_503(pipe: Pipeline, team: TeamLogin) -> None:
    healthy = pipe.store.engine
    pipe.store.engine = pipe.store.from_url(
        f"sqlite:///{pipe.services.settings.home}/no/such.db"
    ).engine
    try:
        response = pipe.upload(team, MOVES)
    finally:
        pipe.store.engine.dispose()
        pipe.store.engine = healthy

    assert response.status_code == 503
    assert pipe.uploads() == {}


def test_with_the_broker_down_an_upload_stays_stored_until_the_sweeper_queues_it(
    pipe: Pipeline, team: TeamLogin
) -> None:
    pipe.publisher.down = True

    accepted = pipe.accepted(team, MOVES)
    assert pipe.state(accepted["id"]) == "stored"
    assert pipe.publisher.published == []

    pipe.publisher.down = False
    published = sweep_now(pipe, stored_for=0, queued_for=3600, judging_for=3600)

    assert published == 1
    assert pipe.publisher.published == [accepted["id"]]
    assert pipe.state(accepted["id"]) == "queued"
    types = [e["type"] for e in pipe.events() if e.get("submission") == accepted["id"]]
    assert types == ["submission.stored", "submission.queued"]


def test_a_sweep_while_the_broker_is_still_down_loses_nothing(
    pipe: Pipeline, team: TeamLogin
) -> None:
    pipe.publisher.down = True
    accepted = pipe.accepted(team, MOVES)

    assert sweep_now(pipe, stored_for=0, queued_for=3600, judging_for=3600) == 0
    pipe.publisher.down = False
    assert sweep_now(pipe, stored_for=0, queued_for=0, judging_for=3600) == 1
    assert pipe.publisher.published == [accepted["id"]]


def test_a_queued_upload_is_published_again_only_once_the_live_queue_is_empty(
    pipe: Pipeline, team: TeamLogin
) -> None:
    accepted = pipe.accepted(team, MOVES)
    assert pipe.publisher.published == [accepted["id"]]

    # Behind a deadline backlog the message is late, not lost: no second copy.
    assert sweep_now(pipe, stored_for=0, queued_for=0, judging_for=3600,
                 backlog=lambda: 250) == 0  # fmt: skip
    assert pipe.publisher.published == [accepted["id"]]
    # The queue drained and it is still not judged: the message was lost; publish it again.
    assert sweep_now(pipe, stored_for=0, queued_for=0, judging_for=3600,
                 backlog=lambda: 0) == 1  # fmt: skip
    assert pipe.publisher.published == [accepted["id"], accepted["id"]]


def receipt_fields(pipe: Pipeline, team: TeamLogin, accepted: dict[str, Any]) -> dict[str, str]:
    return {
        "id": accepted["id"], "team": team.id, "contest": "open", "sha256": accepted["sha256"],
        "received_at": accepted["received_at"], "receipt": accepted["receipt"],
    }  # fmt: skip


def test_a_receipt_verifies_for_exactly_the_fields_it_was_issued_for(
    pipe: Pipeline, team: TeamLogin
) -> None:
    fields = receipt_fields(pipe, team, pipe.accepted(team, MOVES))

    assert pipe.client.post("/v1/receipts/verify", json=fields).json() == {"valid": True}
    stored = pipe.client.get(f"/v1/submissions/{fields['id']}/receipt", headers=team.headers).json()
    assert stored == fields


@pytest.mark.parametrize("field", ["id", "team", "contest", "sha256", "received_at", "receipt"])
def test_a_receipt_with_any_field_tampered_with_fails_to_verify(
    pipe: Pipeline, team: TeamLogin, field: str
) -> None:
    fields = receipt_fields(pipe, team, pipe.accepted(team, MOVES))
    original = fields[field]
    fields[field] = original[:-1] + ("0" if original[-1] != "0" else "1")

    response = pipe.client.post("/v1/receipts/verify", json=fields)

    assert response.status_code == 200
    assert response.json() == {"valid": False}


class FakeRedis:
    """Just enough of redis.Redis for the limiter: its script, played in Python (a sliding log
    per key: the times of the uploads admitted within the window)."""

    def __init__(self, fail: bool = False) -> None:
        self.logs: dict[str, list[float]] = {}
        self.fail = fail

    def register_script(self, source: str) -> Callable[..., list[object]]:
        def run(keys: list[str], args: list[object]) -> list[object]:
            if self.fail:
                raise redis.ConnectionError("fake Redis is down")
            now, window, limit = float(str(args[0])), float(str(args[1])), int(str(args[2]))
            log = [t for t in self.logs.get(keys[0], []) if t > now - window]
            if len(log) < limit:
                self.logs[keys[0]] = [*log, now]
                return [1, "0"]
            self.logs[keys[0]] = log
            return [0, str(log[0] + window - now)]

        return run


def test_a_team_over_its_upload_rate_gets_429_with_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A frozen clock: the first upload leaves the window a whole minute later.
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: 60 * 20_000 + 10.0))
    fake = FakeRedis()
    with open_pipeline(tmp_path, limiter=RateLimiter(fake, per_minute=2)) as pipe:  # type: ignore[arg-type]
        pipe.add_contest("open")
        team, other = pipe.add_team("ravens"), pipe.add_team("crows")
        assert pipe.upload(team, b"0 0 2 0 cat\n").status_code == 202
        assert pipe.upload(team, b"0 0 1 0 at\n").status_code == 202

        refused = pipe.upload(team, b"0 0 2 0 ate\n")

        assert refused.status_code == 429
        assert refused.json()["error"] == "rate_limited"
        assert refused.headers["Retry-After"] == "60"
        assert "retry in 60 s" in refused.json()["detail"]
        assert pipe.store.count_by_state() == {"queued": 2}
        assert pipe.upload(other, b"0 0 2 0 ate\n").status_code == 202  # the limit is per team
        assert sorted(len(log) for log in fake.logs.values()) == [1, 2]  # refusals not logged


def test_the_rate_limiter_lets_uploads_through_when_redis_is_down(tmp_path: Path) -> None:
    limiter = RateLimiter(FakeRedis(fail=True), per_minute=1)  # type: ignore[arg-type]
    with open_pipeline(tmp_path, limiter=limiter) as pipe:
        pipe.add_contest("open")
        team = pipe.add_team("ravens")

        assert pipe.upload(team, b"0 0 2 0 cat\n").status_code == 202
        assert pipe.upload(team, b"0 0 1 0 at\n").status_code == 202


def sweep_now(pipe: Pipeline, **ages: Any) -> int:
    """One sweeper pass over the pipeline's store and broker."""
    return sweep(pipe.store, SqlRejudgeRuns(pipe.store), pipe.publisher, **ages)
