"""The Celery app of the judge workers, and the shared preloaded lexicon.

Importing this module reads no setting and connects nothing: the app is configured from the
environment when Celery first reads its configuration, and the host's parts are built by the
composition root (`infra.compose.worker_host`) in `worker_init`.

The parent loads the live lexicons in `worker_init`, before the prefork pool exists, then
`gc.freeze()`s them: children inherit the pages copy-on-write and, since set membership of an
exact `str` touches no reference count, keep sharing them. Each child opens its own SQL and
S3 connections in `worker_process_init` (sockets must not cross a fork).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import structlog
from celery.signals import worker_init, worker_process_init, worker_ready
from celery.worker.control import control_command

from core import tuning
from core.errors import PublishFailed
from core.judging import TRANSIENT, Outcome, RetryLater, WorkerDeps, judge_group
from core.messages import (
    BULK_QUEUE,
    JUDGE_GROUP_TASK,
    LIVE_QUEUE,
    MAKE_REPORT_TASK,
    PRELOAD_COMMAND,
    REJUDGE_BATCH_TASK,
    REJUDGE_PRODUCE_TASK,
    kept_beside,
    unpack_group,
)
from core.rejudging import judge_batch, produce
from core.reports import AskedReports
from infra import broker_copies, bulk_hosts, compose
from infra.logging import configure_logging
from infra.rulesets import RulesetCache, worth_preloading
from infra.settings import Settings
from infra.upload_cache import DiskUploadCache
from workers.bulk_slots import BulkSlots
from workers.live_watch import LiveWatch
from workers.scheduling import run_niced
from workers.soft_limit import SOFT_LIMIT_SIGNAL  # noqa: F401  (connects its task signals)

app = compose.worker_celery()
log = structlog.get_logger("tilejudge.worker")
T = TypeVar("T")
MAX_BACKOFF_S = 300  # the longest a retry waits, where the visibility timeout leaves room


class _Host:
    """This worker host's parts, built once by the composition root in `worker_init` (or on
    first use, in a process that did not start as a worker), and this process's judging
    dependencies, opened after the fork."""

    parts: compose.WorkerHost | None = None
    deps: WorkerDeps | None = None
    live: LiveWatch | None = None
    reports: AskedReports | None = None


def host() -> compose.WorkerHost:
    if _Host.parts is None:
        _Host.parts = compose.worker_host(Settings.from_env(), app)
    return _Host.parts


def deps() -> WorkerDeps:
    if _Host.deps is None:
        _Host.deps = host().deps()
    return _Host.deps


def asked_reports() -> AskedReports:
    if _Host.reports is None:
        _Host.reports = host().asked_reports(deps())
    return _Host.reports


def live_watch() -> LiveWatch:
    """This process's watch on the live queue (its thread starts with the first watch)."""
    if _Host.live is None:
        _Host.live = LiveWatch(host().redis, LIVE_QUEUE)
    return _Host.live


@worker_init.connect
def _preload_lexicons(sender: Any = None, **_: Any) -> None:
    configure_logging()
    parts = host()
    settings = parts.settings
    _lower_priority(settings.worker_nice)
    parts.pool_size = int(getattr(sender, "concurrency", 0) or 0)  # the children inherit it
    if settings.preload:
        _preload_wanted(parts)
    gc.collect()
    gc.freeze()  # keep the collector from touching (and so un-sharing) the preloaded pages
    log.info("worker.lexicons_preloaded", lexicons=parts.rulesets.loaded(), pid=os.getpid())


@worker_ready.connect
def _take_held_batches(sender: Any = None, **_: Any) -> None:
    """A worker taking bulk work says its host is up, and consumes the queue of the rejudge
    batches its host holds, then each other host's, after the shared one
    (`infra.bulk_hosts`). Without an upload cache it holds nothing: the shared queue alone."""
    if BULK_QUEUE not in sender.app.amqp.queues.consume_from:
        return
    held_on = compose.upload_cache(host().settings).host
    if held_on is None:
        return

    def consume(queue: str) -> None:
        app.control.add_consumer(
            queue, exchange=queue, routing_key=queue, destination=[sender.hostname], reply=False
        )

    def consuming(queue: str) -> bool:
        return bool(sender.task_consumer.consuming_from(queue))

    bulk_hosts.keep_announcing(host().redis, held_on, consume, consuming)


