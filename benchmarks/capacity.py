"""What one judged submission costs each part of the pipeline, measured in one run on this machine
(prints, asserts nothing): CPU per process role, Redis commands, S3 requests and PostgreSQL
transactions per submission, the offline judge's CPU on the same corpus, and PostgreSQL's commit
rate here. The stack is `tilejudge up` on a PostgreSQL database of the run's own, dropped after.

    python -m benchmarks.capacity [--uploads 2000] [--concurrency 200] [--teams 50] [--moves 120]
        [--postgres postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import platform
import secrets
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.machinery import EXTENSION_SUFFIXES
from urllib.parse import urlsplit, urlunsplit

import httpx
import psutil
import psycopg
from psycopg import sql

from benchmarks.capacity_probes import ROLES, Figures, Probes
from benchmarks.fixtures import UNLIMITED, bench_stack, burst_plan, shared_lexicon
from core.games import game, part_of
from devstack.burst import Burst, run_burst
from devstack.load import prepare
from devstack.plan import Corpus, Plan, build_corpus

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
IDLE_S = 15.0  # the idle window whose rates are subtracted from the burst's
# PostgreSQL 15 backends report their statistics at most once a second, an idle one within 10 s:
# the counters are read this long after the last result.
STATS_FLUSH_S = 12.0
# The burst's window closes once no submission has been judged for QUIET_S; stragglers are then
# waited for (not counted) until none is judged for STALL_S, past the sweeper's requeue (120 s).
QUIET_S = 10.0
STALL_S = 180.0


@contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for the run (its URL), dropped afterwards."""
    name = f"tj_capacity_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            admin.execute(drop.format(sql.Identifier(name)))


def net_per_submission(
    before_idle: Figures, after_idle: Figures, before: Figures, after: Figures, judged: int
) -> tuple[Figures, Figures]:
    """Per judged submission: the burst window's deltas minus the idle window's rate over the
    same length of time. Also the idle rates, per second."""
    idle_s, burst_s = after_idle["at"] - before_idle["at"], after["at"] - before["at"]
    keys = (set(after) | set(after_idle)) - {"at"}
    idle = {k: (after_idle.get(k, 0.0) - before_idle.get(k, 0.0)) / idle_s for k in keys}
    net = {k: (after.get(k, 0.0) - before.get(k, 0.0) - idle[k] * burst_s) / judged for k in keys}
    return net, idle


