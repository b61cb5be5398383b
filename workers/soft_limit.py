"""The soft time limit, raised only while a task's own code runs.

billiard's pool process raises SoftTimeLimitExceeded from its SIGUSR1 handler wherever the
process is when the signal is handled. The parent sends it when a task's soft deadline passes,
and Python runs the handler between two bytecodes: so late, when the process was blocked in a
network call written in C (a cut-off host's SQL statement, until `tcp_user_timeout`), or just
as the task ends. Raised while the process writes the task's outcome to its pipe, it tears
that message; the parent then reads the torn one with the next as one, fails to unpickle it
(`UnicodeDecodeError` in `celery.concurrency.asynpool._recv_message`), logs "Unrecoverable
error" and stops consuming, while its process lives on. Seen in `tests/cluster` when a worker
host was cut off mid-task.

Here each pool process takes SIGUSR1 with a handler that raises only between a task's start
and its end (Celery's `task_prerun` and `task_postrun`, sent in the pool process around the
task's own code); a signal handled outside that window is dropped, and the hard time limit
still ends a process that does not finish.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from billiard.pool import soft_timeout_sighandler
from celery.signals import task_postrun, task_prerun

SOFT_LIMIT_SIGNAL = getattr(signal, "SIGUSR1", None)


class _Window:
    open = False  # whether this process is running a task's own code


def soft_limit_handler(signum: int, frame: FrameType | None) -> None:
    if _Window.open:
        raise SoftTimeLimitExceeded()


@task_prerun.connect
def _task_starts(**_: Any) -> None:
    # billiard installs its handler in each new pool process after Celery's
    # `worker_process_init`, so it is replaced here, at the process's first task; a process
    # that is no pool process (a solo or eager worker, whose SIGUSR1 is Celery's own) keeps its.
    if (
        SOFT_LIMIT_SIGNAL is not None
        and signal.getsignal(SOFT_LIMIT_SIGNAL) is soft_timeout_sighandler
    ):
        signal.signal(SOFT_LIMIT_SIGNAL, soft_limit_handler)
    _Window.open = True


@task_postrun.connect
def _task_ends(**_: Any) -> None:
    _Window.open = False