@worker_ready.connect
def _preload_what_came_meanwhile(sender: Any = None, **_: Any) -> None:
    """A word list registered, or a contest created, after `worker_init` looked and before
    this worker listened for broadcasts asked for a preload this host never heard (a stack
    starting up, or a host joining): look again now that it listens, and refork the pool if
    that loads anything, so its processes share it."""
    parts = host()
    try:
        if not parts.settings.preload or not _preload_wanted(parts):
            return
    except Exception as exc:  # best effort: a process loads what it lacks on its own
        log.warning("worker.preload_failed", error=f"{type(exc).__name__}: {exc}")
        return
    _refork_sharing(parts.rulesets, sender.controller.pool)


def _preload_wanted(parts: compose.WorkerHost) -> list[str]:
    """Load the lists worth keeping that are not loaded yet, with their diffs (what a rejudge
    of a live contest with a newer list asks first); the ids it loaded."""
    store = compose.make_store(parts.settings)
    try:
        wanted = worth_preloading(store)
    finally:
        store.engine.dispose()
    return parts.rulesets.preload_more(wanted)


def _refork_sharing(rulesets: RulesetCache, pool: Any) -> None:
    """After the parent loaded word lists: refork the pool (each child exits after its current
    task) so the new children share them copy-on-write."""
    rulesets.release_connections()
    gc.collect()
    gc.freeze()
    pool.restart()
    log.info("worker.lexicons_preloaded", lexicons=rulesets.loaded(), pid=os.getpid())