def commit_rate(url: str, admin_url: str, connections: int, seconds: float = 4.0) -> Figures:
    """One-row INSERT transactions from `connections` connections at once into a scratch table:
    commits per second, and WAL fsyncs (the cluster's) and backend CPU ms per commit."""
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS commit_probe (id bigserial, at timestamptz)")
    sessions = [psycopg.connect(url, autocommit=True) for _ in range(connections)]
    backends = [psutil.Process(s.info.backend_pid) for s in sessions]
    done = [0] * connections
    stop_at = time.monotonic() + seconds

    def insert(n: int) -> None:
        while time.monotonic() < stop_at:
            sessions[n].execute("INSERT INTO commit_probe (at) VALUES (now())")
            done[n] += 1

    with psycopg.connect(admin_url, autocommit=True) as admin:
        fsyncs = "SELECT wal_sync FROM pg_stat_wal"
        sync_before = admin.execute(fsyncs).fetchone()
        cpu_before = sum(sum(b.cpu_times()[:2]) for b in backends)
        began = time.monotonic()
        threads = [threading.Thread(target=insert, args=(n,)) for n in range(connections)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began
        cpu = sum(sum(b.cpu_times()[:2]) for b in backends) - cpu_before
        sync_after = admin.execute(fsyncs).fetchone()
    for session in sessions:
        session.close()
    assert sync_before is not None and sync_after is not None
    commits = sum(done)
    return {
        "rate": commits / elapsed,
        "fsyncs": (sync_after[0] - sync_before[0]) / commits,
        "cpu ms": 1000 * cpu / commits,
    }


@dataclass(frozen=True)
class Measured:
    net: Figures  # per judged submission, net of the idle rate
    idle: Figures  # per second, stack idle
    processes: Counter[str]  # the most processes of each role alive at once
    metrics_found: bool  # SeaweedFS's own counters were read
    offline_ms: float  # judging alone, CPU ms per submission
    offline_compiled: bool  # the game's judge ran compiled code


def measure(args: argparse.Namespace, url: str) -> Measured:
    """`tilejudge up` on the database at `url`, a contest with its teams, then the windows."""
    lexicon = shared_lexicon()
    env = UNLIMITED | {
        "TILEJUDGE_API_WORKERS": str(args.api_workers),
        "TILEJUDGE_DATABASE_URL": url,
    }
    with bench_stack("tj-capacity-", workers=2, env=env) as stack:
        plan = burst_plan(
            stack, "capacity", uploads=args.uploads, concurrency=args.concurrency,
            teams=args.teams, moves=args.moves, timeout=900,
        )  # fmt: skip
        corpus = build_corpus(lexicon, plan)
        with httpx.Client(base_url=stack.url, timeout=60) as http:
            tokens = prepare(http, plan, lexicon)
        probes = Probes(stack, args.postgres, url)
        try:
            return observe(probes, plan, tokens, corpus, args)
        finally:
            probes.close()


def observe(
    probes: Probes, plan: Plan, tokens: list[str], corpus: Corpus, args: argparse.Namespace
) -> Measured:
    """A warm-up, the idle window, then the burst until every upload is judged: counters around
    the idle window and the burst."""
    # The first uploads of a contest load its word list into the workers (the pool is forked
    # again): a one-off, kept out of the per-submission figures.
    warm = replace(plan, uploads=args.teams, seed=1)
    run_burst(warm, tokens, build_corpus(corpus.lexicon, warm), time.monotonic() + 300)
    probes.wait_judged(plan.contest, warm.uploads, time.monotonic() + 300, STALL_S)
    time.sleep(STATS_FLUSH_S)  # the set-up's statistics reported before the idle window
    idle_before = stamped(probes.read())
    time.sleep(IDLE_S)
    idle_after = before = stamped(probes.read())
    burst = run_burst(plan, tokens, corpus, time.monotonic() + plan.timeout)
    acked = [u for u in burst.uploads if u.submission]
    wanted, deadline = warm.uploads + len(acked), time.monotonic() + 900
    probes.wait_judged(plan.contest, wanted, deadline, QUIET_S)
    time.sleep(STATS_FLUSH_S)
    in_window = probes.wait_judged(plan.contest, 0, deadline, 0)[0]["judged"] - warm.uploads
    after = stamped(probes.read())
    states, last = probes.wait_judged(plan.contest, wanted, deadline, STALL_S)
    states["judged"] -= warm.uploads
    scores = probes.scores(plan.contest)
    wrong = sum(scores.get(str(u.submission)) != corpus.expected[u.index] for u in acked)
    print(burst_line(burst, corpus, states, last - burst.started, wrong, args))
    if in_window < states["judged"]:
        print(
            f"  {states['judged'] - in_window} judged only after a pause of over {QUIET_S:.0f} s"
            " with none judged: left out of the figures below"
        )
    net, idle = net_per_submission(idle_before, idle_after, before, after, in_window)
    found = probes.metrics_url is not None
    offline = offline_judging_ms(plan.game, corpus)
    alive = probes.sampler.most_alive
    return Measured(net, idle, alive, found, offline, judge_compiled(plan.game))


def offline_judging_ms(name: str, corpus: Corpus, passes: int = 3) -> float:
    """CPU ms per submission to judge the corpus in this process, one core, as a worker judges
    an upload (the game's `judge`, under the rules the corpus was scored with): median of
    `passes`."""
    played = game(name)
    rules = played.default_rules()
    times = []
    for _ in range(passes):
        began = time.thread_time()
        for data in corpus.data:
            played.judge(data, corpus.lexicon, rules, "")
        times.append(time.thread_time() - began)
    return 1000 * statistics.median(times) / len(corpus.data)


def judge_compiled(name: str) -> bool:
    """Whether the game's rules engine, as loaded in this process, has compiled modules
    (mypyc's extension modules in its package of `judge/`)."""
    package = part_of("judge", name)
    if package is None:
        return False
    inside = f"{package.__name__}."
    return any(
        module.__name__.startswith(inside)
        and str(getattr(module, "__file__", "")).endswith(tuple(EXTENSION_SUFFIXES))
        for module in list(sys.modules.values())
    )


def stamped(counters: Figures) -> Figures:
    return counters | {"at": time.monotonic()}


def burst_line(
    burst: Burst,
    corpus: Corpus,
    states: Counter[str],
    last: float,
    wrong: int,
    args: argparse.Namespace,
) -> str:
    acked = len(burst.acknowledged)
    size = statistics.mean(map(len, corpus.data))
    others = ", ".join(f"{n} {state}" for state, n in states.items() if state != "judged")
    return (
        f"burst: {args.uploads} uploads of {args.moves} moves ({size / 1000:.1f} kB mean) from "
        f"{args.concurrency} clients, {args.teams} teams: {acked} acknowledged in "
        f"{burst.elapsed:.1f} s ({acked / burst.elapsed:.1f}/s); {states['judged']} judged "
        f"({others or 'no other state'}), the last {last:.1f} s after the first upload; "
        f"scores unlike the offline judge: {wrong}"
    )


def report(measured: Measured, commits: dict[int, Figures]) -> None:
    net, offline = measured.net, measured.offline_ms
    print(
        "\nCPU per judged submission, ms (user + kernel), net of the idle window's rate "
        f"(idle: {idle_line(measured.idle)})"
    )
    print(f"  {'part (the most processes at once)':36s} {'ms':>7s} {'kernel':>7s}")
    for role in ROLES:
        count = measured.processes[role]
        name = f"{role} ({count} process{'es' if count != 1 else ''})"
        ms, kernel = 1000 * net.get(f"cpu:{role}", 0.0), 1000 * net.get(f"kernel:{role}", 0.0)
        print(f"  {name:36s} {ms:7.2f} {kernel:7.2f}")
    print(f"  {'load client (this process)':36s} {1000 * net['client']:7.2f}")
    engine = "compiled" if measured.offline_compiled else "pure source"
    print(f"  {'judging alone, offline, one core':36s} {offline:7.2f}  ({engine}, median of 3)")
    rest = 1000 * net.get("cpu:worker children", 0.0) - offline
    print(f"  {'worker children - judging alone':36s} {rest:7.2f}  (claim, S3, record, broker)")
    print("\nper judged submission:")
    print(f"  Redis       {redis_line(net)}")
    print(f"  S3          {s3_line(net, measured.metrics_found)}")
    print(
        f"  PostgreSQL  {net['pg commits']:.3f} commits, {net['pg rollbacks']:.3f} rollbacks; "
        f"rows {net['pg rows inserted']:.2f} inserted, {net['pg rows updated']:.2f} updated, "
        f"{net['pg rows deleted']:.2f} deleted (pg_stat_database)"
    )
    print("\nPostgreSQL commit rate, one-row INSERT a transaction, synchronous_commit on:")
    for connections, found in commits.items():
        print(
            f"  {connections:2d} connection(s): {found['rate']:6.0f} commits/s; a commit: "
            f"{found['fsyncs']:.2f} WAL fsyncs, {found['cpu ms']:.3f} backend CPU ms"
        )


def redis_line(net: Figures) -> str:
    calls = {k[6:]: v for k, v in net.items() if k.startswith("redis:") and v > 0.005}
    top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1]))
    return (
        f"{sum(calls.values()):.2f} commands ({top}); {net['redis usec']:.0f} us inside "
        f"commands; {net['redis bytes in']:.0f} B in, {net['redis bytes out']:.0f} B out"
    )


