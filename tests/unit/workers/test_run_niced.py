"""Bulk work runs on a thread Linux schedules only when the CPU is otherwise idle."""

from __future__ import annotations

import os
import threading

import pytest

from workers.scheduling import run_niced


def test_bulk_work_runs_under_sched_idle_and_its_threads_inherit_it() -> None:
    def policies() -> tuple[int, int]:
        inner: list[int] = []
        thread = threading.Thread(
            target=lambda: inner.append(os.sched_getscheduler(threading.get_native_id()))
        )
        thread.start()
        thread.join()
        return os.sched_getscheduler(threading.get_native_id()), inner[0]

    assert run_niced(policies) == (os.SCHED_IDLE, os.SCHED_IDLE)
    # The calling thread (which records the batch in SQL) keeps its normal policy.
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER


def test_an_error_in_bulk_work_reaches_the_caller() -> None:
    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_niced(fail)
