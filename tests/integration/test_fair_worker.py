"""A real prefork worker keeps a process for light uploads while heavy ones queue: a light
upload sent after a team's flood of heavy ones is judged while the first heavy one still runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from core.messages import heavy_priority
from core.states import SubmissionState
from infra.publisher import CeleryPublisher
from infra.sql.store import SqlStore
from judge import Lexicon
from tests.integration.test_worker_real import (  # noqa: F401 (fixtures)
    ROOT,
    Worker,
    celery_app,
    prepare_contest,
    running_worker,
    store_upload,
    wait_until_settled,
    words,
)

pytestmark = pytest.mark.integration

HEAVY_LINES = 400_000  # about a second of judging each


@pytest.fixture
def prefork_worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Worker]:
    """Two pool processes: one heavy slot, one standby (as `tilejudge up` runs them, smaller)."""
    env = worker_env | {"TILEJUDGE_WORKERS": "1", "TILEJUDGE_STANDBY_WORKERS": "1"}
    with running_worker(env, tmp_path / "worker.log", "prefork", 2, "fair", stop_s=30) as started:
        yield started


def test_a_light_upload_is_judged_while_a_flood_of_heavy_ones_runs(
    store: SqlStore,
    blobs: object,
    celery_app: Celery,  # noqa: F811
    prefork_worker: Worker,
    words: list[str],  # noqa: F811
) -> None:
    team = prepare_contest(store, blobs, Lexicon.from_words(words))  # type: ignore[arg-type]
    publisher = CeleryPublisher(celery_app)
    flood = []
    for n in range(4):
        data = b"a\n" * HEAVY_LINES + b"#%d\n" % n
        sub = store_upload(store, blobs, team, data)  # type: ignore[arg-type]
        publisher.publish_group([(sub.id, None)], priority=heavy_priority(n))
        flood.append(sub.id)
    while not any(store.get_submission(sid).state == SubmissionState.JUDGING for sid in flood):  # type: ignore[union-attr]
        prefork_worker.check_alive()
        time.sleep(0.02)
    time.sleep(0.2)  # the standby process takes the next heavy one and waits for a slot
    light = store_upload(store, blobs, team, words[0].encode() + b" nope\n")  # type: ignore[arg-type]
    publisher.publish_group([(light.id, None)])

    # A bound, not the figure: four heavy uploads take about 4 s alone, and a minute each when
    # other processes keep both cores busy (the judges run niced, so they yield to them);
    # what is checked is the order.
    settled = wait_until_settled(store, [*flood, light.id], prefork_worker)

    assert {s.state for s in settled.values()} == {SubmissionState.JUDGED}
    light_at = settled[light.id].judged_at
    first_heavy_at = min(str(settled[sid].judged_at) for sid in flood)
    assert light_at is not None and str(light_at) < first_heavy_at, (
        f"light judged at {light_at}, the first heavy one at {first_heavy_at}"
    )
    handed_back = prefork_worker.log_path.read_text(errors="replace").count("handed_back")
    assert handed_back >= 1  # the standby process gave its heavy upload back for the light one
