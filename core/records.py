"""The pipeline's records: contests, teams, submissions and their claims, judged results,
rejudge runs and what they change. Plain frozen values; the SQL store reads and writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from core.states import RejudgeMode, RejudgeState, SubmissionState


@dataclass(frozen=True)
class Contest:
    """`rules_id` names the rules data beside the word list: a Wordytaire layout, or the
    board of a Crosstiles contest. The last four say how its public standings freeze
    (`core.freeze`)."""

    id: str
    title: str
    opens_at: str
    closes_at: str
    lexicon_id: str
    rules_id: str
    created_at: str
    game: str  # a name in the game registry (`core.games`), fixed at creation
    freeze_at: str | None = None  # uploads received from then on are hidden while frozen
    thawed_at: str | None = None  # when the organiser thawed it: nothing hidden from then on
    # The ruleset the public standings keep while frozen: recorded by a rejudge applied during
    # the freeze (the ruleset it replaced), None if none was.
    frozen_lexicon_id: str | None = None
    frozen_rules_id: str | None = None
    # The options its game took at creation (`Game.contest_options`), as canonical JSON; None
    # where none were given (the game's defaults).
    options: str | None = None

    def options_json(self) -> dict[str, Any]:
        return json.loads(self.options) if self.options else {}


@dataclass(frozen=True)
class Team:
    id: str
    contest_id: str
    name: str
    token_hash: str
    created_at: str
    # May upload game logs (which name other players) to a contest whose game takes them.
    uploads_logs: bool = False


@dataclass(frozen=True)
class WordList:
    """A registered word list: content-addressed (its id), stored in S3 under `blob_key`;
    `name` the label it was asked by, `names` every label it carries (when listed)."""

    id: str
    name: str
    words: int
    size: int
    blob_key: str
    source: str
    created_by: str
    created_at: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class RulesData:
    """A game's registered rules data beside the word list (a layout, a board), as JSON."""

    id: str
    name: str
    content: str
    created_by: str
    created_at: str
    game: str


@dataclass(frozen=True)
class StoredResult:
    """A submission's result row under one ruleset, as stored: what every game's result has
    (its game's own fields are read by its id, `core.ports.ResultReads.result_fields`)."""

    id: int
    submission_id: str
    lexicon_id: str
    rules_id: str
    judge_version: str
    score: int  # what the game ranks by (a move list's total, a game log's winning score)
    report_key: str
    judged_at: str
    carried: int


@dataclass(frozen=True)
class ResultLine:
    """A submission as an export lists it: its team, state, and the id of its result under
    the contest's live ruleset (None before it is judged), whose fields its game shows."""

    submission: str
    team: str
    team_id: str
    state: str
    received_at: str
    judged_at: str | None
    lexicon: str | None
    layout: str | None
    result_id: int | None


@dataclass(frozen=True)
class DeletedTeam:
    """A team's deletion: the blob keys to remove (its uploads, copies and reports), the
    shared submissions it sent first that pass to another uploader, to be judged again, every
    submission it sent (whose bytes the broker may still keep), and the digests of the bytes
    that go."""

    keys: list[str]
    handed_on: list[str]
    submissions: list[str] = field(default_factory=list)
    # The SHA-256 of the team's bytes (its copies and its submissions, handed on or not), for
    # the worker hosts' upload caches to forget.
    digests: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Submission:
    id: str
    contest_id: str
    team_id: str
    sha256: str
    size: int
    blob_key: str
    received_at: str
    receipt: str
    state: SubmissionState
    state_at: str
    attempts: int
    judged_at: str | None
    failure: str | None
    # Set where uploads from any team of the contest are one submission (a game that names
    # its players): the game's identity and the key no other game may share
    # (`core.game.Identity`). None where each team's uploads are its own.
    game_key: str | None = None
    match_key: str | None = None
    # Its upload's leaf in the contest's transparency log, as the store that logged it says
    # (`store_submissions`); None where not told (read back from a row, or a retry).
    log_leaf: int | None = field(default=None, compare=False)
    # The worker host whose upload cache holds the bytes, the last to judge them (`held_on`,
    # `core.rejudging`); None where none is known.
    held_on: str | None = field(default=None, compare=False)

    @property
    def shared(self) -> bool:
        return self.game_key is not None

    def __post_init__(self) -> None:
        # Rows read back carry the state as text; it travels as the enum.
        object.__setattr__(self, "state", SubmissionState(self.state))


@dataclass(frozen=True)
class Claim:
    submission: Submission
    attempt: int


@dataclass(frozen=True)
class JudgedResult:
    """A submission's result under one ruleset (word list and rules data)."""

    lexicon_id: str
    rules_id: str
    judge_version: str
    score: int
    report_key: str
    # What the game keeps of a result besides these fields, which every game's result has: a
    # move list's line counts, a game log's players or error (`core.games.*`).
    game: object | None = None


class Paged(NamedTuple):
    """A rejudge producer's view of one submission (`core.ports.RejudgeStore.page`)."""

    id: str
    words: bytes | None  # the signature of its words (`core.word_hashes`); None: never judged
    size: int  # its upload's bytes
    held_on: str | None  # the worker host holding its bytes (`Submission.held_on`)


@dataclass(frozen=True)
class Run:
    """A rejudge run: a contest judged again under another ruleset, applied or cancelled whole."""

    id: str
    contest_id: str
    lexicon_id: str
    rules_id: str
    from_lexicon_id: str
    from_rules_id: str
    mode: RejudgeMode
    state: RejudgeState
    total: int
    done: int
    carried: int
    cursor: str
    created_by: str
    created_at: str
    updated_at: str
    finished_at: str | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", RejudgeMode(self.mode))
        object.__setattr__(self, "state", RejudgeState(self.state))

    @property
    def open(self) -> bool:
        return self.state in (RejudgeState.RUNNING, RejudgeState.READY)


@dataclass(frozen=True)
class RunFailure:
    """A submission a rejudge run could not judge (its upload gone or damaged, its report over
    the cap): counted as done, so the run can still be applied, and shown in its preview.
    `reason` is a `core.errors.FailureReason` code; `team` the team's name."""

    submission_id: str
    team: str
    reason: str
    failed_at: str


@dataclass(frozen=True)
class RunSummary:
    """What a rejudge run changes between the ruleset it replaces and its own, in its game's
    rows: `changed` (the submissions whose score changes, or the game logs whose verdict or
    winners do) and `rank_changes` (the teams whose rank moves, or the players whose standing
    does). `frozen_at`: when `apply` recorded it, after which it never changes; None for a
    preview of the data as it is now."""

    changed: tuple[dict[str, Any], ...]
    rank_changes: tuple[dict[str, Any], ...]
    frozen_at: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        """How many rows of each: the dashboard's "n scores and m ranks"."""
        return {"scores": len(self.changed), "ranks": len(self.rank_changes)}
