"""Signing the contests' transparency logs: the deployment's key, each contest's origin, and
the thread that hashes new entries into the trees and signs their checkpoints every second.

One key signs every contest's log; a log is told apart by its origin line,
`<key name>/contests/<contest id>`, so a checkpoint of one contest can never pass for
another's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from core.ports import TransparencyLogs
from core.tlog import Checkpoint, Signer, sign_checkpoint

log = structlog.get_logger("tilejudge.log")
SEQUENCE_EVERY_S = 1.0  # a new checkpoint at most this long after an entry commits


class LogSigner:
    """The log key, and the checkpoints it signs."""

    def __init__(self, signer_key: str) -> None:
        self._signer = Signer.from_key(signer_key)

    @property
    def verifier_key(self) -> str:
        """The public key, as Go's note package and `tilejudge audit --key` read it."""
        return self._signer.verifier.key

    def origin(self, contest_id: str) -> str:
        return f"{self._signer.name}/contests/{contest_id}"

    def sign(self, contest_id: str, size: int, root: bytes) -> str:
        return sign_checkpoint(Checkpoint(self.origin(contest_id), size, root), self._signer)


# Signs a checkpoint: (contest id, tree size, root hash) -> the signed note's text.
Sign = Callable[[str, int, bytes], str]


class SequencerThread(threading.Thread):
    """Calls the store's `sequence` every `interval` seconds until stopped; an outage is
    logged and tried again at the next turn. Every API process runs one: the store lets one
    sequence at a time, and the others find nothing to do."""

    def __init__(
        self, store: TransparencyLogs, signer: LogSigner, interval: float = SEQUENCE_EVERY_S
    ):
        super().__init__(name="tilejudge-log-sequencer", daemon=True)
        self._store, self._signer, self._interval = store, signer, interval
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self._interval):
            try:
                self._store.sequence(self._signer.sign)
            except Exception as exc:  # an outage, or a bug: the next turn tries again
                log.warning("log.sequence_failed", error=str(exc)[:300])

    def stop(self) -> None:
        self._halt.set()
