"""Request and response bodies of the HTTP contract."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, field_validator

from core import clock
from core.games import DEFAULT as DEFAULT_GAME

CONTEST_ID = r"^[a-z0-9][a-z0-9_-]{0,62}$"
# Contest times are kept as fixed-width text with a four-digit year, and one before 2000 is
# a typo rather than a contest: this range keeps every stored time comparable as a string.
CONTEST_YEARS = (2000, 9999)


class Body(BaseModel):
    """A request body: no unknown fields, and no text that UTF-8 cannot carry."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def encodable_text(cls, value: Any) -> Any:
        # JSON's "\ud800" escape decodes to a lone surrogate, which no store, signature or
        # answer can encode: refused here, it is the sender's 422 rather than the server's 500.
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("text must be valid Unicode (no lone surrogates)") from None
        return value


class LexiconOut(BaseModel):
    id: str
    name: str
    words: int


class ContestIn(Body):
    id: str = Field(pattern=CONTEST_ID, description="lower-case letters, digits, '-' and '_'")
    title: str = Field(min_length=1, max_length=300)
    opens_at: str = Field(description="ISO 8601 UTC, e.g. 2026-12-01T12:00:00Z")
    closes_at: str
    lexicon: str = Field(min_length=1, max_length=200, description="lexicon id or name")
    layout: str | None = Field(
        default=None,
        max_length=200,
        description="layout id or name (default: the SPEC layout); for a Crosstiles contest, "
        "its board's (default: the packaged classic board)",
    )
    game: str = Field(
        default=DEFAULT_GAME,
        max_length=64,
        description="what uploads are, fixed at creation: a game's name (GET /v1/games lists them)",
    )
    freeze_at: str | None = Field(
        default=None,
        description="ISO 8601 UTC, from opens_at to closes_at: from then until the thaw, the "
        "public standings show only the verdicts of uploads received before it (default: none)",
    )
    options: dict[str, Any] | None = Field(
        default=None,
        description="what the contest's game takes besides its rules data, fixed at creation: "
        'for Crosstiles, {"ratings": {"rating", "deviation", "volatility", "tau"}}, each '
        "optional (default: 1500, 350, 0.06, 0.5); Wordytaire takes none",
    )

    @field_validator("opens_at", "closes_at", "freeze_at")
    @classmethod
    def a_time_with_a_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        moment = clock.parse_time(value)  # its ValueError says what is wrong, against this field
        low, high = CONTEST_YEARS
        if not low <= moment.year <= high:
            raise ValueError(f"a contest time must fall in the years {low} to {high} in UTC")
        return value


class ContestOut(BaseModel):
    id: str
    title: str
    opens_at: str
    closes_at: str
    lexicon: str
    layout: str = Field(description="the layout's id; for a Crosstiles contest, its board's")
    game: str
    status: Literal["upcoming", "open", "closed"] = Field(
        description="by the server's clock: not yet open, taking uploads, or closed"
    )
    freeze_at: str | None = Field(
        default=None, description="when the public standings freeze; null: they never do"
    )
    thawed_at: str | None = Field(
        default=None, description="when the organiser thawed them; null until then"
    )
    options: dict[str, Any] | None = Field(
        default=None,
        description="the options its game took at creation, completed with the defaults; "
        "null where none were given",
    )
    frozen: bool = Field(
        default=False,
        description="by the server's clock: the public standings hide the verdicts of uploads "
        "received since freeze_at (from freeze_at until the thaw)",
    )


class ContestList(BaseModel):
    contests: list[ContestOut]


class ContestClosed(ContestOut):
    was_open: bool = Field(
        description="false if the contest had closed already (closing again changes nothing)"
    )


class ContestThawed(ContestOut):
    thawed: bool = Field(
        description="false if the contest had been thawed already (thawing again changes nothing)"
    )


class TeamIn(Body):
    name: str = Field(min_length=1, max_length=200)
    uploads_logs: bool = Field(
        default=False,
        description="may upload game logs (which name other players) to a Crosstiles contest",
    )


class TeamChange(Body):
    uploads_logs: bool = Field(
        description="grant (true) or take back (false) the right to upload game logs"
    )


class TeamOut(BaseModel):
    id: str
    name: str
    token: str
    uploads_logs: bool


class TeamShown(BaseModel):
    id: str
    name: str
    contest: str
    uploads_logs: bool


class SubmissionAccepted(BaseModel):
    id: str
    sha256: str
    received_at: str
    receipt: str
    # The upload's leaf in the contest's transparency log; null for a retry's answer
    # (`GET /v1/submissions/{id}/log` lists every leaf of a submission, with proofs).
    log_leaf: int | None = None
    hint: str | None = Field(
        default=None,
        description="present when the upload is accepted and judged but is most likely not "
        "what was meant: empty, holding a NUL byte, not UTF-8, or in another game's format (a "
        "game log sent to a Wordytaire contest, a move list to a Crosstiles one); one sentence",
    )


