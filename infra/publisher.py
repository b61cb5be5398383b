"""Publishing work to the broker through Celery, behind `core.ports.Publisher`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from core.errors import PublishFailed
from core.messages import (
    BULK_QUEUE,
    FORGET_UPLOADS_COMMAND,
    HEAVY_PRIORITIES,
    JUDGE_GROUP_TASK,
    LIVE_QUEUE,
    MAKE_REPORT_TASK,
    PRELOAD_COMMAND,
    REJUDGE_BATCH_TASK,
    REJUDGE_PRODUCE_TASK,
    Upload,
    group_args,
    kept_beside,
    split_group,
)
from infra import broker_copies
from infra.bulk_hosts import BulkHosts


class CeleryPublisher:
    """Sends by task name, so the API process never imports the worker code. Given the
    broker's Redis (`copies`), it keeps small uploads' bytes beside their messages
    (`infra.broker_copies`); without, it carries them in the messages. Given the worker
    hosts that are up (`hosts`), it sends a rejudge batch to the queue of the host holding
    its uploads; without, to the shared one."""

    def __init__(
        self, app: object, copies: redis.Redis | None = None, hosts: BulkHosts | None = None
    ) -> None:
        self._app = app
        self._copies = copies
        self._hosts = hosts

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        self.publish_group([(submission_id, data)])

    def publish_group(self, uploads: Sequence[Upload], spread: int = 1, priority: int = 0) -> None:
        """Uploads to judge, a few to a message (see `split_group`), all the messages in one
        round trip to the broker (kombu's publish batch: one Redis pipeline), after the bytes
        kept beside them in another. A priority above 0 marks heavy uploads (the task's `heavy`
        argument: judged only in a heavy slot)."""
        app: Any = self._app
        beside = self._copies is not None
        messages = [group_args(part, beside) for part in split_group(uploads, spread)]
        try:
            if self._copies is not None:
                data = {sid: upload for sid, upload in uploads if upload is not None}
                kept = [sid for ids, inline in messages for sid in kept_beside(ids, inline)]
                if kept:
                    broker_copies.keep(self._copies, [(sid, data[sid]) for sid in kept])
            with app.producer_or_acquire() as producer, producer.batch():
                for args in messages:
                    app.send_task(
                        JUDGE_GROUP_TASK,
                        args=list(args),
                        kwargs={"heavy": priority} if priority else None,
                        priority=priority,
                        queue=LIVE_QUEUE,
                        retry=False,
                        producer=producer,
                    )
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc

    def hand_back(self, submission_ids: list[str], inline: list[str | None], heavy: int) -> None:
        """A heavy message back to the live queue as it came, behind the others of its priority."""
        try:
            self._app.send_task(  # type: ignore[attr-defined]
                JUDGE_GROUP_TASK,
                args=[submission_ids, inline],
                kwargs={"heavy": heavy},
                priority=heavy,
                queue=LIVE_QUEUE,
                retry=False,
            )
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc

    def make_report(self, submission_id: str) -> None:
        """A heavy upload's report, asked for by a read (`infra.report_asks`): to the live queue
        at a team's first heavy upload's priority, made in a heavy slot as such an upload is
        judged."""
        try:
            self._app.send_task(  # type: ignore[attr-defined]
                MAKE_REPORT_TASK,
                args=[submission_id],
                priority=HEAVY_PRIORITIES[0],
                queue=LIVE_QUEUE,
                retry=False,
            )
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc

    def start_rejudge(self, run_id: str) -> None:
        self._send(REJUDGE_PRODUCE_TASK, [run_id], BULK_QUEUE)

    def publish_batch(
        self, run_id: str, submission_ids: list[str], held_on: str | None = None
    ) -> None:
        """A rejudge batch, to the queue of `held_on` (the host holding its uploads) if that
        host is up, else to the shared one (`infra.bulk_hosts`)."""
        queue = BULK_QUEUE if self._hosts is None else self._hosts.queue_for(held_on)
        self._send(REJUDGE_BATCH_TASK, [run_id, submission_ids], queue)

    def preload(self, lexicon_ids: list[str]) -> None:
        """Ask every worker parent to load these word lists and refork its pool, so the
        children share them; best effort (a child loads what it lacks on its own)."""
        try:
            self._app.control.broadcast(  # type: ignore[attr-defined]
                PRELOAD_COMMAND, arguments={"lexicon_ids": lexicon_ids}, reply=False
            )
        except Exception as exc:
            raise PublishFailed(str(exc)) from exc

    def forget_uploads(self, digests: list[str]) -> None:
        """Ask every worker parent to drop these uploads from its host's upload cache; best
        effort (a host that misses it drops them as they expire)."""
        try:
            self._app.control.broadcast(  # type: ignore[attr-defined]
                FORGET_UPLOADS_COMMAND, arguments={"digests": digests}, reply=False
            )
        except Exception as exc:
            raise PublishFailed(str(exc)) from exc

    def _send(self, task: str, args: Sequence[object], queue: str) -> None:
        try:
            self._app.send_task(task, args=args, queue=queue, retry=False)  # type: ignore[attr-defined]
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc
