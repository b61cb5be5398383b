"""The cluster as a test drives it: its roles (roles.py) and what a test asks of them (Celery's
view of the worker hosts, the broker's queues, the sweeper lock, contests through the admin
API), and `cluster()`, which builds it and tears it down whatever happens."""

from __future__ import annotations

import ast
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import redis

from core import clock
from devstack.testing.cluster.namespaces import NetnsError, inside, sweep_stale
from devstack.testing.cluster.network import Network
from devstack.testing.cluster.processes import wait_for
from devstack.testing.cluster.roles import ClusterRoles
from devstack.testing.word_lists import cached_list
from infra.leader import SWEEPER_LOCK
from infra.queues import live_backlog

JUDGE_TASK = "tilejudge.judge_group"


class Cluster(ClusterRoles):
    """The database hosts (Patroni), the Redis hosts (Sentinel), the services host (SeaweedFS
    and the third Sentinel), API hosts and worker hosts."""

    # -- the workers, the broker and the sweeper -------------------------------------------------

    def task_totals(
        self, names: Sequence[str] | None = None, wait: float = 30.0
    ) -> dict[str, dict[str, int]]:
        """Tasks each worker host has taken since it started, by task name (Celery's stats),
        asked again for up to `wait` s while a host does not answer or the broker connection
        fails (it reached a Redis primary that has since failed over: the next one asks the
        sentinels)."""
        nodes = [self.node(n) for n in (names or self.workers)]
        deadline = time.monotonic() + wait
        stats: dict[str, Any] = {}
        while True:
            try:
                stats = self.control.control.inspect(destination=nodes, timeout=1.5).stats() or {}
            except Exception:  # kombu's and redis-py's connection errors, however wrapped
                self.forget_control()
                stats = {}
            if set(nodes) <= set(stats) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return {
            node.split("@", 1)[1]: {str(k): int(v) for k, v in (s.get("total") or {}).items()}
            for node, s in stats.items()
        }

    def judged_by(self, submission_ids: Sequence[str]) -> dict[str, int]:
        """How many of these uploads each worker host judged, from the store alone (the upload
        cache's host id each one's result names, `submissions.held_on`), so a host whose remote
        control is unreachable still counts what it did. Every worker host is in the answer."""
        hosts = {self.host_id(name): name for name in self.workers}
        rows = self.sql("SELECT held_on FROM submissions WHERE id = ANY(%s)", list(submission_ids))
        counts = dict.fromkeys(self.workers, 0)
        for (held_on,) in rows:
            if held_on in hosts:
                counts[hosts[held_on]] += 1
        return counts

    def host_id(self, name: str) -> str:
        """The id worker host `name`'s upload cache took (`infra.upload_cache`)."""
        path = self.workers[name].home / "home" / "upload-cache" / "host-id"
        return path.read_text().strip() if path.exists() else ""

    def stack_dump(self, name: str, wait: float = 10.0) -> str:
        """Where every thread of worker host `name`'s Celery parent is now: Celery writes the
        stacks to its log on SIGUSR1 (its `cry` handler). For a host that stopped taking work."""
        proc = self.workers[name].processes["worker"]
        before = len(self.workers[name].log("worker"))
        with suppress(ProcessLookupError):
            os.kill(proc.popen.pid, signal.SIGUSR1)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            added = self.workers[name].log("worker")[before:]
            if "MainThread" in added:
                time.sleep(0.5)  # the rest of the dump, written in pieces
                return self.workers[name].log("worker")[before:]
            time.sleep(0.1)
        return self.workers[name].log("worker")[before:] or "(no stack dump written)"

    def held(self, name: str) -> str:
        """What worker host `name` says it runs and holds reserved (Celery's inspect), for a
        host that stopped taking work."""
        node = self.node(name)
        try:
            asked = self.control.control.inspect(destination=[node], timeout=2.0)
            return f"active: {asked.active()}, reserved: {asked.reserved()}"
        except Exception as exc:  # kombu's and redis-py's connection errors, however wrapped
            return f"inspect failed: {exc!r}"

    def active(self, name: str) -> list[dict[str, Any]]:
        """The tasks the worker host is running now."""
        node = self.node(name)
        # One host asked: its answer ends the wait (the timeout is for a host that is down).
        asked = self.control.control.inspect(destination=[node], timeout=1.0, limit=1)
        found = asked.active() or {}
        return list(found.get(node, []))

    @contextmanager
    def frozen(self, *names: str) -> Iterator[None]:
        """Worker hosts held still (SIGSTOP) while a backlog is queued for them."""
        for name in names:
            self.workers[name].freeze(True)
        try:
            yield
        finally:
            for name in names:
                self.workers[name].freeze(False)

    def cut_mid_task(
        self, name: str, cut: Callable[[], None], undo: Callable[[], None], tries: int = 5
    ) -> tuple[list[str], datetime]:
        """Wait until worker host `name` runs a task whose claims are taken (its uploads are
        judging in the store), `cut` it off at once, and return the submissions it still holds
        a second after the cut, with the cut's time. A task that recorded its results before
        the cut leaves nothing in flight: `undo` and try again while the backlog lasts.

        The claims are waited for, not only the task: a cut inside the claim's transaction,
        undone a second later, leaves that transaction to TCP's retransmissions, and the next
        tries would cut it again before it commits, until the server ends it (5 s idle)."""
        claimed: list[str] = []

        def claiming() -> bool:
            running = [sid for task in self.active(name) for sid in task_ids(task)]
            claimed[:] = self.still_judging(running) if running else []
            return bool(claimed)

        for _ in range(tries):
            wait_for(claiming, 30, f"{name} holding a claim", interval=0.01)
            cut()
            at = datetime.now(UTC)
            time.sleep(1.0)
            held = self.still_judging(claimed)
            if held:
                return held, at
            undo()
        raise NetnsError(f"{name} was never caught with a claim in flight in {tries} tries")

    def still_judging(self, ids: Sequence[str]) -> list[str]:
        rows = self.sql("SELECT id, state FROM submissions WHERE id = ANY(%s)", list(ids))
        return sorted(str(sid) for sid, state in rows if state == "judging")

    def live_backlog(self) -> int | None:
        try:
            with self.redis_client() as client:
                return live_backlog(client)
        except redis.RedisError:
            return None

    def unacked(self) -> int | None:
        try:
            with self.redis_client() as client:
                return int(client.hlen("unacked"))
        except redis.RedisError:
            return None

    def sweeper_holder(self) -> str | None:
        """The host name in the sweeper lock's value (host:pid:random), None while unheld."""
        try:
            with self.redis_client() as client:
                value = client.get(SWEEPER_LOCK)
        except redis.RedisError:
            return None
        return value.decode().split(":", 1)[0] if isinstance(value, bytes) else None

    # -- the API ------------------------------------------------------------------------------

    def admin(self, name: str | None = None, timeout: float = 120.0) -> httpx.Client:
        """An httpx client on a live API host (the first whose /readyz answers)."""
        names = [name] if name else [n for n in self.apis if "api" in self.apis[n].processes]
        url = next((self.api_url(n) for n in names if self.api_ready(n)), None)
        if url is None:
            raise NetnsError(f"no API host answers among {names}")
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        return httpx.Client(base_url=url, headers=headers, timeout=timeout)

    @staticmethod
    def _ok(answer: httpx.Response) -> dict[str, Any]:
        if answer.is_error:
            raise NetnsError(
                f"{answer.request.method} {answer.request.url}: HTTP {answer.status_code} "
                f"{answer.text[:500]}"
            )
        body: dict[str, Any] = answer.json()
        return body

    def register_lexicon(self, name: str, words: bytes) -> str:
        with self.admin() as http:
            made = http.post("/v1/lexicons", params={"name": name}, content=words,
                             headers={"Content-Type": "text/plain"})  # fmt: skip
            return str(self._ok(made)["id"])

    def open_contest(self, contest: str, lexicon: str, teams: int) -> list[str]:
        """A contest open for a day on `lexicon` (id or name), with `teams` teams; their tokens."""
        now = datetime.now(UTC)
        body = {
            "id": contest,
            "title": f"Cluster {contest}",
            "lexicon": lexicon,
            "opens_at": clock.format_time(now - timedelta(hours=1)),
            "closes_at": clock.format_time(now + timedelta(days=1)),
        }
        with self.admin() as http:
            self._ok(http.post("/v1/contests", json=body))
            return [
                str(
                    self._ok(
                        http.post(f"/v1/contests/{contest}/teams", json={"name": f"team-{n}"})
                    )["token"]
                )
                for n in range(teams)
            ]

    def states(self, contest: str) -> dict[str, int]:
        rows = self.sql(
            "SELECT state, COUNT(*) FROM submissions WHERE contest_id = %s GROUP BY state", contest
        )
        return {str(state): int(n) for state, n in rows}

    def wait_judged(self, contest: str, count: int, timeout: float) -> float:
        """Seconds until `count` submissions of the contest are judged or failed, none pending."""

        def done() -> bool:
            states = self.states(contest)
            final = states.get("judged", 0) + states.get("failed", 0)
            return final >= count and final == sum(states.values())

        try:
            return wait_for(
                done, timeout, f"{count} submissions of {contest} judged", interval=0.25
            )
        except NetnsError as exc:
            raise NetnsError(f"{exc}; states now {self.states(contest)}") from None

    def judged_at(self, ids: Sequence[str]) -> dict[str, datetime]:
        rows = self.sql(
            "SELECT id, judged_at FROM submissions WHERE id = ANY(%s) AND state = 'judged'",
            list(ids),
        )
        return {str(sid): clock.parse_time(at) for sid, at in rows}

    def quiet(self, timeout: float = 30.0) -> None:
        """Wait (bounded) until the broker holds nothing waiting or unacknowledged: redelivered
        and duplicate messages have run, and found their work done."""
        with suppress(NetnsError):
            wait_for(lambda: self.live_backlog() == 0 and self.unacked() == 0, timeout,
                     "the broker to drain", interval=0.25)  # fmt: skip


