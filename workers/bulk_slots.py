"""A live upload never waits for a pool process behind rejudge work.

The pool has more processes than there are bulk slots: `tilejudge up` starts
`TILEJUDGE_WORKERS + TILEJUDGE_STANDBY_WORKERS`, the slots being `TILEJUDGE_WORKERS`. A bulk
batch judges only while it holds a slot (an exclusive `flock` on one of the slot files, per
machine; the kernel drops it when its process dies), and lets it go before its recording
transaction, which needs the database more than a core. A process left without one waits, and on
the first live upload (`live_watch`) hands its batch back and returns, so Celery gives the upload
that process at once, instead of after whatever submission a bulk process is halfway through.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# Between looks at the slots (a non-blocking flock each) while a process waits; the live upload it
# gives way to wakes it at once.
POLL_S = 0.005


class BulkSlots:
    def __init__(self, directory: Path, count: int) -> None:
        self._paths = [directory / f"bulk-slot-{n}" for n in range(count)]
        directory.mkdir(parents=True, exist_ok=True)

    def try_take(self) -> int | None:
        """A held slot's open descriptor, or None if every slot is held."""
        candidates = self._open_all()
        taken = _lock_any(candidates)
        _close_all(candidates, but=taken)
        return taken

    @contextmanager
    def held(
        self, live_queued: Callable[[float], bool], give_up_after: float
    ) -> Iterator[Slot | None]:
        """Wait for a slot; yields it, held until the block ends or it is released, or None
        (holding none) as soon as a live upload is queued (`live_queued(timeout)` waits up to
        `timeout` for one), or after `give_up_after` seconds (the batch is then handed back
        too)."""
        deadline = time.monotonic() + give_up_after
        candidates = self._open_all()  # open once: a look is then one flock each
        taken = None
        try:
            taken = _lock_any(candidates)
            while taken is None:
                if live_queued(POLL_S) or time.monotonic() > deadline:
                    break
                taken = _lock_any(candidates)
        finally:
            _close_all(candidates, but=taken)
        if taken is None:
            yield None
            return
        slot = Slot(taken)
        try:
            yield slot
        finally:
            slot.release()

    def _open_all(self) -> list[int]:
        return [os.open(path, os.O_RDWR | os.O_CREAT, 0o600) for path in self._paths]


def _lock_any(fds: list[int]) -> int | None:
    """The first of `fds` this process could lock exclusively, or None."""
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return fd
    return None


def _close_all(fds: list[int], but: int | None) -> None:
    for fd in fds:
        if fd != but:
            os.close(fd)


class Slot:
    """A slot held by this process. A batch lets it go once its judging is done, so another
    process judges while this one records."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        """Let the slot go (closing the descriptor releases the lock); once only, so a number
        the kernel has since given to another file is never closed."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
