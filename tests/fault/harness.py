"""A local stack whose parts the fault tests kill and restart one at a time.

`tilejudge up` stops everything when one of its children dies, which is right for an operator
and useless for fault injection; so this harness starts the same parts itself: Redis and
SeaweedFS from devstack.redis_server and devstack.seaweedfs, the SQLite store migrated as `up` migrates it, and the API
and the Celery worker with the very command lines `up` uses (devstack.children builds them).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import redis

from core import clock
from devstack.burst import Burst, run_burst
from devstack.children import (  # what `up` runs
    api_argv,
    register_judge_lexicon,
    worker_argv,
)
from devstack.load import prepare
from devstack.plan import Corpus, Plan, build_corpus
from devstack.ports import free_port
from devstack.process import Service
from devstack.proof import event_mark, follow_events, verify
from devstack.redis_server import redis_password, start_redis
from devstack.seaweedfs import S3Credentials, s3_credentials, start_seaweedfs
from devstack.testing.log_checks import entry_problems
from devstack.testing.stack_process import children_of, process_state, running
from infra import lexicon_files
from infra.compose import migrate
from infra.settings import ClientSettings, Settings
from judge import Lexicon

ADMIN_TOKEN = "fault-admin-token"
# Short deadlines so that recovery fits a test run; the relations between them are the ones
# production keeps (time limit < visibility timeout; the sweeper waits time limit + 30 s).
TIMINGS = {
    "TILEJUDGE_TASK_TIME_LIMIT": "20",
    "TILEJUDGE_VISIBILITY_TIMEOUT": "30",
    "TILEJUDGE_REQUEUE_AFTER": "15",
    "TILEJUDGE_RATE_LIMIT": "100000",
    "TILEJUDGE_TEAM_BYTES_PER_DAY": "0",  # no daily storage quota either
}
VISIBILITY_TIMEOUT_S = float(TIMINGS["TILEJUDGE_VISIBILITY_TIMEOUT"])
START_TIMEOUT_S = 60.0


@dataclass
class FaultStack:
    home: Path
    env: dict[str, str]
    redis: Service
    s3: Service
    api_port: int
    workers: int = 2
    api: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    orphans: list[int] = field(default_factory=list)  # pool children of a killed worker parent

    # The services' credentials, kept in the home as `up` keeps them, so a restarted Redis or
    # S3 store accepts the clients that already hold them.

    @property
    def redis_password(self) -> str:
        return redis_password(self.home / "redis-password")

    @property
    def s3_credentials(self) -> S3Credentials:
        return s3_credentials(self.home / "s3-credentials")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def database(self) -> Path:
        return self.home / "tilejudge.sqlite3"

    # -- API ---------------------------------------------------------------------------------

    def start_api(self) -> float:
        """Start the API and wait until /readyz answers 200; returns the seconds that took."""
        began = time.monotonic()
        processes = Settings.from_env(self.env).api_workers  # as many as `up` starts
        self.api = self._spawn("api", api_argv(self.api_port, processes))
        _wait_for(lambda: _ready(self.url), "the API to answer /readyz", self.api, START_TIMEOUT_S)
        return time.monotonic() - began

    def kill_api(self) -> None:
        """SIGKILL uvicorn's supervisor and every API process (they share its process group)."""
        assert self.api is not None
        _kill_group(self.api)

    # -- worker ------------------------------------------------------------------------------

    def start_worker(self) -> float:
        """Start the Celery worker and wait for its 'ready.' line; returns the seconds it took."""
        began = time.monotonic()
        log = self.home / "logs" / "worker.log"
        offset = log.stat().st_size if log.exists() else 0
        self.worker = self._spawn("worker", worker_argv(self.workers))
        _wait_for(
            lambda: " ready." in _read_from(log, offset), "the worker", self.worker, START_TIMEOUT_S
        )
        _wait_for(lambda: len(self.worker_children()) == self.workers, "the pool", self.worker, 10)
        return time.monotonic() - began

    def worker_children(self) -> list[int]:
        """The pool's live children (a killed one stays a zombie until the parent reaps it)."""
        assert self.worker is not None
        return [pid for pid in children_of(self.worker.pid) if running(pid)]

    def kill_worker_parent(self) -> list[int]:
        """SIGKILL the parent only, as the OOM killer would; returns its orphaned children."""
        assert self.worker is not None
        children = self.worker_children()
        self.worker.kill()
        self.worker.wait()
        self.orphans += children
        return children

    @contextmanager
    def frozen_worker(self) -> Iterator[None]:
        """Hold the worker still (SIGSTOP) while uploads queue up: what follows is mid-batch."""
        assert self.worker is not None
        pids = [self.worker.pid, *self.worker_children()]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    def wait_until_busy(
        self,
        claimed_after: datetime,
        timeout: float = 10.0,
        on_cpu: bool = False,
        whole_pool: bool = True,
        contest: str | None = None,
    ) -> int | None:
        """Wait for a moment when a claim was taken after `claimed_after` (the last kill) and a
        child is not waiting on its pipe for work: it is mid-task; with `whole_pool`, only once
        the pool has all its children again. With `on_cpu`, the child must also be running, not
        sleeping on a socket: judging is CPU work, while reading an upload or recording a verdict
        waits on S3 or SQL. With `contest`, None once none of its uploads is left to judge."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = self.worker_children()
            working = [
                pid
                for pid in children
                if "pipe_read" not in _waiting_in(pid) and (not on_cpu or _on_cpu(pid))
            ]
            whole = len(children) == self.workers or not whole_pool
            if whole and working and self._claims_since(claimed_after):
                return working[0]
            if contest is not None and self._left_to_judge(contest) == 0:
                return None
            time.sleep(0.002)
        states = self.sql("SELECT state, COUNT(*) FROM submissions GROUP BY state")
        raise RuntimeError(
            f"no moment within {timeout} s when a worker child was judging "
            f"(children {self.worker_children()}, submissions {states})"
        )

    def kill_busy_child(self, claimed_after: datetime, contest: str) -> datetime | None:
        """SIGKILL a pool child judging on the CPU; returns when, or None (and kills nothing)
        once the contest has nothing left to judge."""
        pid = self.wait_until_busy(claimed_after, on_cpu=True, whole_pool=False, contest=contest)
        if pid is None:
            return None
        os.kill(pid, signal.SIGKILL)
        return datetime.now(UTC)

    def _left_to_judge(self, contest: str) -> int:
        query = (
            "SELECT COUNT(*) FROM submissions WHERE contest_id = ? "
            "AND state IN ('queued', 'judging')"
        )
        return int(self.sql(query, contest)[0][0])

    def _claims_since(self, moment: datetime) -> int:
        query = "SELECT COUNT(*) FROM submissions WHERE state = 'judging' AND state_at > ?"
        return int(self.sql(query, clock.format_time(moment))[0][0])

    def live_orphans(self) -> int:
        """Children of a killed parent still running (they finish their task, then exit)."""
        return sum(running(pid) for pid in self.orphans)

    def stop_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            self.worker.terminate()  # warm shutdown: running tasks finish
            try:
                self.worker.wait(20)
            except subprocess.TimeoutExpired:
                _kill_group(self.worker)

    # -- Redis and S3 ------------------------------------------------------------------------

    def kill_redis(self) -> None:
        self.redis.process.kill()
        self.redis.process.wait()

    def start_redis_again(self) -> float:
        began = time.monotonic()
        self.redis = start_redis(
            self.home / "redis", port=self.redis.port, password=self.redis_password
        )
        return time.monotonic() - began

    def stop_s3(self) -> None:
        self.s3.stop()  # SIGTERM: a stop, not a crash of the store's own disk writes

    def start_s3_again(self) -> float:
        began = time.monotonic()
        self.s3 = start_seaweedfs(
            self.home / "s3", "tilejudge", s3_port=self.s3.port, credentials=self.s3_credentials
        )
        return time.monotonic() - began

    # -- inspection --------------------------------------------------------------------------

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        uri = f"file:{self.database}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=30)) as conn:
            return conn.execute(query, args).fetchall()

    def interrupted(self, contest: str) -> int:
        """Submissions of the contest taken for judging more than once: an attempt was cut short."""
        rows = self.sql(
            "SELECT COUNT(*) FROM submissions WHERE contest_id = ? AND attempts > 1", contest
        )
        return int(rows[0][0])

    def broker_backlog(self) -> int:
        """Messages waiting in the live queue or delivered and not yet acknowledged."""
        client = redis.Redis.from_url(self.redis.url, socket_timeout=2)
        with closing(client):
            return int(client.llen("live")) + int(client.hlen("unacked"))

    def log(self, name: str, tail: int = 4000) -> str:
        path = self.home / "logs" / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    # -- plumbing ----------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        (self.home / "logs").mkdir(exist_ok=True)
        with (self.home / "logs" / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                process_group=0,
            )

    def stop(self) -> None:
        self.stop_worker()
        if self.api is not None and self.api.poll() is None:
            self.api.terminate()
            try:
                self.api.wait(10)
            except subprocess.TimeoutExpired:
                _kill_group(self.api)
        for pid in self.orphans:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.s3.stop()
        self.redis.stop()


@contextmanager
def fault_stack(home: Path, workers: int = 2) -> Iterator[FaultStack]:
    """Redis, SeaweedFS, a migrated SQLite store with the judge's word list, API and worker."""
    home.mkdir(parents=True, exist_ok=True)
    redis_service = start_redis(home / "redis", password=redis_password(home / "redis-password"))
    try:
        s3 = start_seaweedfs(
            home / "s3", "tilejudge", credentials=s3_credentials(home / "s3-credentials")
        )
    except BaseException:
        redis_service.stop()
        raise
    stack = FaultStack(home, {}, redis_service, s3, free_port(), workers)
    try:
        stack.env = _environment(stack)
        settings = Settings.from_env(stack.env)
        _prepare_store(settings)
        stack.start_api()
        stack.start_worker()
        yield stack
    finally:
        stack.stop()


