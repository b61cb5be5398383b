"""Hostile edges of the API: credentials and JSON text no encoding can carry, contest times
that would not compare as text, rows in SQL with times that do not parse, and what `/metrics`
tells a caller without a token.

Every malformed credential is 401, every malformed body 422, and no bad row is a 500.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, insert, select, update

from core import clock
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, TeamLogin, drain
from infra.settings import Settings
from infra.sql.schema import contests, events, submissions, teams

MOVES = b"0 0 2 0 cat\n"
METRICS_TOKEN = "metrics-token"
LONE_SURROGATE = '"\\ud800"'  # JSON text: the escape a decoder turns into a lone surrogate


@pytest.fixture
def pipe(pipe: Pipeline) -> Pipeline:
    """The shared pipeline, whose server-side exceptions become the 500 a client would see
    instead of being re-raised."""
    pipe.client = TestClient(pipe.client.app, raise_server_exceptions=False)
    return pipe


def assert_refused(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert set(response.json()) == {"error", "detail"}, response.text


# --- credentials that are not ASCII -------------------------------------------------------------


NON_ASCII = ["é".encode(), "\u2603".encode(), b"\xff\xfe", ADMIN_TOKEN.encode() + b"\xc3\xa9"]


@pytest.mark.parametrize("token", NON_ASCII, ids=["e-acute", "snowman", "not-utf8", "admin+e"])
@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/v1/stats"),
        ("GET", "/v1/submissions/x"),
        ("GET", "/v1/events"),
        ("POST", "/v1/contests/open/submissions"),
    ],
)
def test_a_non_ascii_bearer_token_is_401(
    pipe: Pipeline, token: bytes, method: str, path: str
) -> None:
    headers = {"Authorization": b"Bearer " + token, "Content-Type": "text/plain"}

    response = pipe.client.request(method, path, headers=headers, content=MOVES)

    assert_refused(response, 401)


@pytest.mark.parametrize("token", NON_ASCII, ids=["e-acute", "snowman", "not-utf8", "admin+e"])
def test_a_non_ascii_admin_cookie_is_401_and_the_dashboard_asks_to_sign_in(
    pipe: Pipeline, token: bytes
) -> None:
    cookie = {"Cookie": b"tilejudge_admin=" + token}

    assert_refused(pipe.client.get("/v1/stats", headers=cookie), 401)
    page = pipe.client.get("/dashboard", headers=cookie)
    assert page.status_code == 200 and 'action="/dashboard/login"' in page.text


# --- JSON text that UTF-8 cannot carry ----------------------------------------------------------


def with_surrogate(fields: dict[str, str], name: str) -> bytes:
    """The JSON text of `fields` with field `name` a lone surrogate."""
    text = json.dumps({**fields, name: "@"})
    return text.replace('"@"', LONE_SURROGATE).encode()


RECEIPT_FIELDS = ["id", "team", "contest", "sha256", "received_at", "receipt"]


@pytest.mark.parametrize("field", RECEIPT_FIELDS)
def test_a_lone_surrogate_in_any_receipt_field_is_422(
    pipe: Pipeline, team: TeamLogin, field: str
) -> None:
    accepted = pipe.accepted(team, MOVES)
    fields = {
        "id": accepted["id"],
        "team": team.id,
        "contest": "open",
        "sha256": accepted["sha256"],
        "received_at": accepted["received_at"],
        "receipt": accepted["receipt"],
    }

    response = pipe.client.post(
        "/v1/receipts/verify",
        content=with_surrogate(fields, field),
        headers={"Content-Type": "application/json"},
    )

    assert_refused(response, 422)
    assert field in response.json()["detail"]


CONTEST = {
    "id": "edge",
    "title": "t",
    "lexicon": "tiny",
    "layout": "standard",
    "opens_at": "2026-01-01T00:00:00Z",
    "closes_at": "2026-01-02T00:00:00Z",
}


@pytest.mark.parametrize(
    "path, fields, field",
    [
        *(("/v1/contests", CONTEST, name) for name in CONTEST),
        ("/v1/contests/open/teams", {"name": "n"}, "name"),
        ("/v1/contests/open/rejudges", {"lexicon": "tiny", "layout": "x"}, "lexicon"),
        ("/v1/contests/open/rejudges", {"lexicon": "tiny", "layout": "x"}, "layout"),
        ("/v1/contests/open/rejudges", {"lexicon": "tiny", "mode": "full"}, "mode"),
    ],
)
def test_a_lone_surrogate_in_any_string_field_of_a_json_body_is_422_and_stores_nothing(
    pipe: Pipeline, path: str, fields: dict[str, str], field: str
) -> None:
    response = pipe.client.post(
        path,
        content=with_surrogate(fields, field),
        headers={**ADMIN, "Content-Type": "application/json"},
    )

    assert_refused(response, 422)
    assert pipe.store.get_contest("edge") is None
    with pipe.store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(teams)).scalar() == 0


# --- contest times ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opens_at",
    ["0999-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "2000-01-01T00:30:00+01:00"],
    ids=["year-999", "year-1999", "year-2000-by-offset-only"],
)
def test_a_contest_time_before_the_year_2000_in_utc_is_422(pipe: Pipeline, opens_at: str) -> None:
    body = {**CONTEST, "opens_at": opens_at}
    del body["layout"]

    response = pipe.client.post("/v1/contests", json=body, headers=ADMIN)

    assert_refused(response, 422)
    assert pipe.store.get_contest("edge") is None


@pytest.mark.parametrize("year", [1, 999, 2000, 9999])
def test_every_formatted_time_has_the_same_width_so_text_order_is_time_order(year: int) -> None:
    moment = datetime(year, 1, 1, tzinfo=UTC)

    text = clock.format_time(moment)

    assert len(text) == len(clock.now())
    assert text.startswith(f"{year:04d}-")
    assert clock.parse_time(text) == moment


# --- rows with times that do not parse ----------------------------------------------------------


BAD_TIMES = ["999-01-01T00:00:00.000000Z", "not a time", "2026-01-01T00:00:00", ""]


@pytest.mark.parametrize("bad", BAD_TIMES, ids=["unpadded", "garbage", "no-zone", "empty"])
def test_a_row_with_a_bad_time_is_left_out_of_stats_and_metrics_not_a_500(
    pipe: Pipeline, team: TeamLogin, bad: str
) -> None:
    good = pipe.store.get_contest("open")
    assert good is not None
    with pipe.store.engine.begin() as conn:
        conn.execute(
            insert(contests).values(
                id="bad", title="Bad", opens_at=bad, closes_at=bad, created_at=bad,
                lexicon_id=good.lexicon_id, layout_id=good.rules_id,
            )
        )  # fmt: skip
    accepted = pipe.accepted(team, MOVES)
    drain(pipe.services)
    with pipe.store.engine.begin() as conn:
        conn.execute(
            update(submissions).where(submissions.c.id == accepted["id"]).values(received_at=bad)
        )
        conn.execute(update(events).values(ts=bad))

    stats = pipe.client.get("/v1/stats", headers=ADMIN)
    metrics = pipe.client.get("/metrics", headers=ADMIN)

    assert stats.status_code == 200, stats.text
    assert [c["id"] for c in stats.json()["contests"]] == ["open"]
    assert stats.json()["latency_ms"]["count"] == 0
    assert metrics.status_code == 200, metrics.text
    assert 'contest="open"' in metrics.text and 'contest="bad"' not in metrics.text


# --- what /metrics tells whom -------------------------------------------------------------------


def families(response: httpx.Response) -> dict[str, list[dict[str, str]]]:
    assert response.status_code == 200, response.text
    return {
        family.name: [sample.labels for sample in family.samples]
        for family in text_string_to_metric_families(response.text)
    }


def label_names(found: dict[str, list[dict[str, str]]]) -> set[str]:
    return {name for samples in found.values() for labels in samples for name in labels}


def with_metrics_token(pipe: Pipeline) -> None:
    settings = dataclasses.replace(pipe.services.settings, metrics_token=METRICS_TOKEN)
    pipe.services.settings = settings


def test_metrics_without_a_token_name_no_contest_or_run(pipe: Pipeline, team: TeamLogin) -> None:
    pipe.add_contest("secret-upcoming", opens_in=86_400, closes_in=90_000)
    pipe.accepted(team, MOVES)

    found = families(pipe.client.get("/metrics"))

    assert "tilejudge_uploads" in found and "tilejudge_rejudge_done" in found
    assert not label_names(found) & {"contest", "run"}
    assert "secret-upcoming" not in pipe.client.get("/metrics").text


@pytest.mark.parametrize("token", [ADMIN_TOKEN, METRICS_TOKEN], ids=["admin", "metrics"])
def test_metrics_name_contests_for_the_admin_or_metrics_token(
    pipe: Pipeline, team: TeamLogin, token: str
) -> None:
    with_metrics_token(pipe)
    pipe.accepted(team, MOVES)

    found = families(pipe.client.get("/metrics", headers={"Authorization": f"Bearer {token}"}))

    assert {"contest": "open", "state": "queued"} in found["tilejudge_contest_submissions"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": b"Bearer wrong"}, {"Authorization": "Bearer é".encode()}],
    ids=["none", "wrong", "non-ascii"],
)
def test_with_a_metrics_token_set_metrics_without_it_is_401(
    pipe: Pipeline, headers: dict[str, bytes]
) -> None:
    with_metrics_token(pipe)

    assert_refused(pipe.client.get("/metrics", headers=headers), 401)


def test_a_wrong_token_for_metrics_is_401_even_when_metrics_are_public(pipe: Pipeline) -> None:
    assert_refused(pipe.client.get("/metrics", headers={"Authorization": "Bearer wrong"}), 401)


def test_the_metrics_token_is_read_from_its_setting() -> None:
    env = {"TILEJUDGE_METRICS_TOKEN": " scrape-me "}

    assert Settings.from_env(env).metrics_token == "scrape-me"
    assert Settings.from_env({}).metrics_token is None
