"""Publishing work to the broker, behind a port so intake, rejudging and the sweeper can be tested."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Protocol

LIVE_QUEUE = "live"
BULK_QUEUE = "bulk"
JUDGE_TASK = "tilejudge.judge_submission"
REJUDGE_PRODUCE_TASK = "tilejudge.rejudge_produce"
REJUDGE_BATCH_TASK = "tilejudge.rejudge_batch"
PRELOAD_COMMAND = "tilejudge_preload"

# Small uploads ride along in the message, saving the worker an S3 read; S3 stays the record
# (the worker checks the digest, and the sweeper republishes without bytes).
INLINE_LIMIT = 256 * 1024


class PublishFailed(RuntimeError):
    """The broker did not take the message; the sweeper will publish it later."""


class Publisher(Protocol):
    def publish(self, submission_id: str, data: bytes | None = None) -> None: ...
    def start_rejudge(self, run_id: str) -> None: ...
    def preload(self, lexicon_ids: list[str]) -> None: ...


class CeleryPublisher:
    """Sends by task name, so the API process never imports the worker code."""

    def __init__(self, app: object) -> None:
        self._app = app

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        args = [submission_id]
        if data is not None and len(data) <= INLINE_LIMIT:
            args.append(base64.b64encode(data).decode("ascii"))
        self._send(JUDGE_TASK, args, LIVE_QUEUE)

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
        self.inline: dict[str, bytes] = {}
        self.rejudges: list[str] = []
        self.batches: list[tuple[str, list[str]]] = []
        self.preloaded: list[str] = []
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise PublishFailed("in-memory broker is down")

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        self._check()
        self.published.append(submission_id)
        if data is not None and len(data) <= INLINE_LIMIT:
            self.inline[submission_id] = data

    def start_rejudge(self, run_id: str) -> None:
        self._check()
        self.rejudges.append(run_id)

    def publish_batch(self, run_id: str, submission_ids: list[str]) -> None:
        self._check()
        self.batches.append((run_id, list(submission_ids)))

    def preload(self, lexicon_ids: list[str]) -> None:
        self._check()
        self.preloaded += lexicon_ids
