"""Who may call what: tokens, admin calls, one team's data hidden from another, hostile input."""

from __future__ import annotations

import pytest

from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain

MOVES = b"0 0 2 0 cat\n"


def contest_body(contest_id: str = "second", **changes: str) -> dict[str, str]:
    body = {
        "id": contest_id, "title": "Second", "lexicon": "tiny",
        "opens_at": "2026-01-01T00:00:00Z", "closes_at": "2026-01-02T00:00:00Z",
    }  # fmt: skip
    return {**body, **changes}


ADMIN_CALLS = [
    ("post", "/v1/lexicons?name=x", {"content": b"cat\n"}),
    ("post", "/v1/contests", {"json": contest_body()}),
    ("post", "/v1/contests/open/teams", {"json": {"name": "intruders"}}),
    ("get", "/v1/events", {}),
]


@pytest.mark.parametrize(("method", "url", "kwargs"), ADMIN_CALLS)
def test_a_call_without_a_token_is_401_json_with_www_authenticate(
    pipe: Pipeline, method: str, url: str, kwargs: dict[str, object]
) -> None:
    response = getattr(pipe.client, method)(url, **kwargs)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.json() == {
        "error": "unauthorized",
        "detail": "missing token: send 'Authorization: Bearer <token>'",
    }


@pytest.mark.parametrize("header", ["Bearer not-a-token", "Bearer admin-token-x", "Basic YWRtaW4="])
def test_a_bad_token_is_401(pipe: Pipeline, team: TeamLogin, header: str) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions", content=MOVES,
        headers={"Authorization": header, "Content-Type": "text/plain"},
    )  # fmt: skip

    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert "WWW-Authenticate" in response.headers
    assert pipe.uploads() == {}


def test_a_missing_token_on_a_submission_read_is_401(pipe: Pipeline, team: TeamLogin) -> None:
    accepted = pipe.accepted(team, MOVES)

    response = pipe.client.get(f"/v1/submissions/{accepted['id']}")

    assert response.status_code == 401


@pytest.mark.parametrize(("method", "url", "kwargs"), ADMIN_CALLS)
def test_a_team_token_on_an_admin_call_is_403(
    pipe: Pipeline, team: TeamLogin, method: str, url: str, kwargs: dict[str, object]
) -> None:
    before = len(pipe.events())

    response = getattr(pipe.client, method)(url, headers=team.headers, **kwargs)

    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert "admin" in response.json()["detail"]
    assert len(pipe.events()) == before


def test_the_admin_token_cannot_upload(pipe: Pipeline) -> None:
    response = pipe.client.post(
        "/v1/contests/open/submissions",
        content=MOVES,
        headers={**ADMIN, "Content-Type": "text/plain"},
    )

    assert response.status_code == 403
    assert "team token" in response.json()["detail"]
    assert pipe.uploads() == {}


@pytest.mark.parametrize("suffix", ["", "/report", "/receipt"])
def test_a_team_cannot_read_another_teams_submission_report_or_receipt(
    pipe: Pipeline, team: TeamLogin, suffix: str
) -> None:
    other = pipe.add_team("crows")
    theirs = pipe.accepted(other, MOVES)["id"]
    drain(pipe.services)

    response = pipe.client.get(f"/v1/submissions/{theirs}{suffix}", headers=team.headers)
    missing = pipe.client.get(f"/v1/submissions/{'f' * 32}{suffix}", headers=team.headers)

    assert response.status_code == missing.status_code == 404
    assert response.json()["error"] == missing.json()["error"] == "not_found"
    assert (
        pipe.client.get(f"/v1/submissions/{theirs}{suffix}", headers=other.headers).status_code
        == 200
    )
    assert pipe.client.get(f"/v1/submissions/{theirs}{suffix}", headers=ADMIN).status_code == 200


def test_a_team_of_one_contest_cannot_upload_to_another(pipe: Pipeline, team: TeamLogin) -> None:
    pipe.add_contest("other")

    response = pipe.upload(team, MOVES, contest="other")

    assert response.status_code == 404
    assert pipe.uploads() == {}


