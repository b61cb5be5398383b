"""Failovers at a deadline, for the cluster test and `benchmarks.failover`: during a burst of
uploads through both API hosts, the host of the PostgreSQL primary or of the Redis primary is
cut off (cable pulled, every process stopped with SIGSTOP) or killed (SIGKILL to every process),
Patroni or Sentinel names a new primary, and the old one returns and must come back a replica
that refuses writes. What a scenario measures: how long intake acknowledged nothing, how long
judging stood still with work waiting, and what it must never do: answer 500, lose an
acknowledged upload, or judge one twice.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any, Literal

import psycopg
import redis

from core import clock
from devstack.testing.cluster.checks import judged_once_problems, log_problems
from devstack.testing.cluster.cluster import Cluster
from devstack.testing.cluster.corpora import Corpus, make_corpus
from devstack.testing.cluster.namespaces import NetnsError
from devstack.testing.cluster.processes import START_TIMEOUT_S, wait_for
from devstack.testing.cluster.uploads import Sent, Uploads
from judge import Lexicon

Service = Literal["database", "redis"]
How = Literal["cut", "kill"]
GOALS = {"intake_outage_s": 15.0, "judging_pause_s": 30.0}  # issue 54's goals, for reports
ELECTION_BOUND_S = 90.0  # a new primary named, on a loaded two-core machine
RESUMED_BOUND_S = 90.0  # intake and judging going again after it
RETURN_BOUND_S = 120.0  # the old primary a replica again after it returns
JUDGED_WITHIN_S = 150.0
FOLLOW_UP = 48  # uploads sent once the burst is judged: every worker host must take some
# Rounds of them, FOLLOW_PAUSE_S apart, for FOLLOW_WITHIN_S at most: a worker host still
# re-making its connections (its retries back off; on a loaded machine its parent may lag its
# events by tens of seconds) takes none of the first; one that never comes back, none of any.
FOLLOW_ROUNDS, FOLLOW_PAUSE_S, FOLLOW_WITHIN_S = 12, 5.0, 120.0
# Answers a client may see while a primary fails over: acknowledged, refused for the outage,
# or no answer in time (a host whose database connection hung until TCP gave up).
EXPECTED_OUTCOMES = {"202", "503", "ReadError", "ReadTimeout", "RemoteProtocolError"}


@dataclass(frozen=True)
class Fault:
    service: Service
    how: How

    @property
    def title(self) -> str:
        what = {"database": "the PostgreSQL primary", "redis": "the Redis primary"}[self.service]
        done = {"cut": "cut off (link down, SIGSTOP)", "kill": "killed (SIGKILL)"}[self.how]
        return f"{what}'s host {done}, then back"

    @property
    def contest(self) -> str:
        return f"{self.service[:2]}-{self.how}"


# The services alternate: Sentinel does not fail the same master over again within twice its
# failover timeout of the last failover, so back to back the second one would measure that.
FAULTS = (
    Fault("database", "cut"),
    Fault("redis", "cut"),
    Fault("database", "kill"),
    Fault("redis", "kill"),
)


@dataclass
class Outcome:
    fault: Fault
    old: str
    new: str
    elected_s: float  # from the fault to the manager naming a new primary that answers
    intake_outage_s: float  # the longest time between two acknowledgments during the burst
    judging_pause_s: float  # the longest time no upload was judged while one waited
    returned_s: float  # from the old primary's return to it replicating as a replica
    fenced: str  # what a write sent straight to the old primary got
    acknowledged: int
    sent: int
    outcomes: Counter[str]
    # Uploads each worker host judged of those sent after the failover and the return (rounds
    # of FOLLOW_UP until each host judged some, or FOLLOW_WITHIN_S passed), from the store.
    tasks_after: dict[str, int] = field(default_factory=dict)
    # Worker hosts that did not answer remote control (Celery's inspect) after those rounds.
    unanswering: list[str] = field(default_factory=list)
    restarted_workers: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, object]:
        return {
            "old": self.old,
            "new": self.new,
            "elected_s": self.elected_s,
            "intake_outage_s": self.intake_outage_s,
            "judging_pause_s": self.judging_pause_s,
            "returned_s": self.returned_s,
            "acknowledged": f"{self.acknowledged}/{self.sent}",
            "outcomes": dict(self.outcomes),
            "tasks_after": self.tasks_after,
            "unanswering": self.unanswering,
            "fenced": self.fenced,
        }


def run(
    cluster: Cluster,
    lexicon: Lexicon,
    fault: Fault,
    contest: str | None = None,
    *,
    uploads: int = 720,
    rate: float = 36.0,
    moves: int = 150,
    teams: int = 8,
    seed: int = 2,
) -> Outcome:
    """One scenario on a whole cluster (`Cluster.heal` first): `uploads` paced at `rate` a
    second, the fault a quarter of the way in, the old primary back once a new one serves."""
    contest = contest or fault.contest
    tokens = cluster.open_contest(contest, cluster.judge_list_id, teams)
    spare = FOLLOW_UP * FOLLOW_ROUNDS
    whole = make_corpus(lexicon, uploads + spare, teams=teams, moves=moves, seed=seed)
    corpus = Corpus(whole.data[:uploads], whole.expected[:uploads], teams)
    group = cluster.patroni if fault.service == "database" else cluster.sentinel
    workers = {name: host.processes["worker"].popen.pid for name, host in cluster.workers.items()}
    urls = {name: cluster.api_url(name) for name in cluster.apis}
    burst = Uploads(urls, contest, tokens, corpus, rate=rate).start()
    wait_for(lambda: len(burst.acknowledged()) >= uploads // 4, 90, "a quarter acknowledged")

    old = group.primary()
    if old is None:
        raise NetnsError(f"no {fault.service} primary before the fault")
    # The fault comes once every other member replicates in sync, as its manager sees it: a
    # manager promotes only a replica it knows to be current (Sentinel passes over one whose
    # link has been down for ten times its down-after time), so a fault during a moment of lag
    # would test the lag, not the failover.
    members = cluster.databases if fault.service == "database" else cluster.redises
    for member in members:
        if member.name != old:
            group.wait_current(member.name, START_TIMEOUT_S)
    host = cluster.network.hosts[old]
    began = time.monotonic()
    if fault.how == "cut":
        host.link_down()
        host.freeze(True)
    else:
        host.kill()
    new = group.wait_primary(other_than=old, timeout=ELECTION_BOUND_S)
    elected_s = time.monotonic() - began
    _wait_resumed(cluster, contest, burst)

    back = time.monotonic()
    if fault.how == "cut":
        host.link_up()
        host.freeze(False)
    else:
        group.restart(host)
    group.wait_replica(old, RETURN_BOUND_S)
    returned_s = time.monotonic() - back
    fenced = _fenced(cluster, fault.service, old)

    burst.wait()
    cluster.wait_judged(contest, len(burst.acknowledged()), JUDGED_WITHIN_S)
    # The workers after the failover, as they are (no restart): a few more uploads, each worker
    # host must judge some, in one of a few rounds, and answer remote control.
    sent = list(burst.sent)
    followed: list[Sent] = []
    tasks_after: dict[str, int] = {}
    following = time.monotonic()
    for first in range(uploads, uploads + spare, FOLLOW_UP):
        if first > uploads:
            if time.monotonic() - following > FOLLOW_WITHIN_S:
                break
            time.sleep(FOLLOW_PAUSE_S)
        later = Corpus(whole.data[first : first + FOLLOW_UP],
                       whole.expected[first : first + FOLLOW_UP], teams)  # fmt: skip
        follow = Uploads(urls, contest, tokens, later)
        follow.run()
        sent += follow.sent
        followed += follow.sent
        acknowledged = len([one for one in sent if one.acknowledged])
        cluster.wait_judged(contest, acknowledged, JUDGED_WITHIN_S)
        tasks_after = cluster.judged_by([s.submission for s in followed if s.submission])
        if all(tasks > 0 for tasks in tasks_after.values()):
            break
    answering = cluster.task_totals()
    unanswering = [name for name in cluster.workers if name not in answering]
    problems = _judged_once(cluster, contest, sent, whole)
    restarted = [
        name
        for name, pid in workers.items()
        if cluster.workers[name].processes["worker"].popen.pid != pid
        or not cluster.workers[name].processes["worker"].running
    ]
    outcomes = Counter(outcome for one in sent for _, outcome in one.tries)
    problems += [
        f"{n} answers {outcome}"
        for outcome, n in outcomes.items()
        if outcome not in EXPECTED_OUTCOMES
    ]
    if not fenced.startswith("refused"):
        problems.append(f"the old primary {old} took a write after it returned: {fenced}")
    return Outcome(
        fault=fault,
        old=old,
        new=new,
        elected_s=elected_s,
        intake_outage_s=intake_outage(burst),
        judging_pause_s=judging_pause(cluster, contest),
        returned_s=returned_s,
        fenced=fenced,
        acknowledged=len([one for one in sent if one.acknowledged]),
        sent=len(sent),
        outcomes=outcomes,
        tasks_after=tasks_after,
        unanswering=unanswering,
        restarted_workers=restarted,
        problems=problems,
    )


def _wait_resumed(cluster: Cluster, contest: str, burst: Uploads) -> None:
    """Intake acknowledging again and judging going on, with a new primary serving: ten more
    uploads acknowledged and ten more judged (or, the burst over, everything acknowledged)."""
    acked = len(burst.acknowledged())
    judged = _judged_count(cluster, contest)
    wait_for(
        lambda: len(burst.acknowledged()) >= min(acked + 10, len(burst.sent)) or burst.elapsed > 0,
        RESUMED_BOUND_S,
        "intake acknowledging again",
    )

    def judging() -> bool:
        now = _judged_count(cluster, contest) or 0
        everything = burst.elapsed > 0 and now >= len(burst.acknowledged())
        return now >= (judged or 0) + 10 or everything

    wait_for(judging, RESUMED_BOUND_S, "judging going on again", interval=0.25)


def _judged_count(cluster: Cluster, contest: str) -> int | None:
    try:
        rows = cluster.sql(
            "SELECT COUNT(*) FROM submissions WHERE contest_id = %s AND state = 'judged'", contest
        )
    except psycopg.Error:
        return None  # no primary answers yet
    return int(rows[0][0])


def _fenced(cluster: Cluster, service: Service, old: str) -> str:
    """What a write straight to the old primary gets once it is back: refused, it is fenced."""
    try:
        if service == "database":
            with closing(cluster.patroni.connect(old)) as conn:
                conn.execute("CREATE TEMP TABLE fence (n int)")
        else:
            with cluster.sentinel.client(old) as client:
                client.set("tilejudge:fence", "1")
    except (psycopg.errors.ReadOnlySqlTransaction, redis.ReadOnlyError) as exc:
        return f"refused: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    except (psycopg.Error, redis.RedisError) as exc:
        return f"failed otherwise: {type(exc).__name__}: {exc}"
    return "accepted"


def _judged_once(cluster: Cluster, contest: str, sent: list[Sent], corpus: Corpus) -> list[str]:
    acknowledged = len([one for one in sent if one.acknowledged])
    stored = sum(cluster.states(contest).values())
    cluster.wait_judged(contest, max(stored, acknowledged), JUDGED_WITHIN_S)
    cluster.quiet()
    problems = judged_once_problems(cluster, contest, sent, corpus)
    return problems + log_problems(cluster, contest)


def intake_outage(burst: Uploads) -> float:
    """The longest time between two successive acknowledgments, from the burst's start to its
    last: with uploads arriving all along, how long intake answered nothing but refusals."""
    times = sorted([burst.started, *(s.acked_at for s in burst.sent if s.acked_at is not None)])
    return max((b - a for a, b in pairwise(times)), default=0.0)


def judging_pause(cluster: Cluster, contest: str) -> float:
    """The longest time between two successive results (`judged_at`) while some upload
    received before it began was judged only after it ended: judging stood still with work
    waiting."""
    rows = cluster.sql(
        "SELECT received_at, judged_at FROM submissions WHERE contest_id = %s "
        "AND judged_at IS NOT NULL",
        contest,
    )
    spans = [(_at(received), _at(judged)) for received, judged in rows]
    judged = sorted(j for _, j in spans)
    longest = 0.0
    for start, end in pairwise(judged):
        gap = (end - start).total_seconds()
        if gap > longest and any(r < start and j >= end for r, j in spans):
            longest = gap
    return longest


def _at(value: Any) -> datetime:
    return value if isinstance(value, datetime) else clock.parse_time(str(value))
