"""Intake's SQLite writes on their own: one group of uploads stored, then the group before it
marked queued (each in its own transaction, and both in one as intake's group commit does, where
the store can), each transaction's wall and CPU time, alone and while other threads of the same
process keep the GIL busy (as the API's request threads do). Prints figures, asserts nothing.

    python -m benchmarks.sql_writes [--group 15] [--reps 40] [--busy 0 1]
"""

from __future__ import annotations

import argparse
import inspect
import logging
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import structlog

from core import clock
from core.games import DEFAULT
from core.records import Contest, Submission, Team
from core.states import SubmissionState
from infra.sql.engine import make_engine
from infra.sql.migrate import upgrade
from infra.sql.store import SqlStore


def new_store(home: Path) -> tuple[SqlStore, Team]:
    engine = make_engine(f"sqlite:///{home / 'bench.sqlite3'}")
    upgrade(engine)
    store = SqlStore(engine)
    now = clock.now()
    store.add_lexicon(
        id="lex", name="bench", words=1, size=1, blob_key="lexicons/lex.txt", source="bench",
        created_by="bench",
    )  # fmt: skip
    store.add_rules(id="layout", name="bench", content="{}", created_by="bench")
    store.create_contest(
        Contest(
            id="bench", title="bench", opens_at=now, closes_at="9999-12-31T00:00:00.000000Z",
            lexicon_id="lex", rules_id="layout", created_at=now, game=DEFAULT,)
    )  # fmt: skip
    team = store.create_team(
        Team(id="team", contest_id="bench", name="bench", token_hash="x" * 64, created_at=now)
    )
    return store, team


def upload(team: Team) -> Submission:
    sid = uuid.uuid4().hex
    now = clock.now()
    return Submission(
        id=sid, contest_id=team.contest_id, team_id=team.id, sha256=uuid.uuid4().hex * 2,
        size=2400, blob_key=f"uploads/{team.contest_id}/{team.id}/{sid}", received_at=now,
        receipt="r" * 64, state=SubmissionState.STORED, state_at=now, attempts=0,
        judged_at=None, failure=None,
    )  # fmt: skip


def measure(store: SqlStore, team: Team, group: int, reps: int, busy: int) -> dict[str, float]:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(busy)]
    for thread in threads:
        thread.start()
    names = ("store", "mark", "both")
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    together = "queued" in inspect.signature(store.store_submissions).parameters
    try:
        for _ in range(reps):
            batch = [upload(team) for _ in range(group)]
            writes: list[tuple[str, Callable[[], object]]] = [
                ("store", partial(store.store_submissions, batch)),
                ("mark", partial(store.mark_queued_many, [s.id for s in batch])),
            ]
            if together:  # intake's group commit: a group stored, the one before marked queued
                before = [upload(team) for _ in range(group)]
                store.store_submissions(before)
                now = [upload(team) for _ in range(group)]
                writes.append(("both", partial(store.store_submissions, now, queued=before)))
            for name, write in writes:
                began, cpu = time.perf_counter(), time.thread_time()
                write()
                walls[name].append(time.perf_counter() - began)
                cpus[name].append(time.thread_time() - cpu)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return {
        f"{name} {kind}": 1000 * statistics.median(values[name])
        for kind, values in (("wall", walls), ("cpu", cpus))
        for name in names
        if values[name]
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--group", type=int, default=15, help="uploads per transaction")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    print(f"SQLite, {args.group} uploads a transaction, median of {args.reps} (ms):")
    for busy in args.busy:
        with tempfile.TemporaryDirectory(prefix="tj-sql-writes-") as home:
            store, team = new_store(Path(home))
            figures = measure(store, team, args.group, args.reps, busy)
            store.engine.dispose()
        line = (
            f"  {busy} busy thread(s): store {figures['store wall']:7.2f} wall "
            f"{figures['store cpu']:5.2f} cpu | mark queued {figures['mark wall']:7.2f} wall "
            f"{figures['mark cpu']:5.2f} cpu"
        )
        if "both wall" in figures:
            line += (
                f" | both at once {figures['both wall']:7.2f} wall {figures['both cpu']:5.2f} cpu"
            )
        print(line)


if __name__ == "__main__":
    main()
