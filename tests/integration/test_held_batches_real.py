"""Rejudge batches on a real Celery worker and Redis go where the bytes are
(`infra.bulk_hosts`): the worker says its host is up, consumes its host's own queue and every
other host's that is up, and a rejudge's producer sends a batch to the queue of the host that
judged its uploads. A batch in another host's queue (that host busy, or gone) is taken too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery

from core.messages import REJUDGE_BATCH_TASK
from core.registry import register_lexicon
from core.states import RejudgeState
from infra.blobstore import S3BlobStore
from infra.bulk_hosts import announce, up_hosts
from infra.publisher import CeleryPublisher
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.store import SqlStore
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate
from tests.integration.test_worker_real import (
    Worker,
    celery_app,  # noqa: F401  (a fixture)
    prepare_contest,
    running_worker,
    store_upload,
    wait_until_settled,
    words,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.integration


def test_a_worker_takes_batches_from_its_hosts_queue_and_from_another_hosts(
    store: SqlStore,
    blobs: S3BlobStore,
    celery_app: Celery,  # noqa: F811
    worker_env: dict[str, str],
    words: list[str],  # noqa: F811
    redis_url: str,
    tmp_path: Path,
) -> None:
    lexicon, layout = Lexicon.from_words(words), default_layout()
    fixed = Lexicon.from_words(words[::2])  # the fix: half the words gone
    team = prepare_contest(store, blobs, lexicon)
    register_lexicon(store, blobs, fixed, name="fixed", source="test", by="admin")
    index = WordIndex.build(words)
    uploads = {
        store_upload(store, blobs, team, data).id: data
        for data in (generate(index, layout, seed=s, moves=30) for s in range(6))
    }
    client = redis.Redis.from_url(redis_url)
    announce(client, "elsewhere")  # another worker host, up but slow to take its batches

    with running_worker(
        worker_env, tmp_path / "worker.log", "solo", 1, "held", queues="live,bulk"
    ) as worker:
        mine = wait_for_host(worker, client, Path(worker_env["TILEJUDGE_HOME"]))
        CeleryPublisher(celery_app).publish_group(list(uploads.items()), spread=1)
        wait_until_settled(store, list(uploads), worker)
        assert holders(store, uploads) == {mine}

        # Batches in this host's queue and in the other's: this worker takes both.
        rejudges = SqlRejudgeRuns(store)
        run, _ = rejudges.start("it", fixed.id, layout.id, "full", "admin")
        ids = sorted(uploads)
        for queue, part in ((f"bulk.{mine}", ids[:3]), ("bulk.elsewhere", ids[3:])):
            celery_app.send_task(REJUDGE_BATCH_TASK, args=[run.id, part], queue=queue)
        wait_for_run(worker, rejudges, run.id)
        rejudges.apply(run.id, "admin")
        for sid, data in uploads.items():
            result = store.current_result(sid)
            assert result is not None and result.score == judge(data, fixed, layout).total

        # Back to the first list: the producer, on the worker, sends each batch to the
        # queue of its holder.
        back, _ = rejudges.start("it", lexicon.id, layout.id, "full", "admin")
        CeleryPublisher(celery_app).start_rejudge(back.id)
        ready = wait_for_run(worker, rejudges, back.id)
        assert (ready.done, ready.total) == (6, 6)
        assert holders(store, uploads) == {mine}
    client.close()


def holders(store: SqlStore, uploads: dict[str, bytes]) -> set[str | None]:
    found = [store.get_submission(sid) for sid in uploads]
    return {sub.held_on for sub in found if sub is not None}


def wait_for_host(worker: Worker, client: Any, home: Path) -> str:
    """The worker's host id, once the worker has said that host is up."""
    while True:
        worker.check_alive()
        held = home / "upload-cache" / "host-id"
        if held.exists() and (mine := held.read_text().strip()) in up_hosts(client):
            return mine
        time.sleep(0.1)


def wait_for_run(worker: Worker, rejudges: SqlRejudgeRuns, run_id: str) -> Any:
    while True:
        worker.check_alive()
        run = rejudges.get(run_id)
        if run is not None and run.state == RejudgeState.READY:
            return run
        time.sleep(0.1)
