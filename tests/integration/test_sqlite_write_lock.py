"""SQLite's writers queue on a file lock instead of SQLite's sleeping busy handler: a waiting
writer looks again at least every millisecond, so it starts as soon as the holder commits;
nested writes on one thread do not deadlock, and the lock spans processes."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from infra.sql import engine as engine_module
from infra.sql.base import Database
from infra.sql.engine import WriteLock, make_engine, write_lock


def test_only_a_sqlite_file_gets_a_lock(tmp_path: Path) -> None:
    assert write_lock(make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")) is not None
    assert write_lock(make_engine("sqlite://")) is None


class RecordedPauses:
    """The `time` module as `infra.sql.engine` sees it, with every pause it takes recorded."""

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_a_waiting_writer_looks_again_at_least_every_millisecond_until_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told by the waits it takes, not by a clock: SQLite's busy handler would sleep 1, 2, 5,
    10, 15, 20, 25, 25, 25, 50, 50 ms between tries, waking up to 50 ms after the release;
    the lock's waiter never pauses more than a millisecond between two looks, so it starts as
    soon as the holder lets go."""
    recorded = RecordedPauses()
    monkeypatch.setattr(engine_module, "time", recorded)
    lock = WriteLock(str(tmp_path / "db.sqlite3"))
    released = threading.Event()
    acquired_after_release: list[bool] = []
    holding, waiting = threading.Event(), threading.Event()

    def holder() -> None:
        with lock.held():
            holding.set()
            waiting.wait(30)
            while not recorded.pauses:  # the waiter found the lock taken and paused
                time.sleep(0.001)
            time.sleep(0.05)
            released.set()

    def waiter() -> None:
        holding.wait(30)
        waiting.set()
        with lock.held():
            acquired_after_release.append(released.is_set())

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert acquired_after_release == [True]
    assert recorded.pauses, "the waiter never waited"
    assert max(recorded.pauses) <= 0.001
    assert recorded.pauses[0] <= 0.0001


def test_one_thread_nests_writes_without_deadlock(tmp_path: Path) -> None:
    lock = WriteLock(str(tmp_path / "db.sqlite3"))
    with lock.held(), lock.held():
        pass
    with lock.held():  # and the lock was released after the outer block
        pass


def _hold(path: str, started: Any, trying: Any, releasing: Any) -> None:
    with WriteLock(path).held():
        started.set()
        trying.wait(30)
        time.sleep(0.2)  # room for the other process to block on the lock
        releasing.set()


def test_the_lock_spans_processes(tmp_path: Path) -> None:
    """Told by the order of events, not by how long the other process waited: the lock is had
    only once its holder in another process is letting it go."""
    path = str(tmp_path / "db.sqlite3")
    context = multiprocessing.get_context("spawn")
    started, trying, releasing = context.Event(), context.Event(), context.Event()
    other = context.Process(target=_hold, args=(path, started, trying, releasing))
    other.start()
    try:
        assert started.wait(30)
        trying.set()
        with WriteLock(path).held():
            assert releasing.is_set(), "the lock was had while another process held it"
    finally:
        other.join(30)


def test_concurrent_write_transactions_all_commit(tmp_path: Path) -> None:
    writers = 4
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
    store = Database(engine, log_facts=None)

    def write(base: int) -> None:
        for n in range(50):
            with store.write() as (conn, _):
                conn.execute(text("INSERT INTO t VALUES (:n)"), {"n": base + n})

    threads = [threading.Thread(target=write, args=(1000 * w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(DISTINCT n) FROM t")).scalar() == 50 * writers
