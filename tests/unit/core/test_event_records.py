"""The event records (`core.events`): one for each event type, and each stored as the dict the
event log, its readers (`/v1/events`, the dashboard, the CLICS feed, the transparency log) and
the fakes' event lists hold: the same keys in the same order, an absent field left out."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import FrozenInstanceError
from typing import Any, get_args

import pytest

from core import events
from core.events import (
    ContestClosed,
    ContestCreated,
    ContestThawed,
    DisputeSettled,
    Event,
    EventType,
    LexiconAdded,
    LexiconNamed,
    RejudgeApplied,
    RejudgeCancelled,
    RejudgeProgress,
    RejudgeReady,
    RejudgeStarted,
    RulesAdded,
    SubmissionCopied,
    SubmissionFailed,
    SubmissionHandedOn,
    SubmissionIds,
    SubmissionJudged,
    SubmissionJudging,
    SubmissionQueued,
    SubmissionRequeued,
    SubmissionRetrying,
    SubmissionStored,
    TeamCreated,
    TeamDeleted,
    TeamUpdated,
    about,
    event_fields,
)
from core.fake_database import InMemoryDatabase
from core.records import Submission
from core.states import SubmissionState

T0, T1, T2 = "2026-05-01T10:00:00.000000Z", "2026-05-01T11:00:00.000000Z", "2026-05-01T12:00:00Z"
S = SubmissionIds(submission="s1", contest="c1", team="t1")
S2 = SubmissionIds(submission="s1", contest="c1", team="t2")  # its copy's team, its heir

# Each record, and the dict the event log holds for it (keys in their stored order): one
# example of every record, and of each optional field both given and left out.
EXAMPLES: list[tuple[Event, dict[str, Any]]] = [
    (
        LexiconAdded(lexicon="lx", name="sowpods", words=3, by="org"),
        {"type": "lexicon.added", "lexicon": "lx", "name": "sowpods", "words": 3, "by": "org"},
    ),
    (
        LexiconNamed(lexicon="lx", name="twl", by="org"),
        {"type": "lexicon.named", "lexicon": "lx", "name": "twl", "by": "org"},
    ),
    (
        RulesAdded(layout="ly", name="classic", by="org", game="wordytaire"),
        {"type": "layout.added", "layout": "ly", "name": "classic", "by": "org",
         "game": "wordytaire"},
    ),
    (
        ContestCreated(contest="c1", title="Spring", opens_at=T0, closes_at=T2, lexicon="lx",
                       layout="ly", game="crosstiles", freeze_at=None, options={"seats": 2}),
        {"type": "contest.created", "contest": "c1", "title": "Spring", "opens_at": T0,
         "closes_at": T2, "lexicon": "lx", "layout": "ly", "game": "crosstiles",
         "freeze_at": None, "options": {"seats": 2}},
    ),
    (
        ContestClosed(contest="c1", closes_at=T1, was_to_close_at=T2, opens_at=T0, by="org"),
        {"type": "contest.closed", "contest": "c1", "closes_at": T1, "was_to_close_at": T2,
         "opens_at": T0, "by": "org"},
    ),
    (
        ContestClosed(contest="c1", closes_at=T2, by="clock"),
        {"type": "contest.closed", "contest": "c1", "closes_at": T2, "by": "clock"},
    ),
    (
        ContestThawed(contest="c1", freeze_at=T1, thawed_at=T2, by="org"),
        {"type": "contest.thawed", "contest": "c1", "freeze_at": T1, "thawed_at": T2,
         "by": "org"},
    ),
    (
        TeamCreated(contest="c1", team="t1", name="ann", uploads_logs=False),
        {"type": "team.created", "contest": "c1", "team": "t1", "name": "ann",
         "uploads_logs": False},
    ),
    (
        TeamUpdated(contest="c1", team="t1", uploads_logs=True, by="org"),
        {"type": "team.updated", "contest": "c1", "team": "t1", "uploads_logs": True,
         "by": "org"},
    ),
    (
        TeamDeleted(contest="c1", team="t1", submissions_deleted=2, submissions_handed_on=1,
                    by="org"),
        {"type": "team.deleted", "contest": "c1", "team": "t1", "submissions_deleted": 2,
         "submissions_handed_on": 1, "by": "org"},
    ),
    (
        SubmissionStored(**S, sha256="ab", size=10, received_at=T0),
        {"type": "submission.stored", **S, "sha256": "ab", "size": 10, "received_at": T0},
    ),
    (SubmissionQueued(**S), {"type": "submission.queued", **S}),
    (
        SubmissionQueued(**S, was=SubmissionState.STORED),
        {"type": "submission.queued", **S, "was": "stored"},
    ),
    (
        SubmissionRequeued(**S, was=SubmissionState.JUDGING),
        {"type": "submission.requeued", **S, "was": "judging"},
    ),
    (
        SubmissionJudging(**S, attempt=2),
        {"type": "submission.judging", **S, "attempt": 2},
    ),
    (
        SubmissionRetrying(**S, attempt=1, reason="worker lost"),
        {"type": "submission.retrying", **S, "attempt": 1, "reason": "worker lost"},
    ),
    (
        SubmissionJudged(**S, score=42, legal=3, illegal=1, received_at=T0, lexicon="lx",
                         layout="ly"),
        {"type": "submission.judged", **S, "score": 42, "legal": 3, "illegal": 1,
         "received_at": T0, "lexicon": "lx", "layout": "ly"},
    ),
    (
        SubmissionJudged(**S, score=300, received_at=T0, lexicon="lx", layout="board"),
        {"type": "submission.judged", **S, "score": 300, "received_at": T0, "lexicon": "lx",
         "layout": "board"},
    ),
    (
        SubmissionFailed(**S, attempt=3, reason="timeout"),
        {"type": "submission.failed", **S, "attempt": 3, "reason": "timeout"},
    ),
    (
        SubmissionFailed(**S, reason="unreadable", rejudge="r1"),
        {"type": "submission.failed", **S, "reason": "unreadable", "rejudge": "r1"},
    ),
    (
        SubmissionCopied(**S2, sha256="cd", size=11, received_at=T1),
        {"type": "submission.copied", **S2, "sha256": "cd", "size": 11,
         "received_at": T1},
    ),
    (
        SubmissionHandedOn(**S2, from_team="t1", sha256="cd", received_at=T1),
        {"type": "submission.handed_on", **S2, "from_team": "t1", "sha256": "cd",
         "received_at": T1},
    ),
    (
        RejudgeStarted(rejudge="r1", contest="c1", lexicon="lx2", layout="ly", mode="full",
                       from_lexicon="lx", from_layout="ly", total=7, by="org"),
        {"type": "rejudge.started", "rejudge": "r1", "contest": "c1", "lexicon": "lx2",
         "layout": "ly", "mode": "full", "from_lexicon": "lx", "from_layout": "ly", "total": 7,
         "by": "org"},
    ),
    (
        RejudgeProgress(rejudge="r1", contest="c1", done=3, total=7),
        {"type": "rejudge.progress", "rejudge": "r1", "contest": "c1", "done": 3, "total": 7},
    ),
    (
        RejudgeReady(rejudge="r1", contest="c1", done=7, total=7, carried=2),
        {"type": "rejudge.ready", "rejudge": "r1", "contest": "c1", "done": 7, "total": 7,
         "carried": 2},
    ),
    (
        RejudgeApplied(rejudge="r1", contest="c1", lexicon="lx2", layout="ly",
                       from_lexicon="lx", from_layout="ly", by="org"),
        {"type": "rejudge.applied", "rejudge": "r1", "contest": "c1", "lexicon": "lx2",
         "layout": "ly", "from_lexicon": "lx", "from_layout": "ly", "by": "org"},
    ),
    (
        RejudgeCancelled(rejudge="r1", contest="c1", by="org"),
        {"type": "rejudge.cancelled", "rejudge": "r1", "contest": "c1", "by": "org"},
    ),
    (
        RejudgeCancelled(rejudge="r2", contest="c1", by="org", reason="superseded by r1"),
        {"type": "rejudge.cancelled", "rejudge": "r2", "contest": "c1", "by": "org",
         "reason": "superseded by r1"},
    ),
    (
        DisputeSettled(contest="c1", submission="s1", match="m", passed_over=("s2", "s3"),
                       by="org"),
        {"type": "dispute.settled", "contest": "c1", "submission": "s1", "match": "m",
         "passed_over": ["s2", "s3"], "by": "org"},
    ),
]  # fmt: skip
RECORDS = get_args(Event)


@pytest.mark.parametrize(("record", "stored"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_each_record_is_stored_as_the_dict_of_its_event_key_for_key_in_order(
    record: Event, stored: dict[str, Any]
) -> None:
    fields = event_fields(record)
    assert list(fields.items()) == list(stored.items())
    assert fields["type"] is record.type  # the member, as the log's readers compare it
    # The stored JSON (the event row's data: its fields but the type) is byte for byte the same.
    data = {k: v for k, v in fields.items() if k != "type"}
    expected = {k: v for k, v in stored.items() if k != "type"}
    assert json.dumps(data, separators=(",", ":")) == json.dumps(expected, separators=(",", ":"))


def test_every_event_type_has_exactly_one_record() -> None:
    made = Counter(record.type for record in RECORDS)
    assert set(made) == set(EventType)
    assert all(count == 1 for count in made.values()), made


def test_every_record_in_the_module_is_in_the_event_union() -> None:
    declared = {
        value
        for value in vars(events).values()
        if isinstance(value, type) and isinstance(getattr(value, "type", None), EventType)
    }
    assert declared == set(RECORDS)


def test_the_examples_cover_every_record() -> None:
    assert {type(record) for record, _ in EXAMPLES} == set(RECORDS)


def test_an_optional_field_left_out_is_absent_from_the_event_not_null() -> None:
    fields = event_fields(RejudgeCancelled(rejudge="r1", contest="c1", by="org"))
    assert "reason" not in fields
    assert "reason" not in json.dumps(fields)


def test_a_field_that_is_none_stays_in_the_event_as_null() -> None:
    created = ContestCreated(contest="c1", title="Spring", opens_at=T0, closes_at=T2,
                             lexicon="lx", layout="ly", game="crosstiles", freeze_at=None,
                             options=None)  # fmt: skip
    fields = event_fields(created)
    assert fields["freeze_at"] is None
    assert fields["options"] is None


def test_about_names_a_submission_its_contest_and_its_team() -> None:
    upload = Submission(
        id="s9", contest_id="c2", team_id="t3", sha256="ef", size=4, blob_key="k",
        received_at=T0, receipt="", state=SubmissionState.STORED, state_at=T0, attempts=0,
        judged_at=None, failure=None,
    )  # fmt: skip
    assert about(upload) == {"submission": "s9", "contest": "c2", "team": "t3"}


def test_a_record_cannot_be_changed_once_made() -> None:
    judging = SubmissionJudging(**S, attempt=1)
    with pytest.raises(FrozenInstanceError):
        judging.attempt = 2  # type: ignore[misc]


def test_the_fakes_log_a_record_as_stored_with_its_time_and_number() -> None:
    db = InMemoryDatabase(now=lambda: T1)
    with db.write("cancel") as pending:
        pending.append(RejudgeCancelled(rejudge="r1", contest="c1", by="org"))
        pending.append(SubmissionQueued(**S))
    assert db.events == [
        {"type": "rejudge.cancelled", "rejudge": "r1", "contest": "c1", "by": "org", "ts": T1,
         "id": 1},
        {"type": "submission.queued", **S, "ts": T1, "id": 2},
    ]  # fmt: skip
