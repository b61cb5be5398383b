"""The capacity benchmark's probes (`benchmarks.capacity`): each stack process's CPU time by
role, sampled while a burst runs, and the counters of Redis, S3 and PostgreSQL read around it."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import psutil
import psycopg
import redis

from devstack.testing.stack_process import RunningStack

SAMPLE_S = 0.5  # how often each process's CPU time is read
ROLES = (
    "API",
    "worker children",
    "worker parent",
    "Redis",
    "SeaweedFS",
    "PostgreSQL backends",
    "up (supervisor)",
)
LATER = "look again"  # a process whose role is not known yet
FAMILIES = {"uvicorn": "API", "celery": "worker", "redis-server": "Redis", "weed": "SeaweedFS"}

Figures = dict[str, float]


@dataclass
class Watched:
    role: str
    process: psutil.Process
    origin: tuple[float, float] | None  # CPU, of which kernel, at the first reading that counts
    latest: tuple[float, float] = (0.0, 0.0)


class CpuSampler:
    """CPU time (user + kernel) of the stack's processes and of the PostgreSQL backends serving
    the run's database, read every SAMPLE_S on a thread of its own, so a process that starts or
    exits between two readings is counted (one that exits loses at most its last SAMPLE_S)."""

    def __init__(self, stack_pid: int, database: str, skip: set[int]) -> None:
        self.stack_pid, self.skip = stack_pid, skip
        self.database = re.compile(rf"\b{re.escape(database)}\b")
        self.own_cpu = 0.0  # this thread's CPU, kept out of the load client's
        self.most_alive: Counter[str] = Counter()  # the most processes of each role at once
        self._watched: dict[tuple[int, float], Watched] = {}
        self._ignored: set[tuple[int, float]] = set()
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._sample(started=False)  # what runs already counts from here
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()
            self.own_cpu = time.thread_time()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self, started: bool = True) -> None:
        """Watch each new process of `up`'s tree or serving the database; read them all. One
        that `started` after the first sample counts from its start."""
        with self._lock:
            for process in psutil.process_iter():
                try:
                    key = (process.pid, process.create_time())
                    if key in self._watched or key in self._ignored:
                        continue
                    role = self._role(process)
                    if role == LATER:
                        continue
                    if role:
                        self._watched[key] = Watched(role, process, (0.0, 0.0) if started else None)
                    else:
                        self._ignored.add(key)
                except psutil.Error:
                    continue
            alive: Counter[str] = Counter()
            for watched in self._watched.values():
                try:
                    times = watched.process.cpu_times()
                except psutil.Error:
                    continue  # exited: its last reading stands
                watched.latest = (times.user + times.system, times.system)
                watched.origin = watched.origin or watched.latest
                alive[watched.role] += 1
            self.most_alive |= Counter({r: max(n, self.most_alive[r]) for r, n in alive.items()})

    def _role(self, process: psutil.Process) -> str | None:
        """A process's role: by the child of `up` it descends from, or PostgreSQL's backend
        serving the run's database. (The WAL writer and checkpointer serve the whole cluster,
        which other work shares: not this run's to count.)"""
        if process.pid in self.skip:
            return None
        if process.name() == "postgres":
            title = " ".join(process.cmdline())
            if not title.startswith("postgres:"):
                return LATER  # the postmaster, or a backend forked but not yet named
            return "PostgreSQL backends" if self.database.search(title) else None
        if process.pid == self.stack_pid:
            return "up (supervisor)"
        top = process
        while (parent := top.parent()) is not None and parent.pid != self.stack_pid:
            top = parent
        if parent is None:
            return None
        command = " ".join(top.cmdline())
        family = next((role for name, role in FAMILIES.items() if name in command), None)
        if family == "worker":
            return "worker parent" if top.pid == process.pid else "worker children"
        return family

    def counters(self) -> Figures:
        """Per role: CPU seconds since the sampler started, of which in the kernel."""
        self._sample()
        out: Figures = {}
        with self._lock:
            for watched in self._watched.values():
                origin = watched.origin or watched.latest
                for name, value in (
                    (f"cpu:{watched.role}", watched.latest[0] - origin[0]),
                    (f"kernel:{watched.role}", watched.latest[1] - origin[1]),
                ):
                    out[name] = out.get(name, 0.0) + value
        return out


