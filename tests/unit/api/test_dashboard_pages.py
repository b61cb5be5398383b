"""The dashboard's "leaderboard" and "what changed" links lead to pages in the dashboard's look
that show what their JSON routes answer, every value escaped; the JSON stays as it was."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

from api.dashboard_pages import ROWS_SHOWN, lists_of
from core import clock
from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, drain
from tests.unit.api.test_dashboard import MOVES, sign_in
from tests.unit.api.test_rejudge import run_rejudge_work

HOSTILE = '<script>alert("owned")</script>&'


class Tables(HTMLParser):
    """Each table's rows as lists of cell texts, by the table's data-field; and every <script>."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.scripts = 0
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts += 1
        elif tag == "table":
            self._table = dict(attrs).get("data-field") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables_of(page: str) -> Tables:
    parsed = Tables()
    parsed.feed(page)
    return parsed


def links(pipe: Pipeline) -> dict[str, Any]:
    return dict(pipe.client.get("/v1/stats", headers=ADMIN).json())


def a_judged_run(pipe: Pipeline) -> str:
    """Two teams, the one ahead only thanks to "cab"; a full rejudge without it, judged through."""
    pipe.accepted(pipe.add_team("ravens"), b"0 0 2 0 cab\n")
    pipe.accepted(pipe.add_team("owls"), b"0 0 2 0 cat\n")
    drain(pipe.services)
    pipe.add_lexicon(tuple(word for word in TINY_WORDS if word != "cab"), name="fixed")
    started = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": "full"}, headers=ADMIN
    )
    assert started.status_code == 202, started.text
    run_rejudge_work(pipe)
    return str(started.json()["id"])


def test_the_leaderboard_link_leads_to_a_page_of_the_ranking_the_json_holds(
    pipe: Pipeline,
) -> None:
    pipe.accepted(pipe.add_team("ravens"), MOVES)
    pipe.accepted(pipe.add_team("owls"), b"0 0 2 0 at\n")
    drain(pipe.services)
    sign_in(pipe)
    [contest] = links(pipe)["contests"]
    page = pipe.client.get(contest["leaderboard_page_url"])

    assert contest["leaderboard_page_url"] == "/dashboard/contests/open/leaderboard"
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert '<link rel="stylesheet" href="/dashboard/static/dashboard.css">' in page.text
    board = pipe.client.get(contest["leaderboard_url"]).json()
    [header, *rows] = tables_of(page.text).tables["entries"]
    assert header == ["rank", "team", "score", "submission", "received at"]
    assert rows == [
        [str(e["rank"]), e["team"], str(e["score"]), e["submission"], e["received_at"]]
        for e in board["entries"]
    ]
    assert [row[1] for row in rows] == ["ravens", "owls"]
    assert "team_id" not in page.text  # a field the JSON leaves out stays out of the page
    assert f'href="{contest["leaderboard_url"]}"' in page.text


def test_the_what_changed_link_leads_to_a_page_of_the_changes_the_json_holds(
    pipe: Pipeline,
) -> None:
    run_id = a_judged_run(pipe)
    sign_in(pipe)
    [run] = links(pipe)["rejudges"]
    preview = pipe.client.get(run["preview_url"], headers=ADMIN).json()
    page = pipe.client.get(run["preview_page_url"])

    assert run["preview_page_url"] == f"/dashboard/rejudges/{run_id}"
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f"Preview · run {run_id[:8]}" in page.text
    assert "tiny (" in page.text and "→ fixed (" in page.text
    tables = tables_of(page.text).tables
    [header, *changed] = tables["changed"]
    assert len(changed) == len(preview["changed"]) == 1
    assert dict(zip(header, changed[0], strict=True)) | {
        "old score": str(preview["changed"][0]["old_score"]),
        "new score": str(preview["changed"][0]["new_score"]),
        "team": "ravens",
    } == dict(zip(header, changed[0], strict=True))
    assert len(tables["rank_changes"]) - 1 == len(preview["rank_changes"]) == 2

    assert pipe.client.post(f"/v1/rejudges/{run_id}/apply", headers=ADMIN).status_code == 200
    applied = pipe.client.get(run["preview_page_url"]).text
    assert f"What changed · run {run_id[:8]}" in applied
    assert len(tables_of(applied).tables["changed"]) == 2


def test_a_running_run_page_says_its_changes_come_once_it_is_judged(pipe: Pipeline) -> None:
    pipe.accepted(pipe.add_team("ravens"), MOVES)
    drain(pipe.services)
    pipe.add_lexicon(("cat", "at"), name="fixed")
    started = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": "full"}, headers=ADMIN
    ).json()
    sign_in(pipe)
    page = pipe.client.get(f"/dashboard/rejudges/{started['id']}").text

    assert "<dt>state</dt><dd>running</dd>" in page and "<dd>0 / 1</dd>" in page
    assert 'data-field="pending"' in page and "once every submission is judged" in page
    assert "<table" not in page


def test_the_pages_escape_what_teams_and_organisers_named(pipe: Pipeline) -> None:
    now = datetime.now(UTC)
    contest = {
        "id": "hostile", "title": HOSTILE, "lexicon": "tiny",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
    }  # fmt: skip
    assert pipe.client.post("/v1/contests", json=contest, headers=ADMIN).status_code == 201
    pipe.accepted(pipe.add_team(HOSTILE, contest="hostile"), MOVES)
    drain(pipe.services)
    sign_in(pipe)
    page = pipe.client.get("/dashboard/contests/hostile/leaderboard").text

    assert HOSTILE not in page and "<script>" not in page
    escaped = "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;&amp;"
    assert f"<dt>title</dt><dd>{escaped}</dd>" in page
    parsed = tables_of(page)
    assert parsed.scripts == 0
    assert parsed.tables["entries"][1][1] == HOSTILE  # the team's name, shown as text, whole


def test_without_a_session_the_pages_show_the_sign_in_form(pipe: Pipeline) -> None:
    for path in ("/dashboard/contests/open/leaderboard", "/dashboard/rejudges/anything"):
        page = pipe.client.get(path, headers=ADMIN)  # a bearer token is no session
        assert page.status_code == 200 and 'action="/dashboard/login"' in page.text
        assert "<table" not in page.text


def test_an_unknown_contest_or_run_is_not_found(pipe: Pipeline) -> None:
    sign_in(pipe)
    for path in ("/dashboard/contests/nope/leaderboard", "/dashboard/rejudges/nope"):
        assert pipe.client.get(path).status_code == 404


def test_a_table_shows_each_rows_own_columns_lists_and_no_more_than_its_share() -> None:
    rows = [{"nick": "ann", "wins": 1 / 3, "winners": ["ann", "bo"], "valid": True}] * (
        ROWS_SHOWN + 5
    )
    shown = lists_of({"contest": "c", "players": rows, "invalid": []})

    assert shown.count("<tr>") == ROWS_SHOWN + 1
    assert "<td>ann, bo</td>" in shown and '<td class="num">0.333</td>' in shown
    assert "<td>yes</td>" in shown
    assert f"The first {ROWS_SHOWN:,} of {ROWS_SHOWN + 5:,}" in shown
    assert re.search(r'<p class="empty" data-field="invalid">none</p>', shown)
