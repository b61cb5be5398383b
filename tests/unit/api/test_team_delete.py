"""Deleting a team removes its rows and its stored objects, and leaves a team.deleted event."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.admin import run_team_delete
from tests.pipeline_fixtures import ADMIN, ADMIN_TOKEN, Pipeline, drain, open_pipeline


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
