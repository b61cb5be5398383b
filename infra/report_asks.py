"""Heavy uploads' reports asked of the workers, in Redis (`core.reports.ReportAsks`): a key per
submission says a request is pending (then no read sends another) or why a worker refused the
last one. A request lost on the way (its worker killed, the broker failed over) lapses with its
key, and the next read asks again."""

from __future__ import annotations

from collections.abc import Callable

import redis

from core.errors import PublishFailed

KEY = "tilejudge:report-asked:"  # and a submission id
PENDING = "pending"
REFUSED = "refused:"  # and the worker's reason
# A request is sent again after this: longer than a heavy report takes behind a deadline's
# backlog of light uploads, which jump it.
PENDING_S = 120
REFUSED_S = 600  # how long a refusal is shown before a read asks again


class RedisReportAsks:
    """`send` publishes the request (`CeleryPublisher.make_report`); a worker, which only
    answers, needs none."""

    def __init__(self, client: redis.Redis, send: Callable[[str], None] | None = None) -> None:
        self._client = client
        self._send = send

    def ask(self, submission_id: str) -> str | None:
        key = KEY + submission_id
        try:
            found = self._client.get(key)
            if isinstance(found, bytes) and found.startswith(REFUSED.encode()):
                return found[len(REFUSED) :].decode("utf-8", "replace")
            if found is not None or not self._client.set(key, PENDING, nx=True, ex=PENDING_S):
                return None  # asked already
        except redis.RedisError as exc:
            raise PublishFailed(f"asking for the report of {submission_id}: {exc}") from exc
        try:
            if self._send is None:
                raise PublishFailed("no way to send a request here")
            self._send(submission_id)
        except Exception:
            self._client.delete(key)  # the next read asks again
            raise
        return None

    def refused(self, submission_id: str, reason: str) -> None:
        self._client.set(KEY + submission_id, REFUSED + reason, ex=REFUSED_S)

    def done(self, submission_id: str) -> None:
        self._client.delete(KEY + submission_id)
