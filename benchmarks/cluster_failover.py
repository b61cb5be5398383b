"""Failover figures of the stack on several hosts: the cluster of devstack/testing/cluster/
(network namespaces on a private bridge: three database hosts, two Redis hosts and the S3 host,
two API hosts, two worker hosts judging with one process each, or --concurrency), in one run
(the database's and the broker's failovers: benchmarks.failover):

- worker efficiency: judged/s of a queue drained by the worker hosts, against the offline
  judge's rate on as many processes as worker hosts (the same cores), same corpus, same run,
  the mean of a run just before the drain and one right after; goal >= 0.8. With more than
  one judging process a host, also against the offline judge on as many processes as the
  pool, which shows what sharing the cores among more processes costs the judging itself;
- a worker host cut off the network (link down) mid-batch -> its claims judged by another host;
- the API host whose sweeper holds the lock killed whole -> another API host's sweeper holds it;
- a third worker host started during a backlog -> its first task.

    python -m benchmarks.cluster_failover [--uploads 300] [--moves 3000] [--repeats 2]
        [--concurrency 1] [--rounds 3] [--efficiency-only]

Needs root (ip netns). Prints the figures; exits 1 if an upload was lost or judged twice.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.fixtures import shared_lexicon
from benchmarks.machine import machine_busy
from benchmarks.pipeline_bench import against_around, judge_only
from benchmarks.sampling import Sampler
from devstack.testing.cluster.checks import judged_once_problems
from devstack.testing.cluster.cluster import JUDGE_TASK, Cluster, cluster
from devstack.testing.cluster.corpora import Corpus, make_corpus
from devstack.testing.cluster.processes import wait_for
from devstack.testing.cluster.roles import TIMINGS
from devstack.testing.cluster.uploads import Uploads
from judge import Lexicon

GOAL = 0.8
WORKER_HOSTS = ("worker1", "worker2")
BACKLOG_UPLOADS, BACKLOG_MOVES = 300, 1500  # enough for a host to be caught judging


class Run:
    """The cluster, the word list, and every contest made, for the exactly-once check."""

    def __init__(self, made: Cluster, lexicon: Lexicon) -> None:
        self.cluster, self.lexicon = made, lexicon
        self.contests: list[tuple[str, Uploads, Corpus]] = []

    def queued_backlog(
        self,
        contest: str,
        uploads: int,
        moves: int,
        seed: int,
        before_thaw: Callable[[Corpus], None] = lambda corpus: None,
    ) -> Uploads:
        """A contest whose corpus is stored and queued while the worker hosts stand still;
        `before_thaw` (given the corpus) runs last before they resume."""
        tokens = self.cluster.open_contest(contest, self.cluster.judge_list_id, 8)
        corpus = make_corpus(self.lexicon, uploads, teams=8, moves=moves, seed=seed)
        urls = {name: self.cluster.api_url(name) for name in self.cluster.apis}
        sent = Uploads(urls, contest, tokens, corpus, concurrency=8, timeout=600)
        with self.cluster.frozen(*WORKER_HOSTS):
            sent.run()
            before_thaw(corpus)
        if sent.failure is not None:
            raise sent.failure
        self.contests.append((contest, sent, corpus))
        return sent

    def problems(self) -> list[str]:
        found = []
        for contest, sent, corpus in self.contests:
            stored = sum(self.cluster.states(contest).values())
            self.cluster.wait_judged(contest, stored, 300)
            found += [
                f"{contest}: {p}"
                for p in judged_once_problems(self.cluster, contest, sent.sent, corpus)
            ]
        return found


class MachineTrace(Sampler):
    """The machine's busy and idle CPU seconds every 20 ms, so that the CPU of a drain is read
    at its last judgement, not when a poll noticed it."""

    def __init__(self) -> None:
        super().__init__()
        self._samples: list[tuple[float, float, float]] = []  # (wall time, busy, idle)

    def sample(self) -> None:
        self._samples.append((time.time(), *machine_busy()))

    def between(self, start: float, end: float) -> tuple[float, float]:
        """Busy and idle seconds from the first sample at or after `start` to the first at or
        after `end` (wall times)."""
        first = next(s for s in self._samples if s[0] >= start)
        last = next((s for s in self._samples if s[0] >= end), self._samples[-1])
        return last[1] - first[1], last[2] - first[2]


def efficiency(
    run: Run, uploads: int, moves: int, round_: int, pool: int
) -> tuple[float, dict[int, tuple[float, float]], str]:
    """Judged/s of a queue drained by the worker hosts; the offline judge's rate on the same
    corpus just before the drain (the queue stored, the worker hosts still frozen) and right
    after it, since this VM's speed drifts within minutes, on as many processes as worker hosts
    (one a core) and, when the pool is larger, on as many as the pool's `pool` processes; and
    where the machine's CPU went during the drain. Each round is a contest of its own with the
    same games (generated once)."""
    made = run.cluster
    before: dict[str, dict[int, tuple[str, float]]] = {}
    counts = sorted({len(WORKER_HOSTS), pool})
    offline: dict[int, list[float]] = {n: [] for n in counts}

    def judged_offline(corpus: Corpus) -> None:
        for n in counts:
            offline[n].append(judge_only(corpus.data, run.lexicon, processes=n))

    def snapshot(corpus: Corpus) -> None:
        judged_offline(corpus)
        before.update({name: host.cpu_seconds() for name, host in made.network.hosts.items()})

    def messages() -> int:
        totals = made.task_totals(list(WORKER_HOSTS)).values()
        return sum(t.get(JUDGE_TASK, 0) for t in totals)

    contest = f"drain-{round_}"
    earlier = messages()
    with MachineTrace() as trace:
        sent = run.queued_backlog(contest, uploads, moves, seed=100, before_thaw=snapshot)
        thawed = datetime.now(UTC)
        ids = [s.submission for s in sent.acknowledged() if s.submission]
        made.wait_judged(contest, len(ids), 600)
    last = max(made.judged_at(ids).values())
    busy, idle = trace.between(thawed.timestamp(), last.timestamp())
    spent = cpu_spent(made, before) + (
        f"; the whole machine from the thaw to the last judgement busy {busy:.2f}, idle {idle:.2f}"
    )
    spent += f"; {len(ids)} uploads in {messages() - earlier} messages"
    drained = len(ids) / (last - thawed).total_seconds()
    judged_offline(run.contests[-1][2])
    return drained, {n: (rates[0], rates[1]) for n, rates in offline.items()}, spent


def cpu_spent(made: Cluster, before: dict[str, dict[int, tuple[str, float]]]) -> str:
    """CPU seconds since `before`, by role: the worker hosts' pool processes and Celery parents,
    each service, the API hosts."""
    parents = {host.processes["worker"].popen.pid for host in made.workers.values()}
    spent: dict[str, float] = {}
    for name, host in made.network.hosts.items():
        for pid, (command, seconds) in host.cpu_seconds().items():
            was = before.get(name, {}).get(pid)
            used = seconds - (was[1] if was and was[0] == command else 0.0)
            if name in made.workers:
                role = "Celery parents" if pid in parents else "pool processes"
            elif name in made.apis:
                role = "API hosts"
            else:
                role = command
            spent[role] = spent.get(role, 0.0) + used
    return ", ".join(
        f"{role} {seconds:.1f}" for role, seconds in sorted(spent.items(), key=lambda kv: -kv[1])
    )


def cut_off(run: Run, repeat: int) -> float:
    """Seconds from a worker host's link going down mid-batch to its claims judged elsewhere."""
    made = run.cluster
    run.queued_backlog(f"cut-{repeat}", BACKLOG_UPLOADS, BACKLOG_MOVES, seed=200 + repeat)
    victim = made.workers["worker1"]
    in_flight, at = made.cut_mid_task("worker1", victim.link_down, victim.link_up)
    try:
        wait_for(lambda: len(made.judged_at(in_flight)) == len(in_flight), 120, "judged elsewhere")
    finally:
        victim.link_up()
    seconds = max((t - at).total_seconds() for t in made.judged_at(in_flight).values())
    wait_for(lambda: made.worker_answers("worker1") and not made.active("worker1"), 60, "worker1")
    return seconds


