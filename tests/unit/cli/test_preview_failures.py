"""`rejudge show` lists the submissions a run could not judge, with their team and reason code,
for either game; a run without any prints no such line."""

from __future__ import annotations

import io
from typing import Any

import pytest

from cli.games import PREVIEW_ROWS, cli_game

RUN = {"id": "r1", "state": "ready", "done": 13, "total": 13, "carried": 0}
FAILURES = [
    {"submission": "s-missing", "team": "north", "reason": "upload_missing", "message": "…"},
    {"submission": "s-corrupt", "team": "south", "reason": "upload_corrupt", "message": "…"},
    {"submission": "s-large", "team": "north", "reason": "report_too_large", "message": "…"},
]


def preview(game: str, run: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    cli_game(game).print_preview({"changed": [], "rank_changes": [], **run}, out)
    return out.getvalue().split("\n")[:-1]


@pytest.mark.parametrize("game", ["wordytaire", "crosstiles"])
def test_each_failed_submission_is_listed_with_its_team_and_reason(game: str) -> None:
    lines = preview(game, {**RUN, "failed": 3, "failures": FAILURES})

    assert "3 could not be judged (failed with their reason if applied):" in lines
    for row in FAILURES:
        assert any(
            row["submission"] in line and row["team"] in line and line.endswith(row["reason"])
            for line in lines
        )
    assert [line for line in lines if line != line.rstrip()] == []


@pytest.mark.parametrize("game", ["wordytaire", "crosstiles"])
def test_a_run_without_failures_prints_no_failure_line(game: str) -> None:
    assert not [line for line in preview(game, {**RUN, "failed": 0}) if "judged" in line]
    assert not [line for line in preview(game, RUN) if "judged" in line]  # an older server


def test_failures_past_what_the_server_listed_are_counted() -> None:
    many = [{**FAILURES[0], "submission": f"s{n}"} for n in range(PREVIEW_ROWS + 5)]

    lines = preview("wordytaire", {**RUN, "failed": 200, "failures": many})

    assert lines[-1] == f"  ... and {200 - PREVIEW_ROWS} more"
