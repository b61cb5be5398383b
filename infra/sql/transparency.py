"""Each contest's transparency log in SQL: its entries numbered in the transaction that commits
their fact, and the sequencer that hashes them into the tree and signs checkpoints.

Writers number a contest's entries under the lock that orders event ids (`infra.sql.base`):
on PostgreSQL every event-writing transaction holds it until it commits, SQLite has one writer
at a time; so leaf order is commit order, and a receipt's leaf number is final when it is
given. The sequencer (`sequence`, one at a time across hosts) adds the new leaves' hashes in
Go tlog's stored-hash order (`core.tlog.merkle`) and signs the tree's new size and root.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, insert, or_, select, text, update

from core import clock, transparency
from core.errors import read_failure
from core.events import EventType
from core.freeze import freeze_pending, frozen
from core.freeze import sealed as sealed_verdict
from core.log_signing import Sign
from core.records import Contest
from core.tlog import merkle
from core.transparency import LogHead
from infra.sql.base import StoreBase, insert_all
from infra.sql.engine import SCHEMA_TRY_LOCK, SEQUENCER_LOCK
from infra.sql.games import rows_of
from infra.sql.schema import (
    contests,
    log_entries,
    log_hashes,
    log_heads,
    logs,
    results,
    submissions,
)

SEQUENCE_AT_MOST = 20_000  # leaves hashed a contest a round: a round stays short
LOGGED = {
    EventType.SUBMISSION_STORED,
    EventType.SUBMISSION_COPIED,
    EventType.SUBMISSION_JUDGED,
    EventType.SUBMISSION_FAILED,
    EventType.SUBMISSION_HANDED_ON,
    EventType.TEAM_DELETED,
    EventType.CONTEST_CLOSED,
    EventType.REJUDGE_APPLIED,
    EventType.DISPUTE_SETTLED,
}


# Statements of every logged transaction, built once: each call binds its values.
_CONTESTS = select(contests).where(contests.c.id.in_(bindparam("ids", expanding=True)))
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


@dataclass(frozen=True)
class Entry:
    contest_id: str
    fields: dict[str, Any]
    sealed: bool = False  # hidden from the public while the contest is frozen
    submission_id: str | None = None


class TransparencyMixin(StoreBase):
    # -- writers: entries in the fact's transaction -----------------------------------------

    def _log_facts(self, conn: Connection, pending: list[dict[str, Any]]) -> None:
        facts = [event for event in pending if event["type"] in LOGGED and event.get("contest")]
        if not facts:
            return
        found = conn.execute(
            _CONTESTS, {"ids": sorted({event["contest"] for event in facts})}
        ).mappings()
        held = {row["id"]: Contest(**row) for row in found}
        now = clock.now()
        frozen_now = {cid for cid, contest in held.items() if frozen(contest, now)}
        # Receipt times where a freeze is set and not thawed: whether a verdict is sealed
        # must not hang on this host's clock (`core.freeze.sealed`).
        freezing = {cid for cid, contest in held.items() if freeze_pending(contest)}
        context = _Context(
            now=now,
            frozen=frozen_now,
            received=_received(
                conn,
                {
                    e["submission"]
                    for e in facts
                    if e["contest"] in freezing and e.get("submission")
                },
            ),
            verdicts=_live_verdicts(conn, facts, held),
        )
        made: list[tuple[dict[str, Any], list[Entry]]] = []
        for event in facts:
            contest = held.get(event["contest"])
            if contest is not None:
                made.append((event, _entries_of(conn, event, contest, context)))
        leaves = _number(conn, [entry for _, entries in made for entry in entries])
        for event, entries in made:  # a receipt can name its upload's leaf
            if entries:
                event["leaf"] = leaves[id(entries[0])]

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
                {
                    "type": EventType.CONTEST_CLOSED,
                    "contest": contest_id,
                    "closes_at": closes_at,
                    "by": "clock",
                }
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
        E = log_entries.c
        with self.read() as conn:
            rows = conn.execute(
                select(E.leaf, E.entry).where(E.submission_id == submission_id).order_by(E.leaf)
            ).all()
        found = []
        for row in rows:
            entry = transparency.decode(bytes(row.entry))
            found.append((int(row.leaf), str(entry["type"]), entry.get("team")))
        return found


@dataclass(frozen=True)
class _Context:
    """What the entries of one transaction's events are made with, read once for them all."""

    now: str
    frozen: set[str]  # the contests frozen now
    received: Mapping[str, str]  # receipt times of their submissions
    verdicts: Mapping[str, dict[str, Any]]  # the verdict entry of each live result judged


