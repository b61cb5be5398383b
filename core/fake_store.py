"""An in-memory `SubmissionStore` for unit tests: the SQL store's rules (infra/sql/submissions.py,
copies.py) over the tables of an `InMemoryDatabase`, each call one transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from core import clock
from core.errors import CoreError, Duplicate
from core.events import (
    LexiconAdded,
    LexiconNamed,
    SubmissionFailed,
    SubmissionQueued,
    SubmissionRequeued,
    SubmissionRetrying,
    SubmissionStored,
    about,
)
from core.fake_database import Copy, Event
from core.fake_disputes import InMemoryDisputes
from core.intake import closed, no_log_right
from core.records import Claim, Contest, JudgedResult, Submission, Team, WordList
from core.states import RejudgeState, SubmissionState
from core.store_rules import (
    ContestChange,
    claimable,
    claimed,
    kept_copies,
    submission_judged,
    thawing,
)

SameKey = tuple[str, str, str]  # an own upload's contest, team, sha256; a game's contest, "", key


class InMemorySubmissionStore(InMemoryDisputes):
    """The results store as intake, judging and the sweeper use it, and its disputed games."""

    def get_contest(self, contest_id: str) -> Contest | None:
        with self.read("get_contest"):
            return self.contests.get(contest_id)

    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """`infra.sql.store.SqlStore.thaw_contest`: thawed now with a `contest.thawed` event,
        unless thawed already or without a freeze."""
        return self.change_contest("thaw_contest", contest_id, lambda c: thawing(c, self.now, by))

    def change_contest(
        self, name: str, contest_id: str, change: Callable[[Contest], ContestChange | None]
    ) -> tuple[Contest, bool] | None:
        """A contest closed or thawed by its rule (`core.store_rules`), in one write: (the
        contest, whether the rule changed it), or None if there is no such contest."""
        with self.write(name) as pending:
            contest = self.contests.get(contest_id)
            if contest is None:
                return None
            found = change(contest)
            if found is None:
                return contest, False
            changed, event = found
            self.contests[contest_id] = changed
            pending.append(event)
            return changed, True

    def get_team(self, team_id: str) -> Team | None:
        with self.read("get_team"):
            return self.teams.get(team_id)

    def get_submission(self, submission_id: str) -> Submission | None:
        with self.read("get_submission"):
            return self.submissions.get(submission_id)

    def find_same(
        self, contest_id: str, team_id: str, sha256: str, game_key: str | None = None
    ) -> Submission | None:
        """The team's own upload of these bytes, else the shared submission with this key."""
        with self.read("find_same"):
            for s in self.submissions.values():
                if (s.contest_id, s.team_id, s.sha256) == (contest_id, team_id, sha256):
                    return s
            if game_key is None:
                return None
            for s in self.submissions.values():
                if (s.contest_id, s.game_key) == (contest_id, game_key):
                    return s
            return None

    def copy_of(self, submission_id: str, team_id: str) -> str | None:
        with self.read("copy_of"):
            copy = self.copies.get((submission_id, team_id))
            return copy.blob_key if copy is not None else None

    def writer_turn(self) -> AbstractContextManager[None]:
        """Writers here take no turns: each write holds the fake's lock alone."""
        return nullcontext()

    def store_submissions(
        self, batch: Sequence[Submission], queued: Sequence[Submission] = ()
    ) -> list[Submission | CoreError | None]:
        """Each upload back as stored, None where it is a submission already (a shared one's
        copy kept), or the error refusing it; the `queued` ones marked in the same transaction.
        Duplicate, with nothing written, where an upload's contest or team is gone."""
        answers: dict[int, Submission | CoreError] = {}
        with self.write("store_submissions") as pending:
            if batch:
                answers = self._insert_fresh(pending, batch)
            if queued:
                self._mark(pending, queued)
            if batch:
                self.stored_batches.append([s.id for s in batch])
        return [answers.get(id(s)) for s in batch]

    def _insert_fresh(
        self, pending: list[Event], batch: Sequence[Submission]
    ) -> dict[int, Submission | CoreError]:
        """`infra.sql.submissions._insert_fresh`: by id() of each upload, what became of it
        (absent: a submission already; a shared one's copy is kept, with its team)."""
        seen = self._stored_keys()
        answers: dict[int, Submission | CoreError] = {}
        fresh: list[Submission] = []
        copies: list[tuple[str, Submission]] = []
        for s in batch:
            key = _same_key(s)
            team = self.teams.get(s.team_id)
            if s.shared and (team is None or not team.uploads_logs):
                answers[id(s)] = no_log_right(s.team_id, s.contest_id)
                continue
            if key in seen:  # a retry, or the same game: its submission back, even late
                if s.shared and seen[key][1] != s.team_id:
                    copies.append((seen[key][0], s))
                continue
            contest = self.contests.get(s.contest_id)
            if contest is not None and s.received_at > contest.closes_at:
                answers[id(s)] = closed(s.contest_id, contest.closes_at, s.received_at)
                continue
            seen[key] = (s.id, s.team_id)
            fresh.append(s)
            answers[id(s)] = s
        if any(s.contest_id not in self.contests or s.team_id not in self.teams for s in fresh):
            raise Duplicate("the same bytes were uploaded already")  # a row it refers to is gone
        for s in fresh:
            self.submissions[s.id] = s
        self._count_in_open_runs(Counter(s.contest_id for s in fresh))
        pending.extend(
            SubmissionStored(**about(s), sha256=s.sha256, size=s.size, received_at=s.received_at)
            for s in fresh
        )
        self._keep_copies(pending, copies)
        return answers

    def _stored_keys(self) -> dict[SameKey, tuple[str, str]]:
        """Each same key (`_same_key`) stored with its submission and team. (A match key is no
        refusal: logs of one seed and players are all kept, and the standings tell which
        counts, `core.disputes`.)"""
        seen: dict[SameKey, tuple[str, str]] = {}
        for s in self.submissions.values():
            seen[(s.contest_id, s.team_id, s.sha256)] = (s.id, s.team_id)
            if s.game_key is not None:
                seen[_same_key(s)] = (s.id, s.team_id)
        return seen

    def _count_in_open_runs(self, stored: Counter[str]) -> None:
        """An open rejudge run covers uploads that arrive while it runs, too."""
        for run_id, run in list(self.runs.items()):
            if run.open and stored[run.contest_id]:
                self.runs[run_id] = replace(
                    run,
                    total=run.total + stored[run.contest_id],
                    state=RejudgeState.RUNNING,
                    finished_at=None,
                )

    def _keep_copies(self, pending: list[Event], copies: list[tuple[str, Submission]]) -> None:
        """Each team's copy of a submission it did not send first, unless it sent one already."""
        for sid, upload, event in kept_copies(copies, self.copies):
            self.copies[(sid, upload.team_id)] = Copy(
                sid, upload.team_id, upload.sha256, upload.size, upload.blob_key, upload.received_at
            )
            pending.append(event)

    def mark_queued(self, submission_id: str) -> bool:
        return bool(self.mark_queued_many([submission_id]))

    def mark_queued_many(self, submission_ids: Sequence[str]) -> list[str]:
        """stored -> queued for those still stored; the ones marked, in the order asked."""
        with self.write("mark_queued_many") as pending:
            found = [self.submissions.get(sid) for sid in dict.fromkeys(submission_ids)]
            return self._mark(pending, [s for s in found if s is not None])

    def _mark(self, pending: list[Event], published: Sequence[Submission]) -> list[str]:
        stamp = self.now()
        marked = []
        for s in published:
            current = self.submissions.get(s.id)
            if current is None or current.state != SubmissionState.STORED:
                continue  # a worker claimed it first
            self.submissions[s.id] = replace(current, state=SubmissionState.QUEUED, state_at=stamp)
            pending.append(SubmissionQueued(**about(s)))
            marked.append(s.id)
        return marked

    def needing_attention(
        self,
        *,
        stored_for: float,
        queued_for: float | None,
        judging_for: float,
        limit: int = 500,
    ) -> list[Submission]:
        """Stuck in stored, queued (unless `queued_for` is None) or judging too long."""
        with self.read("needing_attention"):
            now = self.now()
            before = {
                SubmissionState.STORED: clock.ago(now, stored_for),
                SubmissionState.JUDGING: clock.ago(now, judging_for),
            }
            if queued_for is not None:
                before[SubmissionState.QUEUED] = clock.ago(now, queued_for)
            stuck = [
                s
                for s in self.submissions.values()
                if s.state in before and s.state_at < before[s.state]
            ]
            return sorted(stuck, key=lambda s: s.received_at)[:limit]

    def requeue(self, seen: Submission) -> bool:
        """Back to queued, only if nothing touched it since it was `seen`."""
        with self.write("requeue") as pending:
            current = self.submissions.get(seen.id)
            unchanged = (seen.state, seen.state_at)
            if current is None or (current.state, current.state_at) != unchanged:
                return False
            self.submissions[seen.id] = replace(
                current, state=SubmissionState.QUEUED, state_at=self.now()
            )
            if seen.state == SubmissionState.STORED:
                pending.append(SubmissionQueued(**about(seen), was=seen.state))
            else:
                pending.append(SubmissionRequeued(**about(seen), was=seen.state))
            return True

    def claim_many(self, submission_ids: Sequence[str], stale_after: float) -> list[Claim]:
        """Take the stored or queued ones, and those judging since before `stale_after` ago;
        each claim holds the submission as it was read, and the attempt it is."""
        with self.write("claim_many") as pending:
            now = self.now()
            stale = clock.ago(now, stale_after)
            claims = []
            for sid in dict.fromkeys(submission_ids):
                current = self.submissions.get(sid)
                if current is None or not claimable(current, stale):
                    continue
                claim, event = claimed(current)
                self.submissions[sid] = replace(
                    current, state=SubmissionState.JUDGING, state_at=now, attempts=claim.attempt
                )
                pending.append(event)
                claims.append(claim)
            return claims

    def record_results(
        self, judged: Sequence[tuple[Claim, JudgedResult, bytes]], held_on: str | None = None
    ) -> set[str]:
        """judging -> judged with the results whose claim still holds; the ids recorded.
        `held_on`: those ones' bytes are on that host now."""
        recorded: set[str] = set()
        with self.write("record_results") as pending:
            now = self.now()
            for claim, result, word_signature in judged:
                sub = claim.submission
                if not self._still_held(claim):
                    continue
                self.submissions[sub.id] = replace(
                    self.submissions[sub.id],
                    state=SubmissionState.JUDGED,
                    state_at=now,
                    judged_at=now,
                    failure=None,
                    held_on=held_on or self.submissions[sub.id].held_on,
                )
                self.put_result(sub.id, result, now, replace_kept=True)
                self.keep_words({sub.id: word_signature})
                pending.append(submission_judged(sub, result))
                recorded.add(sub.id)
        return recorded

    def release(self, claim: Claim, error: str, give_up: bool) -> None:
        """Back to queued for a retry, or failed for good, if the claim still holds."""
        with self.write("release") as pending:
            if not self._still_held(claim):
                return
            sub = claim.submission
            state = SubmissionState.FAILED if give_up else SubmissionState.QUEUED
            self.submissions[sub.id] = replace(
                self.submissions[sub.id], state=state, state_at=self.now(), failure=error[:2000]
            )
            ids, attempt, reason = about(sub), claim.attempt, error[:500]
            pending.append(
                SubmissionFailed(**ids, attempt=attempt, reason=reason)
                if give_up
                else SubmissionRetrying(**ids, attempt=attempt, reason=reason)
            )

    def add_lexicon(
        self,
        *,
        id: str,
        name: str,
        words: int,
        size: int,
        blob_key: str,
        source: str,
        created_by: str,
    ) -> WordList:
        """Register a word list, or add a name to one registered already; returns it with the
        name asked for."""
        with self.write("add_lexicon") as pending:
            existing = self.lexicons.get(id)
            if existing is None:
                self.lexicons[id] = {
                    "id": id,
                    "name": name,
                    "words": words,
                    "size": size,
                    "blob_key": blob_key,
                    "source": source,
                    "created_by": created_by,
                    "created_at": self.now(),
                }
                pending.append(LexiconAdded(lexicon=id, name=name, words=words, by=created_by))
            if (name, id) not in self.lexicon_names:
                self.lexicon_names.add((name, id))
                if existing is not None:
                    pending.append(LexiconNamed(lexicon=id, name=name, by=created_by))
            return WordList(**{**self.lexicons[id], "name": name})

    def _still_held(self, claim: Claim) -> bool:
        """The claim's attempt still owns the submission (the sweeper has not handed it on)."""
        current = self.submissions.get(claim.submission.id)
        return (
            current is not None
            and current.state == SubmissionState.JUDGING
            and current.attempts == claim.attempt
        )


def _same_key(submission: Submission) -> SameKey:
    """Uploads with the same key are one submission: a team's own bytes, or a game whoever
    sent it."""
    if submission.game_key is not None:
        return submission.contest_id, "", submission.game_key
    return submission.contest_id, submission.team_id, submission.sha256
