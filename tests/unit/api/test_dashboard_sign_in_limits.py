"""The dashboard's sign-in and its sessions: failed sign-ins throttled per client address, a new
admin token ends every session, the session key given by the environment or a mounted file (so
API hosts share sessions), and the cookie `Secure` whenever the browser's URL is https."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.services import ADMIN_COOKIE, DashboardSessions, Services
from devstack.testing.pipeline import ADMIN_TOKEN, RECEIPT_KEY, Pipeline
from infra import compose
from infra.ratelimit import WINDOW_S, LocalLimiter, RateLimiter
from infra.settings import Settings, SettingsError
from infra.sql.engine import make_engine
from infra.sql.store import SqlStore


def sign_in(client: TestClient, token: str = ADMIN_TOKEN) -> httpx.Response:
    return client.post("/dashboard/login", data={"token": token}, follow_redirects=False)


def cookie_of(response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    value = response.cookies.get(ADMIN_COOKIE)
    assert value
    return value


def with_cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{ADMIN_COOKIE}={value}"}


@contextmanager
def api_process(
    pipe: Pipeline, home: Path, env: Mapping[str, str], **client: object
) -> Iterator[TestClient]:
    """Another API process over the pipeline's store, with settings of its own."""
    settings = Settings.from_env({
        "TILEJUDGE_HOME": str(home), "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TILEJUDGE_RECEIPT_KEY": RECEIPT_KEY, **env,
    })  # fmt: skip
    engine = make_engine(str(pipe.store.engine.url))
    parts = compose.api_parts(
        settings, store=SqlStore(engine), blobs=pipe.blobs, publisher=pipe.publisher,
        with_redis=False,
    )  # fmt: skip
    services = Services(**vars(parts))
    try:
        with TestClient(create_app(services, sweeper=False), **client) as made:  # type: ignore[arg-type]
            yield made
    finally:
        services.intake.commits.close()
        engine.dispose()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- throttling ---------------------------------------------------------------------------------


def test_after_five_failed_sign_ins_a_minute_an_address_is_refused_even_the_right_token(
    pipe: Pipeline,
) -> None:
    failures = [sign_in(pipe.client, "wrong").status_code for _ in range(5)]
    refused = sign_in(pipe.client, "wrong")
    right = sign_in(pipe.client)

    assert failures == [401] * 5
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "Too many failed sign-ins" in refused.text
    assert right.status_code == 429
    assert ADMIN_COOKIE not in right.cookies


def test_another_address_still_signs_in_while_one_is_throttled(pipe: Pipeline) -> None:
    for _ in range(6):
        sign_in(pipe.client, "wrong")
    elsewhere = TestClient(pipe.client.app, client=("198.51.100.7", 40000))

    assert sign_in(elsewhere).status_code == 303


def test_failed_sign_ins_lapse_after_a_minute_and_successes_do_not_count(pipe: Pipeline) -> None:
    clock = Clock()
    pipe.services.login_failures = LocalLimiter(5, what="failed sign-ins", now=clock)
    for _ in range(10):
        assert sign_in(pipe.client).status_code == 303
    for _ in range(5):
        sign_in(pipe.client, "wrong")
    assert sign_in(pipe.client).status_code == 429

    clock.now += WINDOW_S + 1

    assert sign_in(pipe.client).status_code == 303


def test_the_throttle_keeps_no_client_address(pipe: Pipeline) -> None:
    limiter = LocalLimiter(5, what="failed sign-ins")
    pipe.services.login_failures = limiter
    elsewhere = TestClient(pipe.client.app, client=("198.51.100.7", 40000))
    sign_in(elsewhere, "wrong")

    assert limiter._logs and all("198.51.100.7" not in key for key in limiter._logs)


def test_with_redis_the_limits_are_counted_there_for_every_api_process_else_in_this_one(
    pipe: Pipeline, tmp_path: Path
) -> None:
    """The composition root builds the limits (nothing connects here: no Redis listens)."""
    url = "redis://127.0.0.1:9/0"
    settings = Settings.from_env({
        "TILEJUDGE_HOME": str(tmp_path / "with-redis"), "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TILEJUDGE_RECEIPT_KEY": RECEIPT_KEY, "REDIS_URL": url,
    })  # fmt: skip
    parts = compose.api_parts(
        settings, store=pipe.store, blobs=pipe.blobs, publisher=pipe.publisher
    )
    try:
        assert isinstance(parts.login_failures, RateLimiter)
        assert isinstance(parts.report_reads, RateLimiter)
        # And the dashboard hears the workers' heartbeats through the same Redis.
        assert parts.worker_events is not None
        assert parts.worker_events.conf.broker_url == url
        # And tells every API process of team tokens to forget through it.
        assert parts.team_news is not None
    finally:
        parts.intake.commits.close()
        parts.close_clients()
    assert isinstance(pipe.services.login_failures, LocalLimiter)
    assert isinstance(pipe.services.report_reads, LocalLimiter)
    assert pipe.services.worker_events is None and pipe.services.team_news is None