def _entries_of(
    conn: Connection, event: Mapping[str, Any], contest: Contest, context: _Context
) -> list[Entry]:
    """The log entries one event's fact makes: none, one, or (an applied rejudge) one and a
    verdict for each result it changed."""
    kind, cid, sid = event["type"], contest.id, event.get("submission")
    is_frozen = cid in context.frozen
    sealed = sid is not None and sealed_verdict(contest, context.received.get(sid))
    if kind in (EventType.SUBMISSION_STORED, EventType.SUBMISSION_COPIED):
        fields = {
            "type": "upload",
            "submission": sid,
            "team": event["team"],
            "sha256": event["sha256"],
            "size": event["size"],
            "received_at": event["received_at"],
        }
        return [Entry(cid, fields, submission_id=sid)]
    if kind is EventType.SUBMISSION_JUDGED:
        verdict = context.verdicts.get(sid or "")
        return [_entry(cid, verdict, sealed, sid)] if verdict is not None else []
    if kind is EventType.SUBMISSION_FAILED:
        failure = read_failure(event.get("reason"))
        fields = {
            "type": "failed",
            "submission": sid,
            "reason": failure[0].value if failure else "judging_failed",
        }
        if event.get("rejudge"):
            fields["rejudge"] = event["rejudge"]
        sealed = sealed or (is_frozen and bool(event.get("rejudge")))
        return [_entry(cid, fields, sealed, sid)]
    if kind is EventType.SUBMISSION_HANDED_ON:
        owner = {
            "type": "owner",
            "submission": sid,
            "team": event["team"],
            "received_at": event["received_at"],
            "sha256": event["sha256"],
        }
        return [Entry(cid, owner, False, sid)]
    if kind is EventType.TEAM_DELETED:
        return [Entry(cid, {"type": "team_deleted", "team": event["team"]})]
    if kind is EventType.CONTEST_CLOSED:
        return _close(conn, cid, event.get("closes_at") or context.now)
    if kind is EventType.REJUDGE_APPLIED:
        return _applied(conn, event, contest, is_frozen)
    if kind is EventType.DISPUTE_SETTLED:  # changes what counts: sealed while frozen
        settled = {"type": "settled", "submission": sid, "match": event["match"]}
        return [_entry(cid, settled, is_frozen, sid)]
    return []


def _entry(contest_id: str, fields: dict[str, Any], sealed: bool, sid: str | None = None) -> Entry:
    """An entry; a sealed one carries a random nonce, so its leaf hash, public in the tiles
    while it is withheld, does not give away which of its few possible verdicts it holds."""
    if sealed:
        fields = {**fields, "nonce": secrets.token_hex(16)}
    return Entry(contest_id, fields, sealed, sid)


