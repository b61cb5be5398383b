"""The append-only log's events: their types, named in the past tense, dotted and lower case,
and one frozen record of each, with the fields it carries; `event_fields` gives the dict a
record is stored and served as."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from typing import Any, ClassVar, Final, Protocol, TypedDict, runtime_checkable

from core.records import Submission


class EventType(StrEnum):
    LEXICON_ADDED = "lexicon.added"
    LEXICON_NAMED = "lexicon.named"
    # A type's value and an event's field names are the stored JSON `/v1/events` serves, kept as
    # first written: a game's rules data is `layout` there, whatever the game calls it.
    RULES_ADDED = "layout.added"
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


class Absent(Enum):
    """A field some events of a type carry and others leave out: left out of the stored event
    altogether, as readers of the log expect, rather than stored as null."""

    ABSENT = "absent"


ABSENT: Final = Absent.ABSENT


class SubmissionIds(TypedDict):
    """What every event of a submission names first: it, its contest and its team."""

    submission: str
    contest: str
    team: str


def about(submission: Submission) -> SubmissionIds:
    """The ids a submission's event names (`SubmissionQueued(**about(s))`)."""
    return {
        "submission": submission.id,
        "contest": submission.contest_id,
        "team": submission.team_id,
    }


# -- word lists and rules data ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LexiconAdded:
    type: ClassVar[EventType] = EventType.LEXICON_ADDED
    lexicon: str
    name: str
    words: int
    by: str


@dataclass(frozen=True, kw_only=True)
class LexiconNamed:
    """A word list registered already given another name."""

    type: ClassVar[EventType] = EventType.LEXICON_NAMED
    lexicon: str
    name: str
    by: str


@dataclass(frozen=True, kw_only=True)
class RulesAdded:
    type: ClassVar[EventType] = EventType.RULES_ADDED
    layout: str
    name: str
    by: str
    game: str


# -- contests and teams -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ContestCreated:
    type: ClassVar[EventType] = EventType.CONTEST_CREATED
    contest: str
    title: str
    opens_at: str
    closes_at: str
    lexicon: str
    layout: str
    game: str
    freeze_at: str | None
    options: dict[str, Any] | None


@dataclass(frozen=True, kw_only=True)
class ContestClosed:
    """Closed by the organiser (with the times it had), or by the clock (`by="clock"`, at the
    closing time it had: nothing else changed)."""

    type: ClassVar[EventType] = EventType.CONTEST_CLOSED
    contest: str
    closes_at: str
    was_to_close_at: str | Absent = ABSENT
    opens_at: str | Absent = ABSENT
    by: str


@dataclass(frozen=True, kw_only=True)
class ContestThawed:
    type: ClassVar[EventType] = EventType.CONTEST_THAWED
    contest: str
    freeze_at: str | None
    thawed_at: str | None
    by: str


@dataclass(frozen=True, kw_only=True)
class TeamCreated:
    type: ClassVar[EventType] = EventType.TEAM_CREATED
    contest: str
    team: str
    name: str
    uploads_logs: bool


@dataclass(frozen=True, kw_only=True)
class TeamUpdated:
    """A team's right to upload game logs granted or taken back."""

    type: ClassVar[EventType] = EventType.TEAM_UPDATED
    contest: str
    team: str
    uploads_logs: bool
    by: str


@dataclass(frozen=True, kw_only=True)
class TeamDeleted:
    type: ClassVar[EventType] = EventType.TEAM_DELETED
    contest: str
    team: str
    submissions_deleted: int
    submissions_handed_on: int
    by: str


# -- submissions ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SubmissionStored:
    type: ClassVar[EventType] = EventType.SUBMISSION_STORED
    submission: str
    contest: str
    team: str
    sha256: str
    size: int
    received_at: str


@dataclass(frozen=True, kw_only=True)
class SubmissionQueued:
    """Published for the workers; `was` where the sweeper published it (its state then)."""

    type: ClassVar[EventType] = EventType.SUBMISSION_QUEUED
    submission: str
    contest: str
    team: str
    was: str | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class SubmissionRequeued:
    """Published again by the sweeper, stuck since it was `was` (queued or judging)."""

    type: ClassVar[EventType] = EventType.SUBMISSION_REQUEUED
    submission: str
    contest: str
    team: str
    was: str


@dataclass(frozen=True, kw_only=True)
class SubmissionJudging:
    type: ClassVar[EventType] = EventType.SUBMISSION_JUDGING
    submission: str
    contest: str
    team: str
    attempt: int


