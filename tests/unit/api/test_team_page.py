"""A team's own page (`/team`): its session (signed, expiring, revoked at sign-out, ended with
its team, refused from another site and on the JSON API), what a team may see on it, its upload
through the API's own intake with the same one-sentence errors, and its report pages."""

from __future__ import annotations

import html
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from api.public import SharedReads
from api.team_pages.games import AsJson, game_page
from api.team_pages.games import wordytaire as wordytaire_page
from api.team_sessions import TEAM_COOKIE, TEAM_SESSION_MAX_AGE_S
from core import clock
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, TeamLogin, drain
from infra.ratelimit import LocalLimiter
from tests.unit.api.test_lazy_reports import HEAVY_UPLOAD, Asks
from tests.unit.api.test_transparency import sequence

EVIL = {"Origin": "https://evil.example"}
OURS = {"Origin": "http://testserver"}
MOVES = b"0 0 2 0 cat\n"  # 9 points with the tiny list
# Three alike illegal lines (a run the report folds), then one legal move.
RUN_OF_THREE = b"0 0 2 0 zzz\n0 0 2 0 zzz\n0 0 2 0 zzz\n0 0 2 0 cat\n"
LOG = b"#crosstiles 1\n#seed s\n#player1 ann\n#player2 bob\n>ann: AEINRST - +0 0\n"


