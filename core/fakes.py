"""In-memory fakes of every port, for unit tests: no SQL, no network, plain Python. On the
blob store, the broker and the stores, `down = True` makes every call fail as an outage would.

The stores' fakes live in modules of their own (`core.fake_store`, `core.fake_rejudges`,
`core.fake_contests`, `core.fake_ruleset_store`, `core.fake_disputes`, `core.fake_logs`) and are
named here too, so a test imports every fake from one place."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence

from core.errors import BlobNotFound, BlobStoreUnavailable, PublishFailed, UnknownRuleset
from core.fake_contests import InMemoryCaches, InMemoryContestStore, InMemoryTeamStore
from core.fake_disputes import InMemoryDisputes
from core.fake_logs import InMemorySessionStore, InMemoryTransparencyLogs
from core.fake_rejudges import InMemoryRejudgeStore
from core.fake_results import InMemoryResultReads
from core.fake_ruleset_store import InMemoryRulesetStore
from core.fake_store import InMemorySubmissionStore
from core.game import Rules
from core.games import game
from core.messages import Upload, group_args, split_group
from judge import Lexicon

__all__ = [
    "InMemoryBlobStore",
    "InMemoryCaches",
    "InMemoryContestStore",
    "InMemoryDisputes",
    "InMemoryPublisher",
    "InMemoryRejudgeStore",
    "InMemoryResultReads",
    "InMemoryRulesetStore",
    "InMemoryRulesets",
    "InMemorySessionStore",
    "InMemorySubmissionStore",
    "InMemoryTeamStore",
    "InMemoryTransparencyLogs",
    "InMemoryUploadCache",
]


class InMemoryBlobStore:
    """A fake for unit tests; `down = True` makes every call fail as an outage would."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.content_types: dict[str, str] = {}  # what each object was stored as
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
            self.content_types[key] = content_type

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
            self.content_types.pop(key, None)

    def ping(self) -> None:
        self._check()


class InMemoryUploadCache:
    """A fake of the host's upload cache: `reads` counts the gets, found or not."""

    def __init__(self, host: str | None = "host-1") -> None:
        self.kept: dict[str, bytes] = {}
        self.reads = 0
        self.host = host

    def get(self, sha256: str) -> bytes | None:
        self.reads += 1
        return self.kept.get(sha256)

    def put(self, sha256: str, data: bytes) -> None:
        self.kept[sha256] = bytes(data)


class InMemoryPublisher:
    def __init__(self) -> None:
        self.published: list[str] = []
        self.asked: list[str] = []  # every upload it was asked to publish, down or not
        self.groups: list[list[str]] = []  # the submissions of each message
        self.priorities: dict[str, int] = {}  # each published upload's message priority
        self.inline: dict[str, bytes] = {}
        self.rejudges: list[str] = []
        self.batches: list[tuple[str, list[str]]] = []
        self.batch_hosts: list[str | None] = []  # each batch's `held_on`
        self.preloaded: list[str] = []
        self.forgotten: list[str] = []  # digests the worker hosts were asked to forget
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

    def publish_batch(
        self, run_id: str, submission_ids: list[str], held_on: str | None = None
    ) -> None:
        self._check()
        self.batches.append((run_id, list(submission_ids)))
        self.batch_hosts.append(held_on)

    def preload(self, lexicon_ids: list[str]) -> None:
        self._check()
        self.preloaded += lexicon_ids

    def forget_uploads(self, digests: list[str]) -> None:
        self._check()
        self.forgotten += digests


class InMemoryRulesets:
    """Word lists by id, and each game's rules data (layouts, boards) by game name and id, from
    the dicts given; UnknownRuleset for any other id, worded as the worker's cache words it."""

    def __init__(
        self,
        lexicons: Mapping[str, Lexicon] | None = None,
        rules: Mapping[str, Mapping[str, Rules]] | None = None,
    ) -> None:
        self.lexicons = dict(lexicons or {})
        self.rules_by_game = {name: dict(by_id) for name, by_id in (rules or {}).items()}

    def lexicon(self, lexicon_id: str) -> Lexicon:
        try:
            return self.lexicons[lexicon_id]
        except KeyError:
            raise UnknownRuleset(f"no lexicon {lexicon_id}") from None

    def rules(self, game_name: str, rules_id: str) -> Rules:
        found = self.rules_by_game.get(game_name, {}).get(rules_id)
        if found is None:
            raise UnknownRuleset(f"no {game(game_name).rules_noun} {rules_id}")
        return found

    def diff(self, older_id: str, newer_id: str) -> tuple[frozenset[str], frozenset[str]]:
        """Words (added, removed) going from one list to the other."""
        return self.lexicon(older_id).diff(self.lexicon(newer_id))
