"""Closing a contest early takes effect at once in every API process, even one that remembers
the contest from before the close; a retry of bytes received in time still gets its answer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient

from api.app import create_app
from api.services import Services
from core import clock
from core.contests import token_hash
from core.fakes import InMemoryPublisher
from devstack.testing.pipeline import (
    ADMIN,
    Pipeline,
    TeamLogin,
)
from infra import compose
from infra.sql.engine import make_engine
from infra.sql.store import SqlStore

IN_TIME = b"0 0 2 0 cat\n"
LATE = b"0 0 1 0 at\n"


@contextmanager
def another_process(pipe: Pipeline) -> Iterator[tuple[Services, TestClient]]:
    """A second API process over the same SQLite file and object store, with its own token
    memory, group commit and broker."""
    engine = make_engine(str(pipe.store.engine.url))
    store = SqlStore(engine)
    publisher = InMemoryPublisher()
    services = Services(
        **vars(
            compose.api_parts(
                pipe.services.settings, store=store, blobs=pipe.blobs, publisher=publisher,
                with_redis=False,
            )
        )
    )  # fmt: skip
    try:
        with TestClient(create_app(services, sweeper=False)) as client:
            yield services, client
    finally:
        services.intake.commits.close()
        engine.dispose()


def upload(client: TestClient, team: TeamLogin, data: bytes) -> tuple[int, dict[str, str]]:
    response = client.post(
        f"/v1/contests/{team.contest}/submissions", content=data,
        headers={**team.headers, "Content-Type": "text/plain"},
    )  # fmt: skip
    return response.status_code, response.json()


def close(pipe: Pipeline, contest: str = "open") -> dict[str, object]:
    response = pipe.client.post(f"/v1/contests/{contest}/close", headers=ADMIN)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_an_upload_after_the_close_is_refused_by_a_process_that_remembers_the_contest_open(
    pipe: Pipeline, team: TeamLogin
) -> None:
    with another_process(pipe) as (other, client):
        status, first = upload(client, team, IN_TIME)
        assert status == 202
        uploads_before = set(pipe.uploads())

        closed = close(pipe)  # through the first process

        # The other process still remembers the contest as open: the refusal cannot come from
        # its memory.
        remembered = other.uploaders.find(token_hash(team.token))
        assert remembered is not None and remembered[1].closes_at > clock.now()
        status, refusal = upload(client, team, LATE)
        assert status == 403
        assert refusal["error"] == "forbidden"
        assert f"contest open closed at {closed['closes_at']}" in refusal["detail"]
        assert set(pipe.uploads()) == uploads_before  # the refused upload's bytes are deleted
        assert other.store.find_same("open", team.id, first["sha256"]) is not None

        status, retry = upload(client, team, IN_TIME)  # bytes received before the close
        assert (status, retry["id"]) == (202, first["id"])


def test_after_the_close_the_closing_process_refuses_new_bytes_and_answers_a_retry(
    pipe: Pipeline, team: TeamLogin
) -> None:
    first = pipe.accepted(team, IN_TIME)
    closed = close(pipe)

    # The closing process forgot what it remembered: it knows the new window at once.
    remembered = pipe.services.uploaders.find(token_hash(team.token))
    assert remembered is not None and remembered[1].closes_at == closed["closes_at"]
    late = pipe.upload(team, LATE)
    retry = pipe.upload(team, IN_TIME)

    assert late.status_code == 403
    assert "closed at" in late.json()["detail"]
    assert retry.status_code == 202
    assert retry.json()["id"] == first["id"]
    assert retry.headers["x-tilejudge-duplicate"] == "true"


def test_closing_records_a_contest_closed_event_and_closing_again_changes_nothing(
    pipe: Pipeline,
) -> None:
    scheduled = pipe.client.get("/v1/contests/open").json()["closes_at"]
    before = clock.now()

    first = close(pipe)
    again = close(pipe)

    assert first["was_open"] is True and first["status"] == "closed"
    assert before <= str(first["closes_at"]) < scheduled
    assert again["was_open"] is False and again["closes_at"] == first["closes_at"]
    closings = [e for e in pipe.events() if e["type"] == "contest.closed"]
    assert len(closings) == 1
    assert closings[0]["contest"] == "open"
    assert closings[0]["closes_at"] == first["closes_at"]
    assert closings[0]["was_to_close_at"] == scheduled
    assert pipe.client.get("/v1/contests/open").json()["status"] == "closed"


def test_closing_a_contest_that_has_not_opened_closes_it_before_it_ever_opens(
    pipe: Pipeline,
) -> None:
    pipe.add_contest("later", opens_in=3600, closes_in=7200)
    team = pipe.add_team("early", contest="later")

    closed = close(pipe, "later")

    assert closed["opens_at"] == closed["closes_at"]
    assert closed["status"] == "closed"
    assert pipe.upload(team, IN_TIME).status_code == 403


def test_closing_needs_the_admin_token_and_a_known_contest(pipe: Pipeline, team: TeamLogin) -> None:
    refused = pipe.client.post("/v1/contests/open/close", headers=team.headers)
    assert refused.status_code == 403
    assert pipe.client.post("/v1/contests/nope/close", headers=ADMIN).status_code == 404
    assert pipe.client.post("/v1/contests/open/close").status_code == 401
    assert pipe.client.get("/v1/contests/open").json()["status"] == "open"
    assert pipe.upload(team, IN_TIME).status_code == 202


def test_the_contest_list_gives_each_contests_window_and_status(pipe: Pipeline) -> None:
    pipe.add_contest("later", opens_in=3600, closes_in=7200)
    pipe.add_contest("over", opens_in=-7200, closes_in=-3600)

    listed = pipe.client.get("/v1/contests")

    assert listed.status_code == 200
    status = {c["id"]: c["status"] for c in listed.json()["contests"]}
    assert status == {"later": "upcoming", "open": "open", "over": "closed"}
