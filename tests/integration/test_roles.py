"""The roles against real services: the sweeper election on a real Redis (one holder at a time,
a takeover within the lock's TTL when the holder dies, nothing held while Redis is away), two
`tilejudge migrate` at once on one database, and `tilejudge api`'s refusal, each role run as
the installed command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg
import pytest
import redis
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from core.records import Submission
from core.sweeping import SweeperThread
from devstack.redis_server import start_redis
from infra.leader import SWEEPER_LOCK, Election
from infra.sql.engine import SCHEMA_KEY, UPGRADE_LOCK, make_engine
from infra.sql.games import load_all
from infra.sql.migrate import alembic_config, upgrade

pytestmark = pytest.mark.integration

TILEJUDGE = str(Path(sys.executable).parent / "tilejudge")
TTL = 3  # seconds: the lowest TILEJUDGE_SWEEPER_LOCK_TTL, so the tests wait little
# How long a test waits for a takeover or a loss that must come: a bound on an event, far
# beyond the TTL that brings it (no test asserts how soon it came: a loaded machine stretches
# that; the takeover's figure is printed, and the lock's expiry is read from Redis instead).
EVENT_S = 60
POLL_S = 0.02


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until `condition` held; fails naming `what` after `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"{what} did not happen within {timeout:.1f} s")
        time.sleep(POLL_S)
    return time.monotonic() - started


@contextmanager
def elections(url: str, count: int, ttl: float = TTL) -> Iterator[list[Election]]:
    with ExitStack() as stack:
        found = []
        for n in range(count):
            client = stack.enter_context(redis.Redis.from_url(url, socket_timeout=1))
            election = Election(client, SWEEPER_LOCK, ttl, candidate=f"candidate-{n}")
            stack.callback(election.stop)
            found.append(election)
        yield found


def holders(group: list[Election]) -> list[str]:
    return [e.candidate for e in group if e.held()]


def test_of_two_elections_one_holds_the_lock_and_a_resignation_hands_it_on(
    redis_url: str,
) -> None:
    with elections(redis_url, 2) as group, redis.Redis.from_url(redis_url) as client:
        for election in group:
            election.start()
        wait_for(lambda: len(holders(group)) == 1, EVENT_S, "an election")
        seen = set()
        deadline = time.monotonic() + 2 * TTL  # several renewals
        while time.monotonic() < deadline:
            now = holders(group)
            assert len(now) <= 1, f"both hold the lock: {now}"
            seen.update(now)
            time.sleep(POLL_S)
        [first] = seen
        assert client.get(SWEEPER_LOCK) == first.encode()

        holder = next(e for e in group if e.candidate == first)
        follower = next(e for e in group if e is not holder)
        holder.stop()  # lets the lock go: the follower needs no expiry to take over
        taken_over = wait_for(follower.held, EVENT_S, "the takeover")
        assert not holder.held()
        assert client.get(SWEEPER_LOCK) == follower.candidate.encode()
    print(f"takeover after a resignation: {taken_over:.2f} s")


def test_a_holder_whose_lock_was_taken_stops_holding_it_at_its_next_renewal(
    redis_url: str,
) -> None:
    with elections(redis_url, 1) as [election], redis.Redis.from_url(redis_url) as client:
        election.start()
        wait_for(election.held, EVENT_S, "the election")
        # As if the lock had expired during a pause of this process and another had taken it.
        client.set(SWEEPER_LOCK, "intruder", px=60_000)
        wait_for(lambda: not election.held(), EVENT_S, "the loss")
        time.sleep(TTL / 3 + POLL_S)
        assert not election.held()
        assert client.get(SWEEPER_LOCK) == b"intruder"


def test_a_lock_key_set_by_hand_without_expiry_lapses_after_the_ttl_and_is_taken_over(
    redis_url: str,
) -> None:
    with elections(redis_url, 1) as [election], redis.Redis.from_url(redis_url) as client:
        client.set(SWEEPER_LOCK, "x")  # what anyone who reaches Redis could do
        election.start()
        # The election gives the key the TTL (so it lapses within it), and takes it only then.
        wait_for(lambda: 0 < client.pttl(SWEEPER_LOCK) <= TTL * 1000, EVENT_S, "an expiry")
        wait_for(election.held, EVENT_S, "the takeover")
        assert client.get(SWEEPER_LOCK) == election.candidate.encode()


def test_a_lock_key_given_an_expiry_by_its_holder_keeps_it(redis_url: str) -> None:
    with elections(redis_url, 1) as [election], redis.Redis.from_url(redis_url) as client:
        client.set(SWEEPER_LOCK, "another-holder", px=60_000)
        election.campaign_once()
        assert not election.held()
        assert client.pttl(SWEEPER_LOCK) > 50_000  # not shortened to the election's TTL
        assert client.get(SWEEPER_LOCK) == b"another-holder"


def test_nothing_is_held_while_redis_is_away_and_the_lock_is_held_again_after(
    tmp_path: Path,
) -> None:
    service = start_redis(tmp_path / "redis")
    try:
        with elections(service.url, 1) as [election]:
            election.start()
            wait_for(election.held, EVENT_S, "the election")
            service.stop()
            wait_for(lambda: not election.held(), TTL, "giving up while Redis is away")
            service = start_redis(tmp_path / "redis", port=service.port)
            wait_for(election.held, EVENT_S, "the election after Redis came back")
    finally:
        service.stop()


class CountingStore:
    """A results store with nothing to sweep that counts the sweeper's passes."""

    def __init__(self) -> None:
        self.passes = 0

    def needing_attention(self, **_: float | None) -> list[Submission]:
        self.passes += 1
        return []

    def requeue(self, submission: Submission) -> bool:
        raise AssertionError("nothing needs requeueing")

    def stalled(self, stalled_for: float) -> list[object]:
        return []