def _lower_priority(nice: int) -> None:
    """Judge at a lower CPU priority than intake (the pool inherits it): on shared cores at a
    deadline spike, uploads are accepted first and judged a little later, never the reverse.
    Only ever lowered (an unprivileged process could not raise it back)."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice > current:
        os.setpriority(os.PRIO_PROCESS, 0, nice)


@worker_process_init.connect
def _open_connections(**_: Any) -> None:
    _Host.deps = None
    _Host.live = None  # its lock and thread are this process's own
    kept = deps().upload_cache
    if isinstance(kept, DiskUploadCache):
        kept.keep_expiring()  # on an idle host too


@control_command(args=[("lexicon_ids", list)], signature="<lexicon_ids>")
def tilejudge_preload(state: Any, lexicon_ids: list[str] | None = None) -> dict[str, str]:
    """Runs in the worker parent: load these word lists and their diffs with the lists
    already pinned, then refork the pool (each child exits after its current task) so the new
    children share them copy-on-write."""
    rulesets = host().rulesets
    new = rulesets.preload_more(lexicon_ids or [])
    if not new:
        return {"ok": "already loaded"}
    _refork_sharing(rulesets, state.consumer.controller.pool)
    return {"ok": f"loaded {len(new)}"}


@control_command(args=[("digests", list)], signature="<digests>")
def tilejudge_forget_uploads(state: Any, digests: list[str] | None = None) -> dict[str, str]:
    """Runs in the worker parent: zero these uploads' records in the host's upload cache (a
    team's deletion), whichever of the host's processes wrote them."""
    kept = compose.upload_cache(host().settings)
    forgotten = kept.forget(digests or []) if isinstance(kept, DiskUploadCache) else 0
    return {"ok": f"forgot {forgotten}"}


@app.task(name=JUDGE_GROUP_TASK, bind=True)
def judge_group_task(
    self: Any, submission_ids: list[str], inline: list[str | None] | None = None, heavy: int = 0
) -> dict[str, str]:
    """The uploads of one message (see `core.messages.split_group`), each with its outcome.

    A heavy upload (`heavy`: its message's priority) judges only while it holds one of the
    host's TILEJUDGE_WORKERS heavy slots, so the standby processes stay free for light uploads;
    a process that finds none free waits, and hands the upload back at its priority as soon as
    a light upload is queued (or after BULK_SLOT_WAIT_S)."""
    carried = inline or [None] * len(submission_ids)
    if not heavy:
        return _judge(self, submission_ids, carried)
    judged = _in_heavy_slot(
        self,
        partial(_judge, self, submission_ids, carried, judging=run_niced),
        partial(host().publisher.hand_back, submission_ids, carried, heavy),
    )
    return dict.fromkeys(submission_ids, "handed_back") if judged is None else judged


@app.task(name=MAKE_REPORT_TASK, bind=True)
def make_report_task(self: Any, submission_id: str) -> str:
    """A heavy upload's report, asked for by its first read (`core.reports.AskedReports`):
    made in one of the host's heavy slots, niced, as a heavy upload is judged, and handed back
    at its priority when none frees up before a light upload is queued. An outage meanwhile
    fails the task, and the request lapses: the next read asks again."""
    made = _in_heavy_slot(
        self,
        partial(run_niced, partial(asked_reports().make, submission_id)),
        partial(host().publisher.make_report, submission_id),
    )
    return "handed_back" if made is None else made


def _in_heavy_slot(task: Any, work: Callable[[], T], hand_back: Callable[[], None]) -> T | None:
    """`work` while this process holds one of the host's TILEJUDGE_WORKERS heavy slots, so the
    standby processes stay free for light uploads; None if none frees up before a light upload
    is queued (or BULK_SLOT_WAIT_S passes), once `hand_back` sent the work back to the queue."""
    slots = BulkSlots(host().settings.home / "heavy-slots", _heavy_slots())
    with (
        live_watch().watching() as live_queued,
        slots.held(live_queued, give_up_after=tuning.BULK_SLOT_WAIT_S) as slot,
    ):
        if slot is not None:
            return work()
    try:
        hand_back()
    except PublishFailed as exc:
        raise _retry(task, exc, countdown=1) from exc
    return None


def _judge(
    task: Any,
    submission_ids: list[str],
    inline: list[str | None],
    judging: Callable[[Callable[[], Any]], Any] = lambda work: work(),
) -> dict[str, str]:
    carried = unpack_group(submission_ids, inline)
    beside = kept_beside(submission_ids, inline)
    carried |= broker_copies.kept(host().redis, beside)
    # A redelivered message means the attempt that held it died (its child was killed, or the
    # broker connection went): take its claims over at once instead of waiting for them to go
    # stale.
    redelivered = bool((task.request.delivery_info or {}).get("redelivered"))
    retried: set[str] = set()
    try:
        outcomes = judge_group(
            deps(), submission_ids, carried, take_over=redelivered, judging=judging
        )
    except RetryLater as exc:
        # Only the ones released for a retry go again, with their bytes.
        retried = set(exc.submission_ids)
        by_id = dict(zip(submission_ids, inline, strict=False))
        carry = [by_id.get(sid) for sid in exc.submission_ids]
        args = [exc.submission_ids, carry]
        raise _retry(task, exc, args=args, countdown=_backoff(task.request.retries)) from exc
    finally:
        # Kept for a retry of this message, and for its redelivery should this process die
        # first; otherwise done with (judged, failed for good, or skipped as judged already).
        broker_copies.drop(host().redis, [sid for sid in beside if sid not in retried])
    for sid, outcome in outcomes.items():
        if outcome is not Outcome.JUDGED:
            log.info("worker.outcome", submission=sid, outcome=outcome.value)
    return {sid: outcome.value for sid, outcome in outcomes.items()}


@app.task(name=REJUDGE_PRODUCE_TASK, bind=True)
def rejudge_produce_task(self: Any, run_id: str) -> int:
    worker_deps = deps()
    publisher = host().publisher
    run = worker_deps.rejudges.get(run_id)
    if run is not None and not host().rulesets.shares(run.lexicon_id, run.from_lexicon_id):
        # Before any batch goes out, so the pool shares both word lists from the first batch.
        # Wait for every worker's answer, not for the timeout: a broadcast collects replies
        # until `limit` have come.
        with contextlib.suppress(Exception):
            workers = len(app.control.ping(timeout=1.0))
            app.control.broadcast(
                PRELOAD_COMMAND,
                reply=True,
                timeout=30,
                limit=workers,
                arguments={"lexicon_ids": [run.lexicon_id, run.from_lexicon_id]},
            )
    try:
        return produce(worker_deps, run_id, publisher.publish_batch)
    except TRANSIENT as exc:
        raise _retry(self, exc, countdown=_backoff(self.request.retries)) from exc


@app.task(name=REJUDGE_BATCH_TASK, bind=True)
def rejudge_batch_task(self: Any, run_id: str, submission_ids: list[str]) -> int:
    parts = host()
    publisher, settings = parts.publisher, parts.settings
    slots = BulkSlots(settings.home / "bulk-slots", settings.workers)
    # With a process to spare for live uploads, a bulk one finishes its batch; without, it
    # hands the rest back between submissions when a live upload waits.
    standby = parts.pool_size > settings.workers
    try:
        with (
            live_watch().watching() as live_queued,
            slots.held(live_queued, give_up_after=tuning.BULK_SLOT_WAIT_S) as slot,
        ):
            if slot is None:  # back to this host's queue (or the shared one)
                publisher.publish_batch(run_id, submission_ids, deps().upload_cache.host)
                return 0

            def judging(work: Callable[[], T]) -> T:
                try:
                    return run_niced(work)
                finally:
                    slot.release()  # the batch's recording transaction needs none

            return judge_batch(
                deps(),
                run_id,
                submission_ids,
                (lambda: False) if standby else (lambda: live_queued(0)),
                publisher.publish_batch,
                heavy=judging,
            )
    except TRANSIENT as exc:
        raise _retry(self, exc, countdown=_backoff(self.request.retries)) from exc


def _retry(task: Any, exc: Exception, **options: Any) -> Exception:
    """The task tried again later, at most TILEJUDGE_MAX_ATTEMPTS times in all, after a
    countdown bounded by `retry_ceiling`."""
    settings = host().settings
    ceiling = retry_ceiling(settings.visibility_timeout, settings.task_time_limit)
    options["countdown"] = min(int(options.get("countdown") or 0), ceiling)
    retried: Exception = task.retry(exc=exc, max_retries=settings.max_attempts, **options)
    return retried


def retry_ceiling(visibility_timeout: int, task_time_limit: int) -> int:
    """The longest a retry waits. The worker holds a retried message unacknowledged through
    its countdown and then while the task runs; once that passes the broker's visibility
    timeout the broker hands the message out again, and during an outage every retry would
    become two. So the countdown and the time limit together stay a tenth of the timeout
    (at least a second) below it: 150 s at the defaults (300 s, 120 s)."""
    margin = max(1, visibility_timeout // 10)
    return max(1, min(MAX_BACKOFF_S, visibility_timeout - task_time_limit - margin))


def _heavy_slots() -> int:
    """All the pool's processes but the standby ones (at least one)."""
    settings = host().settings
    pool = host().pool_size or settings.workers + settings.standby_workers
    return max(1, pool - settings.standby_workers)


def _backoff(retries: int) -> int:
    """5, 10, 20, 40, 80, 160, then MAX_BACKOFF_S (`_retry` bounds it below the visibility
    timeout): eight attempts ride out several minutes of an S3 or SQL outage before an upload
    is called failed (an outage is ours, not the team's)."""
    return int(min(MAX_BACKOFF_S, 5 * 2**retries))
