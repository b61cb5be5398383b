"""A contest's results for export: every submission with its team and live result, page by
page in id order, for the organiser only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, TeamLogin, drain, open_pipeline
from judge import Lexicon
from judge.wordytaire import default_layout, judge

TINY = Lexicon.from_words(list(TINY_WORDS))
MOVES = [b"0 0 2 0 cat\n", b"0 0 1 0 at\n", b"garbage\n", b"-1 0 1 0 cat\n0 0 0 2 ate\n"]


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest("open")
        pipeline.add_contest("other")
        yield pipeline


def pages(pipe: Pipeline, contest: str, limit: int) -> list[dict[str, Any]]:
    """Each page's body, following `next` as a client does."""
    bodies, after = [], ""
    while True:
        response = pipe.client.get(
            f"/v1/contests/{contest}/results", params={"after": after, "limit": limit},
            headers=ADMIN,
        )  # fmt: skip
        assert response.status_code == 200, response.text
        bodies.append(response.json())
        after = response.json()["next"]
        if after is None:
            return bodies


def test_every_submission_comes_once_in_id_order_with_its_team_and_live_result(
    pipe: Pipeline,
) -> None:
    ravens, owls = pipe.add_team("ravens"), pipe.add_team("owls")
    sent = {
        pipe.accepted(ravens if n % 2 else owls, data)["id"]: data for n, data in enumerate(MOVES)
    }
    drain(pipe.services)
    waiting = pipe.accepted(ravens, b"0 0 0 1 by\n")["id"]  # stored, not judged yet
    pipe.accepted(pipe.add_team("elsewhere", contest="other"), MOVES[0])

    bodies = pages(pipe, "open", limit=2)

    rows = [row for body in bodies for row in body["results"]]
    assert [len(body["results"]) for body in bodies] == [2, 2, 1]
    assert [row["submission"] for row in rows] == sorted([*sent, waiting])
    for row in rows:
        if row["submission"] == waiting:
            assert row["state"] == "queued"
            assert (row["score"], row["judged_at"], row["lexicon"]) == (None, None, None)
            continue
        expected = judge(sent[row["submission"]], TINY, default_layout())
        assert row["state"] == "judged"
        assert (row["score"], row["legal"], row["illegal"]) == (
            expected.total, expected.legal, expected.illegal,
        )  # fmt: skip
        assert (row["lexicon"], row["layout"]) == (TINY.id, default_layout().id)
        assert row["judged_at"] >= row["received_at"]
    names = {row["team_id"]: row["team"] for row in rows}
    assert names == {ravens.id: "ravens", owls.id: "owls"}


def test_a_contest_without_submissions_is_one_empty_page(pipe: Pipeline) -> None:
    assert pages(pipe, "open", limit=10) == [{"contest": "open", "results": [], "next": None}]


def test_the_export_is_for_the_organiser_only(pipe: Pipeline) -> None:
    team: TeamLogin = pipe.add_team("ravens")
    response = pipe.client.get("/v1/contests/open/results", headers=team.headers)
    assert response.status_code == 403
    assert pipe.client.get("/v1/contests/open/results").status_code == 401


@pytest.mark.parametrize(
    ("query", "named"),
    [({"limit": "0"}, "limit"), ({"limit": "5001"}, "limit"), ({"after": "x'; --"}, "after")],
)
def test_a_bad_page_request_is_422_naming_the_parameter(
    pipe: Pipeline, query: dict[str, str], named: str
) -> None:
    response = pipe.client.get("/v1/contests/open/results", params=query, headers=ADMIN)
    assert response.status_code == 422
    assert named in response.json()["detail"]


def test_the_results_of_an_unknown_contest_are_404(pipe: Pipeline) -> None:
    response = pipe.client.get("/v1/contests/nope/results", headers=ADMIN)
    assert response.status_code == 404
    assert "no contest 'nope'" in response.json()["detail"]
