"""Event types of the append-only log, named in the past tense, dotted and lower case."""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    LEXICON_ADDED = "lexicon.added"
    LEXICON_NAMED = "lexicon.named"
    LAYOUT_ADDED = "layout.added"
    CONTEST_CREATED = "contest.created"
    CONTEST_CLOSED = "contest.closed"
    CONTEST_THAWED = "contest.thawed"  # its frozen standings revealed
    TEAM_CREATED = "team.created"
    TEAM_UPDATED = "team.updated"
    TEAM_DELETED = "team.deleted"
    SUBMISSION_STORED = "submission.stored"
    SUBMISSION_QUEUED = "submission.queued"
    SUBMISSION_REQUEUED = "submission.requeued"
    SUBMISSION_JUDGING = "submission.judging"
    SUBMISSION_RETRYING = "submission.retrying"
    SUBMISSION_JUDGED = "submission.judged"
    SUBMISSION_FAILED = "submission.failed"
    SUBMISSION_COPIED = "submission.copied"  # another team sent a shared submission too
    SUBMISSION_HANDED_ON = "submission.handed_on"  # its first uploader deleted, another owns it
    REJUDGE_STARTED = "rejudge.started"
    REJUDGE_PROGRESS = "rejudge.progress"
    REJUDGE_READY = "rejudge.ready"
    REJUDGE_APPLIED = "rejudge.applied"
    REJUDGE_CANCELLED = "rejudge.cancelled"
    DISPUTE_SETTLED = "dispute.settled"  # the organiser chose one of a game's rival logs


# An event's fields that are a verdict (a result's score and line counts): kept in the event
# log, which only the organiser reads (`/v1/events`), and left out of the processes' own log
# lines, which whoever runs the hosts reads, frozen standings or not (docs/contest-day.md).
VERDICT_FIELDS = frozenset({"score", "legal", "illegal"})