def sweeper_takeover(run: Run) -> tuple[str, float]:
    """Kill the API host whose sweeper holds the lock; seconds until another one holds it."""
    made = run.cluster
    holder = made.sweeper_holder()
    if holder not in made.apis:
        wait_for(lambda: made.sweeper_holder() in made.apis, 30, "a sweeper holding the lock")
        holder = made.sweeper_holder()
    assert holder is not None
    made.apis[holder].kill()
    seconds = wait_for(
        lambda: made.sweeper_holder() not in (None, holder), 60, "the takeover", interval=0.02
    )
    made.start_api(holder)
    made.wait_api(holder)
    return holder, seconds


def added_host(run: Run, repeat: int) -> tuple[float, float, int | None]:
    """A third worker host started as the other two resume on a backlog: seconds from its start
    to its first ping answered, from then to its first task, and the backlog then."""
    made = run.cluster
    if "worker3" not in made.workers:
        made.add_worker("worker3")
    made.workers["worker3"].kill()
    launched = 0.0

    def start(corpus: Corpus) -> None:
        nonlocal launched
        launched = time.monotonic()
        made.start_worker("worker3")

    run.queued_backlog(
        f"added-{repeat}", 2 * BACKLOG_UPLOADS, BACKLOG_MOVES, seed=300 + repeat, before_thaw=start
    )
    made.wait_worker("worker3")
    ready = time.monotonic() - launched
    backlog = made.live_backlog()
    first = wait_for(
        lambda: made.task_totals(["worker3"]).get("worker3", {}).get(JUDGE_TASK, 0) > 0,
        60,
        "worker3's first task",
        interval=0.05,
    )
    made.workers["worker3"].kill()
    return ready, first, backlog


