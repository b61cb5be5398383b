"""In-memory fakes of the ports, for unit tests: `down = True` makes every call fail as an
outage would."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from core.errors import BlobNotFound, BlobStoreUnavailable, PublishFailed
from core.messages import Upload, group_args, split_group


class InMemoryBlobStore:
    """A fake for unit tests; `down = True` makes every call fail as an outage would."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.down = False
        self._lock = threading.Lock()

    def _check(self) -> None:
        if self.down:
            raise BlobStoreUnavailable("in-memory store is down")

    def put(
        self,
        key: str,
        data: bytes,
        content_type: str = "application/octet-stream",
        content_encoding: str | None = None,
    ) -> None:
        self._check()
        with self._lock:
            self.objects[key] = bytes(data)

    def get(self, key: str) -> bytes:
        self._check()
        try:
            return self.objects[key]
        except KeyError:
            raise BlobNotFound(key) from None

    def stream(self, key: str, piece: int = 64 * 1024) -> Iterator[bytes]:
        data = self.get(key)
        return (data[start : start + piece] for start in range(0, len(data), piece))

    def delete(self, key: str) -> None:
        self._check()
        with self._lock:
            self.objects.pop(key, None)

    def ping(self) -> None:
        self._check()


class InMemoryPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []
        self.asked: list[str] = []  # every upload it was asked to publish, down or not
        self.groups: list[list[str]] = []  # the submissions of each message
        self.priorities: dict[str, int] = {}  # each published upload's message priority
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

    def publish_group(self, uploads: Sequence[Upload], spread: int = 1, priority: int = 0) -> None:
        self.asked += [sid for sid, _ in uploads]
        self._check()
        for part in split_group(uploads, spread):
            self.groups.append([sid for sid, _ in part])
            for (sid, data), carried in zip(part, group_args(part)[1], strict=True):
                self.published.append(sid)
                self.priorities[sid] = priority
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