class SubmissionOut(BaseModel):
    """A submission with its result under the contest's live ruleset: what every game's has,
    its game's own fields under `result`, and some of them beside the score where its game
    shows them there too (Wordytaire's line counts: `api.routes.games`)."""

    id: str
    contest: str
    team: str
    state: str
    score: int | None = Field(description="what its game ranks by; null until judged")
    received_at: str
    judged_at: str | None
    lexicon: str | None
    layout: str | None
    failure: str | None = Field(
        default=None,
        description="why a failed submission failed, as a plain sentence; null otherwise",
    )
    reason: str | None = Field(
        default=None,
        description="the failure's reason code (upload_missing, upload_corrupt, "
        "report_too_large, storage_unavailable, ...); null unless failed",
    )
    result: dict[str, Any] | None = Field(
        default=None,
        description="the result in its game's own fields (Wordytaire: score, legal, illegal; "
        "Crosstiles: valid, turns, winning_score, winners, error); null until judged",
    )
    log_leaf: int | None = Field(
        default=None,
        description="the leaf of its latest verdict (or failure) in the contest's transparency "
        "log; null until logged. `GET /v1/submissions/{id}/log` gives every leaf with its "
        "inclusion proof",
    )


NEXT_PAGE = (
    "the URL of the next page (`offset` and `limit`), or null on the last: a page holds at "
    "most `limit` entries of each list"
)
FROZEN = "whether the contest's public standings are frozen now (docs/contest-day.md)"
PENDING = (
    "uploads received since the freeze whose verdicts this board leaves out: they count as "
    "submitted, not scored, until the thaw (0 unless frozen, and for the organiser's token)"
)


class LeaderboardEntry(BaseModel):
    rank: int
    team: str
    score: int
    submission: str
    received_at: str


class Leaderboard(BaseModel):
    """A contest's ranking of teams, each by its best judged score (Wordytaire's)."""

    contest: str
    game: str = Field(default="", description="the contest's game")
    entries: list[LeaderboardEntry]
    next: str | None = Field(default=None, description=NEXT_PAGE)
    frozen: bool = Field(default=False, description=FROZEN)
    pending: int = Field(default=0, description=PENDING)


class ResultRow(BaseModel):
    """A submission with its result under the contest's live ruleset (None until judged), as
    `SubmissionOut` shows it: a game may show some of its own fields beside the score."""

    submission: str
    team: str
    team_id: str
    state: str
    score: int | None
    received_at: str
    judged_at: str | None
    lexicon: str | None
    layout: str | None
    result: dict[str, Any] | None = Field(
        default=None, description="the result in its game's own fields; null until judged"
    )


class ResultsPage(BaseModel):
    contest: str
    # Each row as its game shows it (a Wordytaire row with its line counts, `MoveListRow`).
    results: list[SerializeAsAny[ResultRow]]
    next: str | None = Field(
        description="pass as `after` for the next page; null after the last page"
    )


class ReceiptIn(Body):
    id: str
    team: str
    contest: str
    sha256: str
    received_at: str
    receipt: str


class ReceiptCheck(BaseModel):
    valid: bool


class RejudgeIn(Body):
    lexicon: str = Field(min_length=1, max_length=200, description="lexicon id or name")
    layout: str | None = Field(
        default=None, max_length=200, description="layout id or name; default: unchanged"
    )
    # The wire values of `core.states.RejudgeMode`, spelled out so the schema lists them inline.
    mode: Literal["full", "affected"] = "full"


class SealedEntry(BaseModel):
    leaf: int
    entry: str = Field(description="the entry's canonical bytes, base64")


class OwnSubmission(SubmissionOut):
    """A submission as `GET /v1/submissions/{id}` shows it, and the entries of it that the
    contest's public log withholds while frozen (`docs/transparency.md`)."""

    sealed: list[SealedEntry] = Field(
        default_factory=list,
        description="its outcome entries sealed in the contest's log while it is frozen, each "
        "with its leaf: to check against the leaf hashes of the level-0 tile (empty otherwise)",
    )


class SubmissionsPage(BaseModel):
    contest: str
    team: str | None = Field(
        description="the calling team's id, whose submissions these are; null for the organiser"
    )
    # Each as its game shows it (a Wordytaire one with its line counts, `OwnMoveList`).
    submissions: list[SerializeAsAny[OwnSubmission]]
    next: str | None = Field(
        description="pass as `after` for the next page; null after the last page"
    )


class DisputedLogOut(BaseModel):
    """A valid log of a disputed game: the teams that uploaded it (by name), when it was
    received, and whom it makes the winners."""

    submission: str
    teams: list[str]
    received_at: str
    winners: list[str]


class DisputeOut(BaseModel):
    """A game (its seed and players, `match`) with rival valid logs, none of which counts
    until the organiser settles it."""

    match: str
    logs: list[DisputedLogOut]


class DisputeList(BaseModel):
    contest: str
    disputes: list[DisputeOut]


class SettleIn(Body):
    submission: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,64}$", description="the log chosen: it counts, the others not"
    )


class SettlementOut(BaseModel):
    contest: str
    match: str
    chosen: str
    passed_over: list[str]
    changed: bool = Field(description="false when the game was settled so already")
