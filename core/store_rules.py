"""The results store's rules that its SQL adapters (`infra.sql`) and its in-memory fakes
(`core.fake_*`) share: each decides what a write changes and makes the event record it logs,
so that both keep one rule and write the same stored JSON. Plain functions over records, with
no storage of their own: the caller reads the rows, writes what comes back and appends the
events to its transaction's pending ones."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import replace

from core.errors import RejudgeRefused, as_reason, failure_text
from core.events import (
    ContestClosed,
    ContestThawed,
    RejudgeApplied,
    RejudgeCancelled,
    SubmissionCopied,
    SubmissionFailed,
    SubmissionJudged,
    SubmissionJudging,
    about,
    line_counts,
)
from core.freeze import frozen
from core.records import Claim, Contest, JudgedResult, Run, Submission
from core.states import RejudgeState, SubmissionState

# A contest as a rule changed it, with the event that records the change.
ContestChange = tuple[Contest, ContestClosed | ContestThawed]
_FREE = (SubmissionState.STORED, SubmissionState.QUEUED)  # waiting for a worker


def closing(contest: Contest, now: str, by: str) -> ContestChange | None:
    """The contest closed at `now`, with its `contest.closed` event: its closing time becomes
    `now`, its opening time too if it had not opened, and a freeze not reached yet goes (closed
    before its freeze time, it never froze); None if it was closed already."""
    if contest.closes_at <= now:
        return None
    freeze_at = contest.freeze_at if (contest.freeze_at or "") <= now else None
    closed = replace(
        contest, opens_at=min(contest.opens_at, now), closes_at=now, freeze_at=freeze_at
    )
    event = ContestClosed(
        contest=contest.id,
        closes_at=closed.closes_at,
        was_to_close_at=contest.closes_at,
        opens_at=closed.opens_at,
        by=by,
    )
    return closed, event


def thawing(contest: Contest, now: Callable[[], str], by: str) -> ContestChange | None:
    """The contest's standings thawed now (`now` is read only if it thaws), with its
    `contest.thawed` event; None for a contest thawed already or without a freeze (left as it
    is)."""
    if contest.freeze_at is None or contest.thawed_at is not None:
        return None
    stamp = now()
    thawed = replace(contest, thawed_at=stamp)
    event = ContestThawed(
        contest=contest.id,
        freeze_at=contest.freeze_at,
        thawed_at=stamp,
        by=by,
    )
    return thawed, event


def kept_copies(
    copies: Iterable[tuple[str, Submission]], held: Container[tuple[str, str]]
) -> list[tuple[str, Submission, SubmissionCopied]]:
    """Of the (submission id, upload) copies asked for, those to keep, each with its
    `submission.copied` event: a team's copy of a submission it did not send first, unless it
    holds one already (`held`, by submission and team id) or sent it twice in `copies`."""
    kept: list[tuple[str, Submission, SubmissionCopied]] = []
    seen: set[tuple[str, str]] = set()
    for sid, upload in copies:
        key = (sid, upload.team_id)
        if key in held or key in seen:
            continue
        seen.add(key)
        event = SubmissionCopied(
            submission=sid,
            contest=upload.contest_id,
            team=upload.team_id,
            sha256=upload.sha256,
            size=upload.size,
            received_at=upload.received_at,
        )
        kept.append((sid, upload, event))
    return kept


def claimable(sub: Submission, stale: str) -> bool:
    """Whether a worker may claim the submission: it is free (stored or queued), or judging
    since before `stale` (its claim abandoned)."""
    abandoned = sub.state == SubmissionState.JUDGING and sub.state_at < stale
    return sub.state in _FREE or abandoned


def claimed(sub: Submission) -> tuple[Claim, SubmissionJudging]:
    """The claim of a submission as it was read, for its next attempt, with its
    `submission.judging` event."""
    attempt = sub.attempts + 1
    return Claim(sub, attempt), SubmissionJudging(**about(sub), attempt=attempt)


def submission_judged(sub: Submission, result: JudgedResult) -> SubmissionJudged:
    """The `submission.judged` event of a claimed submission recorded with its result."""
    return SubmissionJudged(
        **about(sub),
        score=result.score,
        **line_counts(result.game),
        received_at=sub.received_at,
        lexicon=result.lexicon_id,
        layout=result.rules_id,
    )


def check_applicable(run: Run) -> None:
    """RejudgeRefused unless the run is ready with every submission done."""
    if run.state is not RejudgeState.READY or run.done < run.total:
        raise RejudgeRefused(
            f"run {run.id} is {run.state} ({run.done}/{run.total} done); apply needs ready"
        )


def kept_public(contest: Contest, run: Run, now: str) -> dict[str, str]:
    """A run applied while the contest's standings are frozen: the ruleset it replaces (by the
    contest's fields), which the public standings keep until the thaw (`core.freeze`), unless
    an earlier run applied during the freeze recorded one already."""
    if not frozen(contest, now) or contest.frozen_lexicon_id is not None:
        return {}
    return {"frozen_lexicon_id": run.from_lexicon_id, "frozen_rules_id": run.from_rules_id}


def applying(
    run: Run, by: str, superseded: Iterable[str]
) -> list[RejudgeCancelled | RejudgeApplied]:
    """The events of a run's apply: each other open run of the contest (`superseded`, by id)
    cancelled, its preview measured against the ruleset going away, then the run applied."""
    events: list[RejudgeCancelled | RejudgeApplied] = [
        RejudgeCancelled(
            rejudge=other, contest=run.contest_id, by=by, reason=f"superseded by {run.id}"
        )
        for other in superseded
    ]
    events.append(
        RejudgeApplied(
            rejudge=run.id,
            contest=run.contest_id,
            lexicon=run.lexicon_id,
            layout=run.rules_id,
            from_lexicon=run.from_lexicon_id,
            from_layout=run.from_rules_id,
            by=by,
        )
    )
    return events


def unjudged_failed(
    run: Run, sid: str, contest_id: str, team_id: str, reason: str
) -> SubmissionFailed:
    """At a run's apply, a submission it could not judge becomes failed: its event, whose
    `reason` is the failure text the submission shows (the code and a sentence)."""
    return SubmissionFailed(
        submission=sid,
        contest=contest_id,
        team=team_id,
        reason=failure_text(as_reason(reason)),
        rejudge=run.id,
    )