def test_of_two_elected_sweepers_only_the_holder_sweeps_and_the_other_takes_over(
    redis_url: str,
) -> None:
    stores = [CountingStore(), CountingStore()]
    with elections(redis_url, 2) as group:
        sweepers = [
            SweeperThread(
                store,  # type: ignore[arg-type]
                store,  # type: ignore[arg-type]
                publisher=None,  # type: ignore[arg-type]
                interval=0.05,
                stored_for=10,
                queued_for=10,
                judging_for=10,
                mandate=election,
            )
            for store, election in zip(stores, group)
        ]
        for sweeper in sweepers:
            sweeper.start()
        wait_for(lambda: any(s.passes for s in stores), EVENT_S, "a first pass")
        time.sleep(1.0)
        sweeping = [n for n, store in enumerate(stores) if store.passes]
        assert len(sweeping) == 1, [s.passes for s in stores]
        [holder] = sweeping
        other = 1 - holder

        sweepers[holder].stop()
        sweepers[holder].join(5)  # lets the lock go as it ends
        wait_for(lambda: stores[other].passes > 0, EVENT_S, "the other's first pass")
        sweepers[other].stop()
        sweepers[other].join(5)
    assert not any(s.is_alive() for s in sweepers)


def role_env(**extra: str) -> dict[str, str]:
    """The test's environment without any tilejudge setting of its own, plus `extra`."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("TILEJUDGE_") and k != "REDIS_URL"
    }
    return env | extra


def sweeper_process(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [TILEJUDGE, "sweeper"], env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )


def lock_holder_pid(client: redis.Redis) -> int | None:
    """The pid in the holder's token (host:pid:random), None while nobody holds the lock."""
    value = client.get(SWEEPER_LOCK)
    if not value:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    return int(text.split(":")[1])


def events(log: Path) -> list[str]:
    found = []
    for line in log.read_text().splitlines():
        try:
            found.append(json.loads(line)["event"])
        except (ValueError, KeyError):
            continue
    return found


