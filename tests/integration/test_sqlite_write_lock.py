"""SQLite's writers queue on a file lock instead of SQLite's sleeping busy handler: a waiting
writer starts as soon as the holder commits, nested writes on one thread do not deadlock, and
the lock spans processes."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

from sqlalchemy import text

from infra.sql.base import StoreBase
from infra.sql.engine import WriteLock, make_engine, write_lock


def test_only_a_sqlite_file_gets_a_lock(tmp_path: Path) -> None:
    assert write_lock(make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")) is not None
    assert write_lock(make_engine("sqlite://")) is None


def test_a_waiting_writer_starts_within_a_millisecond_or_two_of_the_release(
    tmp_path: Path,
) -> None:
    lock = WriteLock(str(tmp_path / "db.sqlite3"))
    released_at: list[float] = []
    acquired_at: list[float] = []
    holding = threading.Event()

    def holder() -> None:
        with lock.held():
            holding.set()
            time.sleep(0.2)
            released_at.append(time.monotonic())

    def waiter() -> None:
        holding.wait()
        with lock.held():
            acquired_at.append(time.monotonic())

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # SQLite's busy handler would have slept 1+2+5+10+15+20+25+25+25+50+50 ms by then and
    # woken up to 50 ms after the release; the lock retries every millisecond at most.
    assert 0 <= acquired_at[0] - released_at[0] < 0.02


def test_one_thread_nests_writes_without_deadlock(tmp_path: Path) -> None:
    lock = WriteLock(str(tmp_path / "db.sqlite3"))
    with lock.held(), lock.held():
        pass
    with lock.held():  # and the lock was released after the outer block
        pass


def _hold(path: str, started: object, seconds: float) -> None:
    with WriteLock(path).held():
        started.set()  # type: ignore[attr-defined]
        time.sleep(seconds)


def test_the_lock_spans_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite3")
    context = multiprocessing.get_context("spawn")
    started = context.Event()
    other = context.Process(target=_hold, args=(path, started, 0.5))
    other.start()
    try:
        assert started.wait(30)
        began = time.monotonic()
        with WriteLock(path).held():
            waited = time.monotonic() - began
        assert waited > 0.2
    finally:
        other.join(30)


def test_concurrent_write_transactions_all_commit(tmp_path: Path) -> None:
    writers = 4
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
    store = StoreBase(engine)

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
