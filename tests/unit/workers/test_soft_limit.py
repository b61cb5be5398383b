"""The soft time limit is raised within a task's own code only: a SIGUSR1 handled once the task
has ended (as its outcome goes down the pipe to the parent) is dropped, so it cannot tear that
message (`workers.soft_limit`)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from billiard.exceptions import SoftTimeLimitExceeded
from billiard.pool import soft_timeout_sighandler
from celery.signals import task_postrun, task_prerun

from workers.soft_limit import SOFT_LIMIT_SIGNAL, soft_limit_handler

pytestmark = pytest.mark.skipif(SOFT_LIMIT_SIGNAL is None, reason="no SIGUSR1 on this system")


@pytest.fixture
def pool_process() -> Iterator[int]:
    """This process with SIGUSR1 handled as in a fresh billiard pool process."""
    assert SOFT_LIMIT_SIGNAL is not None
    before = signal.signal(SOFT_LIMIT_SIGNAL, soft_timeout_sighandler)
    try:
        yield SOFT_LIMIT_SIGNAL
    finally:
        task_postrun.send(sender=None)
        signal.signal(SOFT_LIMIT_SIGNAL, before)


def test_the_signal_raises_within_a_task_and_is_dropped_after_it(pool_process: int) -> None:
    task_prerun.send(sender=None)
    assert signal.getsignal(pool_process) is soft_limit_handler
    with pytest.raises(SoftTimeLimitExceeded):
        os.kill(os.getpid(), pool_process)
    task_postrun.send(sender=None)
    os.kill(os.getpid(), pool_process)  # the outcome being sent: nothing raised
    task_prerun.send(sender=None)  # the next task is limited again
    with pytest.raises(SoftTimeLimitExceeded):
        os.kill(os.getpid(), pool_process)


def test_a_process_that_is_no_pool_process_keeps_its_handler() -> None:
    assert SOFT_LIMIT_SIGNAL is not None
    mine = signal.signal(SOFT_LIMIT_SIGNAL, signal.SIG_IGN)
    try:
        task_prerun.send(sender=None)
        assert signal.getsignal(SOFT_LIMIT_SIGNAL) is signal.SIG_IGN
    finally:
        task_postrun.send(sender=None)
        signal.signal(SOFT_LIMIT_SIGNAL, mine)
