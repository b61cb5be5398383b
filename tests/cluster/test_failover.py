"""The database and the broker fail over at a deadline (devstack/testing/cluster/failover.py):
the host of the PostgreSQL primary (Patroni, three hosts) or of the Redis primary (Sentinel) is
cut off or killed during a burst through both API hosts, and comes back. Every acknowledged
upload is judged once with the offline judge's score, no request is answered 500, the workers
go on without a restart, and the old primary, back, refuses writes.

Run with -s to see one `CLUSTER name: ...` line of figures per scenario (`python -m
benchmarks.failover` prints them over several rounds).
"""

from __future__ import annotations

import re

import pytest

from devstack.testing.cluster.checks import one_line
from devstack.testing.cluster.cluster import Cluster
from devstack.testing.cluster.failover import FAULTS, Fault, Outcome, run
from judge import Lexicon

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.contest for f in FAULTS])
def test_a_primary_lost_at_a_deadline_fails_over_losing_and_doubling_nothing(
    hosts: Cluster, real_lexicon: Lexicon, fault: Fault
) -> None:
    outcome = run(hosts, real_lexicon, fault)
    print(f"\nCLUSTER {fault.title}: {one_line(**outcome.figures())}", flush=True)
    assert not outcome.problems, "\n".join(outcome.problems[:30])
    assert outcome.acknowledged == outcome.sent, (
        f"{outcome.sent - outcome.acknowledged} uploads never acknowledged: {outcome.outcomes}"
    )
    assert outcome.restarted_workers == [], "worker processes ended or were restarted"
    idle = [name for name, tasks in outcome.tasks_after.items() if tasks <= 0]
    assert idle == [], (
        f"worker hosts that judged none of the uploads sent after the failover: {idle}\n"
        + _diagnosis(hosts, idle, outcome)
    )
    assert outcome.unanswering == [], (
        f"worker hosts that judged but did not answer remote control: {outcome.unanswering}\n"
        + _diagnosis(hosts, outcome.unanswering, outcome)
    )


def _diagnosis(hosts: Cluster, names: list[str], outcome: Outcome) -> str:
    """For each host named: whether it answered remote control, its log's warnings and errors,
    and where its Celery parent's threads stand now."""
    return "\n".join(
        f"--- {name} (answers remote control: {name not in outcome.unanswering}), its worker's "
        f"warnings and errors:\n{_troubles(hosts, name)}\n--- {hosts.held(name)}\n"
        f"--- its threads now:\n"
        f"{hosts.stack_dump(name)[-20000:]}"
        for name in names
    )


def _troubles(hosts: Cluster, name: str, most: int = 40) -> str:
    """The last lines of a worker host's log that say something went wrong."""
    lines = hosts.workers[name].log("worker").splitlines()
    marked = [line for line in lines if re.search(WARNED, line)]
    return "\n".join(line[:400] for line in marked[-most:])


WARNED = r"(?i)warning|error|traceback|exception|reconnect|lost|refused|timed? ?out"