def test_when_the_sweeper_holding_the_lock_is_killed_the_other_takes_over_within_the_ttl(
    tmp_path: Path, redis_url: str
) -> None:
    database = f"sqlite:///{tmp_path / 'judge.sqlite3'}"
    engine = make_engine(database)
    upgrade(engine)
    engine.dispose()
    env = role_env(
        TILEJUDGE_DATABASE_URL=database,
        REDIS_URL=redis_url,
        TILEJUDGE_SWEEPER_LOCK_TTL=str(TTL),
        TILEJUDGE_HOME=str(tmp_path / "home"),
    )
    logs = [tmp_path / "sweeper-0.log", tmp_path / "sweeper-1.log"]
    processes = [sweeper_process(env, log) for log in logs]
    try:
        with redis.Redis.from_url(redis_url) as client:
            pids = {p.pid: n for n, p in enumerate(processes)}
            wait_for(lambda: lock_holder_pid(client) in pids, 30, "an election")
            holder_pid = lock_holder_pid(client)
            assert holder_pid is not None
            # Both are up (each logged who holds the lock) and the holder stays the holder.
            wait_for(lambda: all(events(log) for log in logs), 30, "both sweepers starting")
            deadline = time.monotonic() + TTL
            while time.monotonic() < deadline:
                assert lock_holder_pid(client) == holder_pid
                time.sleep(POLL_S)
            holder = processes[pids[holder_pid]]
            survivor = processes[1 - pids[holder_pid]]
            assert events(logs[pids[holder_pid]]).count("election.won") == 1
            assert "election.won" not in events(logs[1 - pids[holder_pid]])

            # What bounds the takeover: the lock the holder left lapses within the TTL.
            assert 0 < client.pttl(SWEEPER_LOCK) <= TTL * 1000
            holder.send_signal(signal.SIGKILL)  # dies holding the lock
            takeover = wait_for(
                lambda: lock_holder_pid(client) == survivor.pid, EVENT_S, "the takeover"
            )
            holder.wait(5)
            print(f"takeover after the holder was killed: {takeover:.2f} s (TTL {TTL} s)")

            survivor.send_signal(signal.SIGTERM)
            assert survivor.wait(10) == 0
            assert client.get(SWEEPER_LOCK) is None  # let go on the way out
            assert "election.resigned" in events(logs[1 - pids[holder_pid]])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def run_migrate(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [TILEJUDGE, "migrate"],
        env=role_env(TILEJUDGE_DATABASE_URL=url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def waiting_for_the_upgrade_lock(url: str) -> int:
    """How many sessions wait for the advisory lock upgrades of `url`'s schema take."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            f"AND classid = %s::bigint::oid AND objid = ({SCHEMA_KEY}::bigint & 4294967295)::oid "
            "AND objsubid = 2",
            (UPGRADE_LOCK,),
        ).fetchone()
    return int(row[0]) if row else 0


@contextmanager
def upgrade_lock_held(url: str) -> Iterator[Callable[[], None]]:
    """On PostgreSQL, the upgrade lock of `url`'s schema held by the test until it calls the
    function it gets: both migrations are then surely waiting for it at once. On SQLite,
    nothing to hold."""
    if not url.startswith("postgresql"):
        yield lambda: None
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SELECT pg_advisory_lock(%s, {SCHEMA_KEY})", (UPGRADE_LOCK,))
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                conn.execute(f"SELECT pg_advisory_unlock(%s, {SCHEMA_KEY})", (UPGRADE_LOCK,))
                released.set()

        try:
            yield release
        finally:
            release()


def test_two_migrations_at_once_both_succeed_and_leave_the_schema_at_head(sql_url: str) -> None:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    with upgrade_lock_held(sql_url) as release:
        runs = [run_migrate(sql_url), run_migrate(sql_url)]
        if sql_url.startswith("postgresql"):
            wait_for(
                lambda: waiting_for_the_upgrade_lock(sql_url) == 2, 60, "both waiting for the lock"
            )
        release()
        results = [(run.wait(60), *run.communicate()) for run in runs]

    assert [code for code, _, _ in results] == [0, 0], results
    # One upgraded; the other, let in after it, found the schema at head.
    outputs = {out.strip() for _, out, _ in results}
    assert outputs == {
        f"revision none -> {head} (upgraded)",
        f"revision {head} -> {head} (already at the newest revision)",
    }
    engine = make_engine(sql_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn)
            assert context.get_current_revision() == head
            assert compare_metadata(context, load_all()) == []
    finally:
        engine.dispose()


def test_api_refuses_to_start_without_an_admin_token(tmp_path: Path) -> None:
    env = role_env(
        TILEJUDGE_DATABASE_URL="postgresql://judge@db.internal/tilejudge",
        REDIS_URL="redis://10.0.0.5:6379/0",
        TILEJUDGE_S3_ENDPOINT="http://s3.internal:8333",
        TILEJUDGE_RECEIPT_KEY="receipt-secret",
        TILEJUDGE_HOME=str(tmp_path),
    )
    done = subprocess.run(
        [TILEJUDGE, "api"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "tilejudge api: TILEJUDGE_ADMIN_TOKEN is not set: every API host must accept the same "
        "organiser token (only `tilejudge up` generates one)"
    ]
    assert not (tmp_path / "admin-token").exists()  # none generated either