def _environment(stack: FaultStack) -> dict[str, str]:
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith("TILEJUDGE_") and k != "REDIS_URL"
    }
    return (
        inherited
        | TIMINGS
        | {
            "TILEJUDGE_HOME": str(stack.home),
            "TILEJUDGE_API_PORT": str(stack.api_port),
            "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN,
            "TILEJUDGE_WORKERS": str(stack.workers),
            "TILEJUDGE_LEXICON": os.environ.get("TILEJUDGE_LEXICON", ""),
            "REDIS_URL": stack.redis.url,  # with the password
            "TILEJUDGE_S3_ENDPOINT": stack.s3.url,
            "TILEJUDGE_S3_ACCESS_KEY": stack.s3_credentials.access_key,
            "TILEJUDGE_S3_SECRET_KEY": stack.s3_credentials.secret_key,
            "TILEJUDGE_DATABASE_URL": f"sqlite:///{stack.database}",
        }
    )


def _prepare_store(settings: Settings) -> None:
    """What `up` does before it starts the API, with `up`'s own steps: migrate, make the
    secrets, register the list (before the worker starts, so its parent preloads it)."""
    assert settings.s3_endpoint is not None
    lexicon_files.resolve(
        None, ClientSettings.from_env()
    )  # fail here, not in a judge, if the list is missing
    migrate(settings.resolved_database_url())
    settings.admin_token_value()
    settings.receipt_key_value()
    register_judge_lexicon(settings, settings.s3_endpoint, settings.resolved_database_url())


