"""A real Celery worker process (`celery -A workers.celery_app:app worker`) on the real Redis,
SeaweedFS and SQL store, judging uploads stored and published the way intake does it.

The worker runs as a subprocess because workers/celery_app.py builds its app and settings from
the environment when it is imported: a fresh process is the honest way to hand it ours.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery

from core import clock, report_blobs, tuning
from core.errors import BlobNotFound, PublishFailed, ReportPending
from core.intake import UPLOAD_CONTENT_TYPE
from core.messages import HEAVY_PRIORITIES
from core.records import Contest, Submission, Team
from core.registry import register_lexicon
from core.reports import Reports
from core.states import SubmissionState
from devstack.testing.word_lists import cached_list
from infra import broker_copies, report_asks
from infra.blobstore import S3BlobStore
from infra.compose import make_celery
from infra.publisher import CeleryPublisher
from infra.report_asks import RedisReportAsks
from infra.rulesets import RulesetCache
from infra.settings import Settings
from infra.sql.store import SqlStore
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def words() -> list[str]:
    """About 1300 real words: enough for the generator, small enough to load in no time."""
    every = cached_list("words_alpha.txt").read_text().split()
    return [word for word in every if 2 <= len(word) <= 5][::20]


@pytest.fixture
def celery_app(worker_env: dict[str, str]) -> Iterator[Celery]:
    app = make_celery(Settings.from_env(worker_env))
    yield app
    app.close()


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log_path: Path

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            log = self.log_path.read_text(errors="replace")
            pytest.fail(f"the worker exited with {self.process.returncode}:\n{log[-3000:]}")


@pytest.fixture
def worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Worker]:
    with running_worker(worker_env, tmp_path / "worker.log", "solo", 1, "it") as started:
        yield started


@contextmanager
def running_worker(
    env: dict[str, str],
    log_path: Path,
    pool: str,
    concurrency: int,
    name: str,
    stop_s: float = 15,
    queues: str = "live",
) -> Iterator[Worker]:
    """A Celery worker on the live queue (or those given), as a subprocess logging to
    `log_path`."""
    argv = [
        sys.executable, "-m", "celery", "-A", "workers.celery_app:app", "worker",
        "-Q", queues, "-c", str(concurrency), "--pool", pool,
        "-n", f"{name}-{uuid.uuid4().hex[:8]}@%h",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield Worker(process, log_path)
    finally:
        process.terminate()  # warm shutdown: finish the current task, then exit
        try:
            process.wait(stop_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def prepare_contest(store: SqlStore, blobs: S3BlobStore, lexicon: Lexicon) -> Team:
    layout = default_layout()
    register_lexicon(store, blobs, lexicon, name="subset", source="test", by="admin")
    store.add_rules(
        id=layout.id, name=layout.name, content=layout.to_json().decode(), created_by="system"
    )
    now = datetime.now(UTC)
    store.create_contest(
        Contest(
            id="it", title="Integration", lexicon_id=lexicon.id, rules_id=layout.id,
            opens_at=clock.format_time(now - timedelta(hours=1)),
            closes_at=clock.format_time(now + timedelta(hours=1)), created_at=clock.now(),
            game="wordytaire",
        )
    )  # fmt: skip
    return store.create_team(
        Team(id="team-it", contest_id="it", name="it", token_hash="0" * 64, created_at=clock.now())
    )


def store_upload(store: SqlStore, blobs: S3BlobStore, team: Team, data: bytes) -> Submission:
    """What intake does before it publishes: bytes to S3, then the row and its event."""
    submission_id = uuid.uuid4().hex
    key = f"uploads/{team.contest_id}/{team.id}/{submission_id}"
    blobs.put(key, data, UPLOAD_CONTENT_TYPE)
    now = clock.now()
    return store.store_submission(
        Submission(
            id=submission_id, contest_id=team.contest_id, team_id=team.id,
            sha256=hashlib.sha256(data).hexdigest(), size=len(data), blob_key=key,
            received_at=now, receipt="r" * 64, state=SubmissionState.STORED, state_at=now,
            attempts=0, judged_at=None, failure=None,
        )
    )  # fmt: skip


def wait_until_settled(store: SqlStore, ids: list[str], worker: Worker) -> dict[str, Submission]:
    """Each of `ids` judged or failed; a worker that exits fails the test at once, and a hang is
    the test timeout's to catch."""
    while True:
        now = {sid: store.get_submission(sid) for sid in ids}
        settled = {
            sid: s
            for sid, s in now.items()
            if s is not None and s.state in (SubmissionState.JUDGED, SubmissionState.FAILED)
        }
        if len(settled) == len(ids):
            return settled
        worker.check_alive()
        time.sleep(0.1)


