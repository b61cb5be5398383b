"""Publishing work to the broker, behind a port so intake, rejudging and the sweeper can be tested."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Protocol

LIVE_QUEUE = "live"
BULK_QUEUE = "bulk"
JUDGE_TASK = "tilejudge.judge_submission"  # one upload a message (what earlier versions sent)
JUDGE_GROUP_TASK = "tilejudge.judge_group"
REJUDGE_PRODUCE_TASK = "tilejudge.rejudge_produce"
REJUDGE_BATCH_TASK = "tilejudge.rejudge_batch"
PRELOAD_COMMAND = "tilejudge_preload"

# Small uploads ride along in the message, saving the worker an S3 read; S3 stays the record
# (the worker checks the digest, and the sweeper republishes without bytes).
INLINE_LIMIT = 256 * 1024
# A group message carries at most this many uploads, and inline bytes up to GROUP_INLINE (the
# rest the worker reads from S3): at most ~2 s of judging a message, and a few MiB in Redis.
GROUP_MOST = 8
GROUP_INLINE = 1024 * 1024


def split_group(
    uploads: Sequence[tuple[str, bytes | None]], spread: int = 1
) -> list[list[tuple[str, bytes | None]]]:
    """The messages for a group of uploads: at least `spread` of them (so that many idle worker
    processes share a small group at once), at most GROUP_MOST uploads each, in order."""
    if not uploads:
        return []
    count = max(min(len(uploads), spread), -(-len(uploads) // GROUP_MOST))
    size = -(-len(uploads) // count)
    return [list(uploads[start : start + size]) for start in range(0, len(uploads), size)]


def group_args(uploads: Sequence[tuple[str, bytes | None]]) -> tuple[list[str], list[str | None]]:
    """A group message's arguments: the ids, and each upload's bytes (base64) or None."""
    room = GROUP_INLINE
    inline: list[str | None] = []
    for _, data in uploads:
        if data is not None and len(data) <= min(room, INLINE_LIMIT):
            inline.append(base64.b64encode(data).decode("ascii"))
            room -= len(data)
        else:
            inline.append(None)
    return [sid for sid, _ in uploads], inline


class PublishFailed(RuntimeError):
    """The broker did not take the message; the sweeper will publish it later."""


class Publisher(Protocol):
    def publish(self, submission_id: str, data: bytes | None = None) -> None: ...
    def publish_group(
        self, uploads: Sequence[tuple[str, bytes | None]], spread: int = 1
    ) -> None: ...
    def start_rejudge(self, run_id: str) -> None: ...
    def preload(self, lexicon_ids: list[str]) -> None: ...


class CeleryPublisher:
    """Sends by task name, so the API process never imports the worker code."""

    def __init__(self, app: object) -> None:
        self._app = app

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        self.publish_group([(submission_id, data)])

    def publish_group(self, uploads: Sequence[tuple[str, bytes | None]], spread: int = 1) -> None:
        """Uploads to judge, a few to a message (see `split_group`), all the messages in one
        round trip to the broker (kombu's publish batch: one Redis pipeline)."""
        app: Any = self._app
        try:
            with app.producer_or_acquire() as producer, producer.batch():
                for part in split_group(uploads, spread):
                    app.send_task(
                        JUDGE_GROUP_TASK,
                        args=list(group_args(part)),
                        queue=LIVE_QUEUE,
                        retry=False,
                        producer=producer,
                    )
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc

    def start_rejudge(self, run_id: str) -> None:
        self._send(REJUDGE_PRODUCE_TASK, [run_id], BULK_QUEUE)

    def publish_batch(self, run_id: str, submission_ids: list[str]) -> None:
        self._send(REJUDGE_BATCH_TASK, [run_id, submission_ids], BULK_QUEUE)

    def preload(self, lexicon_ids: list[str]) -> None:
        """Ask every worker parent to load these word lists and refork its pool, so the
        children share them; best effort (a child loads what it lacks on its own)."""
        try:
            self._app.control.broadcast(  # type: ignore[attr-defined]
                PRELOAD_COMMAND, arguments={"lexicon_ids": lexicon_ids}, reply=False
            )
        except Exception as exc:
            raise PublishFailed(str(exc)) from exc

    def _send(self, task: str, args: Sequence[object], queue: str) -> None:
        try:
            self._app.send_task(task, args=args, queue=queue, retry=False)  # type: ignore[attr-defined]
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc


class InMemoryPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []
        self.groups: list[list[str]] = []  # the submissions of each message
        self.inline: dict[str, bytes] = {}
        self.rejudges: list[str] = []
        self.batches: list[tuple[str, list[str]]] = []
        self.preloaded: list[str] = []
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise PublishFailed("in-memory broker is down")

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        self.publish_group([(submission_id, data)])

    def publish_group(self, uploads: Sequence[tuple[str, bytes | None]], spread: int = 1) -> None:
        self._check()
        for part in split_group(uploads, spread):
            self.groups.append([sid for sid, _ in part])
            for (sid, data), carried in zip(part, group_args(part)[1], strict=True):
                self.published.append(sid)
                if carried is not None and data is not None:
                    self.inline[sid] = data

    def start_rejudge(self, run_id: str) -> None:
        self._check()
        self.rejudges.append(run_id)

    def publish_batch(self, run_id: str, submission_ids: list[str]) -> None:
        self._check()
        self.batches.append((run_id, list(submission_ids)))

    def preload(self, lexicon_ids: list[str]) -> None:
        self._check()
        self.preloaded += lexicon_ids
