"""The in-memory database under the store fakes (`core.fake_store`, `core.fake_rejudges`): the
SQL schema's tables as dicts of records, and transactions that each take one lock.

`down = True` makes every call fail as an outage would (StoreUnavailable); naming a call in
`failing` makes only that one fail. `add_contest` and `add_team` set a test up: no port has them.
`on_commit` holds what runs as a write commits, under its lock, with the events it stored: where
the SQL store logs their facts in the transaction, the transparency logs' fake (`core.fake_logs`)
does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from core import clock, events
from core.errors import Duplicate, StoreUnavailable
from core.records import Contest, JudgedResult, RulesData, Run, RunSummary, Submission, Team
from core.word_hashes import union

Event = events.Event  # what a write's events are: records, stored as `event_fields` gives
# Called as a write commits, under its lock, with the events it stored (as `events` keeps them).
CommitHook = Callable[[Sequence[dict[str, Any]]], None]


@dataclass(frozen=True)
class Copy:
    """A team's own bytes of a shared submission another team sent first."""

    submission_id: str
    team_id: str
    sha256: str
    size: int
    blob_key: str
    received_at: str


class Labels(dict[tuple[str, str], None]):
    """The names given to word lists, (name, lexicon id), in the order they were given (SQL
    orders them by `lexicon_names.created_at`): a set's calls, a list's order."""

    def add(self, label: tuple[str, str]) -> None:
        self[label] = None


@dataclass(frozen=True)
class KeptResult:
    """A result as the store keeps it: when it was written, and whether a rejudge carried it."""

    result: JudgedResult
    judged_at: str
    carried: bool = False


class InMemoryDatabase:
    """The tables the store fakes share, and their transactions: one lock, one clock."""

    def __init__(self, now: Callable[[], str] = clock.now) -> None:
        self.now = now  # the database's clock: every state_at, judged_at and event time
        self.contests: dict[str, Contest] = {}
        self.teams: dict[str, Team] = {}
        self.submissions: dict[str, Submission] = {}
        self.copies: dict[tuple[str, str], Copy] = {}  # by submission id and team id
        self.results: dict[
            tuple[str, str, str], KeptResult
        ] = {}  # by submission, lexicon, rules data
        self.words: dict[str, bytes] = {}  # each submission's word signature
        self.lexicons: dict[str, dict[str, Any]] = {}
        self.lexicon_names = Labels()  # (name, lexicon id), in the order given
        self.rules_data: dict[
            str, RulesData
        ] = {}  # every game's rules data (layouts, boards), by id
        self.runs: dict[str, Run] = {}  # rejudge runs: `InMemoryRejudgeStore` moves them
        # What each run could not judge: (run id, submission id) -> (reason code, when)
        self.run_failures: dict[tuple[str, str], tuple[str, str]] = {}
        self.summaries: dict[str, RunSummary] = {}  # what each run changed, as `apply` recorded
        self.events: list[dict[str, Any]] = []  # as stored: `event_fields`, its time and id
        self.stored_batches: list[list[str]] = []  # the uploads of each committed store call
        self.down = False
        self.failing: set[str] = set()  # names of calls that fail as in an outage
        self.on_commit: list[CommitHook] = []  # each write that stores events calls them in turn
        self._lock = threading.RLock()

    # -- setting a test up (not the port) ---------------------------------------------------

    def add_contest(self, contest: Contest) -> Contest:
        with self._lock:
            if contest.id in self.contests:
                raise Duplicate(f"contest {contest.id!r} exists already")
            self.contests[contest.id] = contest
        return contest

    def add_team(self, team: Team) -> Team:
        with self._lock:
            if team.id in self.teams:
                raise Duplicate(f"team {team.id!r} exists already")
            self.teams[team.id] = team
        return team

    def live_result(self, submission_id: str) -> JudgedResult | None:
        """The submission's result under its contest's live word list and rules data."""
        sub = self.submissions[submission_id]
        contest = self.contests[sub.contest_id]
        kept = self.results.get((submission_id, contest.lexicon_id, contest.rules_id))
        return kept.result if kept is not None else None

    def leaderboard(self, contest_id: str, ruleset: tuple[str, str]) -> list[dict[str, Any]]:
        """`infra.sql.standings.leaderboard_in` under a ruleset (lexicon id, rules id): each
        team's best score, ties to the earlier receipt, then to the lower submission id."""
        best: dict[str, tuple[int, str, str]] = {}  # by team: (-score, received_at, submission)
        for (sid, *kept_under), kept in self.results.items():
            sub = self.submissions.get(sid)
            if sub is None or sub.contest_id != contest_id or tuple(kept_under) != ruleset:
                continue
            entry = (-kept.result.score, sub.received_at, sid)
            if sub.team_id not in best or entry < best[sub.team_id]:
                best[sub.team_id] = entry
        ranked = sorted(best.items(), key=lambda item: item[1])
        return [
            {"rank": rank, "team": self.teams[team_id].name, "team_id": team_id,
             "score": -score, "submission": sid, "received_at": received_at}
            for rank, (team_id, (score, received_at, sid)) in enumerate(ranked, 1)
        ]  # fmt: skip

    # -- transactions -----------------------------------------------------------------------

    def check(self, call: str) -> None:
        if self.down or call in self.failing:
            raise StoreUnavailable(f"in-memory store is down ({call})")

    @contextmanager
    def read(self, call: str) -> Iterator[None]:
        with self._lock:
            self.check(call)
            yield

    @contextmanager
    def write(self, call: str) -> Iterator[list[Event]]:
        """One write transaction: refused whole in an outage; the events appended to the list
        are logged, as stored and numbered, when it ends without an error, and handed to each
        `on_commit` hook before the lock is let go, as `infra.sql.base` hands them to the
        transparency log in the transaction (a change made before an error is not undone: the
        calls check everything before they change anything)."""
        with self._lock:
            self.check(call)
            pending: list[Event] = []
            yield pending
            stamp, first = self.now(), len(self.events)
            for event in pending:
                stored = events.event_fields(event)
                stored.setdefault("ts", stamp)
                stored["id"] = len(self.events) + 1
                self.events.append(stored)
            if pending:
                for hook in self.on_commit:
                    hook(self.events[first:])

    # -- within a write ---------------------------------------------------------------------

    def put_result(
        self,
        submission_id: str,
        result: JudgedResult,
        now: str,
        replace_kept: bool = False,
        carried: bool = False,
    ) -> bool:
        """A result under its ruleset; True if it was new (one a submission and ruleset)."""
        key = (submission_id, result.lexicon_id, result.rules_id)
        if key in self.results:
            if replace_kept:
                self.results[key] = KeptResult(result, now, carried)
            return False
        self.results[key] = KeptResult(result, now, carried)
        return True

    def hold(self, host: str, submission_ids: list[str]) -> None:
        """The bytes of these submissions are on `host` now (`Submission.held_on`)."""
        for sid in submission_ids:
            self.submissions[sid] = replace(self.submissions[sid], held_on=host)

    def keep_words(self, signatures: dict[str, bytes]) -> None:
        """Each submission's word signature, or the union with the one kept."""
        for sid, hashes in signatures.items():
            kept = self.words.get(sid)
            self.words[sid] = hashes if kept is None else union(kept, hashes)