def test_a_real_worker_judges_every_kind_of_message_as_the_offline_judge_does(
    store: SqlStore,
    blobs: S3BlobStore,
    celery_app: Celery,
    worker: Worker,
    words: list[str],
) -> None:
    lexicon, layout = Lexicon.from_words(words), default_layout()
    index = WordIndex.build(words)
    team = prepare_contest(store, blobs, lexicon)
    publisher = CeleryPublisher(celery_app)
    uploads = {
        store_upload(store, blobs, team, data).id: data
        for data in (generate(index, layout, seed=s, moves=30, illegal_share=0.2) for s in range(5))
    }
    inline, from_s3, *group = uploads
    # One rides in its message as intake sends it; one as the sweeper does, bytes in S3 only.
    for sid, data in ((inline, uploads[inline]), (from_s3, None)):
        publisher.publish(sid, data)
        assert store.mark_queued(sid)
    # One message for three uploads (the middle one's bytes read from S3).
    publisher.publish_group(
        [(sid, None if n == 1 else uploads[sid]) for n, sid in enumerate(group)], spread=1
    )

    settled = wait_until_settled(store, list(uploads), worker)

    events = assert_judged_as_offline(store, blobs, settled, uploads, lexicon)
    for sid in (inline, from_s3):
        assert [e["type"] for e in events if e.get("submission") == sid] == [
            "submission.stored",
            "submission.queued",
            "submission.judging",
            "submission.judged",
        ]
    about_group = [(e["type"], e["submission"]) for e in events if e.get("submission") in group]
    stored = [("submission.stored", sid) for sid in group]
    claimed = [("submission.judging", sid) for sid in group]
    judged = [("submission.judged", sid) for sid in group]
    assert about_group == stored + claimed + judged  # claimed together, recorded together


def test_a_real_worker_judges_the_bytes_kept_beside_its_message_then_drops_them(
    store: SqlStore,
    blobs: S3BlobStore,
    celery_app: Celery,
    worker: Worker,
    words: list[str],
    redis_url: str,
) -> None:
    lexicon, layout = Lexicon.from_words(words), default_layout()
    index = WordIndex.build(words)
    team = prepare_contest(store, blobs, lexicon)
    client = redis.Redis.from_url(redis_url)
    uploads = {
        store_upload(store, blobs, team, data).id: data
        for data in (generate(index, layout, seed=s, moves=30, illegal_share=0.2) for s in range(3))
    }
    # Gone from S3 until judged: only the copies beside the message can be judged.
    stored = {sid: store.get_submission(sid) for sid in uploads}
    for submission in stored.values():
        assert submission is not None
        blobs.delete(submission.blob_key)

    CeleryPublisher(celery_app, client).publish_group(list(uploads.items()), spread=1)
    assert broker_copies.kept(client, list(uploads)) == uploads

    settled = wait_until_settled(store, list(uploads), worker)

    assert broker_copies.kept(client, list(uploads)) == {}  # dropped once judged
    for sid, submission in stored.items():
        assert submission is not None
        blobs.put(submission.blob_key, uploads[sid], UPLOAD_CONTENT_TYPE)  # for the reports
    assert_judged_as_offline(store, blobs, settled, uploads, lexicon)
    client.close()


def test_a_real_worker_host_overwrites_a_deleted_teams_uploads_in_its_cache_when_told(
    store: SqlStore,
    blobs: S3BlobStore,
    celery_app: Celery,
    worker_env: dict[str, str],
    words: list[str],
    tmp_path: Path,
) -> None:
    """As in service: a pool process keeps what it judges, and the parent answers the team
    deletion's broadcast for the whole host."""
    lexicon, layout = Lexicon.from_words(words), default_layout()
    index = WordIndex.build(words)
    team = prepare_contest(store, blobs, lexicon)
    doomed, spared = (generate(index, layout, seed=s, moves=30) for s in (1, 2))
    uploads = {store_upload(store, blobs, team, data).id: data for data in (doomed, spared)}
    cache = Path(worker_env["TILEJUDGE_HOME"]) / "upload-cache"

    def kept() -> bytes:
        return b"".join(segment.read_bytes() for segment in cache.glob("*.seg"))

    log_path = tmp_path / "prefork.log"
    with running_worker(worker_env, log_path, "prefork", 1, "forget") as worker:
        publisher = CeleryPublisher(celery_app)
        publisher.publish_group(list(uploads.items()), spread=1)
        wait_until_settled(store, list(uploads), worker)
        assert doomed in kept() and spared in kept()

        publisher.forget_uploads([hashlib.sha256(doomed).hexdigest()])

        while doomed in kept():
            worker.check_alive()
            time.sleep(0.1)
        assert spared in kept()


