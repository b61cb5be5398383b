"""In-memory fakes of the dashboard's signed-out sessions (`SessionStore`) and the contests'
transparency logs (`TransparencyLogs`), held to their SQL adapter (`infra.sql.sessions`,
`infra.sql.transparency`) by the suites in tests/integration (`test_session_port.py`,
`test_transparency_port.py`).

The logs fake takes the `InMemoryDatabase` the store fakes share and logs each of its write
transactions' facts as the SQL store does, as the transaction commits and under its lock (its
`on_commit` hook): the entries `core.log_entries` makes from the tables as that transaction left
them, numbered per contest in commit order. Its sequencer hashes them into each contest's tree
in Go tlog's stored-hash order (`core.tlog.merkle`) and signs the new heads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core import clock, transparency, tuning
from core.errors import StoreUnavailable
from core.events import ContestClosed
from core.fake_database import InMemoryDatabase
from core.games import game
from core.log_entries import (
    Entry,
    Facts,
    Outcome,
    frozen_now,
    judged_live,
    logged,
    made,
    receipt_times_wanted,
    verdict,
)
from core.records import Contest, JudgedResult
from core.tlog import merkle
from core.transparency import LogHead


class InMemorySessionStore:
    """`infra.sql.sessions`: the sessions signed out, each until it would have expired; a
    sign-out drops those expired already. `down = True` fails every call as an outage would."""

    def __init__(self, now: Callable[[], str] | None = None) -> None:
        self.now = now or (lambda: clock.now())  # the process clock as it is at each call
        self.revoked: dict[str, str] = {}  # session id -> when it would have expired
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("in-memory session store is down")

    def revoke_session(self, session_id: str, expires_at: str) -> None:
        self._check()
        if session_id in self.revoked:
            return  # signed out twice: revoked already, and nothing else done
        now = self.now()
        self.revoked = {sid: ends for sid, ends in self.revoked.items() if ends >= now}
        self.revoked[session_id] = expires_at

    def session_revoked(self, session_id: str) -> bool:
        self._check()
        return session_id in self.revoked


@dataclass
class ContestLog:
    """One contest's log: its numbered entries, the hashes the sequencer stored and its head."""

    entries: list[Entry] = field(default_factory=list)  # by leaf
    encoded: list[bytes] = field(default_factory=list)  # each entry's canonical bytes
    closed: bool = False  # its close is logged
    hashes: list[bytes] = field(default_factory=list)  # Go tlog's stored hashes, by index
    head: LogHead | None = None  # as last signed