# --- load --------------------------------------------------------------------------------------


@dataclass
class Load:
    """A burst running in a background thread while the test injects its fault."""

    stack: FaultStack
    plan: Plan
    corpus: Corpus
    mark: int
    future: Future[Burst]

    def wait(self) -> Burst:
        return self.future.result(timeout=self.plan.timeout + 30)


def start_load(
    stack: FaultStack,
    corpus: Corpus,
    contest: str,
    *,
    rate: float | None,
    retries: int = 8,
    concurrency: int = 16,
    teams: int = 8,
) -> Load:
    plan = Plan(
        url=stack.url,
        contest=contest,
        uploads=len(corpus.data),
        concurrency=concurrency,
        teams=teams,
        admin_token=ADMIN_TOKEN,
        timeout=180,
        retries=retries,
        rate=rate,
    )
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        tokens = prepare(http, plan, corpus.lexicon)
        mark = event_mark(http, plan)
    deadline = time.monotonic() + plan.timeout
    pool = ThreadPoolExecutor(1, thread_name_prefix="load")
    future = pool.submit(run_burst, plan, tokens, corpus, deadline)
    pool.shutdown(wait=False)
    return Load(stack, plan, corpus, mark, future)


def corpus_for(lexicon: Lexicon, uploads: int, teams: int = 8, seed: int = 0) -> Corpus:
    plan = Plan(
        url="",
        contest="",
        uploads=uploads,
        concurrency=1,
        teams=teams,
        admin_token="",
        seed=seed,
        moves=150,
    )
    return build_corpus(lexicon, plan)


# --- processes ---------------------------------------------------------------------------------