def idle_line(idle: Figures) -> str:
    busy = [(r, 1000 * idle.get(f"cpu:{r}", 0.0)) for r in ROLES]
    return ", ".join(f"{r} {ms:.1f}" for r, ms in busy if ms >= 0.05) + " ms/s"


def s3_line(net: Figures, metrics_found: bool) -> str:
    if not metrics_found:
        return (
            "SeaweedFS metrics not reachable; by design 1 PUT (the upload) + 1 PUT (the report),"
            " + 1 GET for an upload not carried in its message"
        )
    kinds = [(k, v) for k, v in sorted(net.items()) if ":" in k and v > 0.005]
    s3 = ", ".join(f"{k[3:]} {v:.2f}" for k, v in kinds if k.startswith("s3:"))
    volume = ", ".join(f"{k[7:]} {v:.2f}" for k, v in kinds if k.startswith("volume:"))
    filer = ", ".join(f"{k[12:]} {v:.2f}" for k, v in kinds if k.startswith("filer store:"))
    return (
        f"requests {s3 or 'none'} (SeaweedFS's own counters); behind them volume server "
        f"{volume or 'none'}, filer store {filer or 'none'}"
    )


def machine() -> str:
    model = platform.machine()
    with open("/proc/cpuinfo") as cpuinfo:
        model = next(
            (ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), model
        )
    return f"{psutil.cpu_count()} CPUs ({model}), Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity", description=__doc__)
    parser.add_argument("--uploads", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--moves", type=int, default=120, help="moves per upload")
    parser.add_argument("--api-workers", type=int, default=2, help="API processes")
    parser.add_argument("--postgres", default=ADMIN_URL, help="a database to CREATE DATABASE from")
    args = parser.parse_args(argv)
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: python -m benchmarks.capacity {shown}".rstrip())
    with psycopg.connect(args.postgres) as admin:
        version = admin.info.server_version
        row = admin.execute("SHOW max_connections").fetchone()
    print(
        f"machine: {machine()}, PostgreSQL {version // 10000}.{version % 10000} "
        f"(max_connections {row[0] if row else '?'}); {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    with scratch_database(args.postgres) as url:
        measured = measure(args, url)
        commits = {n: commit_rate(url, args.postgres, n) for n in (1, 16)}
    report(measured, commits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
