"""Publishing judge work to the broker, behind a port so intake and the sweeper can be tested."""

from __future__ import annotations

import base64
from typing import Protocol

LIVE_QUEUE = "live"
JUDGE_TASK = "tilejudge.judge_submission"


class PublishFailed(RuntimeError):
    """The broker did not take the message; the sweeper will publish it later."""


# Small uploads ride along in the message, saving the worker an S3 read; S3 stays the record
# (the worker checks the digest, and the sweeper republishes without bytes).
INLINE_LIMIT = 256 * 1024


class Publisher(Protocol):
    def publish(self, submission_id: str, data: bytes | None = None) -> None: ...


class CeleryPublisher:
    """Sends by task name, so the API process never imports the worker code."""

    def __init__(self, app: object) -> None:
        self._app = app

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        args = [submission_id]
        if data is not None and len(data) <= INLINE_LIMIT:
            args.append(base64.b64encode(data).decode("ascii"))
        try:
            self._app.send_task(  # type: ignore[attr-defined]
                JUDGE_TASK, args=args, queue=LIVE_QUEUE, retry=False
            )
        except Exception as exc:  # kombu raises many connection error types
            raise PublishFailed(str(exc)) from exc


class InMemoryPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []
        self.down = False

    def publish(self, submission_id: str, data: bytes | None = None) -> None:
        if self.down:
            raise PublishFailed("in-memory broker is down")
        self.published.append(submission_id)