ODD_IDS = {
    "dotdot-slash": "..%2F..%2Fetc%2Fpasswd",
    "dotdot": "%2E%2E",
    "backslash": "..%5C..%5Cwindows",
    "500-chars": "x" * 500,
    "accents": "%C3%A9t%C3%A9",
    "emoji": "%F0%9F%90%88",
    "nul": "%00",
    "space": "a%20b",
    "sql": "%27%20OR%201%3D1--",
}


@pytest.mark.parametrize("submission_id", ODD_IDS.values(), ids=ODD_IDS.keys())
@pytest.mark.parametrize("suffix", ["", "/report", "/receipt"])
def test_odd_submission_ids_are_404_not_500(
    pipe: Pipeline, team: TeamLogin, submission_id: str, suffix: str
) -> None:
    response = pipe.client.get(f"/v1/submissions/{submission_id}{suffix}", headers=team.headers)

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


@pytest.mark.parametrize("contest_id", ["..%2Fopen", "x" * 500, "%C3%A9", "OPEN"])
def test_odd_contest_ids_are_404_not_500(pipe: Pipeline, team: TeamLogin, contest_id: str) -> None:
    assert pipe.upload(team, MOVES, contest=contest_id).status_code == 404
    assert pipe.client.get(f"/v1/contests/{contest_id}/leaderboard").status_code == 404


def test_malformed_json_on_contest_creation_is_422_with_a_clear_message(pipe: Pipeline) -> None:
    response = pipe.client.post(
        "/v1/contests",
        content=b'{"id": "x", "title": ',
        headers={**ADMIN, "Content-Type": "application/json"},
    )

    assert response.status_code == 422
    assert response.json()["error"] == "invalid"
    assert "JSON" in response.json()["detail"]


def test_a_missing_field_on_contest_creation_names_the_field(pipe: Pipeline) -> None:
    body = contest_body()
    del body["closes_at"]

    response = pipe.client.post("/v1/contests", json=body, headers=ADMIN)

    assert response.status_code == 422
    assert "closes_at" in response.json()["detail"]


@pytest.mark.parametrize("when", ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00"])
def test_a_bad_iso_time_is_422_naming_the_field(pipe: Pipeline, when: str) -> None:
    response = pipe.client.post("/v1/contests", json=contest_body(opens_at=when), headers=ADMIN)

    assert response.status_code == 422
    assert response.json()["error"] == "invalid"
    assert "opens_at" in response.json()["detail"]


def test_a_contest_closing_before_it_opens_is_422(pipe: Pipeline) -> None:
    body = contest_body(opens_at="2026-01-02T00:00:00Z", closes_at="2026-01-01T00:00:00Z")

    response = pipe.client.post("/v1/contests", json=body, headers=ADMIN)

    assert response.status_code == 422
    assert "closes_at" in response.json()["detail"]


def test_creating_a_contest_twice_is_409(pipe: Pipeline) -> None:
    assert pipe.client.post("/v1/contests", json=contest_body(), headers=ADMIN).status_code == 201

    response = pipe.client.post("/v1/contests", json=contest_body(), headers=ADMIN)

    assert response.status_code == 409
    assert response.json()["error"] == "conflict"
    assert "second" in response.json()["detail"]


def test_a_contest_with_an_unknown_lexicon_is_422(pipe: Pipeline) -> None:
    before = len(pipe.events())

    response = pipe.client.post("/v1/contests", json=contest_body(lexicon="klingon"), headers=ADMIN)

    assert response.status_code == 422
    assert "klingon" in response.json()["detail"]
    assert len(pipe.events()) == before


def test_a_team_name_taken_in_the_contest_is_409(pipe: Pipeline, team: TeamLogin) -> None:
    response = pipe.client.post("/v1/contests/open/teams", json={"name": team.name}, headers=ADMIN)

    assert response.status_code == 409


def test_a_team_token_is_stored_only_as_its_hash(pipe: Pipeline, team: TeamLogin) -> None:
    import hashlib

    stored = pipe.store.get_team(team.id)

    assert stored is not None
    assert stored.token_hash == hashlib.sha256(team.token.encode()).hexdigest()
    assert team.token not in str(pipe.events())
