"""A team deleted (or changed) through one API process is forgotten by every other one at once:
the news goes through Redis (`api.token_news` over `infra.team_news`), so a second process that
remembered the team's token refuses it from the moment the news arrives, not UPLOADER_TTL_S
later."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from api.app import create_app
from api.services import Services
from api.token_news import TokenNews
from core.contests import token_hash
from devstack.testing.pipeline import ADMIN, Pipeline, open_pipeline, settings_for
from infra import compose
from infra.settings import Settings
from infra.sql.engine import make_engine
from infra.sql.store import SqlStore
from infra.team_news import RedisTeamNews

pytestmark = pytest.mark.integration
NEWS_WAIT_S = 10.0  # a bound on waiting for the news, never a speed asserted


@contextmanager
def second_process(pipe: Pipeline, home: Path, redis_url: str) -> Iterator[TestClient]:
    """Another API process over the pipeline's store, listening to the news in Redis."""
    engine = make_engine(str(pipe.store.engine.url))
    parts = compose.api_parts(
        settings_for(home), store=SqlStore(engine), blobs=pipe.blobs, publisher=pipe.publisher,
        with_redis=False,
    )  # fmt: skip
    news = RedisTeamNews(redis.Redis.from_url(redis_url))
    services = Services(**(vars(parts) | {"team_news": news}))
    try:
        with TestClient(create_app(services, sweeper=False)) as client:
            assert services.token_news.subscribed.wait(NEWS_WAIT_S)
            yield client
    finally:
        services.intake.commits.close()
        engine.dispose()


@pytest.mark.parametrize("change", ["delete", "take back game logs"])
def test_a_team_changed_in_one_process_is_forgotten_in_another_at_once(
    tmp_path: Path, redis_url: str, change: str
) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    with open_pipeline(tmp_path / "first") as pipe:
        pipe.add_contest("open")
        team = pipe.add_team("ravens")
        first = pipe.services
        news = RedisTeamNews(redis.Redis.from_url(redis_url))
        first.token_news = TokenNews(news, first.uploaders)
        with second_process(pipe, tmp_path / "second", redis_url) as other:
            services: Services = other.app.state.services  # type: ignore[attr-defined]
            seen = other.get("/clics/contests/open", headers=team.headers)
            assert seen.status_code == 200
            assert services.uploaders.recall(token_hash(team.token)) is not None

            if change == "delete":
                gone = pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN)
            else:
                gone = pipe.client.patch(
                    f"/v1/teams/{team.id}", json={"uploads_logs": False}, headers=ADMIN
                )
            assert gone.status_code == 200, gone.text

            assert services.token_news.wait_heard(1, NEWS_WAIT_S)
            assert services.uploaders.recall(token_hash(team.token)) is None
            after = other.get("/clics/contests/open", headers=team.headers)
            assert after.status_code == (401 if change == "delete" else 200)


class Forgettings:
    """The uploaders' memory as the news finds it: what it was told to forget."""

    def __init__(self) -> None:
        self.teams: list[str] = []
        self.contests: list[str] = []
        self.all = 0

    def forget_team(self, team_id: str) -> None:
        self.teams.append(team_id)

    def forget_contest(self, contest_id: str) -> None:
        self.contests.append(contest_id)

    def forget_all(self) -> None:
        self.all += 1


def test_a_lost_subscription_is_taken_again_and_everything_remembered_forgotten(
    redis_url: str,
) -> None:
    client = redis.Redis.from_url(redis_url)
    forgettings = Forgettings()
    news = TokenNews(RedisTeamNews(client), forgettings)
    news.start()
    try:
        assert news.subscribed.wait(NEWS_WAIT_S)
        assert forgettings.all == 1  # news told before it subscribed may have been missed
        news.subscribed.clear()
        assert client.client_kill_filter(_type="pubsub") >= 1

        assert news.subscribed.wait(NEWS_WAIT_S)
        assert forgettings.all == 2  # and again, news told while it was away
        RedisTeamNews(client).tell("contest open")
        assert news.wait_heard(1, NEWS_WAIT_S)
        assert (forgettings.contests, forgettings.teams) == (["open"], [])
    finally:
        news.stop()
        client.close()


def test_without_redis_a_process_forgets_on_its_own(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        pipe.add_contest("open")
        team = pipe.add_team("ravens")
        assert pipe.client.get("/clics/contests/open", headers=team.headers).status_code == 200
        assert pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN).status_code == 200
        assert pipe.client.get("/clics/contests/open", headers=team.headers).status_code == 401


def test_a_settings_check_refuses_a_wildcard_proxy() -> None:
    from infra.settings import SettingsError

    with pytest.raises(SettingsError, match="FORWARDED_ALLOW_IPS"):
        Settings.from_env({"FORWARDED_ALLOW_IPS": "*"})
    assert Settings.from_env({"FORWARDED_ALLOW_IPS": "10.0.0.2, 172.16.0.0/12"})
