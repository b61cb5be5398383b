"""The stack on several hosts: network namespaces on a private bridge (devstack/testing/cluster/)
for the services (PostgreSQL on three hosts under Patroni, Redis on two under Sentinel,
SeaweedFS), two API hosts and two worker hosts, a third worker host added during a test (the
services' failovers: test_failover.py). Each test sends a hidden corpus and checks every upload judged
exactly once with the offline judge's score: one result under the live ruleset and one
`submission.judged` event per submission.

Run with -s to see one `CLUSTER name: ...` line of figures per test.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from datetime import datetime
from typing import Any

import pytest
import redis

from core import clock
from devstack import http1
from devstack.testing.cluster.checks import judged_once_problems, log_problems, one_line
from devstack.testing.cluster.cluster import JUDGE_TASK, Cluster, judged_by
from devstack.testing.cluster.corpora import Corpus, make_corpus
from devstack.testing.cluster.namespaces import NetnsError
from devstack.testing.cluster.processes import wait_for
from devstack.testing.cluster.roles import TIMINGS
from devstack.testing.cluster.uploads import Sent, Uploads
from devstack.testing.word_lists import cached_list
from infra.api_client import Client
from judge import Lexicon
from judge.wordytaire import default_layout, judge

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

VISIBILITY_S = float(TIMINGS["TILEJUDGE_VISIBILITY_TIMEOUT"])
TIME_LIMIT_S = float(TIMINGS["TILEJUDGE_TASK_TIME_LIMIT"])
LOCK_TTL_S = float(TIMINGS["TILEJUDGE_SWEEPER_LOCK_TTL"])
SWEEP_EVERY_S = 5.0  # infra.compose: the elected sweeper's pass interval
# A claim left by a host that vanished is handed on by the sweeper once it is older than the
# hard time limit + 5 s, at its next pass; redelivery after the visibility timeout may come
# first. The bound adds judging time and a loaded two-core machine.
# The tests wait for each event (work judged elsewhere, a takeover, a first task) within such a
# bound, far beyond what the mechanism takes, and fail only if it never comes; how soon it came
# is the figure each test prints (RELIABILITY.md), never asserted: a loaded machine stretches it.
HANDED_ON_S = TIME_LIMIT_S + 5 + SWEEP_EVERY_S
FAILOVER_BOUND_S = HANDED_ON_S + 25
JUDGED_WITHIN_S = 120.0  # a whole corpus, recovery included
FIRST_TASK_WITHIN_S = 30.0  # a worker host that answers its first ping, to its first task
BACKLOG_FLOOR = 10  # messages: below this the added host might find nothing left to take
START_BOUND_S = 90.0  # a worker host's start on a loaded machine
TAKEOVER_WITHIN_S = LOCK_TTL_S + 60.0
RESENT = 20  # uploads the killed API host acknowledged, sent again to the other one
# Every test's corpus cuts its games from one seed's: generating them is most of a corpus's
# cost, and each test has a contest of its own.
GAMES = 2


def report(name: str, **figures: object) -> None:
    print(f"\nCLUSTER {name}: {one_line(**figures)}", flush=True)


def urls(hosts: Cluster) -> dict[str, str]:
    return {name: hosts.api_url(name) for name in hosts.apis}


def contest_with_corpus(
    hosts: Cluster,
    lexicon: Lexicon,
    contest: str,
    uploads: int,
    *,
    moves: int,
    teams: int = 8,
) -> tuple[list[str], Corpus]:
    tokens = hosts.open_contest(contest, hosts.judge_list_id, teams)
    return tokens, make_corpus(lexicon, uploads, teams=teams, moves=moves, seed=GAMES)


def send(hosts: Cluster, contest: str, tokens: list[str], corpus: Corpus) -> Uploads:
    uploads = Uploads(urls(hosts), contest, tokens, corpus)
    uploads.run()
    if uploads.failure is not None:
        raise uploads.failure
    return uploads


def trails(hosts: Cluster, ids: list[str], since: datetime) -> dict[str, list[str]]:
    """Each submission's events, oldest first (judging with its attempt number), each with its
    seconds from `since` (the cut, the kill)."""
    found: dict[str, list[str]] = {}
    rows = hosts.sql(
        "SELECT submission_id, type, data, ts FROM events WHERE submission_id = ANY(%s) "
        "ORDER BY id",
        ids,
    )
    for sid, kind, data, ts in rows:
        attempt = json.loads(data).get("attempt")
        short = kind.removeprefix("submission.")
        named = f"{short}#{attempt}" if attempt else short
        found.setdefault(str(sid), []).append(f"{named}@{seconds(since, ts):+.1f}s")
    return found


def broker_state(hosts: Cluster) -> str:
    """kombu's redelivery bookkeeping: the lock a restore takes (its milliseconds left, -2
    while no one holds it) and the age of each unacknowledged message, in seconds."""
    try:
        with hosts.redis_client() as client:
            mutex_ttl = client.pttl("unacked_mutex")
            ages = [
                time.time() - score
                for _, score in client.zrange("unacked_index", 0, -1, withscores=True)
            ]
    except redis.RedisError as exc:
        return f"broker state unknown: {exc}"
    return f"unacked_mutex ttl {mutex_ttl} ms; unacked ages {sorted(round(a, 1) for a in ages)} s"


def handed_on_by(trail: dict[str, list[str]]) -> str:
    requeued = any(event.startswith("requeued") for events in trail.values() for event in events)
    return "sweeper" if requeued else "redelivery"


def seconds(since: datetime, stamp: str) -> float:
    return (clock.parse_time(stamp) - since).total_seconds()


def wait_judged_elsewhere(hosts: Cluster, ids: list[str], since: datetime) -> float:
    """Seconds from `since` until the last of `ids` was judged (by the SQL row's judged_at).
    Past the bound, the error tells what held them up: their rows and events, the queue, the
    sweeper's holder and what the other hosts logged about them."""
    try:
        wait_for(
            lambda: len(hosts.judged_at(ids)) == len(ids),
            FAILOVER_BOUND_S + 30,
            f"{ids} judged by another host",
            interval=0.25,
        )
    except NetnsError as exc:
        raise NetnsError(f"{exc}\n{held_up(hosts, ids, since)}") from exc
    return max((at - since).total_seconds() for at in hosts.judged_at(ids).values())


NOTEWORTHY = ("sweeper", "election", '"level": "warning"', '"level": "error"', "Traceback")


def held_up(hosts: Cluster, ids: list[str], since: datetime) -> str:
    """What a failover that took too long left to read: each submission's row and event trail,
    the live backlog, the unacknowledged messages, the sweeper's holder, kombu's restore lock,
    and the last lines of each host's logs that name one of `ids`, the sweeper or its election,
    or are warnings and errors."""
    rows = hosts.sql(
        "SELECT id, state, state_at, attempts FROM submissions WHERE id = ANY(%s)", ids
    )
    lines = [f"cut off (or killed) at {since.isoformat()}"]
    lines += [
        f"row {sid}: {state} since {seconds(since, at):+.1f} s, attempts {n}"
        for sid, state, at, n in rows
    ]
    lines += [f"events {sid}: {trail}" for sid, trail in trails(hosts, ids, since).items()]
    lines.append(
        f"live backlog {hosts.live_backlog()}, unacked {hosts.unacked()}, "
        f"sweeper held by {hosts.sweeper_holder()}"
    )
    lines.append(broker_state(hosts))
    for name, host in [*hosts.apis.items(), *hosts.workers.items()]:
        for label in host.processes:
            said = [
                line
                for line in host.log(label).splitlines()
                if any(mark in line for mark in NOTEWORTHY) or any(sid in line for sid in ids)
            ]
            lines += [f"{name}/{label}: {line[:400]}" for line in said[-15:]]
    return "\n".join(lines)


def resent_elsewhere(
    hosts: Cluster, host: str, contest: str, tokens: list[str], corpus: Corpus, sent: list[Sent]
) -> list[str]:
    """Send acknowledged uploads again through `host`; what did not come back as the same
    submission, flagged a duplicate."""
    wrong = []
    with Client(http1.Connection(hosts.api_url(host))) as api:
        for one in sent:
            answer = api.submit(contest, corpus.data[one.index], token=tokens[one.team])
            got = (
                answer.status,
                answer.json().get("id"),
                answer.headers.get("x-tilejudge-duplicate"),
            )
            if got != (202, one.submission, "true"):
                wrong.append(f"upload {one.index} ({one.submission} from {one.host}): {got}")
    return wrong


def assert_judged_once(hosts: Cluster, contest: str, uploads: Uploads, corpus: Corpus) -> None:
    stored = sum(hosts.states(contest).values())
    hosts.wait_judged(contest, max(stored, len(uploads.acknowledged())), JUDGED_WITHIN_S)
    hosts.quiet()
    problems = judged_once_problems(hosts, contest, uploads.sent, corpus)
    problems += log_problems(hosts, contest)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


@pytest.fixture(scope="module")
def lexicon(real_lexicon: Lexicon) -> Lexicon:
    """The judge's word list: the contests' and the offline judge's."""
    return real_lexicon


# --- the tests ---------------------------------------------------------------------------------


def test_uploads_through_both_api_hosts_are_judged_once_and_both_worker_hosts_work(
    hosts: Cluster, lexicon: Lexicon
) -> None:
    tokens, corpus = contest_with_corpus(hosts, lexicon, "both", 240, moves=300)
    before = hosts.task_totals()
    uploads = send(hosts, "both", tokens, corpus)

    assert len(uploads.acknowledged()) == len(corpus.data), Counter(s.outcome for s in uploads.sent)
    assert_judged_once(hosts, "both", uploads, corpus)
    by_api = Counter(s.host for s in uploads.acknowledged())
    by_worker = judged_by(before, hosts.task_totals(), JUDGE_TASK)
    report("two API hosts, two worker hosts", uploads=len(corpus.data),
           accepted_by=dict(by_api), messages_judged_by=by_worker)  # fmt: skip
    assert set(by_api) == set(hosts.apis), f"uploads acknowledged by {dict(by_api)}"
    assert all(by_worker[name] > 0 for name in ("worker1", "worker2")), (
        f"judge_group tasks per worker host: {by_worker}"
    )


def test_a_worker_host_cut_off_mid_batch_has_its_work_judged_elsewhere_and_never_twice(
    hosts: Cluster, lexicon: Lexicon
) -> None:
    tokens, corpus = contest_with_corpus(hosts, lexicon, "cut", 250, moves=1500)
    victim = hosts.workers["worker1"]
    # A backlog, so the cut lands mid-batch; the other worker host stays frozen until the cut, so
    # the backlog lasts however many tries the cut takes.
    with hosts.frozen("worker2"):
        with hosts.frozen("worker1"):
            uploads = send(hosts, "cut", tokens, corpus)
        log_offset = len(victim.log("worker"))
        in_flight, cut_at = hosts.cut_mid_task("worker1", victim.link_down, victim.link_up)
    try:
        elsewhere_s = wait_judged_elsewhere(hosts, in_flight, cut_at)
        trail = trails(hosts, in_flight, cut_at)
        broker = broker_state(hosts)
    finally:
        victim.link_up()
    back = time.monotonic()
    # Back on the network: whatever it still held ends, recorded nowhere (its claim is gone).
    wait_for(
        lambda: hosts.worker_answers("worker1") and not hosts.active("worker1"),
        60,
        "worker1 answering and idle after its link came back",
    )
    settled_s = time.monotonic() - back

    assert_judged_once(hosts, "cut", uploads, corpus)
    since_cut = victim.log("worker")[log_offset:]
    found_done = sum(since_cut.count(f'"outcome": "{o}"') for o in ("skipped", "lost_claim"))
    report(
        "worker host cut off mid-batch",
        in_flight=len(in_flight),
        judged_elsewhere_s=elsewhere_s,
        handed_on_by=handed_on_by(trail),
        back_and_idle_s=settled_s,
        its_late_attempts_found_done=found_done,
        trail=trail[in_flight[0]],
        broker=broker,
    )


def test_a_worker_host_killed_whole_mid_batch_has_its_work_judged_elsewhere_and_never_twice(
    hosts: Cluster, lexicon: Lexicon
) -> None:
    tokens, corpus = contest_with_corpus(hosts, lexicon, "kill", 250, moves=1500)
    victim = hosts.workers["worker2"]
    killed: list[int] = []

    def kill() -> None:
        killed[:] = victim.kill()

    def restart() -> None:
        hosts.start_worker("worker2")
        hosts.wait_worker("worker2")

    with hosts.frozen("worker1"):  # until the kill, so the backlog lasts however many tries
        with hosts.frozen("worker2"):
            uploads = send(hosts, "kill", tokens, corpus)
        in_flight, killed_at = hosts.cut_mid_task("worker2", kill, restart)
    elsewhere_s = wait_judged_elsewhere(hosts, in_flight, killed_at)
    trail = trails(hosts, in_flight, killed_at)
    began = time.monotonic()
    restart()  # its messages may come back to it now: they must find the work done
    restart_s = time.monotonic() - began

    assert_judged_once(hosts, "kill", uploads, corpus)
    report(
        "worker host killed whole mid-batch",
        processes_killed=len(killed),
        in_flight=len(in_flight),
        judged_elsewhere_s=elsewhere_s,
        handed_on_by=handed_on_by(trail),
        worker_restart_s=restart_s,
        trail=trail[in_flight[0]],
    )
    assert len(killed) >= 2, f"killed {killed}: a worker host runs a parent and a pool child"


def test_an_api_host_killed_during_a_burst_loses_no_acknowledged_upload_and_doubles_none(
    hosts: Cluster, lexicon: Lexicon
) -> None:
    tokens, corpus = contest_with_corpus(hosts, lexicon, "api-kill", 600, moves=150)
    holder = hosts.sweeper_holder()
    victim = holder if holder in hosts.apis else "api1"
    survivor = next(name for name in hosts.apis if name != victim)
    uploads = Uploads(urls(hosts), "api-kill", tokens, corpus).start()
    wait_for(lambda: len(uploads.acknowledged()) >= len(corpus.data) // 4, 60, "a quarter in")
    hosts.apis[victim].kill()
    takeover_s = None
    if victim == holder:
        takeover_s = wait_for(
            lambda: hosts.sweeper_holder() == survivor, TAKEOVER_WITHIN_S, "the takeover",
            interval=0.05,
        )  # fmt: skip
    uploads.wait()

    acknowledged = uploads.acknowledged()
    moved = [s for s in acknowledged if s.failed_over]
    assert len(acknowledged) == len(corpus.data), (
        f"{len(corpus.data) - len(acknowledged)} uploads never acknowledged: "
        f"{Counter(s.outcome for s in uploads.sent if not s.acknowledged)}"
    )
    assert moved, f"no upload was sent again to {survivor}: the kill landed after the burst"
    assert_judged_once(hosts, "api-kill", uploads, corpus)
    stored = sum(hosts.states("api-kill").values())
    # What a client whose 202 was lost with the host does: the same bytes to the other host are
    # the same submission.
    answered_by_victim = [s for s in acknowledged if s.host == victim][:RESENT]
    again = resent_elsewhere(hosts, survivor, "api-kill", tokens, corpus, answered_by_victim)
    report(
        "API host killed during a burst",
        killed=victim,
        after_acknowledged=len(corpus.data) // 4,
        failed_over=len(moved),
        same_submission_on_retry=sum(s.duplicate for s in moved),
        resent_to_survivor=len(answered_by_victim),
        stored=stored,
        sweeper_takeover_s=takeover_s if takeover_s is not None else "not the holder",
        outcomes=dict(Counter(o for s in uploads.sent for _, o in s.tries)),
    )
    assert stored == len(corpus.data), f"{stored} submissions stored for {len(corpus.data)} uploads"
    assert not again, "sent again to the other host, an upload the dead one acknowledged:\n" + (
        "\n".join(again)
    )


def test_a_third_worker_host_started_during_a_backlog_takes_work_within_seconds(
    hosts: Cluster, lexicon: Lexicon
) -> None:
    tokens, corpus = contest_with_corpus(hosts, lexicon, "backlog", 500, moves=1500)
    if "worker3" not in hosts.workers:
        hosts.add_worker("worker3")
    hosts.workers["worker3"].kill()  # a host started afresh, whatever an earlier test did
    with hosts.frozen("worker1", "worker2"):
        uploads = send(hosts, "backlog", tokens, corpus)
        before = hosts.task_totals(["worker1", "worker2"])
        launched = time.monotonic()
        hosts.start_worker("worker3")
    # The other two judge the backlog while the third starts; should it run low before the
    # third answers (a slow start on a loaded machine), they pause until it does, so that the
    # third joins a backlog either way. The backlog is watched on a thread of its own, every
    # 10 ms: between two of the third's pings (half a second each) the two can drain hundreds.
    held, answered = threading.Event(), threading.Event()

    def hold_the_backlog() -> None:
        while not answered.is_set():
            backlog = hosts.live_backlog()
            if backlog is not None and backlog < BACKLOG_FLOOR:
                for name in ("worker1", "worker2"):
                    hosts.workers[name].freeze(True)
                held.set()
                return
            answered.wait(0.01)

    watcher = threading.Thread(target=hold_the_backlog, daemon=True)
    watcher.start()
    proc = hosts.workers["worker3"].processes["worker"]
    try:
        while not hosts.worker_answers("worker3"):
            if not proc.running or time.monotonic() - launched > START_BOUND_S:
                answered.set()
                watcher.join()
                hosts.heal()  # the others resume whatever happened
                pytest.fail(
                    f"worker3 did not answer within {START_BOUND_S:.0f} s (exit status "
                    f"{proc.popen.poll()}):\n{hosts.workers['worker3'].log('worker', 3000)}"
                )
        ready_s = time.monotonic() - launched
        backlog_at_ready = hosts.live_backlog()
        # The third may consume before it answers a ping: with the others paused, what it
        # took of the backlog by then is the backlog it joined.
        taken_at_ready = hosts.task_totals(["worker3"]).get("worker3", {}).get(JUDGE_TASK, 0)
    finally:
        answered.set()
        watcher.join()
        if held.is_set():
            for name in ("worker1", "worker2"):
                hosts.workers[name].freeze(False)
    first_task_s = wait_for(
        lambda: hosts.task_totals(["worker3"]).get("worker3", {}).get(JUDGE_TASK, 0) > 0,
        FIRST_TASK_WITHIN_S,
        "worker3's first task",
        interval=0.05,
    )
    start_to_first_task_s = time.monotonic() - launched

    assert_judged_once(hosts, "backlog", uploads, corpus)
    by_worker = judged_by(before, hosts.task_totals(), JUDGE_TASK)
    report(
        "worker host added during a backlog",
        uploads=len(corpus.data),
        start_to_ready_s=ready_s,
        backlog_at_ready=backlog_at_ready,
        taken_at_ready=taken_at_ready,
        others_paused_for_it=held.is_set(),
        ready_to_first_task_s=first_task_s,
        start_to_first_task_s=start_to_first_task_s,
        messages_judged_by=by_worker,
    )
    assert backlog_at_ready or taken_at_ready, (
        f"no backlog left when worker3 answered ({backlog_at_ready}), none of it taken by worker3"
    )


def test_a_rejudge_under_a_word_list_registered_after_the_workers_started_runs_on_every_host(
    hosts: Cluster, lexicon: Lexicon, old_lexicon: Lexicon
) -> None:
    # Long enough for every host to take batches: the one that runs the producer restarts its
    # pool (to share the new list) only once the producer is done.
    tokens, corpus = contest_with_corpus(hosts, lexicon, "rejudge", 480, moves=1500)
    uploads = send(hosts, "rejudge", tokens, corpus)
    assert_judged_once(hosts, "rejudge", uploads, corpus)
    names = sorted(hosts.workers)
    offsets = {name: len(hosts.workers[name].log("worker")) for name in names}
    before = hosts.task_totals(names)
    new_id = hosts.register_lexicon(
        "words_2020", cached_list("words_alpha_2020-08-24.txt").read_bytes()
    )
    assert new_id == old_lexicon.id

    began = time.monotonic()
    with hosts.admin() as http:
        started = http.post("/v1/contests/rejudge/rejudges", json={"lexicon": "words_2020"})
        started.raise_for_status()
        run_id = started.json()["id"]
        run: dict[str, Any] = {}

        def finished() -> bool:
            run.update(http.get(f"/v1/rejudges/{run_id}").json())
            return bool(run["state"] != "running")

        wait_for(finished, JUDGED_WITHIN_S, f"rejudge {run_id}", interval=0.25)
    took_s = time.monotonic() - began

    batches = judged_by(before, hosts.task_totals(names), "tilejudge.rejudge_batch")
    preloaded = {name: _preloaded(hosts, name, offsets[name], new_id) for name in names}
    rows = hosts.sql(
        "SELECT s.id, s.sha256, COUNT(r.id), MIN(r.score) FROM submissions s LEFT JOIN results r "
        "ON r.submission_id = s.id AND r.lexicon_id = %s AND r.layout_id = %s "
        "WHERE s.contest_id = 'rejudge' GROUP BY s.id, s.sha256",
        new_id,
        default_layout().id,
    )
    offline = _offline_by_sha(corpus, old_lexicon)
    wrong = [
        f"submission {sid}: {n} results under the new list, score {score}, offline {offline.get(sha)}"
        for sid, sha, n, score in rows
        if n != 1 or score != offline.get(sha)
    ]
    report(
        "rejudge under a list registered after the workers started",
        hosts=len(names),
        submissions=len(rows),
        rejudge_s=took_s,
        batches_by=batches,
        preloaded_on=preloaded,
        state=run["state"],
    )
    assert run["state"] == "ready" and run["done"] == run["total"] == len(rows), run
    assert not wrong, "\n".join(wrong[:20])
    assert all(preloaded.values()), f"the new list was loaded on {preloaded}"
    assert all(n > 0 for n in batches.values()), f"rejudge batches per worker host: {batches}"


def _preloaded(hosts: Cluster, name: str, offset: int, lexicon_id: str) -> bool:
    """Whether the host's worker logged loading `lexicon_id` after `offset`."""
    for line in hosts.workers[name].log("worker")[offset:].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "worker.lexicons_preloaded" and lexicon_id in event["lexicons"]:
            return True
    return False


def _offline_by_sha(corpus: Corpus, lexicon: Lexicon) -> dict[str, int]:
    layout = default_layout()
    return {hashlib.sha256(d).hexdigest(): judge(d, lexicon, layout).total for d in corpus.data}
