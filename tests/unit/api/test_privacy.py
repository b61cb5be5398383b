"""The privacy page is served from the `api` package's privacy.md and says what the code does."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from core.events import EventType
from tests.pipeline_fixtures import open_pipeline

DOC = resources.files("api").joinpath("privacy.md")


def test_the_privacy_page_is_public_and_explains_tokens_and_team_deletion(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        response = pipe.client.get("/privacy")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "token" in response.text
    assert "tilejudge team delete --team ID" in response.text
    assert "SHA-256" in response.text


def test_the_privacy_page_names_every_event_type() -> None:
    text = DOC.read_text(encoding="utf-8")

    assert [kind.value for kind in EventType if f"`{kind.value}`" not in text] == []


def test_the_privacy_page_names_every_stored_column_of_teams_submissions_and_results() -> None:
    from infra.sql.schema import results, submissions, teams

    text = DOC.read_text(encoding="utf-8")
    for table in (teams, submissions, results):
        assert [c.name for c in table.columns if f"`{c.name}`" not in text] == [], table.name