def figures(seconds: list[float]) -> str:
    shown = ", ".join(f"{s:.1f}" for s in seconds)
    return f"{statistics.median(seconds):.1f} s median ({shown})"


def failovers(run: Run, repeats: int) -> None:
    cuts = [cut_off(run, n) for n in range(repeats)]
    print(
        f"cut-off worker host -> its claims judged elsewhere: {figures(cuts)} (visibility "
        f"timeout {TIMINGS['TILEJUDGE_VISIBILITY_TIMEOUT']} s, hard time limit "
        f"{TIMINGS['TILEJUDGE_TASK_TIME_LIMIT']} s)",
        flush=True,
    )
    takeovers = [sweeper_takeover(run) for _ in range(repeats)]
    print(
        f"sweeper takeover after its API host was killed: {figures([s for _, s in takeovers])} "
        f"(lock TTL {TIMINGS['TILEJUDGE_SWEEPER_LOCK_TTL']} s; killed "
        f"{', '.join(h for h, _ in takeovers)})",
        flush=True,
    )
    added = [added_host(run, n) for n in range(repeats)]
    print(
        f"added worker host: start -> ready {figures([a[0] for a in added])}; ready -> first "
        f"task {figures([a[1] for a in added])} (backlog then {[a[2] for a in added]} messages)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uploads", type=int, default=300, help="the drain's corpus")
    parser.add_argument("--moves", type=int, default=3000, help="moves per upload of the drain")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each failover (>= 1)")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="judging processes per worker host"
    )
    parser.add_argument("--rounds", type=int, default=3, help="drains measured (>= 1)")
    parser.add_argument("--efficiency-only", action="store_true", help="no failover figures")
    args = parser.parse_args()
    lexicon = shared_lexicon()
    with tempfile.TemporaryDirectory(prefix="tj-cluster-") as work:
        began = time.monotonic()
        with cluster(Path(work), concurrency=args.concurrency) as made:
            print(f"cluster up in {time.monotonic() - began:.1f} s on {made.network.subnet}: "
                  f"{', '.join(made.network.hosts)}", flush=True)  # fmt: skip
            run = Run(made, lexicon)
            pool = len(WORKER_HOSTS) * args.concurrency
            ratios: dict[int, list[float]] = {}
            for round_ in range(args.rounds):
                drained, offline, spent = efficiency(run, args.uploads, args.moves, round_, pool)
                for n, around in offline.items():
                    ratios.setdefault(n, []).append(against_around(drained, *around))
                cores = len(WORKER_HOSTS)
                print(
                    f"worker efficiency, round {round_ + 1}: drain {drained:.1f} submissions/s "
                    f"on {cores} worker hosts ({args.concurrency} judging process(es) each), "
                    f"offline judge {offline[cores][0]:.1f} / {offline[cores][1]:.1f}/s on "
                    f"{cores} processes just before / right after, {args.uploads} uploads of "
                    f"{args.moves} moves: ratio {ratios[cores][-1]:.2f} (against the mean)",
                    flush=True,
                )
                if pool != cores:
                    print(
                        f"  against the offline judge on {pool} processes, as many as the pool "
                        f"({offline[pool][0]:.1f} / {offline[pool][1]:.1f}/s): ratio "
                        f"{ratios[pool][-1]:.2f}",
                        flush=True,
                    )
                print(f"  CPU seconds during the drain: {spent}", flush=True)
            for n, found in ratios.items():
                print(
                    f"worker efficiency against the offline judge on {n} processes: median "
                    f"ratio {statistics.median(found):.2f} of {len(found)} rounds"
                    + (f" (goal >= {GOAL})" if n == len(WORKER_HOSTS) else ""),
                    flush=True,
                )
            if not args.efficiency_only:
                failovers(run, args.repeats)
            problems = run.problems()
            print(
                f"exactly once: {sum(len(s.acknowledged()) for _, s, _ in run.contests)} "
                f"acknowledged uploads: {'OK' if not problems else f'{len(problems)} PROBLEMS'}"
            )
            for problem in problems[:30]:
                print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