def sign_in(pipe: Pipeline, token: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return pipe.client.post(
        "/team/login", data={"token": token}, headers=headers, follow_redirects=False
    )


def session_of(pipe: Pipeline, team: TeamLogin) -> str:
    response = sign_in(pipe, team.token, OURS)
    assert response.status_code == 303, response.text
    value = pipe.client.cookies.get(TEAM_COOKIE)
    assert value
    return value


def cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{TEAM_COOKIE}={value}"}


def page_upload(
    pipe: Pipeline, data: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    return pipe.client.post(
        "/team/upload", files={"file": ("moves.txt", data, "text/plain")}, headers=headers
    )


def test_signing_in_sets_an_httponly_strict_cookie_for_the_team_page_alone(
    pipe: Pipeline, team: TeamLogin
) -> None:
    response = sign_in(pipe, team.token, OURS)
    assert response.status_code == 303 and response.headers["location"] == "/team"
    set_cookie = response.headers["set-cookie"]
    assert set_cookie.startswith(f"{TEAM_COOKIE}=")
    for attribute in (
        "HttpOnly",
        "SameSite=strict",
        "Path=/team",
        f"Max-Age={TEAM_SESSION_MAX_AGE_S}",
    ):
        assert attribute in set_cookie
    assert "Secure" not in set_cookie  # plain http here; https sets it
    value = pipe.client.cookies[TEAM_COOKIE]
    assert team.token not in value and value.startswith(f"{team.id}.")
    page = pipe.client.get("/team")
    assert page.status_code == 200 and "ravens" in page.text and 'id="upload-form"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "2 MiB" in page.text and "2,097,152 bytes" in page.text


def test_over_https_the_cookie_is_secure(pipe: Pipeline, team: TeamLogin) -> None:
    response = pipe.client.post(
        "https://testserver/team/login", data={"token": team.token}, follow_redirects=False
    )
    assert response.status_code == 303 and "Secure" in response.headers["set-cookie"]


def test_a_wrong_token_or_the_admin_token_does_not_sign_a_team_in(
    pipe: Pipeline, team: TeamLogin
) -> None:
    for token in ("wrong", ADMIN_TOKEN, "tøken", ""):
        response = sign_in(pipe, token)
        assert response.status_code == 401
        assert "That is not a team token." in response.text
        assert TEAM_COOKIE not in response.headers.get("set-cookie", "")


def test_failed_sign_ins_are_throttled_per_client_address(pipe: Pipeline, team: TeamLogin) -> None:
    pipe.services.login_failures = LocalLimiter(2, what="failed sign-ins a minute")
    assert sign_in(pipe, "wrong").status_code == 401
    assert sign_in(pipe, "wrong").status_code == 401
    refused = sign_in(pipe, "wrong")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in refused.text
    # The right token is refused alike while the address is at its limit: a 429 tells nothing.
    assert sign_in(pipe, team.token).status_code == 429


def test_a_forged_or_altered_cookie_is_no_session(pipe: Pipeline, team: TeamLogin) -> None:
    owls = pipe.add_team("owls")
    value = session_of(pipe, team)
    pipe.client.cookies.clear()
    team_id, session_id, expires, signature = value.split(".")
    forged = [
        f"{owls.id}.{session_id}.{expires}.{signature}",  # another team's name on it
        f"{team_id}.{session_id}.{int(expires) + 3600}.{signature}",  # extended
        f"{team_id}.{session_id}.{expires}.{'0' * len(signature)}",
        f"{team_id}.{session_id}.{expires}",
        "garbage",
    ]
    for bad in forged:
        assert pipe.client.get("/team/submissions.json", headers=cookie(bad)).status_code == 401
        page = pipe.client.get("/team", headers=cookie(bad))
        assert 'action="/team/login"' in page.text
    assert pipe.client.get("/team/submissions.json", headers=cookie(value)).status_code == 200


def test_an_expired_session_is_refused(pipe: Pipeline, team: TeamLogin) -> None:
    value = session_of(pipe, team)
    assert pipe.client.get("/team/submissions.json").status_code == 200
    pipe.services.team_sessions.now = lambda: time.time() + TEAM_SESSION_MAX_AGE_S + 1
    assert pipe.client.get("/team/submissions.json", headers=cookie(value)).status_code == 401


def test_signing_out_revokes_the_session_in_the_store(pipe: Pipeline, team: TeamLogin) -> None:
    value = session_of(pipe, team)
    out = pipe.client.post("/team/logout", headers=OURS, follow_redirects=False)
    assert out.status_code == 303
    pipe.client.cookies.clear()
    session_id = value.split(".")[1]
    assert pipe.store.session_revoked(session_id)  # every API process reads it there
    assert pipe.client.get("/team/submissions.json", headers=cookie(value)).status_code == 401
    assert page_upload(pipe, MOVES, cookie(value)).status_code == 401


def test_deleting_the_team_ends_its_sessions(pipe: Pipeline, team: TeamLogin) -> None:
    value = session_of(pipe, team)
    assert pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN).status_code == 200
    assert pipe.client.get("/team/submissions.json", headers=cookie(value)).status_code == 401
    assert page_upload(pipe, MOVES, cookie(value)).status_code == 401


def test_posts_from_another_site_are_refused(pipe: Pipeline, team: TeamLogin) -> None:
    assert sign_in(pipe, team.token, EVIL).status_code == 403
    session_of(pipe, team)
    refused = page_upload(pipe, MOVES, EVIL)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "the team page's forms must be sent from its own origin"
    assert pipe.client.post("/team/logout", headers=EVIL).status_code == 403
    assert pipe.client.get("/team/submissions.json").json()["rows"] == []  # nothing taken


def test_the_cookie_is_no_credential_of_the_json_api(pipe: Pipeline, team: TeamLogin) -> None:
    value = session_of(pipe, team)
    accepted = pipe.accepted(team, MOVES)
    for path in (
        f"/v1/submissions/{accepted['id']}",
        f"/v1/submissions/{accepted['id']}/report",
        f"/v1/contests/{team.contest}/submissions",
    ):
        assert pipe.client.get(path, headers=cookie(value)).status_code == 401, path
    refused = pipe.client.post(
        f"/v1/contests/{team.contest}/submissions",
        content=MOVES,
        headers={**cookie(value), "Content-Type": "text/plain"},
    )
    assert refused.status_code == 401


def test_an_upload_from_the_page_is_taken_and_followed_to_its_result(
    pipe: Pipeline, team: TeamLogin
) -> None:
    session_of(pipe, team)
    accepted = page_upload(pipe, MOVES, OURS)
    assert accepted.status_code == 202, accepted.text
    receipt = accepted.json()
    assert set(receipt) >= {"id", "sha256", "received_at", "receipt", "log_leaf"}
    pipe.settle(receipt["id"])
    listing = pipe.client.get("/team/submissions.json").json()
    assert [row["id"] for row in listing["rows"]] == [receipt["id"]]
    assert listing["pending"] is True
    drain(pipe.services)
    listing = pipe.client.get("/team/submissions.json").json()
    assert listing["pending"] is False
    assert listing["rows"][0]["state"] == "judged"
    assert listing["rows"][0]["result"] == "9 points, 1 legal and 0 illegal lines"
    kept = pipe.client.get(f"/team/submissions/{receipt['id']}/receipt.json")
    assert kept.status_code == 200 and "attachment" in kept.headers["content-disposition"]
    assert kept.json()["receipt"] == receipt["receipt"]


def test_bad_uploads_get_the_apis_one_sentence_errors(pipe: Pipeline, team: TeamLogin) -> None:
    session_of(pipe, team)
    limit = pipe.services.settings.max_upload_bytes
    too_large = page_upload(pipe, b"0" * (limit + 1), OURS)
    assert too_large.status_code == 413
    assert too_large.json() == {
        "error": "too_large",
        "detail": f"upload is over the {limit}-byte limit",
    }
    wrong_game = page_upload(pipe, LOG, OURS)
    assert wrong_game.status_code == 202
    assert "reads as a crosstiles upload" in wrong_game.json()["hint"]

    pipe.services.limiter = LocalLimiter(1, what="uploads a minute")  # type: ignore[assignment]
    assert page_upload(pipe, MOVES, OURS).status_code == 202
    limited = page_upload(pipe, b"0 0 1 0 at\n", OURS)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
    assert limited.json()["error"] == "rate_limited" and limited.json()["detail"]


def test_an_upload_to_a_closed_contest_is_refused_with_its_sentence(pipe: Pipeline) -> None:
    pipe.add_contest("over", opens_in=-7200, closes_in=-3600)
    late = pipe.add_team("late", contest="over")
    session_of(pipe, late)
    refused = page_upload(pipe, MOVES, OURS)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("contest over closed at ")


def test_another_teams_submission_is_not_found_on_every_page_route(
    pipe: Pipeline, team: TeamLogin
) -> None:
    owls = pipe.add_team("owls")
    theirs = pipe.accepted(owls, MOVES)["id"]
    drain(pipe.services)
    session_of(pipe, team)
    for path in ("", "/report.json", "/receipt.json"):
        response = pipe.client.get(f"/team/submissions/{theirs}{path}")
        assert response.status_code == 404, path
        assert "ravens" not in response.text and MOVES.decode() not in response.text
    assert pipe.client.get("/team/submissions/..%2Fx").status_code == 404
    assert theirs not in pipe.client.get("/team/submissions.json").text
    assert theirs not in pipe.client.get("/team").text


def test_the_report_page_folds_runs_and_checks_the_receipt_against_the_log(
    pipe: Pipeline, team: TeamLogin
) -> None:
    session_of(pipe, team)
    sid = page_upload(pipe, RUN_OF_THREE, OURS).json()["id"]
    pipe.settle(sid)
    waiting = pipe.client.get(f"/team/submissions/{sid}")
    assert "Not judged yet" in waiting.text
    assert "the next checkpoint" in waiting.text  # logged, not yet signed
    drain(pipe.services)
    sequence(pipe)
    page = pipe.client.get(f"/team/submissions/{sid}")
    assert page.status_code == 200
    text = page.text
    assert "lines 1–3 (3 lines)" in text
    assert html.escape(wordytaire_page.REASONS["not_in_dictionary"]) in text
    assert "9 points" in text
    assert "The receipt is valid" in text
    assert "Your upload is entry " in text
    assert "of the contest&#x27;s log, included in its checkpoint of " in text
    assert f'href="/team/submissions/{sid}/report.json?lines=runs"' in text
    folded = pipe.client.get(f"/team/submissions/{sid}/report.json?lines=runs").json()
    assert folded["lines"][0]["count"] == 3


def test_a_team_sees_its_own_verdicts_while_the_contest_is_frozen(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = datetime.now(UTC)
    body = {
        "id": "iced", "title": "Frozen", "lexicon": "tiny", "game": "wordytaire",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
        "freeze_at": clock.format_time(now - timedelta(minutes=1)),
    }  # fmt: skip
    assert pipe.client.post("/v1/contests", json=body, headers=ADMIN).status_code == 201
    ravens = pipe.add_team("icy", contest="iced")
    sid = pipe.accepted(ravens, MOVES)["id"]
    drain(pipe.services)
    assert pipe.client.get("/v1/contests/iced/leaderboard").json()["frozen"] is True
    session_of(pipe, ravens)
    assert "public standings are frozen" in pipe.client.get("/team").text
    row = pipe.client.get("/team/submissions.json").json()["rows"][0]
    assert (row["id"], row["result"]) == (sid, "9 points, 1 legal and 0 illegal lines")
    assert "9 points" in pipe.client.get(f"/team/submissions/{sid}").text


def test_each_game_is_drawn_by_its_own_module() -> None:
    assert game_page("wordytaire") is wordytaire_page.PAGE
    crosstiles = game_page("crosstiles")
    assert type(crosstiles).__module__ == "api.team_pages.games.crosstiles"
    assert isinstance(game_page("no-such-game"), AsJson)
    drawn = crosstiles.report_html(
        {"error": {"line": 3, "reason": "bad_rack", "detail": "ann holds no Q"},
         "players": [{"nick": "ann", "score": 12, "removed": False}], "winners": [], "turns": 1}
    )  # fmt: skip
    assert "an invalid game log" in drawn and "ann holds no Q" in drawn and "Scores so far" in drawn


def test_a_signed_in_team_is_not_paced_with_strangers_a_forged_cookie_is(
    pipe: Pipeline, team: TeamLogin
) -> None:
    """Public requests wait their turn (`api.public`); a team's own page, its uploads
    included, carries a session the middleware checks without the store and goes ahead."""
    value = session_of(pipe, team)
    pipe.client.cookies.clear()
    clock_now = [0.0]
    pipe.services.public = SharedReads(monotonic=lambda: clock_now[0], rate=1, queue_s=0)
    for _ in range(2):  # a second's worth of turns, taken
        assert pipe.client.get("/v1/contests/open").status_code == 200
    busy = pipe.client.get("/team/submissions.json", headers=cookie("forged." + value))
    assert busy.status_code == 503
    team_id, session_id, expires, signature = value.split(".")
    tampered = ".".join([team_id, session_id, str(int(expires) + 60), signature])
    assert pipe.client.get("/team/submissions.json", headers=cookie(tampered)).status_code == 503
    for _ in range(3):
        mine = pipe.client.get("/team/submissions.json", headers=cookie(value))
        assert mine.status_code == 200, mine.text
    uploaded = page_upload(pipe, b"-1 0 1 0 cat\n", {**cookie(value), **OURS})
    assert uploaded.status_code == 202, uploaded.text


def test_a_heavy_report_being_made_is_said_so_on_its_page(pipe: Pipeline, team: TeamLogin) -> None:
    pipe.services.reports.asks = Asks()
    session_of(pipe, team)
    sid = page_upload(pipe, HEAVY_UPLOAD, OURS).json()["id"]
    pipe.settle(sid)
    drain(pipe.services)

    page = pipe.client.get(f"/team/submissions/{sid}")
    as_json = pipe.client.get(f"/team/submissions/{sid}/report.json")

    assert page.status_code == 200
    assert "This report is being made: reload this page in 2 s." in page.text
    assert as_json.status_code == 202 and as_json.headers["retry-after"] == "2"