@contextmanager
def cluster(
    workdir: Path, apis: int = 2, workers: int = 2, concurrency: int = 1
) -> Iterator[Cluster]:
    """The services host, `apis` API hosts and `workers` worker hosts (`concurrency` judging
    processes each), all up and ready, with
    the judge's word list registered before the workers start (so they preload it). The calling
    thread stays in the client host's network until the block ends; everything is torn down
    whatever happens. NotPermitted when this machine refuses network namespaces."""
    sweep_stale()
    network = Network(workdir)
    network.open()
    try:
        with _client_of(network) as made:
            made.concurrency = concurrency
            made.start_services()
            names = [f"api{n}" for n in range(1, apis + 1)]
            for name in names:
                made.add_api(name)
            made.migrate(made.apis[names[0]])
            for name in names:
                made.start_api(name)
            for name in names:
                made.wait_api(name)
            made.judge_list_id = made.register_lexicon(
                "words_alpha", cached_list("words_alpha.txt").read_bytes()
            )
            for n in range(1, workers + 1):
                made.add_worker(f"worker{n}")
                made.start_worker(f"worker{n}")
            for n in range(1, workers + 1):
                made.wait_worker(f"worker{n}")
            yield made
    finally:
        problems = network.close()
        if problems:
            raise NetnsError("teardown: " + "; ".join(problems))


@contextmanager
def _client_of(network: Network) -> Iterator[Cluster]:
    made = Cluster(network)
    with inside(made.client.namespace):
        try:
            yield made
        finally:
            if made._control is not None:
                with suppress(Exception):
                    made._control.close()


def task_ids(task: Mapping[str, Any]) -> list[str]:
    """The submission ids of a running judge_group task, as `inspect active` shows it."""
    args = task.get("args") or []
    if isinstance(args, str):  # some Celery versions show the repr
        args = ast.literal_eval(args)
    return [str(sid) for sid in args[0]] if args and isinstance(args[0], list) else []


def judged_by(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]], task: str
) -> dict[str, int]:
    """Tasks named `task` each worker host took between two `task_totals`."""
    return {
        name: after.get(name, {}).get(task, 0) - before.get(name, {}).get(task, 0) for name in after
    }
