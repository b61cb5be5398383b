"""An in-memory `RejudgeRuns` for unit tests: the SQL adapter's rules (infra/sql/rejudges.py
and its parts, results.py) over the runs, results and word signatures of the `InMemoryDatabase`
it is given (the submission store fake's: one database, whose `down` and `failing` hold here
too). `tests/integration/test_rejudge_port.py` holds it and the SQL adapter to one suite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from core import clock
from core.errors import NotFound, RejudgeRefused
from core.events import (
    RejudgeCancelled,
    RejudgeProgress,
    RejudgeReady,
    RejudgeStarted,
)
from core.fake_database import Event, InMemoryDatabase
from core.records import JudgedResult, Paged, Run, RunFailure, RunSummary, Submission
from core.states import RejudgeMode, RejudgeState, SubmissionState
from core.store_rules import applying, check_applicable, kept_public, unjudged_failed


class InMemoryRejudgeStore:
    """Rejudge runs as the organiser, the producer, the batches and the sweeper use them."""

    def __init__(self, store: InMemoryDatabase) -> None:
        self.store = store

    def start(
        self,
        contest_id: str,
        lexicon_id: str,
        rules_id: str,
        mode: str = RejudgeMode.FULL,
        by: str = "organiser",
    ) -> tuple[Run, bool]:
        """A new run, or the open one for the same ruleset (as `infra.sql.rejudges.start`)."""
        store = self.store
        with store.write("start") as pending:
            contest = store.contests.get(contest_id)
            if contest is None:
                raise RejudgeRefused(f"no contest {contest_id!r}")
            if (contest.lexicon_id, contest.rules_id) == (lexicon_id, rules_id):
                raise RejudgeRefused("the contest is judged with that lexicon and layout already")
            for run in store.runs.values():
                same = (run.contest_id, run.lexicon_id, run.rules_id)
                if run.open and same == (contest_id, lexicon_id, rules_id):
                    return run, False
            total = sum(s.contest_id == contest_id for s in store.submissions.values())
            now = store.now()
            run = Run(
                id=uuid.uuid4().hex,
                contest_id=contest_id,
                lexicon_id=lexicon_id,
                rules_id=rules_id,
                from_lexicon_id=contest.lexicon_id,
                from_rules_id=contest.rules_id,
                mode=RejudgeMode(mode),
                state=RejudgeState.RUNNING if total else RejudgeState.READY,
                total=total,
                done=0,
                carried=0,
                cursor="",
                created_by=by,
                created_at=now,
                updated_at=now,
                finished_at=None if total else now,
            )
            store.runs[run.id] = run
            pending.append(
                RejudgeStarted(
                    rejudge=run.id,
                    contest=contest_id,
                    lexicon=lexicon_id,
                    layout=rules_id,
                    mode=mode,
                    from_lexicon=contest.lexicon_id,
                    from_layout=contest.rules_id,
                    total=total,
                    by=by,
                )
            )
            self._count_progress(pending, run.id)  # results of an earlier, cancelled run count
            return store.runs[run.id], True

    def get(self, run_id: str) -> Run | None:
        with self.store.read("get"):
            return self.store.runs.get(run_id)

    def open_runs(self, contest_id: str | None = None) -> list[Run]:
        with self.store.read("open_runs"):
            runs = [
                run
                for run in self.store.runs.values()
                if run.open and contest_id in (None, run.contest_id)
            ]
            return sorted(runs, key=lambda run: run.created_at)

    def list_runs(self, contest_id: str) -> list[Run]:
        with self.store.read("list_runs"):
            runs = [run for run in self.store.runs.values() if run.contest_id == contest_id]
            return sorted(runs, key=lambda run: run.created_at)

    def page(self, run: Run, limit: int) -> Iterator[Paged]:
        """The next submissions after the run's cursor, each with its word signature, its
        upload's size and the host holding it."""
        store = self.store
        with store.read("page"):
            ids = sorted(
                s.id
                for s in store.submissions.values()
                if s.contest_id == run.contest_id and s.id > run.cursor
            )[:limit]
            subs = [store.submissions[sid] for sid in ids]
            rows = [Paged(s.id, store.words.get(s.id), s.size, s.held_on) for s in subs]
        yield from rows

    def advance(self, run_id: str, cursor: str) -> bool:
        """Move the cursor; False if the run was closed."""
        with self.store.write("advance"):
            run = self.store.runs.get(run_id)
            if run is None or not run.open:
                return False
            self.store.runs[run_id] = replace(run, cursor=cursor, updated_at=self.store.now())
            return True

    def restart_producer(self, run_id: str) -> None:
        with self.store.write("restart_producer"):
            run = self.store.runs.get(run_id)
            if run is not None:
                self.store.runs[run_id] = replace(run, cursor="", updated_at=self.store.now())

    def carry(self, run: Run, submission_ids: list[str]) -> int:
        """Copy the results under the run's old ruleset to its new one, where there is none
        yet, counted as carried; how many were copied."""
        if not submission_ids:
            return 0
        store = self.store
        with store.write("carry") as pending:
            now = store.now()
            copied = 0
            for sid in dict.fromkeys(submission_ids):
                kept = store.results.get((sid, run.from_lexicon_id, run.from_rules_id))
                if kept is None:
                    continue
                moved = replace(kept.result, lexicon_id=run.lexicon_id, rules_id=run.rules_id)
                copied += store.put_result(sid, moved, now, carried=True)
            self._count_progress(pending, run.id, added=copied, carried=copied)
            return copied

    def record_batch(
        self,
        run: Run,
        batch: list[tuple[str, JudgedResult]],
        words: Mapping[str, bytes] | None = None,
        failed: Mapping[str, str] | None = None,
        held_on: str | None = None,
    ) -> int:
        """Results judged for a run and the uploads it could not judge, with its progress; how
        many were new. A submission gone meanwhile gets neither. `held_on`: the judged ones'
        bytes are on that host now."""
        store, words = self.store, words or {}
        with store.write("record_batch") as pending:
            now = store.now()
            present = [(sid, result) for sid, result in batch if sid in store.submissions]
            # One recorded as failed for the run was counted done then: not again once judged.
            new = sum(
                store.put_result(sid, result, now) and (run.id, sid) not in store.run_failures
                for sid, result in present
            )
            store.keep_words({sid: words[sid] for sid, _ in present if sid in words})
            if held_on is not None:
                store.hold(held_on, [sid for sid, _ in present])
            for sid, reason in (failed or {}).items():
                key = (run.id, sid)
                ruled = (sid, run.lexicon_id, run.rules_id) in store.results
                if sid in store.submissions and key not in store.run_failures and not ruled:
                    store.run_failures[key] = (reason, now)
                    new += 1
            self._count_progress(pending, run.id, added=new)
            return new

    def failures(self, run: Run, limit: int) -> tuple[int, list[RunFailure]]:
        store = self.store
        with store.read("failures"):
            found = [
                RunFailure(sid, store.teams[store.submissions[sid].team_id].name, reason, at)
                for (run_id, sid), (reason, at) in sorted(store.run_failures.items())
                if run_id == run.id and self._failed_for(run, sid)
            ]
            return len(found), found[:limit]

    def _failed_for(self, run: Run, sid: str) -> bool:
        """A failure recorded for the run that still holds: the submission is there and has
        no result under the run's ruleset."""
        store = self.store
        return (
            (run.id, sid) in store.run_failures
            and sid in store.submissions
            and (sid, run.lexicon_id, run.rules_id) not in store.results
        )

    def apply(self, run_id: str, by: str = "organiser") -> Run:
        """`infra.sql.rejudges.apply`: the contest switched, the run's failures failed with
        their reason, its summary recorded, the contest's other open runs cancelled (their
        previews were measured against the ruleset going away)."""
        store = self.store
        with store.write("apply") as pending:
            run = store.runs.get(run_id)
            if run is None:
                raise NotFound(f"no rejudge run {run_id!r}")
            check_applicable(run)
            contest = store.contests[run.contest_id]
            if (contest.lexicon_id, contest.rules_id) != (run.from_lexicon_id, run.from_rules_id):
                raise RejudgeRefused(
                    "the contest's ruleset changed since this run started; start a new run"
                )
            now = store.now()
            applied = store.runs[run_id] = replace(run, state=RejudgeState.APPLIED, updated_at=now)
            kept = kept_public(contest, run, now)  # the ruleset the public keep while frozen
            store.contests[contest.id] = replace(
                contest, lexicon_id=run.lexicon_id, rules_id=run.rules_id, **kept
            )
            self._fail_unjudged(pending, run, now)
            store.summaries[run_id] = RunSummary(
                tuple(self._changes(run)), tuple(self._rank_changes(run)), now
            )
            superseded = [
                other.id
                for other in store.runs.values()
                if other.contest_id == run.contest_id and other.open
            ]
            for other_id in superseded:
                store.runs[other_id] = replace(
                    store.runs[other_id], state=RejudgeState.CANCELLED, updated_at=now
                )
            pending.extend(applying(run, by, superseded))
            return applied

    def _fail_unjudged(self, pending: list[Event], run: Run, now: str) -> None:
        """In `apply`: each submission the run could not judge becomes failed with its reason."""
        store = self.store
        for (failed_run, sid), (reason, _) in sorted(store.run_failures.items()):
            if failed_run == run.id and self._failed_for(run, sid):
                sub = store.submissions[sid]
                event = unjudged_failed(run, sid, sub.contest_id, sub.team_id, reason)
                store.submissions[sid] = replace(
                    sub, state=SubmissionState.FAILED, state_at=now, failure=event.reason
                )
                pending.append(event)

    def cancel(self, run_id: str, by: str = "organiser") -> Run:
        with self.store.write("cancel") as pending:
            run = self.store.runs.get(run_id)
            if run is None:
                raise NotFound(f"no rejudge run {run_id!r}")
            if not run.open:
                raise RejudgeRefused(
                    f"run {run_id} is {run.state}; only an open run can be cancelled"
                )
            cancelled = replace(run, state=RejudgeState.CANCELLED, updated_at=self.store.now())
            self.store.runs[run_id] = cancelled
            pending.append(RejudgeCancelled(rejudge=run_id, contest=run.contest_id, by=by))
            return cancelled

    def summary(self, run: Run) -> RunSummary | None:
        """An applied run's summary as `apply` recorded it, a ready or cancelled run's preview
        of the data as it is now, None while it runs."""
        if run.state is RejudgeState.RUNNING:
            return None
        with self.store.read("summary"):
            if run.state is RejudgeState.APPLIED:
                return self.store.summaries.get(run.id)
            return RunSummary(tuple(self._changes(run)), tuple(self._rank_changes(run)))

    def changes(self, run: Run) -> list[dict[str, Any]]:
        with self.store.read("changes"):
            return self._changes(run)

    def rank_changes(self, run: Run) -> list[dict[str, Any]]:
        with self.store.read("rank_changes"):
            return self._rank_changes(run)

    def _changes(self, run: Run) -> list[dict[str, Any]]:
        """The submissions whose score differs between the two rulesets, by id: the preview of
        a game ranked by its teams' best score (`infra.sql.games.TeamRanked`); a game with
        standings of its own (Crosstiles' players) has its preview in SQL alone."""
        store = self.store
        under = (
            (sub, store.results.get((sub.id, run.from_lexicon_id, run.from_rules_id)),
             store.results.get((sub.id, run.lexicon_id, run.rules_id)))
            for sub in sorted(store.submissions.values(), key=lambda s: s.id)
            if sub.contest_id == run.contest_id
        )  # fmt: skip
        return [
            {"submission": sub.id, "team": store.teams[sub.team_id].name,
             "old_score": old.result.score, "new_score": new.result.score}
            for sub, old, new in under
            if old is not None and new is not None and old.result.score != new.result.score
        ]  # fmt: skip

    def _rank_changes(self, run: Run) -> list[dict[str, Any]]:
        """The teams whose rank differs between the two rulesets, by their new rank (None last)."""
        before, after = (
            {e["team"]: e["rank"] for e in self.store.leaderboard(run.contest_id, ruleset)}
            for ruleset in (
                (run.from_lexicon_id, run.from_rules_id),
                (run.lexicon_id, run.rules_id),
            )
        )
        return [
            {"team": team, "old_rank": before.get(team), "new_rank": after.get(team)}
            for team in sorted(set(before) | set(after), key=lambda t: (after.get(t) or 10**9, t))
            if before.get(team) != after.get(team)
        ]

    def without_result(self, run: Run, submission_ids: list[str]) -> list[Submission]:
        store = self.store
        with store.read("without_result"):
            wanted = set(submission_ids)
            return sorted(
                (
                    s
                    for s in store.submissions.values()
                    if s.id in wanted
                    and (s.id, run.lexicon_id, run.rules_id) not in store.results
                    and (run.id, s.id) not in store.run_failures
                ),
                key=lambda s: s.id,
            )

    def stalled(self, older_than: float) -> list[Run]:
        """Running runs with no progress for a while."""
        store = self.store
        with store.read("stalled"):
            cutoff = clock.ago(store.now(), older_than)
            return [
                run
                for run in store.runs.values()
                if run.state == RejudgeState.RUNNING and run.updated_at < cutoff
            ]

    # -- within another store's write -------------------------------------------------------

    def recount_open_runs(self, pending: list[Event], contest_id: str) -> None:
        """`infra.sql.results.recount_open_runs`, in the caller's write (`InMemoryTeamStore`'s
        `delete_team`): after submissions are deleted, each open run of the contest covers fewer,
        and its progress is counted again."""
        store = self.store
        total = sum(s.contest_id == contest_id for s in store.submissions.values())
        for run in [r for r in store.runs.values() if r.open and r.contest_id == contest_id]:
            store.runs[run.id] = replace(run, total=total)
            self._count_progress(pending, run.id)

    def _count_progress(
        self, pending: list[Event], run_id: str, added: int | None = None, carried: int = 0
    ) -> None:
        """`infra.sql.results.count_progress`: the run's progress brought up to date with the
        results just added (`added`, `carried` of them carried over), or with `added` None by
        counting every result its ruleset has for the contest; ready once done >= total."""
        store = self.store
        run = store.runs.get(run_id)
        if run is None or not run.open:
            return
        if added is None:
            covered = [
                kept
                for (sid, lexicon_id, rules_id), kept in store.results.items()
                if (lexicon_id, rules_id) == (run.lexicon_id, run.rules_id)
                and sid in store.submissions
                and store.submissions[sid].contest_id == run.contest_id
            ]
            failed = sum(
                self._failed_for(run, sid) and store.submissions[sid].contest_id == run.contest_id
                for failed_run, sid in store.run_failures
                if failed_run == run.id
            )
            before = run.done
            done, carried = len(covered) + failed, sum(kept.carried for kept in covered)
        else:
            before = run.done
            done, carried = run.done + added, run.carried + carried
        now = store.now()
        run = store.runs[run_id] = replace(run, done=done, carried=carried, updated_at=now)
        tenth = max(1, run.total // 10)
        cid, total = run.contest_id, run.total
        if done // tenth > before // tenth and done < total:
            pending.append(RejudgeProgress(rejudge=run_id, contest=cid, done=done, total=total))
        if done >= total and run.state == RejudgeState.RUNNING:
            store.runs[run_id] = replace(run, state=RejudgeState.READY, finished_at=now)
            pending.append(
                RejudgeReady(rejudge=run_id, contest=cid, done=done, total=total, carried=carried)
            )
