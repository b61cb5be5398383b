"""A team reading a submission that failed on an S3 or SQL error sees a reason code and a plain
sentence: no endpoint, bucket, key, constraint or driver text, which stay in the logs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import core.judging
from core.errors import BlobStoreUnavailable, StoreUnavailable
from core.judging import Outcome, judge_group
from core.records import Claim, JudgedResult
from devstack.testing.pipeline import Pipeline, open_pipeline, worker_deps
from infra.sql.store import SqlStore

ENDPOINT = "http://seaweedfs.internal:8333"
BUCKET = "tilejudge-prod"
CONSTRAINT = "uq_results_ruleset"
S3_ERROR = (
    f'Could not connect to the endpoint URL: "{ENDPOINT}/{BUCKET}/uploads/open/{{key}}" '
    "(botocore.exceptions.EndpointConnectionError)"
)
SQL_ERROR = (
    "the results store failed: (psycopg.errors.UniqueViolation) duplicate key value violates "
    f'unique constraint "{CONSTRAINT}"\nDETAIL:  Key (submission_id, lexicon_id, layout_id) '
    "already exists."
)


class DownStore(SqlStore):
    """The SQL store, failing every recording transaction as PostgreSQL's driver would."""

    def record_results(
        self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
    ) -> set[str]:
        raise StoreUnavailable(SQL_ERROR)


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest("open")
        yield pipeline


class RecordedLog:
    """Stands in for the worker's logger: every entry kept, whatever structlog has cached."""

    def __init__(self) -> None:
        self.entries: list[dict[str, object]] = []

    def __getattr__(self, level: str) -> object:
        return lambda event, **fields: self.entries.append({"event": event, **fields})


def leaked(body: object, *words: str) -> list[str]:
    text = str(body)
    return [word for word in words if word in text]


def test_a_submission_failed_on_an_s3_error_shows_its_team_only_a_code_and_a_sentence(
    pipe: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = pipe.add_team("ravens")
    sid = pipe.accepted(team, b"0 0 2 0 cat\n")["id"]
    key = pipe.store.get_submission(sid).blob_key  # type: ignore[union-attr]

    def down(asked: str) -> bytes:
        raise BlobStoreUnavailable(S3_ERROR.format(key=asked))

    monkeypatch.setattr(pipe.blobs, "get", down)
    deps = worker_deps(pipe.services)
    deps.max_attempts = 1  # the last attempt: failed for good

    logs = RecordedLog()
    monkeypatch.setattr(core.judging, "log", logs)
    assert judge_group(deps, [sid]) == {sid: Outcome.FAILED}

    body = pipe.client.get(f"/v1/submissions/{sid}", headers=team.headers).json()
    assert (body["state"], body["reason"]) == ("failed", "storage_unavailable")
    assert body["failure"] == "File storage was unavailable; judging was retried."
    assert leaked(body, ENDPOINT, "seaweedfs", BUCKET, key, "botocore", "uploads/") == []
    assert any(ENDPOINT in str(entry.get("error", "")) for entry in logs.entries)  # operators


def test_a_submission_failed_on_an_sql_error_shows_no_constraint_or_driver_text(
    pipe: Pipeline,
) -> None:
    team = pipe.add_team("ravens")
    sid = pipe.accepted(team, b"0 0 2 0 cat\n")["id"]
    deps = worker_deps(pipe.services)
    deps.store = DownStore(pipe.store.engine)
    deps.max_attempts = 1

    assert judge_group(deps, [sid]) == {sid: Outcome.FAILED}

    body = pipe.client.get(f"/v1/submissions/{sid}", headers=team.headers).json()
    assert (body["state"], body["reason"]) == ("failed", "database_unavailable")
    assert leaked(body, CONSTRAINT, "psycopg", "DETAIL", "UniqueViolation", "Key (") == []


def test_text_recorded_before_reason_codes_is_never_shown_to_a_team(pipe: Pipeline) -> None:
    team = pipe.add_team("ravens")
    sid = pipe.accepted(team, b"0 0 2 0 cat\n")["id"]
    with pipe.store.write() as (conn, _):  # a row failed before codes were recorded
        conn.exec_driver_sql(
            "UPDATE submissions SET state = 'failed', failure = ? WHERE id = ?",
            (f"BlobStoreUnavailable: {S3_ERROR.format(key='x')}", sid),
        )

    body = pipe.client.get(f"/v1/submissions/{sid}", headers=team.headers).json()

    assert body["reason"] == "storage_unavailable"
    assert leaked(body, ENDPOINT, BUCKET, "botocore") == []
