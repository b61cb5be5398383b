"""A third game is one module and one registration call: the toy game of
`tests/games/wordcount.py`, loaded by TILEJUDGE_GAMES into the real app and a real Celery
worker on the real Redis, SeaweedFS and SQL store, goes through uploads, judging, standings,
reports, and a rejudge to another word list with its preview, with no change elsewhere."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import build_services, create_app
from core import clock
from core.games import names, unregister
from infra.settings import Settings
from tests.integration.test_worker_real import Worker, running_worker

pytestmark = pytest.mark.integration

ADMIN_TOKEN = "third-game-admin"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FIRST_LIST = "apple\nbanana\ncherry\n"
FIXED_LIST = "apple\nbanana\ncherry\ndate\nelder\n"


@pytest.fixture
def env(worker_env: dict[str, str]) -> dict[str, str]:
    return worker_env | {
        "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TILEJUDGE_GAMES": "tests.games.wordcount",
    }


@pytest.fixture
def client(env: dict[str, str]) -> Iterator[TestClient]:
    services = build_services(Settings.from_env(env))
    try:
        with TestClient(create_app(services, sweeper=False)) as test_client:
            yield test_client
    finally:
        services.intake.commits.close()
        services.store.engine.dispose()
        services.close_clients()
        unregister("wordcount")  # and forgotten, so the next app's loading registers it again
        sys.modules.pop("tests.games.wordcount", None)


@pytest.fixture
def worker(env: dict[str, str], tmp_path: Path) -> Iterator[Worker]:
    with running_worker(
        env, tmp_path / "worker.log", "solo", 1, "third", queues="live,bulk"
    ) as started:
        yield started


def called(client: TestClient, method: str, path: str, **kwargs: Any) -> Any:
    response = client.request(method, path, **kwargs)
    assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
    return response.json()


def wait_until(check: Any, worker: Worker, within: float = 45.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        worker.check_alive()
        time.sleep(0.2)
    pytest.fail(f"not done within {within} s:\n{worker.log_path.read_text()[-3000:]}")


def test_a_game_defined_in_one_test_module_is_judged_ranked_reported_and_rejudged(
    client: TestClient, worker: Worker
) -> None:
    assert "wordcount" in names()  # loaded by TILEJUDGE_GAMES when the app was built
    games = called(client, "GET", "/v1/games")["games"]
    assert {"name": "wordcount", "rules": "scheme", "shared_uploads": False} in games
    first = called(client, "POST", "/v1/lexicons", params={"name": "first"}, content=FIRST_LIST,
                   headers={**ADMIN, "Content-Type": "text/plain"})  # fmt: skip
    fixed = called(client, "POST", "/v1/lexicons", params={"name": "fixed"}, content=FIXED_LIST,
                   headers={**ADMIN, "Content-Type": "text/plain"})  # fmt: skip
    now = datetime.now(UTC)
    contest = called(client, "POST", "/v1/contests", headers=ADMIN, json={
        "id": "wc", "title": "Word count", "lexicon": "first", "game": "wordcount",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
    })  # fmt: skip
    assert contest["game"] == "wordcount"
    # Its rules data has routes of its own, named after what the game calls it.
    assert [s["name"] for s in called(client, "GET", "/v1/schemes", headers=ADMIN)["schemes"]] == [
        "one-each"
    ]
    teams = {
        name: called(client, "POST", "/v1/contests/wc/teams", json={"name": name}, headers=ADMIN)
        for name in ("ants", "bees")
    }
    uploads = {"ants": b"apple banana date date elder fig", "bees": b"cherry apple"}
    ids = {
        name: called(
            client, "POST", "/v1/contests/wc/submissions", content=uploads[name],
            headers={"Authorization": f"Bearer {teams[name]['token']}",
                     "Content-Type": "text/plain"},
        )["id"]
        for name in uploads
    }  # fmt: skip

    def board() -> list[dict[str, Any]] | None:
        entries = called(client, "GET", "/v1/contests/wc/leaderboard")["entries"]
        return entries if len(entries) == 2 else None

    ranked = wait_until(board, worker)
    assert [(e["team"], e["score"]) for e in ranked] == [("ants", 2), ("bees", 2)]
    shown = called(client, "GET", f"/v1/submissions/{ids['ants']}", headers=ADMIN)
    assert (shown["state"], shown["score"], shown["result"]) == ("judged", 2, {"score": 2})
    assert not {"legal", "illegal"} & set(shown)  # Wordytaire's, which this game has none of
    report = called(client, "GET", f"/v1/submissions/{ids['ants']}/report", headers=ADMIN)
    assert report == {"submission": ids["ants"], "contest": "wc", "score": 2,
                      "known": ["apple", "banana"], "unknown": 3}  # fmt: skip

    run = called(client, "POST", "/v1/contests/wc/rejudges", json={"lexicon": "fixed"},
                 headers=ADMIN)  # fmt: skip

    def ready() -> dict[str, Any] | None:
        found = called(client, "GET", f"/v1/rejudges/{run['id']}", headers=ADMIN)
        return found if found["state"] == "ready" else None

    preview = wait_until(ready, worker)
    assert preview["changed"] == [
        {"submission": ids["ants"], "team": "ants", "old_score": 2, "new_score": 4}
    ]
    assert preview["rank_changes"] == []  # ants led on the earlier receipt, and still lead
    called(client, "POST", f"/v1/rejudges/{run['id']}/apply", headers=ADMIN)
    after = called(client, "GET", "/v1/contests/wc/leaderboard")["entries"]
    assert [(e["team"], e["score"]) for e in after] == [("ants", 4), ("bees", 2)]
    assert called(client, "GET", "/v1/contests/wc", headers=ADMIN)["lexicon"] == fixed["id"]
    assert first["id"] != fixed["id"]
