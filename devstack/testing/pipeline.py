"""An in-process pipeline for API tests and benchmarks: SQLite in tmp_path, in-memory S3 and
broker, TestClient.

`open_pipeline(tmp_path)` builds it; `drain(services)` plays the workers, judging every message
the in-memory broker was handed (again, if it was handed one twice: delivery is at least once).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from api.app import create_app
from api.services import Services
from core import clock
from core.fakes import InMemoryBlobStore, InMemoryPublisher
from core.games import DEFAULT
from core.judging import Outcome, WorkerDeps, judge_group
from core.states import SubmissionState
from infra import compose
from infra.ratelimit import RateLimiter
from infra.settings import Settings
from infra.sql.engine import make_engine
from infra.sql.migrate import upgrade
from infra.sql.store import SqlStore

ADMIN_TOKEN = "admin-token"
RECEIPT_KEY = "k"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TINY_WORDS = ("cat", "at", "ate", "tea", "eat", "tab", "bat", "cab", "by")

_migrated: dict[str, Path] = {}  # one migrated database per session, copied for each test


@dataclass(frozen=True)
class TeamLogin:
    id: str
    name: str
    token: str
    contest: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class Pipeline:
    services: Services
    client: TestClient
    store: SqlStore
    blobs: InMemoryBlobStore
    publisher: InMemoryPublisher
    teams: dict[str, TeamLogin] = field(default_factory=dict)

    def add_lexicon(
        self, words: tuple[str, ...] = TINY_WORDS, name: str = "tiny"
    ) -> dict[str, Any]:
        body = "".join(word + "\n" for word in words)
        response = self.client.post(
            "/v1/lexicons", params={"name": name}, content=body,
            headers={**ADMIN, "Content-Type": "text/plain"},
        )  # fmt: skip
        assert response.status_code == 201, response.text
        return dict(response.json())

    def add_contest(
        self,
        contest_id: str = "open",
        *,
        opens_in: float = -3600,
        closes_in: float = 3600,
        lexicon: str = "tiny",
        game: str = DEFAULT,
    ) -> dict[str, Any]:
        """A contest opening/closing that many seconds from now (negative: in the past)."""
        if lexicon == "tiny" and self.store.find_lexicon("tiny") is None:
            self.add_lexicon()
        now = datetime.now(UTC)
        body = {
            "id": contest_id, "title": f"Contest {contest_id}", "lexicon": lexicon, "game": game,
            "opens_at": clock.format_time(now + timedelta(seconds=opens_in)),
            "closes_at": clock.format_time(now + timedelta(seconds=closes_in)),
        }  # fmt: skip
        response = self.client.post("/v1/contests", json=body, headers=ADMIN)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def add_team(self, name: str, contest: str = "open", uploads_logs: bool = False) -> TeamLogin:
        response = self.client.post(
            f"/v1/contests/{contest}/teams",
            json={"name": name, "uploads_logs": uploads_logs},
            headers=ADMIN,
        )
        assert response.status_code == 201, response.text
        body = response.json()
        team = TeamLogin(id=body["id"], name=body["name"], token=body["token"], contest=contest)
        self.teams[name] = team
        return team

    def upload(self, team: TeamLogin, data: bytes, contest: str | None = None) -> httpx.Response:
        """An upload, answered, then published and marked `queued` (or refused by the broker)
        by intake's publishing thread, as the tests expect to find it."""
        response: httpx.Response = self.client.post(
            f"/v1/contests/{contest or team.contest}/submissions", content=data,
            headers={**team.headers, "Content-Type": "text/plain"},
        )  # fmt: skip
        if response.status_code == 202 and "x-tilejudge-duplicate" not in response.headers:
            self.settle(response.json()["id"])
        return response

    def settle(self, submission_id: str, timeout: float = 10.0) -> None:
        """Wait for the publishing thread to be done with an upload."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if submission_id in self.publisher.asked and (
                submission_id not in self.publisher.published  # the broker was down
                or self.state(submission_id) != SubmissionState.STORED
            ):
                return
            time.sleep(0.002)
        raise AssertionError(f"upload {submission_id} was not published in {timeout} s")

    def accepted(self, team: TeamLogin, data: bytes) -> dict[str, Any]:
        response = self.upload(team, data)
        assert response.status_code == 202, response.text
        return dict(response.json())

    def state(self, submission_id: str) -> str:
        return str(self.submission(submission_id)["state"])

    def submission(self, submission_id: str) -> dict[str, Any]:
        response = self.client.get(f"/v1/submissions/{submission_id}", headers=ADMIN)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def events(self) -> list[dict[str, Any]]:
        return self.store.events_after(0, 1_000_000)

    def uploads(self) -> dict[str, bytes]:
        return {k: v for k, v in self.blobs.objects.items() if k.startswith("uploads/")}


def settings_for(home: Path) -> Settings:
    return Settings.from_env({
        "TILEJUDGE_HOME": str(home),
        "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TILEJUDGE_RECEIPT_KEY": RECEIPT_KEY,
    })  # fmt: skip


@contextmanager
def open_pipeline(tmp_path: Path, limiter: RateLimiter | None = None) -> Iterator[Pipeline]:
    """The API on a fresh migrated SQLite file, with fakes for S3 and the broker."""
    database = tmp_path / "tilejudge.sqlite3"
    shutil.copyfile(_migrated_template(), database)
    engine = make_engine(f"sqlite:///{database}")
    store = SqlStore(engine)
    blobs = InMemoryBlobStore()
    publisher = InMemoryPublisher()
    parts = compose.api_parts(
        settings_for(tmp_path), store=store, blobs=blobs, publisher=publisher, with_redis=False,
        limiter=limiter,
    )  # fmt: skip
    services = Services(**vars(parts))
    try:
        with TestClient(create_app(services, sweeper=False)) as client:
            yield Pipeline(services, client, store, blobs, publisher)
    finally:
        services.intake.commits.close()
        engine.dispose()


def _migrated_template() -> Path:
    """Alembic costs a fraction of a second a run; migrate once, then copy the file."""
    if "path" not in _migrated:
        directory = Path(tempfile.mkdtemp(prefix="tilejudge-schema-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        path = directory / "template.sqlite3"
        engine = make_engine(f"sqlite:///{path}")
        try:
            upgrade(engine)
        finally:
            engine.dispose()  # the last connection to close checkpoints the WAL into the file
        assert not path.with_name(path.name + "-wal").exists()
        _migrated["path"] = path
    return _migrated["path"]


def worker_deps(services: Services) -> WorkerDeps:
    """What a worker process judges with, over the pipeline's store, blobs and publisher."""
    publisher = services.intake.publisher
    assert isinstance(publisher, InMemoryPublisher)
    settings, store, blobs = services.settings, services.store, services.blobs
    assert isinstance(store, SqlStore)  # what open_pipeline builds
    return compose.worker_deps(
        settings, rulesets=compose.rulesets(settings, store, blobs),
        publish_batch=publisher.publish_batch, store=store, blobs=blobs, with_redis=False,
    )  # fmt: skip


def drain(services: Services) -> list[tuple[str, Outcome]]:
    """Judge every message published so far, in order, as a worker would."""
    publisher = services.intake.publisher
    assert isinstance(publisher, InMemoryPublisher)
    deps = worker_deps(services)
    return [(sid, judge_group(deps, [sid])[sid]) for sid in list(publisher.published)]