@dataclass(frozen=True, kw_only=True)
class SubmissionRetrying:
    type: ClassVar[EventType] = EventType.SUBMISSION_RETRYING
    submission: str
    contest: str
    team: str
    attempt: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class SubmissionJudged:
    type: ClassVar[EventType] = EventType.SUBMISSION_JUDGED
    submission: str
    contest: str
    team: str
    score: int
    # A move list's lines legal and illegal (`line_counts`); a result that counts no lines (a
    # game log's) leaves them out.
    legal: int | Absent = ABSENT
    illegal: int | Absent = ABSENT
    received_at: str
    lexicon: str
    layout: str


@runtime_checkable
class LineCounted(Protocol):
    """A result's own detail (`JudgedResult.game`) that counts the lines judged legal and
    illegal: a move list's (`core.games.wordytaire.LineCounts`)."""

    @property
    def legal(self) -> int: ...
    @property
    def illegal(self) -> int: ...


class CountFields(TypedDict, total=False):
    legal: int
    illegal: int


def line_counts(detail: object) -> CountFields:
    """The line counts of a result's own detail, as its `submission.judged` event and the
    fields shown beside its score give them; none where the detail counts no lines."""
    if isinstance(detail, LineCounted):
        return {"legal": detail.legal, "illegal": detail.illegal}
    return {}


@dataclass(frozen=True, kw_only=True)
class SubmissionFailed:
    """Failed for good: after its last judging `attempt`, or at an applied `rejudge` that
    could not judge it."""

    type: ClassVar[EventType] = EventType.SUBMISSION_FAILED
    submission: str
    contest: str
    team: str
    attempt: int | Absent = ABSENT
    reason: str
    rejudge: str | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class SubmissionCopied:
    type: ClassVar[EventType] = EventType.SUBMISSION_COPIED
    submission: str
    contest: str
    team: str  # the team that sent it too
    sha256: str
    size: int
    received_at: str


@dataclass(frozen=True, kw_only=True)
class SubmissionHandedOn:
    type: ClassVar[EventType] = EventType.SUBMISSION_HANDED_ON
    submission: str
    contest: str
    team: str  # its owner now
    from_team: str
    sha256: str  # its new owner's copy, which the submission now is
    received_at: str


# -- rejudge runs and disputes ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RejudgeStarted:
    type: ClassVar[EventType] = EventType.REJUDGE_STARTED
    rejudge: str
    contest: str
    lexicon: str
    layout: str
    mode: str
    from_lexicon: str
    from_layout: str
    total: int
    by: str


@dataclass(frozen=True, kw_only=True)
class RejudgeProgress:
    type: ClassVar[EventType] = EventType.REJUDGE_PROGRESS
    rejudge: str
    contest: str
    done: int
    total: int


@dataclass(frozen=True, kw_only=True)
class RejudgeReady:
    type: ClassVar[EventType] = EventType.REJUDGE_READY
    rejudge: str
    contest: str
    done: int
    total: int
    carried: int


@dataclass(frozen=True, kw_only=True)
class RejudgeApplied:
    type: ClassVar[EventType] = EventType.REJUDGE_APPLIED
    rejudge: str
    contest: str
    lexicon: str
    layout: str
    from_lexicon: str
    from_layout: str
    by: str


@dataclass(frozen=True, kw_only=True)
class RejudgeCancelled:
    """Cancelled by the organiser, or by the apply of another run (its `reason` says which)."""

    type: ClassVar[EventType] = EventType.REJUDGE_CANCELLED
    rejudge: str
    contest: str
    by: str
    reason: str | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class DisputeSettled:
    type: ClassVar[EventType] = EventType.DISPUTE_SETTLED
    contest: str
    submission: str  # the log chosen
    match: str
    passed_over: tuple[str, ...]
    by: str


Event = (
    LexiconAdded
    | LexiconNamed
    | RulesAdded
    | ContestCreated
    | ContestClosed
    | ContestThawed
    | TeamCreated
    | TeamUpdated
    | TeamDeleted
    | SubmissionStored
    | SubmissionQueued
    | SubmissionRequeued
    | SubmissionJudging
    | SubmissionRetrying
    | SubmissionJudged
    | SubmissionFailed
    | SubmissionCopied
    | SubmissionHandedOn
    | RejudgeStarted
    | RejudgeProgress
    | RejudgeReady
    | RejudgeApplied
    | RejudgeCancelled
    | DisputeSettled
)


def event_fields(event: Event) -> dict[str, Any]:
    """The event as it is stored and served: its type, then its fields in order, an absent
    one left out and a tuple as the list JSON gives back."""
    found: dict[str, Any] = {"type": event.type}
    for field in fields(event):
        value = getattr(event, field.name)
        if value is not ABSENT:
            found[field.name] = list(value) if isinstance(value, tuple) else value
    return found