class InMemoryTransparencyLogs:
    """Each contest's log over the database given: its `down` and `failing` hold here too.
    One logs fake a database, as SQL has one log: a second would miss the entries made before."""

    def __init__(self, db: InMemoryDatabase) -> None:
        holders = (getattr(hook, "__self__", None) for hook in db.on_commit)
        if any(isinstance(holder, InMemoryTransparencyLogs) for holder in holders):
            raise ValueError("a logs fake holds this database already")
        self.db = db
        self.logs: dict[str, ContestLog] = {}
        db.on_commit.append(self._log_facts)

    # -- writers: entries as each transaction ends -------------------------------------------

    def _log_facts(self, written: Sequence[dict[str, Any]]) -> None:
        facts = logged(written)
        if not facts:
            return
        db = self.db
        held = {
            e["contest"]: db.contests[e["contest"]] for e in facts if e["contest"] in db.contests
        }
        now = db.now()
        subs = db.submissions
        context = Facts(
            now=now,
            frozen=frozen_now(held, now),
            received={
                s: subs[s].received_at for s in receipt_times_wanted(facts, held) if s in subs
            },
            verdicts=self._live_verdicts(judged_live(facts, held)),
            closed=lambda contest_id: self._log(contest_id).closed,
            results_under=self._results_under,
        )
        for _, entries in made(facts, held, context):
            for entry in entries:
                log = self._log(entry.contest_id)
                log.entries.append(entry)
                log.encoded.append(transparency.encode(entry.fields))
                log.closed = log.closed or entry.fields["type"] == "close"

    def _log(self, contest_id: str) -> ContestLog:
        return self.logs.setdefault(contest_id, ContestLog())

    def _live_verdicts(self, wanted: Mapping[str, Contest]) -> dict[str, dict[str, Any]]:
        found = {}
        for sid, contest in wanted.items():
            ruleset = (contest.lexicon_id, contest.rules_id)
            kept, sub = self.db.results.get((sid, *ruleset)), self.db.submissions.get(sid)
            if kept is not None and sub is not None:
                fields = _log_fields(contest.game, kept.result)
                found[sid] = verdict(sid, ruleset, kept.result.judge_version, fields, sub.match_key)
        return found

    def _results_under(self, contest: Contest, ruleset: tuple[str, str]) -> dict[str, Outcome]:
        found = {}
        for sid, sub in self.db.submissions.items():
            kept = self.db.results.get((sid, *ruleset))
            if sub.contest_id == contest.id and kept is not None:
                fields = _log_fields(contest.game, kept.result)
                found[sid] = (kept.result.judge_version, fields, sub.match_key)
        return found

    # -- the sequencer ----------------------------------------------------------------------

    def sequence(self, sign: Callable[[str, int, bytes], str]) -> int:
        """`infra.sql.transparency.sequence`: the close of each contest whose closing time has
        passed logged (hashed at the next round), every contest's new leaves hashed and its new
        head signed (a first, empty head for a contest without one). The leaves hashed."""
        db = self.db
        now = db.now()
        with db.read("sequence"):
            if not self._behind() and not self._closes_due(now):
                return 0
        done = 0
        with db.write("sequence") as pending:
            for contest_id in self._behind():
                done += self._grow(contest_id, sign)
            pending.extend(
                ContestClosed(contest=contest.id, closes_at=contest.closes_at, by="clock")
                for contest in self._closes_due(now)
            )
        return done

    def _behind(self) -> list[str]:
        """The contests whose log has leaves not yet signed, or no head at all."""
        return [
            cid
            for cid in self.db.contests
            if (log := self.logs.get(cid)) is None
            or log.head is None
            or log.head.size < len(log.entries)
        ]

    def _closes_due(self, now: str) -> list[Contest]:
        return [
            contest
            for contest in self.db.contests.values()
            if contest.closes_at <= now and not self._log(contest.id).closed
        ]

    def _grow(self, contest_id: str, sign: Callable[[str, int, bytes], str]) -> int:
        log = self._log(contest_id)
        size = log.head.size if log.head is not None else 0
        leaves = [merkle.leaf_hash(e) for e in log.encoded[size : size + tuning.SEQUENCE_AT_MOST]]

        def read(indexes: Sequence[int]) -> list[bytes]:
            return [log.hashes[i] for i in indexes]

        for n, leaf in enumerate(leaves, size):
            log.hashes.extend(merkle.stored_hashes(n, leaf, read))
        grown = size + len(leaves)
        root = merkle.tree_hash(grown, read)
        log.head = LogHead(grown, root, sign(contest_id, grown, root))
        return len(leaves)

    # -- readers ----------------------------------------------------------------------------

    def log_head(self, contest_id: str) -> LogHead | None:
        with self.db.read("log_head"):
            log = self.logs.get(contest_id)
            return log.head if log is not None else None

    def log_hashes(self, contest_id: str, indexes: Sequence[int]) -> list[bytes]:
        with self.db.read("log_hashes"):
            stored = self.logs[contest_id].hashes if contest_id in self.logs else []
            missing = [i for i in indexes if not 0 <= i < len(stored)]
            if missing:
                raise LookupError(f"the log of {contest_id} has no stored hash {missing[0]}")
            return [stored[i] for i in indexes]

    def log_entries(
        self, contest_id: str, first: int, count: int
    ) -> tuple[list[bytes], int | None]:
        with self.db.read("log_entries"):
            log = self.logs.get(contest_id, ContestLog())
            leaves = range(max(first, 0), min(first + count, len(log.entries)))
            sealed = next((leaf for leaf in leaves if log.entries[leaf].sealed), None)
            return [log.encoded[leaf] for leaf in leaves], sealed

    def log_leaves(self, submission_id: str) -> list[tuple[int, str, str | None]]:
        return self.log_leaves_of([submission_id]).get(submission_id, [])

    def log_leaves_of(
        self, submission_ids: Sequence[str]
    ) -> dict[str, list[tuple[int, str, str | None]]]:
        wanted = set(submission_ids)
        with self.db.read("log_leaves"):
            found = [
                (entry.submission_id, leaf, entry.fields)
                for log in self.logs.values()
                for leaf, entry in enumerate(log.entries)
                if entry.submission_id in wanted
            ]
        found.sort(key=lambda row: row[1])
        leaves: dict[str, list[tuple[int, str, str | None]]] = {}
        for submission_id, leaf, fields in found:
            leaves.setdefault(str(submission_id), []).append(
                (leaf, str(fields["type"]), fields.get("team"))
            )
        return leaves


def _log_fields(game_name: str, result: JudgedResult) -> dict[str, Any] | None:
    """A result's fields as its verdict entry states them; None where the store keeps none of
    the game's own (a Crosstiles result without its `GameOutcome` has no rows of its game's)."""
    try:
        return game(game_name).log_result(result)
    except TypeError:
        return None
