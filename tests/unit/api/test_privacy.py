"""The privacy page is HTML rendered from the `api` package's privacy.md, passes no raw HTML on,
and says what the code does: its cookie, its files, its tables and events."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from api.routes.dashboard import COOKIE_MAX_AGE_S
from api.routes.privacy import render_markdown
from api.services import ADMIN_COOKIE
from core.events import EventType
from devstack.testing.pipeline import open_pipeline
from devstack.up import API_URL_FILE

DOC = resources.files("api").joinpath("privacy.md")
PROJECT = Path(__file__).resolve().parents[3]
# `home / "name"`, `settings.home / "name"`, `secret("name")`: the files the stack keeps there.
HOME_FILE = re.compile(r'\b(?:settings\.|self\.)?home\s*/\s*"([^"]+)"|\bsecret\("([^"]+)"')


def test_the_privacy_page_is_public_html_with_headings_and_tables(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        response = pipe.client.get("/privacy")
        stylesheet = pipe.client.get("/static/privacy.css")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert page.startswith("<!doctype html>")
    assert re.search(r"<h1>Privacy: what tilejudge stores", page)
    assert len(re.findall(r"<h2>", page)) >= 8
    assert page.count("<table>") >= 6
    assert "<pre><code>tilejudge team delete --team ID\n</code></pre>" in page
    assert "# " not in page and "|---" not in page  # no Markdown left unrendered
    assert "<script" not in page
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "style-src 'self'" in policy
    assert '<link rel="stylesheet" href="/static/privacy.css">' in page
    assert stylesheet.status_code == 200
    assert stylesheet.headers["content-type"].startswith("text/css")


def test_html_written_in_the_markdown_is_shown_as_text_not_passed_on() -> None:
    rendered = render_markdown(
        "# Title\n\n<script>alert(1)</script>\n\nSome <b onclick=steal()>bold</b> and "
        '<img src=x onerror="steal()"> text.\n\n[a link](javascript:steal())\n'
    )

    assert "<h1>Title</h1>" in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert "&lt;b onclick=steal()&gt;" in rendered
    assert not re.search(r"<(script|b|img)\b", rendered)
    assert 'href="javascript:' not in rendered


def test_the_privacy_page_names_the_dashboard_cookie_with_its_lifetime_and_flags() -> None:
    text = DOC.read_text(encoding="utf-8")

    assert f"`{ADMIN_COOKIE}`" in text
    assert f"`Max-Age={COOKIE_MAX_AGE_S}`" in text
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/", "Secure"):
        assert f"`{flag}`" in text


def test_the_privacy_page_names_every_file_the_stack_keeps_in_its_home() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = {API_URL_FILE, "tilejudge.sqlite3", "tilejudge.sqlite3.write-lock"}
    for package in ("api", "cli", "core", "devstack", "infra", "workers"):
        for source in (PROJECT / package).rglob("*.py"):
            if source.is_relative_to(PROJECT / "devstack" / "testing"):
                continue  # the harness of the tests and benchmarks, not the stack
            for match in HOME_FILE.finditer(source.read_text(encoding="utf-8")):
                named.add(match.group(1) or match.group(2))
    kept = {name for name in named if not name.endswith(".partial")}

    assert {"admin-token", "receipt-key", "ports.json", "lexicon-cache"} <= kept  # found
    assert sorted(name for name in kept if f"`{name}" not in text) == []


def test_the_privacy_page_names_every_event_type() -> None:
    text = DOC.read_text(encoding="utf-8")

    assert [kind.value for kind in EventType if f"`{kind.value}`" not in text] == []


def test_the_privacy_page_names_every_stored_column_of_teams_submissions_and_results() -> None:
    from infra.sql.schema import results, submissions, teams

    text = DOC.read_text(encoding="utf-8")
    for table in (teams, submissions, results):
        assert [c.name for c in table.columns if f"`{c.name}`" not in text] == [], table.name