def _live_verdicts(
    conn: Connection, facts: Sequence[Mapping[str, Any]], held: Mapping[str, Contest]
) -> dict[str, dict[str, Any]]:
    """The verdict entry of each live result judged in this transaction, read in one query
    (and one of each game's): a result enters the standings only under its contest's
    ruleset as it is now."""
    wanted = {
        event["submission"]: held[event["contest"]]
        for event in facts
        if event["type"] is EventType.SUBMISSION_JUDGED and event["contest"] in held
    }
    if not wanted:
        return {}
    # With each result its game log's match (its seed and players), which rival logs share.
    judged = select(results, submissions.c.match_key).join(
        submissions, submissions.c.id == results.c.submission_id
    )
    rows = [
        row
        for row in conn.execute(judged.where(results.c.submission_id.in_(list(wanted))))
        if (row.lexicon_id, row.layout_id)
        == (wanted[row.submission_id].lexicon_id, wanted[row.submission_id].layout_id)
    ]
    by_game: dict[str, list[Row[Any]]] = {}
    for row in rows:
        by_game.setdefault(wanted[row.submission_id].game, []).append(row)
    fields: dict[int, dict[str, Any]] = {}
    for name, own in by_game.items():
        fields.update(rows_of(name).log_results(conn, own))
    return {
        row.submission_id: _verdict(
            row.submission_id,
            (row.lexicon_id, row.layout_id),
            row.judge_version,
            fields.get(row.id),
            row.match_key,
        )
        for row in rows
    }


def _verdict(
    sid: str,
    ruleset: tuple[str, str],
    judge_version: str,
    fields: dict[str, Any] | None,
    match: str | None = None,
) -> dict[str, Any]:
    """A verdict entry; a game log's names its match, so the standings the log implies treat
    rival logs of one game as the served ones do (`core.disputes`), and is sealed with it."""
    verdict = {
        "type": "verdict",
        "submission": sid,
        "lexicon": ruleset[0],
        "layout": ruleset[1],
        "judge_version": judge_version,
        "result": fields,
    }
    return verdict if match is None else {**verdict, "match": match}


def _applied(
    conn: Connection, event: Mapping[str, Any], contest: Contest, is_frozen: bool
) -> list[Entry]:
    """The run's entry, then a verdict for each submission whose result under the new
    ruleset differs from its result under the old one (or that had none), by id."""
    run_id, new = event["rejudge"], (event["lexicon"], event["layout"])
    old = (event["from_lexicon"], event["from_layout"])
    head = {"type": "rejudge", "run": run_id, "lexicon": new[0], "layout": new[1]}
    entries = [_entry(contest.id, head, is_frozen)]
    before, after = _results_under(conn, contest, old), _results_under(conn, contest, new)
    for sid in sorted(after):
        version, fields, match = after[sid]
        if before.get(sid, (None, None, None))[1] != fields:
            verdict = {**_verdict(sid, new, version, fields, match), "rejudge": run_id}
            entries.append(_entry(contest.id, verdict, is_frozen, sid))
    return entries


def _results_under(
    conn: Connection, contest: Contest, ruleset: tuple[str, str]
) -> dict[str, tuple[str, dict[str, Any] | None, str | None]]:
    """Each of the contest's submissions' result under a ruleset: its judge version, its log
    fields and its match."""
    rows = conn.execute(
        select(results, submissions.c.match_key)
        .join(submissions, submissions.c.id == results.c.submission_id)
        .where(
            and_(
                submissions.c.contest_id == contest.id,
                results.c.lexicon_id == ruleset[0],
                results.c.layout_id == ruleset[1],
            )
        )
    ).all()
    fields = rows_of(contest.game).log_results(conn, rows) if rows else {}
    return {r.submission_id: (r.judge_version, fields.get(r.id), r.match_key) for r in rows}


def _close(conn: Connection, contest_id: str, closes_at: str) -> list[Entry]:
    """The close, once: a contest closed early by its organiser is not closed again by the
    clock."""
    closed = conn.execute(
        select(log_heads.c.closed).where(log_heads.c.contest_id == contest_id)
    ).scalar()
    if closed:
        return []
    return [Entry(contest_id, {"type": "close", "closes_at": closes_at})]


def _received(conn: Connection, submission_ids: set[str]) -> dict[str, str]:
    if not submission_ids:
        return {}
    rows = conn.execute(
        select(submissions.c.id, submissions.c.received_at).where(
            submissions.c.id.in_(submission_ids)
        )
    )
    return {sid: received_at for sid, received_at in rows}


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
