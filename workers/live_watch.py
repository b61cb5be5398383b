"""Knowing at once that a light live upload is queued, without polling the broker.

A process waiting for a bulk slot gives way to the first light live upload (`bulk_slots`).
Asking the broker every few milliseconds (an LLEN) costs a few percent of a core for every
waiting process, and the upload still waits up to one interval. Instead, one thread per process
blocks in `BLMOVE live live RIGHT RIGHT` while someone watches: taking a list's last element and
putting it back where it was changes nothing, and Redis (6.2 or later) holds the command until
the list has an element. The thread wakes as the upload is queued and leaves it in place, next
in line for the worker; the command is atomic, so no other client ever sees the list without it.

A broker without BLMOVE (older than 6.2) gets the LLEN poll instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import structlog
from redis.exceptions import RedisError, ResponseError

if TYPE_CHECKING:
    import redis

log = structlog.get_logger()

# How long one BLMOVE blocks: the thread notices within this that the watch has ended. Well
# inside the client's socket timeout, so a blocked command is never taken for a dead broker.
BLOCK_S = 1
# After a broker error, the next try; meanwhile no live upload is seen (as the poll's LLEN).
RETRY_S = 0.5
# The poll's interval where the broker lacks BLMOVE: one LLEN each.
POLL_S = 0.005


class LiveWatch:
    """Whether a live upload was queued since the current watch began (`watching`)."""

    def __init__(self, client: redis.Redis, queue: str) -> None:
        self._client = client
        self._queue = queue
        self._changed = threading.Condition()
        self._round = 0  # which watch is current; each `watching` begins a new one
        self._seen_in = -1  # the watch during which the thread saw an upload queued
        self._watching = False
        self._blocking = True  # False once the broker has refused BLMOVE
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self) -> Iterator[Callable[[float], bool]]:
        """Yields `queued(timeout)`: True as soon as a live upload is queued (waiting at most
        `timeout` seconds for one, 0 to just look)."""
        with self._changed:
            self._round += 1
            self._watching = True
            if self._blocking and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._watch, name="live-watch", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        try:
            yield self._queued
        finally:
            with self._changed:
                self._watching = False

    def _queued(self, timeout: float) -> bool:
        if self._blocking:
            with self._changed:
                seen = self._changed.wait_for(
                    lambda: self._seen_in == self._round or not self._blocking, timeout
                )
            if self._blocking:
                return seen
        return self._poll(timeout)  # the broker refused BLMOVE, maybe during this wait

    def _poll(self, timeout: float) -> bool:
        try:
            if self._client.llen(self._queue):
                return True
        except RedisError:
            pass  # not seen: the batch judges on, as when the broker says none
        if timeout > 0:
            time.sleep(min(timeout, POLL_S))
        return False

    def _watch(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._watching and self._seen_in != self._round)
                round_ = self._round
            try:
                found = self._client.blmove(self._queue, self._queue, BLOCK_S, "RIGHT", "RIGHT")
            except ResponseError as exc:  # no BLMOVE: the broker is older than 6.2
                self._give_up(exc)
                return
            except RedisError:
                time.sleep(RETRY_S)  # an outage: the next try finds the broker back
                continue
            except Exception as exc:  # a bug here must not leave waiters deaf: they poll
                self._give_up(exc)
                return
            if found is not None:
                with self._changed:
                    # An upload seen for a watch that has since ended counts for none: the
                    # loop looks again for the current one (at once, if it is still queued).
                    self._seen_in = round_
                    self._changed.notify_all()

    def _give_up(self, exc: Exception) -> None:
        log.warning("worker.live_watch_polls", error=f"{type(exc).__name__}: {exc}")
        with self._changed:
            self._blocking = False
            self._changed.notify_all()