def assert_judged_as_offline(
    store: SqlStore,
    blobs: S3BlobStore,
    settled: dict[str, Submission],
    uploads: dict[str, bytes],
    lexicon: Lexicon,
) -> list[dict[str, Any]]:
    """Each upload's result and report are the offline judge's; the event log, for more."""
    layout = default_layout()
    cache = RulesetCache(store, blobs, Path(tempfile.mkdtemp(prefix="tilejudge-rulesets-")))
    reports = Reports(store, blobs, cache, report_blobs.max_report_bytes(2 * 1024 * 1024))
    for submission_id, data in uploads.items():
        expected = judge(data, lexicon, layout)
        assert expected.legal > 0 and expected.illegal > 0  # both kinds of verdict are checked
        assert settled[submission_id].state == SubmissionState.JUDGED, settled[submission_id]
        result = store.current_result(submission_id)
        assert result is not None
        assert store.result_fields("wordytaire", [result.id]) == {
            result.id: {
                "score": expected.total,
                "legal": expected.legal,
                "illegal": expected.illegal,
            }
        }
        made = reports.stream(settled[submission_id], result)  # made on its first read
        report = json.loads(report_blobs.unpack(b"".join(made)))
        assert (report["submission"], report["contest"]) == (submission_id, "it")
        assert (report["total"], report["lexicon"], report["layout"]) == (
            expected.total,
            lexicon.id,
            layout.id,
        )
        assert len(report["lines"]) == data.count(b"\n")
    return store.events_after(0, 10_000)


def test_a_real_worker_makes_the_heavy_report_a_read_asked_for(
    store: SqlStore,
    blobs: S3BlobStore,
    celery_app: Celery,
    worker: Worker,
    words: list[str],
    redis_url: str,
) -> None:
    lexicon = Lexicon.from_words(words)
    team = prepare_contest(store, blobs, lexicon)
    publisher = CeleryPublisher(celery_app)
    heavy = b"0 0 2 0 cat\n" + b"a\n" * (tuning.HEAVY_BYTES // 2)
    sub = store_upload(store, blobs, team, heavy)
    publisher.publish_group([(sub.id, None)], priority=HEAVY_PRIORITIES[0])
    settled = wait_until_settled(store, [sub.id], worker)[sub.id]
    result = store.current_result(sub.id)
    assert result is not None
    with pytest.raises(BlobNotFound):
        blobs.stream(result.report_key)  # left to be asked for
    cache = RulesetCache(store, blobs, Path(tempfile.mkdtemp(prefix="tilejudge-rulesets-")))
    client = redis.Redis.from_url(redis_url)
    asks = RedisReportAsks(client, publisher.make_report)
    reports = Reports(store, blobs, cache, report_blobs.max_report_bytes(2 << 20), asks)

    with pytest.raises(ReportPending):
        reports.stream(settled, result)
    while True:  # the worker makes it (a hang is the test timeout's to catch)
        worker.check_alive()
        try:
            made = reports.stream(settled, result)
            break
        except ReportPending:
            time.sleep(0.1)

    report = json.loads(report_blobs.unpack(b"".join(made)))
    expected = judge(heavy, lexicon, default_layout())
    assert report == {"submission": sub.id, "contest": "it", **expected.to_json()}
    assert client.get(f"{report_asks.KEY}{sub.id}") is None  # the request is done with
    client.close()


def test_a_report_is_asked_once_while_pending_and_a_refusal_is_shown(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    sent: list[str] = []
    asks = RedisReportAsks(client, sent.append)

    assert asks.ask("s1") is None and asks.ask("s1") is None
    assert sent == ["s1"]
    asks.refused("s1", "its upload is gone")
    assert asks.ask("s1") == "its upload is gone"
    asks.done("s1")
    assert asks.ask("s1") is None and sent == ["s1", "s1"]

    def broken(submission_id: str) -> None:
        raise PublishFailed("the broker is down")

    failing = RedisReportAsks(client, broken)
    with pytest.raises(PublishFailed):
        failing.ask("s2")
    assert client.get(f"{report_asks.KEY}s2") is None  # the next read asks again
    assert asks.ask("s2") is None and sent == ["s1", "s1", "s2"]
    client.close()
