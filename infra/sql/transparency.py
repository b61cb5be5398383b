"""Each contest's transparency log in SQL: its entries numbered in the transaction that commits
their fact, and the sequencer that hashes them into the tree and signs checkpoints.

Writers number a contest's entries under the lock that orders event ids (`infra.sql.base`):
on PostgreSQL every event-writing transaction holds it until it commits, SQLite has one writer
at a time; so leaf order is commit order, and a receipt's leaf number is final when it is
given. The sequencer (`sequence`, one at a time across hosts) adds the new leaves' hashes in
Go tlog's stored-hash order (`core.tlog.merkle`) and signs the tree's new size and root.
The entries each fact makes: `infra.sql.transparency_entries`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, insert, or_, select, text, update

from core import clock, transparency
from core.events import ContestClosed
from core.log_entries import logged
from core.log_signing import Sign
from core.tlog import merkle
from core.transparency import LogHead
from core.tuning import SEQUENCE_AT_MOST
from infra.sql.base import StoreBase, insert_all
from infra.sql.engine import SCHEMA_TRY_LOCK, SEQUENCER_LOCK
from infra.sql.schema import contests, log_entries, log_hashes, log_heads, logs
from infra.sql.transparency_entries import Entry, entries_for

_IDS_A_READ = 500  # ids bound in one IN list (SQLite allows 32,766 parameters; a page is 5,000)

# Statements of every logged transaction, built once: each call binds its values.
# A contest's next `count` leaves taken, its log marked closed too where the key is True.
_TAKE_LEAVES = {
    closing: update(log_heads)
    .where(log_heads.c.contest_id == bindparam("contest"))
    .values(
        next_leaf=log_heads.c.next_leaf + bindparam("count"),
        **({"closed": True} if closing else {}),
    )
    for closing in (False, True)
}
# The same, returning the first of them (where the database returns what an UPDATE changed).
_TAKE_FIRST_LEAF = {
    closing: take.returning(log_heads.c.next_leaf - bindparam("count"))
    for closing, take in _TAKE_LEAVES.items()
}


def log_facts(conn: Connection, written: list[dict[str, Any]]) -> None:
    """The writers' part: the entries of a transaction's events as written, numbered and
    inserted in that transaction (every write of the store's `Database` calls it, whichever
    part writes: `infra.sql.database`)."""
    facts = logged(written)
    if not facts:
        return
    made = entries_for(conn, facts)
    leaves = _number(conn, [entry for _, entries in made for entry in entries])
    for event, entries in made:  # a receipt can name its upload's leaf
        if entries:
            event["leaf"] = leaves[id(entries[0])]


class SqlTransparencyLogs(StoreBase):
    """`core.ports.TransparencyLogs` in SQL: the sequencer, and the readers."""

    # -- the sequencer ----------------------------------------------------------------------

    def sequence(self, sign: Sign) -> int:
        """Log the close of contests whose closing time has passed, hash every contest's new
        leaves into its tree and sign the new heads (and a first, empty head for a contest
        without one). The leaves hashed; 0 when another host is sequencing."""
        now = clock.now()
        with self.read() as conn:  # nothing to do: no write lock taken, every second, for it
            if not _behind(conn) and not _closes_due(conn, now):
                return 0
        done = 0
        with self.write() as (conn, pending):
            if (
                self._postgres
                and not conn.execute(text(SCHEMA_TRY_LOCK), {"kind": SEQUENCER_LOCK}).scalar()
            ):
                return 0
            for contest_id, next_leaf, size in _behind(conn):
                done += _grow(conn, contest_id, size or 0, next_leaf or 0, sign, size is None)
            # Under the sequencer's lock, so two hosts never both announce one close; its
            # entry is hashed at the next round.
            pending.extend(
                ContestClosed(contest=contest_id, closes_at=closes_at, by="clock")
                for contest_id, closes_at in _closes_due(conn, now)
            )
        return done

    # -- readers ----------------------------------------------------------------------------

    def log_head(self, contest_id: str) -> LogHead | None:
        with self.read() as conn:
            row = conn.execute(
                select(logs.c.size, logs.c.root, logs.c.checkpoint).where(
                    logs.c.contest_id == contest_id
                )
            ).first()
        return LogHead(int(row.size), bytes(row.root), row.checkpoint) if row is not None else None

    def log_hashes(self, contest_id: str, indexes: Sequence[int]) -> list[bytes]:
        """Stored hashes by index (Go tlog's numbering), in the order asked."""
        with self.read() as conn:
            return _read_hashes(conn, contest_id, indexes)

    def log_entries(
        self, contest_id: str, first: int, count: int
    ) -> tuple[list[bytes], int | None]:
        """Leaves `first`..`first+count-1`, and the first of them that is sealed (a verdict
        hidden from the public while the contest is frozen), None if none is."""
        E = log_entries.c
        with self.read() as conn:
            rows = conn.execute(
                select(E.leaf, E.entry, E.sealed)
                .where(and_(E.contest_id == contest_id, E.leaf >= first, E.leaf < first + count))
                .order_by(E.leaf)
            ).all()
        sealed = next((int(r.leaf) for r in rows if r.sealed), None)
        return [bytes(r.entry) for r in rows], sealed

    def log_leaves(self, submission_id: str) -> list[tuple[int, str, str | None]]:
        """A submission's leaves in its contest's log: each with its entry's kind and the team
        an upload entry names."""
        return self.log_leaves_of([submission_id]).get(submission_id, [])

    def log_leaves_of(
        self, submission_ids: Sequence[str]
    ) -> dict[str, list[tuple[int, str, str | None]]]:
        """`log_leaves` of each submission (those with none left out), in one read a page of
        ids: a listing asks for its rows' leaves at once."""
        E = log_entries.c
        wanted = list(dict.fromkeys(submission_ids))
        found: dict[str, list[tuple[int, str, str | None]]] = {}
        with self.read() as conn:
            for start in range(0, len(wanted), _IDS_A_READ):
                rows = conn.execute(
                    select(E.submission_id, E.leaf, E.entry)
                    .where(E.submission_id.in_(wanted[start : start + _IDS_A_READ]))
                    .order_by(E.leaf)
                ).all()
                for row in rows:
                    entry = transparency.decode(bytes(row.entry))
                    leaf = (int(row.leaf), str(entry["type"]), entry.get("team"))
                    found.setdefault(row.submission_id, []).append(leaf)
        return found


def _number(conn: Connection, entries: Sequence[Entry]) -> dict[int, int]:
    """Each contest's entries their next leaves, in order, and the rows inserted; the leaf of
    each entry by its `id()`."""
    by_contest: dict[str, list[Entry]] = {}
    for entry in entries:
        by_contest.setdefault(entry.contest_id, []).append(entry)
    rows: list[dict[str, Any]] = []
    leaves: dict[int, int] = {}
    for contest_id, own in by_contest.items():
        closing = any(entry.fields["type"] == "close" for entry in own)
        first = _advance(conn, contest_id, len(own), closing)
        for leaf, entry in enumerate(own, first):
            leaves[id(entry)] = leaf
            rows.append(
                {
                    "contest_id": contest_id,
                    "leaf": leaf,
                    "entry": transparency.encode(entry.fields),
                    "sealed": entry.sealed,
                    "submission_id": entry.submission_id,
                }
            )
    insert_all(conn, log_entries, rows)
    return leaves


def _advance(conn: Connection, contest_id: str, count: int, closing: bool) -> int:
    """Take the contest's next `count` leaves (and mark its log closed if `closing`): the
    first of them. One statement where the database returns what an UPDATE changed."""
    taking = {"contest": contest_id, "count": count}
    if conn.dialect.update_returning:
        first = conn.execute(_TAKE_FIRST_LEAF[closing], taking).scalar()
    else:
        first = conn.execute(
            select(log_heads.c.next_leaf).where(log_heads.c.contest_id == contest_id)
        ).scalar()
        if first is not None:
            conn.execute(_TAKE_LEAVES[closing], taking)
    if first is None:
        conn.execute(
            insert(log_heads).values(contest_id=contest_id, next_leaf=count, closed=closing)
        )
        return 0
    return int(first)


def _closes_due(conn: Connection, now: str) -> list[Any]:
    """(contest id, closing time) of each contest whose closing time has passed with no
    close logged (an organiser's `close` logs its own)."""
    return list(
        conn.execute(
            select(contests.c.id, contests.c.closes_at)
            .outerjoin(log_heads, log_heads.c.contest_id == contests.c.id)
            .where(
                and_(
                    contests.c.closes_at <= now,
                    or_(log_heads.c.closed.is_(None), log_heads.c.closed.is_(False)),
                )
            )
        ).all()
    )


def _behind(conn: Connection) -> list[Any]:
    """(contest id, next leaf, signed size) of each contest whose log has leaves not yet
    signed, or no head at all."""
    return list(
        conn.execute(
            select(contests.c.id, log_heads.c.next_leaf, logs.c.size)
            .outerjoin(log_heads, log_heads.c.contest_id == contests.c.id)
            .outerjoin(logs, logs.c.contest_id == contests.c.id)
            .where(
                or_(
                    logs.c.size.is_(None),
                    and_(log_heads.c.next_leaf.is_not(None), logs.c.size < log_heads.c.next_leaf),
                )
            )
        ).all()
    )


def _grow(
    conn: Connection, contest_id: str, size: int, target: int, sign: Sign, first: bool
) -> int:
    """Hash leaves `size`..`target` (at most SEQUENCE_AT_MOST) into the contest's tree and
    sign its new head."""
    upto = min(target, size + SEQUENCE_AT_MOST)
    E = log_entries.c
    leaves = [
        merkle.leaf_hash(bytes(entry))
        for entry in conn.execute(
            select(E.entry)
            .where(and_(E.contest_id == contest_id, E.leaf >= size, E.leaf < upto))
            .order_by(E.leaf)
        ).scalars()
    ]
    cache: dict[int, bytes] = {}

    def read(indexes: Sequence[int]) -> list[bytes]:
        missing = [i for i in indexes if i not in cache]
        if missing:
            cache.update(zip(missing, _read_hashes(conn, contest_id, missing), strict=True))
        return [cache[i] for i in indexes]

    new_rows = []
    for n, leaf in enumerate(leaves, size):
        added = merkle.stored_hashes(n, leaf, read)
        start = merkle.stored_hash_count(n)
        for offset, value in enumerate(added):
            cache[start + offset] = value
            new_rows.append({"contest_id": contest_id, "n": start + offset, "hash": value})
    insert_all(conn, log_hashes, new_rows)
    grown = size + len(leaves)
    root = merkle.tree_hash(grown, read)
    head = {
        "size": grown,
        "root": root,
        "checkpoint": sign(contest_id, grown, root),
        "signed_at": clock.now(),
    }
    if first:
        conn.execute(insert(logs).values(contest_id=contest_id, **head))
    else:
        conn.execute(update(logs).where(logs.c.contest_id == contest_id).values(**head))
    return len(leaves)


def _read_hashes(conn: Connection, contest_id: str, indexes: Iterable[int]) -> list[bytes]:
    wanted = list(indexes)
    found: dict[int, bytes] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        for n, value in conn.execute(
            select(log_hashes.c.n, log_hashes.c.hash).where(
                and_(log_hashes.c.contest_id == contest_id, log_hashes.c.n.in_(chunk))
            )
        ):
            found[int(n)] = bytes(value)
    missing = [i for i in wanted if i not in found]
    if missing:
        raise LookupError(f"the log of {contest_id} has no stored hash {missing[0]}")
    return [found[i] for i in wanted]
