"""Bulk slots: as many bulk batches judge at once as there are slots; a process left waiting
gives way to the first live upload; a slot of a process that died is free again."""

from __future__ import annotations

import os
import time
from pathlib import Path

from workers.bulk_slots import BulkSlots


def nothing_queued(timeout: float) -> bool:
    time.sleep(timeout)
    return False


def test_no_more_slots_are_held_at_once_than_there_are(tmp_path: Path) -> None:
    slots = BulkSlots(tmp_path, 2)
    first, second = slots.try_take(), slots.try_take()
    assert first is not None and second is not None

    assert slots.try_take() is None

    os.close(first)
    third = slots.try_take()
    assert third is not None
    os.close(second)
    os.close(third)


def test_a_process_waiting_for_a_slot_gives_way_as_soon_as_a_live_upload_waits(
    tmp_path: Path,
) -> None:
    slots = BulkSlots(tmp_path, 1)
    busy = slots.try_take()
    answers = [False, False, True]
    asked: list[float] = []

    def live_queued(timeout: float) -> bool:
        asked.append(timeout)
        return answers[len(asked) - 1]

    with slots.held(live_queued, give_up_after=30) as holding:
        assert holding is None

    # It gave way at the first poll that saw a live upload: three polls, each bounded, not the
    # 30 s it would otherwise wait (counted, not timed).
    assert len(asked) == 3
    assert all(0 < timeout <= 1 for timeout in asked)
    assert busy is not None
    os.close(busy)
    with slots.held(lambda _timeout: True, give_up_after=30) as holding:
        assert holding is not None  # a free slot is taken whatever waits


def test_waiting_for_a_slot_ends_after_the_time_given(tmp_path: Path) -> None:
    slots = BulkSlots(tmp_path, 1)
    busy = slots.try_take()

    with slots.held(nothing_queued, give_up_after=0.05) as holding:
        assert holding is None

    assert busy is not None
    os.close(busy)


def test_the_slot_of_a_process_that_died_is_free_again(tmp_path: Path) -> None:
    slots = BulkSlots(tmp_path, 1)
    pid = os.fork()
    if pid == 0:  # the child takes the only slot and dies holding it
        slots.try_take()
        os._exit(0)
    os.waitpid(pid, 0)

    taken = slots.try_take()

    assert taken is not None
    os.close(taken)


def test_a_slot_let_go_before_its_block_ends_is_free_to_another(tmp_path: Path) -> None:
    slots = BulkSlots(tmp_path, 1)
    with slots.held(nothing_queued, give_up_after=30) as slot:
        assert slot is not None and slots.try_take() is None
        slot.release()  # its judging done, the batch goes on to record

        other = slots.try_take()
        assert other is not None
        slot.release()  # once only: it closes nothing the second time
        os.fstat(other)  # still open
    os.fstat(other)  # and the block's end did not close it either
    os.close(other)


def test_waiting_leaves_no_descriptor_open_but_the_slot_held(tmp_path: Path) -> None:
    slots = BulkSlots(tmp_path, 3)
    busy = [slots.try_take(), slots.try_take()]
    before = len(os.listdir("/proc/self/fd"))

    with slots.held(nothing_queued, give_up_after=0.03) as slot:
        assert slot is not None  # the third
        assert len(os.listdir("/proc/self/fd")) == before + 1
    assert len(os.listdir("/proc/self/fd")) == before
    for fd in busy:
        assert fd is not None
        os.close(fd)
    with slots.held(nothing_queued, give_up_after=0.03) as slot:
        assert slot is not None
    assert len(os.listdir("/proc/self/fd")) == before - 2