def _waiting_in(pid: int) -> str:
    """The kernel function a process sleeps in ('anon_pipe_read' for an idle pool child)."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


def _on_cpu(pid: int) -> bool:
    """Running or runnable (state R), not sleeping."""
    return process_state(pid) == "R"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def _wait_for(check: Any, what: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process.poll() is not None:
            raise RuntimeError(f"waiting for {what}: the process exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"waiting for {what}: not within {timeout:.0f} s")
        time.sleep(0.1)


# --- checks ------------------------------------------------------------------------------------


@dataclass
class Recovery:
    """How a run ended: seconds from the end of the fault until the last upload was judged."""

    seconds: float
    problems: list[str]
    acknowledged: int
    stored: int  # submission rows of the contest: acknowledged, plus any whose 202 was lost
    last_trail: str  # the events of the submission judged last, in seconds after the fault


def check_recovery(load: Load, burst: Burst, fault_over: datetime, give_up: float) -> Recovery:
    """Wait (up to `give_up` s) until every upload of the contest is judged, let duplicates
    drain, then list everything that is not exactly once and exact."""
    plan, stack = load.plan, load.stack
    rows = stack.sql("SELECT id FROM submissions WHERE contest_id = ?", plan.contest)
    wanted = {u.submission for u in burst.acknowledged if u.submission} | {r[0] for r in rows}
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        follow_events(http, plan, load.mark, wanted, time.monotonic() + give_up)
        _settle(stack)
        events = follow_events(http, plan, load.mark, (), time.monotonic() + 30)
        problems = verify(http, plan, burst, load.corpus, events)
    problems += _sql_problems(stack, plan.contest) + _event_problems(stack, plan.contest, events)
    problems += _log_problems(stack, plan.contest)
    judged = [e for e in events if e["type"] == "submission.judged"]
    if not judged:
        return Recovery(float("inf"), problems, len(burst.acknowledged), len(rows), "")
    last = max(judged, key=lambda e: str(e["ts"]))
    seconds = (clock.parse_time(last["ts"]) - fault_over).total_seconds()
    trail = " ".join(
        f"{e['type'].removeprefix('submission.')}@{_after(e, fault_over):+.1f}s"
        for e in events
        if e.get("submission") == last["submission"]
    )
    return Recovery(max(0.0, seconds), problems, len(burst.acknowledged), len(rows), trail)


def _after(event: dict[str, Any], moment: datetime) -> float:
    return (clock.parse_time(event["ts"]) - moment).total_seconds()


def _settle(stack: FaultStack, timeout: float = 15.0) -> None:
    """Let redelivered and duplicate messages run (they must find the work done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with suppress(redis.RedisError):
            if stack.broker_backlog() == 0:
                return
        time.sleep(0.5)


def _sql_problems(stack: FaultStack, contest: str) -> list[str]:
    stuck = stack.sql(
        "SELECT id, state, attempts, failure FROM submissions WHERE contest_id = ? "
        "AND state != 'judged'",
        contest,
    )
    results = stack.sql(
        "SELECT s.id, COUNT(r.id) FROM submissions s JOIN contests c ON c.id = s.contest_id "
        "LEFT JOIN results r ON r.submission_id = s.id AND r.lexicon_id = c.lexicon_id "
        "AND r.layout_id = c.layout_id WHERE s.contest_id = ? GROUP BY s.id",
        contest,
    )
    return [
        f"submission {sid} is {state} after {n} attempts: {why}" for sid, state, n, why in stuck
    ] + [f"submission {sid} has {n} current results" for sid, n in results if n != 1]


def _event_problems(stack: FaultStack, contest: str, events: list[dict[str, Any]]) -> list[str]:
    known = {r[0] for r in stack.sql("SELECT id FROM submissions")}
    ours = {r[0] for r in stack.sql("SELECT id FROM submissions WHERE contest_id = ?", contest)}
    history: dict[str, list[str]] = {}
    for event in events:
        if "submission" in event:
            history.setdefault(event["submission"], []).append(event["type"])
    problems = [
        f"events about unknown submission {sid}: {kinds}"
        for sid, kinds in history.items()
        if sid not in known
    ]
    for sid in ours:
        kinds = history.get(sid, [])
        if kinds.count("submission.judged") != 1 or kinds[-1] != "submission.judged":
            problems.append(f"submission {sid} events: {kinds}")
    return problems


def _log_problems(stack: FaultStack, contest: str) -> list[str]:
    """The contest's transparency log: leaves numbered without gap or repeat, one upload entry
    and one verdict entry (with the result's score) for each submission."""
    rows = stack.sql(
        "SELECT leaf, entry FROM log_entries WHERE contest_id = ? ORDER BY leaf", contest
    )
    scores = stack.sql(
        "SELECT r.submission_id, r.score FROM results r JOIN submissions s ON s.id = "
        "r.submission_id JOIN contests c ON c.id = s.contest_id WHERE s.contest_id = ? AND "
        "r.lexicon_id = c.lexicon_id AND r.layout_id = c.layout_id",
        contest,
    )
    return entry_problems(rows, scores)


def outage_answers(burst: Burst, began: float, ended: float) -> tuple[Counter[str], float]:
    """What the API answered to uploads sent between two monotonic times, and the slowest."""
    during = [a for a in burst.attempts if began <= a.started <= ended]
    return Counter(a.outcome for a in during), max((a.latency for a in during), default=0.0)


def report(name: str, **figures: object) -> None:
    """One line per test, read by RELIABILITY.md's reader: run pytest with -s to see it."""
    shown = ", ".join(
        f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
    )
    print(f"\nFAULT {name}: {shown}", flush=True)