class Probes:
    """Reads every counter at once: CPU per role, Redis's INFO, SeaweedFS's metrics, and
    PostgreSQL's statistics of the run's database."""

    def __init__(self, stack: RunningStack, admin_url: str, url: str) -> None:
        database = urlsplit(url).path.lstrip("/")
        self.redis = redis.Redis.from_url(stack.redis_url)  # carries the stack's password
        self.metrics_url = seaweedfs_metrics_url(stack)
        self.admin = psycopg.connect(admin_url, autocommit=True)
        self.scratch = psycopg.connect(url, autocommit=True)
        backend = self.scratch.execute("SELECT pg_backend_pid()").fetchone()
        skip = {int(backend[0])} if backend else set()
        self.sampler = CpuSampler(stack.process.pid, database, skip)
        self.database, self.infos, self.polls = database, 0, 0

    def close(self) -> None:
        self.sampler.stop()
        self.redis.close()
        self.admin.close()
        self.scratch.close()

    def read(self) -> Figures:
        out = self.sampler.counters()
        out["client"] = sum(psutil.Process().cpu_times()[:2]) - self.sampler.own_cpu
        for name, stat in self.redis.info("commandstats").items():
            command = name.removeprefix("cmdstat_")
            out[f"redis:{command}"] = float(stat["calls"])
            if command != "info":  # this reader's own
                out["redis usec"] = out.get("redis usec", 0.0) + float(stat["usec"])
        stats = self.redis.info("stats")
        self.infos += 2  # these two INFOs: counted, and taken off
        out["redis:info"] = out.get("redis:info", 0.0) - self.infos
        out["redis bytes in"] = float(stats["total_net_input_bytes"])
        out["redis bytes out"] = float(stats["total_net_output_bytes"])
        out |= self._seaweedfs()
        out |= self._postgres()
        return out

    def _seaweedfs(self) -> Figures:
        if self.metrics_url is None:
            return {}
        out: Figures = {}
        wanted = {
            "SeaweedFS_s3_request_total": "s3",
            "SeaweedFS_volumeServer_request_total": "volume",
            "SeaweedFS_filerStore_request_total": "filer store",
        }
        for line in httpx.get(self.metrics_url, timeout=10).text.splitlines():
            found = re.match(r"(\w+)\{(.*)\} (\S+)$", line)
            if found and found[1] in wanted:
                kind = re.search(r'type="([^"]*)"', found[2])
                key = f"{wanted[found[1]]}:{kind[1] if kind else '?'}"
                out[key] = out.get(key, 0.0) + float(found[3])
        return out

    def _postgres(self) -> Figures:
        row = self.admin.execute(
            "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted"
            " FROM pg_stat_database WHERE datname = %s",
            (self.database,),
        ).fetchone()
        assert row is not None
        names = ("commits", "rollbacks", "rows inserted", "rows updated", "rows deleted")
        out = {f"pg {name}": float(value) for name, value in zip(names, row)}
        out["pg commits"] -= self.polls  # the waiting loop's own reads
        return out

    def wait_judged(
        self, contest: str, count: int, deadline: float, stall: float
    ) -> tuple[Counter[str], float]:
        """Poll the run's database until `count` of the contest's submissions are judged or
        failed, or none more is for `stall` seconds: how many are in each state, and when
        (monotonic) the last of them was seen finished."""
        last, progressed = -1, time.monotonic()
        while True:
            self.polls += 1
            rows = self.scratch.execute(
                "SELECT state, count(*) FROM submissions WHERE contest_id = %s GROUP BY state",
                (contest,),
            ).fetchall()
            states = Counter({str(state): int(n) for state, n in rows})
            finished, now = states["judged"] + states["failed"], time.monotonic()
            if finished != last:
                last, progressed = finished, now
            if finished >= count or now > deadline or now - progressed > stall:
                return states, progressed
            time.sleep(0.5)

    def scores(self, contest: str) -> dict[str, int]:
        rows = self.scratch.execute(
            "SELECT s.id, r.score FROM submissions s JOIN results r ON r.submission_id = s.id"
            " WHERE s.contest_id = %s",
            (contest,),
        ).fetchall()
        return {str(sid): int(score) for sid, score in rows}


def seaweedfs_metrics_url(stack: RunningStack) -> str | None:
    """The Prometheus page `weed mini` serves on one of its ports (its components share one
    registry there), found by asking each port it listens on; None if none answers."""
    for process in psutil.Process(stack.process.pid).children():
        if process.name() != "weed":
            continue
        for connection in process.net_connections(kind="tcp"):
            if connection.status != psutil.CONN_LISTEN:
                continue
            url = f"http://127.0.0.1:{connection.laddr.port}/metrics"
            try:
                if "SeaweedFS_s3_request_total" in httpx.get(url, timeout=2).text:
                    return url
            except httpx.HTTPError:
                continue
    return None