# -- sessions and the admin token ---------------------------------------------------------------


def test_a_new_admin_token_ends_every_session(pipe: Pipeline, tmp_path: Path) -> None:
    old = cookie_of(sign_in(pipe.client))
    pipe.client.cookies.clear()

    # The same home, so the same session key: only the admin token differs.
    with api_process(pipe, tmp_path, {}) as same:
        assert same.get("/v1/stats", headers=with_cookie(old)).status_code == 200
    with api_process(pipe, tmp_path, {"TILEJUDGE_ADMIN_TOKEN": "a-new-token"}) as renewed:
        assert renewed.get("/v1/stats", headers=with_cookie(old)).status_code == 401
        page = renewed.get("/dashboard", headers=with_cookie(old))
        assert 'action="/dashboard/login"' in page.text


def test_a_session_is_bound_to_the_admin_token_it_was_issued_under(pipe: Pipeline) -> None:
    before = DashboardSessions("key", pipe.store, "token-one")
    cookie = before.issue()

    assert before.check(cookie) is not None
    assert DashboardSessions("key", pipe.store, "token-one").check(cookie) is not None
    assert DashboardSessions("key", pipe.store, "token-two").check(cookie) is None
    assert DashboardSessions("other", pipe.store, "token-one").check(cookie) is None


# -- the session key ----------------------------------------------------------------------------


def test_api_hosts_given_one_session_key_share_sessions(pipe: Pipeline, tmp_path: Path) -> None:
    shared = {"TILEJUDGE_SESSION_KEY": "a-key-every-host-is-given"}
    with (
        api_process(pipe, tmp_path / "one", shared) as one,
        api_process(pipe, tmp_path / "two", shared) as two,
        api_process(pipe, tmp_path / "three", {}) as own_key,
    ):
        cookie = cookie_of(sign_in(one))
        one.cookies.clear()

        assert two.get("/v1/stats", headers=with_cookie(cookie)).status_code == 200
        assert own_key.get("/v1/stats", headers=with_cookie(cookie)).status_code == 401
    assert not (tmp_path / "one" / "session-key").exists()


def test_the_session_key_is_read_from_a_mounted_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-a-mounted-secret\n")
    env = {"TILEJUDGE_HOME": str(tmp_path / "home"), "TILEJUDGE_SESSION_KEY_FILE": str(secret)}

    assert Settings.from_env(env).session_key_value() == "from-a-mounted-secret"
    given = env | {"TILEJUDGE_SESSION_KEY": "given"}
    assert Settings.from_env(given).session_key_value() == "given"


@pytest.mark.parametrize("content", [None, "  \n"], ids=["missing", "empty"])
def test_a_session_key_file_missing_or_empty_names_its_setting(
    tmp_path: Path, content: str | None
) -> None:
    secret = tmp_path / "secret"
    if content is not None:
        secret.write_text(content)
    settings = Settings.from_env({"TILEJUDGE_SESSION_KEY_FILE": str(secret)})

    with pytest.raises(SettingsError, match="TILEJUDGE_SESSION_KEY_FILE"):
        settings.session_key_value()


# -- Secure -------------------------------------------------------------------------------------


def test_the_cookie_is_secure_when_the_public_url_is_https(pipe: Pipeline, tmp_path: Path) -> None:
    # A proxy that ends TLS speaks http to the API: the public URL says what browsers use.
    env = {"TILEJUDGE_PUBLIC_URL": "https://judge.example.org"}
    with api_process(pipe, tmp_path, env) as behind_proxy:
        response = sign_in(behind_proxy)

    assert response.status_code == 303
    assert "secure" in response.headers["set-cookie"].lower()


def test_the_cookie_is_secure_when_the_request_came_over_https(
    pipe: Pipeline, tmp_path: Path
) -> None:
    with api_process(pipe, tmp_path, {}, base_url="https://testserver") as direct:
        response = sign_in(direct)

    assert "secure" in response.headers["set-cookie"].lower()


def test_the_cookie_is_not_secure_on_plain_http_without_a_public_url(pipe: Pipeline) -> None:
    response = sign_in(pipe.client)

    assert response.status_code == 303
    assert "secure" not in response.headers["set-cookie"].lower()


def test_a_burst_of_guesses_sent_at_once_gets_no_more_than_the_limit_answered(
    pipe: Pipeline,
) -> None:
    pipe.services.login_failures = LocalLimiter(5, what="failed sign-ins")
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda _: sign_in(pipe.client, "wrong").status_code, range(48)))

    assert answers.count(401) == 5
    assert answers.count(429) == 43
    assert sign_in(pipe.client).status_code == 429  # the right token too, until a minute passes
