"""Deleting a team removes its rows and its stored objects, and leaves a team.deleted event."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.admin import run_team_delete
from core.fakes import InMemoryBlobStore
from core.judging import Outcome, judge_group
from core.rejudging import judge_batch
from devstack.testing.pipeline import (
    ADMIN,
    ADMIN_TOKEN,
    TINY_WORDS,
    Pipeline,
    drain,
    open_pipeline,
    worker_deps,
)


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest()
        yield pipeline


def test_deleting_a_team_removes_its_uploads_results_and_reports(pipe: Pipeline) -> None:
    gone, kept = pipe.add_team("gone"), pipe.add_team("kept")
    doomed = pipe.accepted(gone, b"0 0 2 0 cat\n")["id"]
    survivor = pipe.accepted(kept, b"0 0 1 0 at\n")["id"]
    drain(pipe.services)
    assert len(pipe.blobs.objects) > 2

    response = pipe.client.delete(f"/v1/teams/{gone.id}", headers=ADMIN)

    assert response.status_code == 200, response.text
    assert response.json()["deleted_objects"] == 2  # its upload and its report
    assert not any(gone.id in key or doomed in key for key in pipe.blobs.objects)
    assert pipe.store.get_submission(doomed) is None and pipe.store.get_team(gone.id) is None
    assert pipe.store.get_submission(survivor) is not None
    board = pipe.client.get("/v1/contests/open/leaderboard").json()["entries"]
    assert [entry["team"] for entry in board] == ["kept"]
    last = pipe.events()[-1]
    assert (
        last["type"] == "team.deleted"
        and last["team"] == gone.id
        and last["submissions_deleted"] == 1
    )
    assert pipe.client.get(f"/v1/submissions/{doomed}", headers=gone.headers).status_code == 401


def test_deleting_a_team_asks_every_worker_host_to_forget_its_uploads_bytes_and_no_others(
    pipe: Pipeline,
) -> None:
    gone, kept = pipe.add_team("gone"), pipe.add_team("kept")
    own, theirs = b"0 0 2 0 cat\n", b"0 0 2 0 tea\n"
    pipe.accepted(gone, own)
    pipe.accepted(kept, theirs)
    drain(pipe.services)

    assert pipe.client.delete(f"/v1/teams/{gone.id}", headers=ADMIN).status_code == 200

    assert pipe.publisher.forgotten == [hashlib.sha256(own).hexdigest()]


def test_deleting_needs_the_admin_token_and_an_existing_team(pipe: Pipeline) -> None:
    team = pipe.add_team("t")
    assert pipe.client.delete(f"/v1/teams/{team.id}", headers=team.headers).status_code == 403
    assert pipe.client.delete("/v1/teams/nope", headers=ADMIN).status_code == 404


def test_the_cli_deletes_through_the_api(pipe: Pipeline) -> None:
    team = pipe.add_team("t")
    out, err = io.StringIO(), io.StringIO()
    code = run_team_delete(
        team.id,
        "http://testserver",
        ADMIN_TOKEN,
        environ={},
        out=out,
        err=err,
        transport=pipe.client._transport,
    )
    assert code == 0, err.getvalue()
    assert f"deleted team {team.id}" in out.getvalue()
    assert (
        run_team_delete(
            team.id,
            "http://testserver",
            ADMIN_TOKEN,
            environ={},
            out=out,
            err=err,
            transport=pipe.client._transport,
        )
        == 2
    )
    assert "404" in err.getvalue()


class DeletesTheTeamOnReport(InMemoryBlobStore):
    """S3 as a worker sees it while the organiser deletes the team: the team is deleted just
    after the worker writes a report, before it records the result."""

    def __init__(self, pipe: Pipeline, team_id: str) -> None:
        super().__init__()
        self.objects = pipe.blobs.objects
        self._pipe, self._team_id = pipe, team_id
        self._deleted = False

    def put(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        content_encoding: str | None = None,
    ) -> None:
        super().put(key, data, content_type, content_encoding)
        with self._lock:
            first, self._deleted = not self._deleted, True
        if key.startswith("reports/") and first:
            deleted = self._pipe.client.delete(f"/v1/teams/{self._team_id}", headers=ADMIN)
            assert deleted.status_code == 200, deleted.text


def test_a_report_written_while_its_team_is_deleted_is_not_left_behind(pipe: Pipeline) -> None:
    gone = pipe.add_team("gone")
    doomed = pipe.accepted(gone, b"0 0 2 0 cat\n")["id"]
    deps = worker_deps(pipe.services)
    deps.blobs = DeletesTheTeamOnReport(pipe, gone.id)
    deps.defer_reports = False  # the reports are written as they are judged

    outcomes = judge_group(deps, [doomed])

    assert outcomes == {doomed: Outcome.LOST_CLAIM}
    assert pipe.store.get_team(gone.id) is None
    assert not [key for key in pipe.blobs.objects if doomed in key or gone.id in key]


def test_a_rejudge_report_written_while_its_team_is_deleted_is_not_left_behind(
    pipe: Pipeline,
) -> None:
    gone, kept = pipe.add_team("gone"), pipe.add_team("kept")
    doomed = pipe.accepted(gone, b"0 0 2 0 cat\n")["id"]
    survivor = pipe.accepted(kept, b"0 0 1 0 at\n")["id"]
    drain(pipe.services)
    lexicon = pipe.add_lexicon((*TINY_WORDS, "zebra"), name="bigger")["id"]
    run = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": lexicon}, headers=ADMIN
    ).json()
    deps = worker_deps(pipe.services)
    deps.blobs = DeletesTheTeamOnReport(pipe, gone.id)
    deps.defer_reports = False  # the reports are written as they are judged

    recorded = judge_batch(deps, run["id"], [doomed, survivor])

    assert recorded == 1
    assert not [key for key in pipe.blobs.objects if doomed in key]
    assert [key for key in pipe.blobs.objects if key.startswith(f"reports/{survivor}/")]


def test_deleting_a_team_asks_the_broker_to_forget_the_bytes_of_every_upload_it_sent(
    pipe: Pipeline,
) -> None:
    gone, kept = pipe.add_team("gone"), pipe.add_team("kept")
    judged = pipe.accepted(gone, b"0 0 2 0 cat\n")["id"]
    drain(pipe.services)
    waiting = pipe.accepted(gone, b"0 0 1 0 at\n")["id"]  # still queued, its bytes kept
    other = pipe.accepted(kept, b"0 0 2 0 dog\n")["id"]
    forgotten: list[list[str]] = []
    pipe.services.forget_copies = lambda ids: forgotten.append(sorted(ids))

    assert pipe.client.delete(f"/v1/teams/{gone.id}", headers=ADMIN).status_code == 200

    assert forgotten == [sorted([judged, waiting])]
    assert other not in forgotten[0]


def test_a_worker_drops_a_deleted_teams_carried_upload_and_asks_the_broker_to_forget(
    pipe: Pipeline,
) -> None:
    gone = pipe.add_team("gone")
    data = b"0 0 2 0 cat\n"
    doomed = pipe.accepted(gone, data)["id"]
    assert pipe.publisher.inline[doomed] == data  # it rode in its message
    assert pipe.client.delete(f"/v1/teams/{gone.id}", headers=ADMIN).status_code == 200
    asked: list[bool] = []
    deps = worker_deps(pipe.services)
    deps.forget_copies = lambda: asked.append(True)

    outcomes = judge_group(deps, [doomed], {doomed: data})

    assert outcomes == {doomed: Outcome.SKIPPED}
    assert asked == [True]
    assert not [key for key in pipe.blobs.objects if doomed in key]


def test_a_duplicate_message_of_a_live_upload_asks_nothing(pipe: Pipeline) -> None:
    team = pipe.add_team("kept")
    data = b"0 0 2 0 cat\n"
    sid = pipe.accepted(team, data)["id"]
    drain(pipe.services)
    asked: list[bool] = []
    deps = worker_deps(pipe.services)
    deps.forget_copies = lambda: asked.append(True)

    assert judge_group(deps, [sid], {sid: data}) == {sid: Outcome.SKIPPED}
    assert asked == []
