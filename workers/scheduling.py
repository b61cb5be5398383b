"""Bulk work on threads that get the CPU only when live work does not want it."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from core import tuning

T = TypeVar("T")


def run_niced(work: Callable[[], T]) -> T:
    """Run bulk work on a thread that gets the CPU only when nothing else wants it: Linux's
    SCHED_IDLE policy, per thread, which needs no privilege and which the threads it starts
    inherit. A live upload (its judging, and SeaweedFS, Redis and the API serving it) then
    takes the CPU from bulk work at once on every wakeup, where a nice value only shrinks bulk
    work's share and still lets it finish its time slice first. Where SCHED_IDLE is missing, a
    nice value."""
    outcome: dict[str, Any] = {}

    def niced() -> None:
        tid = threading.get_native_id()
        try:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        except (OSError, AttributeError):
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, tid, tuning.BULK_NICENESS)
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the calling thread as is
            outcome["error"] = exc

    thread = threading.Thread(target=niced, name="tilejudge-bulk")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value
