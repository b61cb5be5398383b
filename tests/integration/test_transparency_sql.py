"""The transparency log on real SQLite and PostgreSQL: entries numbered in commit order by
concurrent writers (intake's group commits, judging in other processes), no leaf twice or
skipped; sequencers on several hosts at once hash each leaf once; the tree's root and a proof
read back from the stored hashes check against the signed checkpoint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from core import transparency
from core.group_commit import GroupCommit
from core.log_signing import LogSigner
from core.tlog import (
    Verifier,
    check_record,
    generate_key,
    leaf_hash,
    open_checkpoint,
    prove_record,
    root,
)
from infra.sql.engine import make_engine
from infra.sql.schema import events, log_entries
from infra.sql.store import SqlStore
from tests.integration.test_sql_store import (
    add_contest,
    add_team,
    claim_one,
    new_submission,
    record,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def second_store(migrated_url: str) -> Iterator[SqlStore]:
    """Another host's view of the same database: its own engine and connection pool."""
    other = SqlStore(make_engine(migrated_url))
    yield other
    other.engine.dispose()


def logged(store: SqlStore, contest: str = "c1") -> list[tuple[int, dict]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(log_entries.c.leaf, log_entries.c.entry)
            .where(log_entries.c.contest_id == contest)
            .order_by(log_entries.c.leaf)
        ).all()
    return [(int(leaf), transparency.decode(bytes(entry))) for leaf, entry in rows]


def test_concurrent_writers_number_each_contests_leaves_once_in_commit_order(
    store: SqlStore, second_store: SqlStore
) -> None:
    add_contest(store)
    teams = [add_team(store, f"team-{n}") for n in range(4)]
    commits = [GroupCommit(store), GroupCommit(second_store)]
    uploads = [new_submission(teams[n % 4]) for n in range(120)]
    try:
        with ThreadPoolExecutor(16) as pool:
            answers = list(
                pool.map(lambda n: commits[n % 2].submit(uploads[n]).result(), range(len(uploads)))
            )
    finally:
        for commit in commits:
            commit.close()
    assert all(answer is not None and answer.log_leaf is not None for answer in answers)

    def judge(n: int) -> None:
        owner = (store, second_store)[n % 2]
        claim = claim_one(owner, uploads[n].id, stale_after=3600)
        assert claim is not None and record(owner, claim, n)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(judge, range(len(uploads))))

    found = logged(store)
    assert [leaf for leaf, _ in found] == list(range(240))  # none skipped, none twice
    kinds = [(entry["type"], entry["submission"]) for _, entry in found]
    assert sorted(kinds) == sorted(
        [("upload", u.id) for u in uploads] + [("verdict", u.id) for u in uploads]
    )
    assert {a.id: a.log_leaf for a in answers if a} == {
        entry["submission"]: leaf for leaf, entry in found if entry["type"] == "upload"
    }
    # Leaf order is commit order: the order of the events that carried the facts.
    with store.engine.connect() as conn:
        order = [
            (row.type, row.submission_id)
            for row in conn.execute(select(events).order_by(events.c.id))
            if row.type in ("submission.stored", "submission.judged")
        ]
    assert [("upload" if t == "submission.stored" else "verdict", s) for t, s in order] == kinds
    # A verdict never precedes its upload.
    first = {}
    for leaf, entry in found:
        first.setdefault((entry["type"], entry["submission"]), leaf)
    assert all(first[("upload", u.id)] < first[("verdict", u.id)] for u in uploads)


def sequence_after(barrier: threading.Barrier, store: SqlStore, signer: LogSigner) -> None:
    barrier.wait()
    store.sequence(signer.sign)


def test_sequencers_on_two_hosts_at_once_hash_each_leaf_once_under_one_signed_root(
    store: SqlStore, second_store: SqlStore
) -> None:
    add_contest(store)
    team = add_team(store, "alpha")
    signer = LogSigner(generate_key("judge.example")[0])
    for n in range(300):
        store.store_submission(new_submission(team))
        if n % 50 == 0:  # sequenced as they come, and concurrently
            barrier = threading.Barrier(2)
            threads = [
                threading.Thread(target=sequence_after, args=(barrier, s, signer))
                for s in (store, second_store)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    while store.sequence(signer.sign):
        pass
    head = store.log_head("c1")
    assert head is not None and head.size == 300
    entries = [
        transparency.encode({k: v for k, v in e.items() if k != "v"}) for _, e in logged(store)
    ]
    leaves = [leaf_hash(e) for e in entries]
    assert root(leaves) == head.root
    checkpoint = open_checkpoint(
        head.checkpoint, [Verifier.from_key(signer.verifier_key)], signer.origin("c1")
    )
    assert (checkpoint.size, checkpoint.root) == (300, head.root)
    proof = prove_record(300, 257, lambda ids: store.log_hashes("c1", ids))
    check_record(proof, 300, head.root, 257, leaves[257])
