"""The relay/sweeper: publishes whatever is stored but not queued, or queued or judging too long.

Safe to run anywhere and more than once: a worker's claim on a submission is a conditional
update, so a duplicate message finds the submission taken or judged and does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import structlog

from core import tuning
from core.errors import PublishFailed
from core.group_commit import HeavyCounts
from core.messages import LIGHT_PRIORITY
from core.ports import Publisher, QueueProbe, RejudgeStore, SubmissionStore
from core.records import Submission

log = structlog.get_logger("tilejudge.sweeper")


def sweep(
    store: SubmissionStore,
    rejudges: RejudgeStore,
    publisher: Publisher,
    *,
    stored_for: float,
    queued_for: float,
    judging_for: float,
    backlog: QueueProbe = lambda: None,
) -> int:
    """One pass; returns how many submissions were published again.

    A submission queued longer than `queued_for` is published again only while the live queue
    is empty (`backlog` is its depth, None if unknown): behind a deadline backlog a message is
    late, not lost, and a second copy of every late one would only lengthen the queue.

    A heavy upload goes out as intake sends it (`core.group_commit.GroupPublish`): alone, at
    a heavy priority that falls with each one its team has in the pass, so it is judged only
    in a heavy slot and never ahead of other teams' light uploads."""
    published = 0
    heavy = HeavyCounts()
    waiting = backlog()
    stuck = store.needing_attention(
        stored_for=stored_for,
        queued_for=queued_for if not waiting else None,
        judging_for=judging_for,
    )
    for submission in stuck:
        if not store.requeue(submission):
            continue  # a worker or another sweeper got there first
        try:
            publisher.publish_group([(submission.id, None)], priority=_priority(submission, heavy))
        except PublishFailed as exc:
            # It stays queued with a fresh timestamp: the next pass after queued_for tries again.
            log.warning("sweeper.broker_unavailable", error=str(exc))
            break
        published += 1
    published += _restart_stalled_rejudges(rejudges, publisher, judging_for)
    if published:
        log.info("sweeper.republished", count=published)
    return published


def _priority(submission: Submission, heavy: HeavyCounts) -> int:
    if submission.size > tuning.HEAVY_BYTES:
        return heavy.priority(submission.team_id)
    return LIGHT_PRIORITY


def _restart_stalled_rejudges(
    rejudges: RejudgeStore, publisher: Publisher, stalled_for: float
) -> int:
    """A running rejudge with no progress for a while lost messages (say Redis restarted without
    them): its producer pages again from the start; results already in are not counted twice."""
    restarted = 0
    for run in rejudges.stalled(stalled_for):
        rejudges.restart_producer(run.id)
        try:
            publisher.start_rejudge(run.id)
        except PublishFailed as exc:
            log.warning("sweeper.broker_unavailable", error=str(exc))
            break
        log.info("sweeper.rejudge_restarted", rejudge=run.id)
        restarted += 1
    return restarted


class Mandate(Protocol):
    """The right to sweep, when several sweepers run and one at a time should (infra.leader
    elects it with a Redis lock): sought from `start`, given up at `stop`."""

    def start(self) -> None: ...
    def held(self) -> bool: ...
    def stop(self) -> None: ...


class Alone:
    """The mandate of a sweeper that runs alone: always held."""

    def start(self) -> None:
        pass

    def held(self) -> bool:
        return True

    def stop(self) -> None:
        pass


class SweeperThread(threading.Thread):
    """Runs `sweep` every `interval` seconds, each time only if it holds its `mandate`, until
    stopped; errors are logged, never fatal. The mandate is sought when the thread starts and
    given up as it ends.

    `broker_epoch` names the broker server the messages are in now (None when unknown). When
    it changes (a Redis failover, or a Redis that came back without its data), the messages
    the old one held may be gone: the next pass publishes every queued submission again at
    once, behind a backlog too, rather than after `queued_for`. A copy that was not lost is
    delivered twice and finds the first delivery's claim."""

    def __init__(
        self,
        store: SubmissionStore,
        rejudges: RejudgeStore,
        publisher: Publisher,
        *,
        interval: float,
        stored_for: float,
        queued_for: float,
        judging_for: float,
        backlog: QueueProbe = lambda: None,
        mandate: Mandate | None = None,
        chores: Callable[[], object] = lambda: None,
        broker_epoch: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__(name="tilejudge-sweeper", daemon=True)
        self._store, self._rejudges, self._publisher = store, rejudges, publisher
        self._stored_for, self._queued_for, self._judging_for = stored_for, queued_for, judging_for
        self._interval = interval
        self._backlog = backlog
        self._mandate = mandate or Alone()
        self._chores = chores  # run after each pass, while elected
        self._halt = threading.Event()  # not `_stop`: Thread.join() calls a method of that name
        self._broker_epoch = broker_epoch
        self._epoch: str | None = None  # the broker server last seen
        self._broker_changed = False  # since the last pass that published everything queued

    def run(self) -> None:
        self._mandate.start()
        try:
            self._sweep_until_stopped()
        finally:
            self._mandate.stop()

    def _sweep_until_stopped(self) -> None:
        while not self._halt.wait(self._interval):
            self.tick()

    def tick(self) -> None:
        """One round: look at the broker, then sweep and do the chores if elected."""
        self._watch_broker()  # held or not: a sweeper elected after a failover knows of it
        if not self._mandate.held():
            return
        changed = self._broker_changed
        try:
            sweep(
                self._store,
                self._rejudges,
                self._publisher,
                stored_for=self._stored_for,
                queued_for=0.0 if changed else self._queued_for,
                judging_for=self._judging_for,
                backlog=(lambda: None) if changed else self._backlog,
            )
            if changed:
                self._broker_changed = False
        except Exception:
            log.exception("sweeper.pass_failed")
        try:
            self._chores()
        except Exception:
            log.exception("sweeper.chores_failed")

    def _watch_broker(self) -> None:
        try:
            epoch = self._broker_epoch()
        except Exception:
            log.exception("sweeper.broker_epoch_failed")
            return
        if epoch is None:
            return
        if self._epoch is not None and epoch != self._epoch:
            log.warning("sweeper.broker_changed", old=self._epoch, new=epoch)
            self._broker_changed = True
        self._epoch = epoch

    def stop(self) -> None:
        self._halt.set()
