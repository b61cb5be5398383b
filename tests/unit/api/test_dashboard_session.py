"""The dashboard's session cookie: signed, expiring, revoked at sign-out in every API process,
never the admin token, and accepted only on the dashboard's own reads."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.services import ADMIN_COOKIE, SESSION_MAX_AGE_S, Services
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, settings_for
from infra import compose
from infra.sql.engine import make_engine
from infra.sql.store import SqlStore

EVIL = {"Origin": "https://evil.example"}


def sign_in(client: TestClient, headers: dict[str, str] | None = None) -> httpx.Response:
    return client.post(
        "/dashboard/login", data={"token": ADMIN_TOKEN}, headers=headers, follow_redirects=False
    )


def session_cookie(pipe: Pipeline) -> str:
    response = sign_in(pipe.client)
    assert response.status_code == 303, response.text
    value = pipe.client.cookies.get(ADMIN_COOKIE)
    assert value
    return value


def with_cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{ADMIN_COOKIE}={value}"}


def start_rejudge(pipe: Pipeline) -> str:
    pipe.add_lexicon(("cat", "at", "tab"), name="fixed")
    response = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": "full"}, headers=ADMIN
    )
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


@contextmanager
def second_process(pipe: Pipeline, home: Path) -> Iterator[TestClient]:
    """Another API process: its own app, services and connections, over the same store and
    home (so the same session key), as `tilejudge up` runs two."""
    engine = make_engine(str(pipe.store.engine.url))
    store = SqlStore(engine)
    services = Services(
        **vars(
            compose.api_parts(
                settings_for(home), store=store, blobs=pipe.blobs, publisher=pipe.publisher,
                with_redis=False,
            )
        )
    )  # fmt: skip
    commits = services.intake.commits
    try:
        with TestClient(create_app(services, sweeper=False)) as client:
            yield client
    finally:
        commits.close()
        engine.dispose()


# -- what the cookie holds ----------------------------------------------------------------------


def test_the_cookie_holds_a_session_never_the_admin_token(pipe: Pipeline) -> None:
    response = sign_in(pipe.client)
    header = response.headers["set-cookie"]
    value = pipe.client.cookies.get(ADMIN_COOKIE) or ""

    assert ADMIN_TOKEN not in header
    assert hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest() not in header
    assert len(value) > 60  # an id, an expiry and a signature
    assert f"Max-Age={SESSION_MAX_AGE_S}" in header
    sign_in(pipe.client)
    assert pipe.client.cookies.get(ADMIN_COOKIE) != value  # a fresh session at every sign-in


# -- where it counts ----------------------------------------------------------------------------


def test_the_dashboard_reads_work_with_the_session_cookie(pipe: Pipeline) -> None:
    run_id = start_rejudge(pipe)
    session_cookie(pipe)

    assert "dashboard.js" in pipe.client.get("/dashboard").text
    assert pipe.client.get("/v1/stats").status_code == 200
    preview = pipe.client.get(f"/v1/rejudges/{run_id}")
    assert preview.status_code == 200 and preview.json()["id"] == run_id


def test_a_cross_site_post_with_the_cookie_cannot_cancel_a_rejudge(pipe: Pipeline) -> None:
    run_id = start_rejudge(pipe)
    session_cookie(pipe)
    before = pipe.client.get(f"/v1/rejudges/{run_id}", headers=ADMIN).json()["state"]

    response = pipe.client.post(f"/v1/rejudges/{run_id}/cancel", headers=EVIL)

    assert response.status_code == 401
    after = pipe.client.get(f"/v1/rejudges/{run_id}", headers=ADMIN).json()["state"]
    assert after == before != "cancelled"
    assert not [e for e in pipe.events() if e["type"] == "rejudge.cancelled"]


def test_a_cross_site_post_with_the_cookie_cannot_register_a_lexicon(pipe: Pipeline) -> None:
    session_cookie(pipe)
    before = pipe.client.get("/v1/lexicons", headers=ADMIN).json()["lexicons"]

    response = pipe.client.post(
        "/v1/lexicons",
        params={"name": "planted"},
        content=b"planted\n",
        headers={**EVIL, "Content-Type": "text/plain"},
    )

    assert response.status_code == 401
    assert pipe.client.get("/v1/lexicons", headers=ADMIN).json()["lexicons"] == before
    assert pipe.store.find_lexicon("planted") is None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/events"),
        ("GET", "/v1/lexicons"),
        ("GET", "/v1/contests/open/teams"),
        ("GET", "/v1/contests/open/results"),
        ("POST", "/v1/contests/open/close"),
    ],
)
def test_the_cookie_authorises_nothing_but_the_dashboard_reads(
    pipe: Pipeline, method: str, path: str
) -> None:
    session_cookie(pipe)

    assert pipe.client.request(method, path).status_code == 401
    assert pipe.store.get_contest("open") is not None
    assert not [e for e in pipe.events() if e["type"] == "contest.closed"]


def test_the_cookie_gives_metrics_no_ids(pipe: Pipeline) -> None:
    run_id = start_rejudge(pipe)
    session_cookie(pipe)

    assert run_id not in pipe.client.get("/metrics").text
    assert run_id in pipe.client.get("/metrics", headers=ADMIN).text


# -- when it stops counting ---------------------------------------------------------------------


def test_a_signed_out_cookie_replayed_is_refused_by_every_api_process(
    pipe: Pipeline, tmp_path: Path
) -> None:
    old = session_cookie(pipe)
    with second_process(pipe, tmp_path) as other:
        assert other.get("/v1/stats", headers=with_cookie(old)).status_code == 200

        response = pipe.client.post("/dashboard/logout", follow_redirects=False)
        assert response.status_code == 303

        pipe.client.cookies.clear()
        assert pipe.client.get("/v1/stats", headers=with_cookie(old)).status_code == 401
        assert other.get("/v1/stats", headers=with_cookie(old)).status_code == 401
        page = other.get("/dashboard", headers=with_cookie(old))
        assert 'action="/dashboard/login"' in page.text
        fresh = session_cookie(pipe)  # signing in again works, in both processes
        assert other.get("/v1/stats", headers=with_cookie(fresh)).status_code == 200


def test_signing_out_in_one_process_revokes_the_session_in_the_other(
    pipe: Pipeline, tmp_path: Path
) -> None:
    old = session_cookie(pipe)
    with second_process(pipe, tmp_path) as other:
        other.post("/dashboard/logout", headers=with_cookie(old), follow_redirects=False)

    pipe.client.cookies.clear()
    assert pipe.client.get("/v1/stats", headers=with_cookie(old)).status_code == 401


def test_an_expired_session_is_refused(pipe: Pipeline) -> None:
    old = session_cookie(pipe)
    sessions = pipe.services.sessions
    started = time.time()
    sessions.now = lambda: started + SESSION_MAX_AGE_S - 60
    assert pipe.client.get("/v1/stats").status_code == 200

    sessions.now = lambda: started + SESSION_MAX_AGE_S + 60

    pipe.client.cookies.clear()
    assert pipe.client.get("/v1/stats", headers=with_cookie(old)).status_code == 401
    assert "dashboard.js" not in pipe.client.get("/dashboard", headers=with_cookie(old)).text


def test_a_tampered_cookie_is_refused(pipe: Pipeline, tmp_path: Path) -> None:
    good = session_cookie(pipe)
    pipe.client.cookies.clear()
    session_id, expires, signature = good.split(".")
    key = (tmp_path / "session-key").read_text().strip()
    forged_with_another_key = hmac.new(b"guessed", f"x.{expires}".encode(), "sha256").hexdigest()
    flipped = ("0" if signature[0] != "0" else "1") + signature[1:]
    tampered = [
        f"{session_id}.{int(expires) + 86_400}.{signature}",  # extended
        f"{session_id}x.{expires}.{signature}",  # another session
        f"{session_id}.{expires}.{flipped}",
        f"x.{expires}.{forged_with_another_key}",
        f"{session_id}.{expires}",
        ADMIN_TOKEN,  # what the cookie used to hold
        "",
    ]
    assert key and key not in good

    for value in tampered:
        assert pipe.client.get("/v1/stats", headers=with_cookie(value)).status_code == 401, value
    assert pipe.client.get("/v1/stats", headers=with_cookie(good)).status_code == 200


# -- the sign-in form ---------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["https://evil.example", "http://testserver.evil", "null"])
def test_a_sign_in_posted_from_a_foreign_origin_is_403(pipe: Pipeline, origin: str) -> None:
    response = sign_in(pipe.client, headers={"Origin": origin})

    assert response.status_code == 403
    assert "set-cookie" not in response.headers


def test_a_sign_in_from_the_dashboards_own_origin_or_none_is_let_in(pipe: Pipeline) -> None:
    assert sign_in(pipe.client, headers={"Origin": "http://testserver"}).status_code == 303
    assert sign_in(pipe.client).status_code == 303


def test_the_dashboards_pages_let_the_browser_send_their_origin_with_their_forms(
    pipe: Pipeline,
) -> None:
    # Under "no-referrer" a browser posts the page's own forms with `Origin: null`, which the
    # sign-in would refuse as foreign.
    assert pipe.client.get("/dashboard").headers["referrer-policy"] == "same-origin"
    session_cookie(pipe)
    assert pipe.client.get("/dashboard").headers["referrer-policy"] == "same-origin"
