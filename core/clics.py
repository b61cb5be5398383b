"""A contest as the CLICS Contest API (icpc/ccs-specs `2026-01`) shows it: pure mapping from
the store's records to the API's objects, who sees what (public, team, admin, and the
scoreboard freeze of `core.freeze`), and the `score` scoreboard. `docs/clics.md` gives the
mapping and why.

A contest of a game the API maps (`core.clics_games`: Wordytaire) is one problem, one language
and two judgement types: every judged upload is `AC` with its total as `score` (illegal moves
cost nothing, so no upload is rejected), an upload the pipeline could not judge is `JE`. A
judgement is one result row: a rejudge's results appear as new judgements once it is applied,
and the results under the ruleset it replaced stay, no longer `current`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from core import freeze
from core.clics_games import Mapped, mapped
from core.records import Contest, Team
from core.states import SubmissionState

VERSION = "2026-01"
VERSION_URL = "https://ccs-specs.icpc.io/2026-01/contest_api"
ACCEPTED, JUDGING_ERROR = "AC", "JE"
JUDGEMENT_TYPES = (
    {"id": ACCEPTED, "name": "Accepted (scored)", "solved": True},
    {"id": JUDGING_ERROR, "name": "Judging Error", "solved": False},
)
# What `access` lists: every endpoint served, with the properties its objects may carry.
ENDPOINTS = {
    "contest": ["id", "name", "formal_name", "start_time", "duration",
                "scoreboard_freeze_duration", "scoreboard_thaw_time", "scoreboard_type"],
    "judgement-types": ["id", "name", "solved"],
    "languages": ["id", "name", "entry_point_required", "extensions"],
    "problems": ["id", "label", "name", "ordinal", "test_data_count", "max_score"],
    "groups": ["id", "name"],
    "organizations": ["id", "name"],
    "teams": ["id", "name", "label", "group_ids"],
    "state": ["started", "frozen", "ended", "thawed", "finalized", "end_of_updates"],
    "submissions": ["id", "language_id", "problem_id", "team_id", "time", "contest_time",
                    "files"],
    "judgements": ["id", "submission_id", "judgement_type_id", "score", "current", "start_time",
                   "start_contest_time", "end_time", "end_contest_time"],
    "runs": ["id", "judgement_id", "ordinal", "judgement_type_id", "time", "contest_time"],
    "clarifications": ["id", "text", "time", "contest_time"],
}  # fmt: skip
Ruleset = tuple[str, str]  # (lexicon id, rules id)


class Role(StrEnum):
    PUBLIC = "public"
    TEAM = "team"
    ADMIN = "admin"


@dataclass(frozen=True)
class Viewer:
    """Who asks: the public (no token), a team of the contest (its token), the organiser."""

    role: Role = Role.PUBLIC
    team_id: str | None = None

    def sees_all_of(self, team_id: str) -> bool:
        """Whether this viewer sees a team's judgements unfrozen: the organiser's, a team its own."""
        return self.role is Role.ADMIN or (self.role is Role.TEAM and self.team_id == team_id)

    @property
    def full_board(self) -> bool:
        """The organiser's scoreboard is never frozen; a team's is the public's."""
        return self.role is Role.ADMIN


@dataclass(frozen=True)
class Upload:
    """A submission as the Contest API needs it."""

    id: str
    team_id: str
    received_at: str
    state: SubmissionState
    state_at: str


@dataclass(frozen=True)
class Judging:
    """One result row: a submission's result under one ruleset."""

    id: int
    submission_id: str
    ruleset: Ruleset
    score: int
    judged_at: str


@dataclass(frozen=True)
class Applied:
    """A rejudge run applied: the contest's ruleset went from `replaced` to `ruleset` at `at`."""

    replaced: Ruleset
    ruleset: Ruleset
    at: str


@dataclass(frozen=True)
class ContestData:
    """What one read of a contest holds: its record, the rejudges applied to it (in order),
    its teams, and some or all of its submissions with all their result rows."""

    contest: Contest
    applied: tuple[Applied, ...]
    teams: tuple[Team, ...]
    uploads: tuple[Upload, ...]
    judgings: tuple[Judging, ...]
    # For a read of some submissions only: the highest score the full and the public sight
    # see in the whole contest, (public, full), read by the store.
    tops: tuple[int, int] | None = None
    by_submission: dict[str, list[Judging]] = field(init=False, compare=False, repr=False)
    upload_by_id: dict[str, Upload] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        grouped: dict[str, list[Judging]] = {}
        for judging in self.judgings:
            grouped.setdefault(judging.submission_id, []).append(judging)
        object.__setattr__(self, "by_submission", grouped)
        object.__setattr__(self, "upload_by_id", {u.id: u for u in self.uploads})


@dataclass(frozen=True)
class Sight:
    """The results one kind of viewer sees at a moment: the ruleset it takes as current, the
    rulesets whose results it sees (each with its place in the contest's history, which names
    its judgements), and the receipt time from which uploads stay pending."""

    current: Ruleset
    rulesets: dict[Ruleset, int]
    hidden_from: str | None
    full: bool

    def shows(self, upload: Upload) -> bool:
        return self.hidden_from is None or upload.received_at < self.hidden_from


def history(data: ContestData) -> list[tuple[Ruleset, str]]:
    """The rulesets the contest has been judged under live, in order, each with when it became
    live: the one it was created with, then each applied rejudge's."""
    contest = data.contest
    first = data.applied[0].replaced if data.applied else (contest.lexicon_id, contest.rules_id)
    return [(first, contest.created_at), *((a.ruleset, a.at) for a in data.applied)]


def sight(data: ContestData, now: str, full: bool) -> Sight:
    """Full sight (the organiser; a team on its own uploads): every ruleset the contest has
    been judged under live, the live one current. The public's: while frozen, the rulesets live
    before the freeze and the one `core.freeze` keeps public, nothing of later uploads."""
    contest = data.contest
    places: dict[Ruleset, int] = {}
    for place, (ruleset, _) in enumerate(history(data)):
        places.setdefault(ruleset, place)
    if full:
        return Sight(_live(contest), places, None, True)
    cutoff = contest.freeze_at if freeze.frozen(contest, now) else None
    current = freeze.public_ruleset(contest, now)
    shown = {r for r, since in history(data) if cutoff is None or since < cutoff} | {current}
    return Sight(current, {r: places.get(r, len(places)) for r in shown}, cutoff, False)


# -- times -----------------------------------------------------------------------------------


def abstime(stored: str) -> str:
    """A stored time (`core.clock`: microseconds, Z) as CLICS TIME, in milliseconds."""
    return stored[:23] + "Z"


def reltime(start: str, moment: str) -> str:
    """`moment` after `start` as CLICS RELTIME, `(-)h:mm:ss.uuu`."""
    delta = _parse(moment) - _parse(start)
    ms = delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{sign}{hours}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


def _parse(stored: str) -> datetime:
    return datetime.fromisoformat(stored.replace("Z", "+00:00"))


# -- objects ---------------------------------------------------------------------------------


def api_information(provider_version: str) -> dict[str, Any]:
    return {
        "version": VERSION,
        "version_url": VERSION_URL,
        "provider": {"name": "tilejudge", "version": provider_version},
    }


def access(viewer: Viewer) -> dict[str, Any]:
    """The same endpoints for every role (what differs is which results they show); no
    capabilities: the API is read-only."""
    del viewer
    return {
        "capabilities": [],
        "endpoints": [{"type": kind, "properties": list(p)} for kind, p in ENDPOINTS.items()],
    }


def contest_object(contest: Contest) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": contest.id,
        "name": contest.title,
        "formal_name": contest.title,
        "start_time": abstime(contest.opens_at),
        "duration": reltime(contest.opens_at, contest.closes_at),
        "scoreboard_type": "score",
    }
    if contest.freeze_at is not None:
        found["scoreboard_freeze_duration"] = reltime(contest.freeze_at, contest.closes_at)
        found["scoreboard_thaw_time"] = _thawed(contest)
    return found


def _thawed(contest: Contest) -> str | None:
    thawed = contest.thawed_at
    return abstime(thawed) if thawed and contest.freeze_at and thawed >= contest.freeze_at else None


def state_object(contest: Contest, now: str) -> dict[str, Any]:
    """Started at the opening, ended at the close, frozen from the freeze until the thaw. Never
    finalized: an organiser may rejudge after the close."""
    frozen = contest.freeze_at if contest.freeze_at and contest.freeze_at <= now else None
    thawed = _thawed(contest) if frozen else None
    return {
        "started": abstime(contest.opens_at) if contest.opens_at <= now else None,
        "frozen": abstime(frozen) if frozen and (thawed or not contest.thawed_at) else None,
        "ended": abstime(contest.closes_at) if contest.closes_at <= now else None,
        "thawed": thawed,
        "finalized": None,
        "end_of_updates": None,
    }


def game_of(contest: Contest) -> Mapped:
    """How the Contest API shows the contest's game (ValueError for one it does not map)."""
    found = mapped(contest.game)
    if found is None:
        raise ValueError(f"the Contest API does not map {contest.game!r} contests")
    return found


def languages(contest: Contest) -> list[dict[str, Any]]:
    return [game_of(contest).language]


def problem_object(contest: Contest, max_score: int) -> dict[str, Any]:
    game = game_of(contest)
    return {
        "id": game.problem_id,
        "label": "A",
        "name": game.problem_name,
        "ordinal": 1,
        "test_data_count": 1,
        "max_score": max_score,
    }


def team_object(team: Team) -> dict[str, Any]:
    return {"id": team.id, "name": team.name, "label": team.name, "group_ids": []}


def submission_object(contest: Contest, upload: Upload) -> dict[str, Any]:
    """The upload's bytes are not offered (`files` empty): the export and the report are
    tilejudge's own API."""
    return {
        "id": upload.id,
        "language_id": game_of(contest).language_id,
        "problem_id": game_of(contest).problem_id,
        "team_id": upload.team_id,
        "time": abstime(upload.received_at),
        "contest_time": reltime(contest.opens_at, upload.received_at),
        "files": [],
    }


def judgements_of(
    contest: Contest, upload: Upload, rows: Sequence[Judging], seen: Sight
) -> list[dict[str, Any]]:
    """The upload's judgements as `seen`: one per result row under a ruleset it sees (current
    if under its current one), and a `JE` one while the upload has failed with no result
    under the current ruleset. None of an upload the freeze hides."""
    if not seen.shows(upload):
        return []
    shown = [row for row in rows if row.ruleset in seen.rulesets]
    found = [
        _judgement(contest, judgement_id(upload.id, seen.rulesets[row.ruleset]), upload.id,
                   ACCEPTED, row.score, row.judged_at, row.ruleset == seen.current)
        for row in shown
    ]  # fmt: skip
    if upload.state is SubmissionState.FAILED and not any(
        row.ruleset == seen.current for row in shown
    ):
        found.append(
            _judgement(contest, failed_id(upload.id), upload.id, JUDGING_ERROR, 0,
                       upload.state_at, True)
        )  # fmt: skip
    return found


def judgement_id(submission_id: str, place: int) -> str:
    """A judgement's id: its submission's, and the place of its ruleset in the contest's
    history (stable: the history only grows), so a deleted team's are known without its rows."""
    return f"{submission_id[:32]}-{place}"


def failed_id(submission_id: str) -> str:
    """The id of a failed upload's `JE` judgement."""
    return f"{submission_id[:32]}-e"


def _judgement(
    contest: Contest, jid: str, sid: str, kind: str, score: int, at: str, current: bool
) -> dict[str, Any]:
    return {
        "id": jid,
        "submission_id": sid,
        "judgement_type_id": kind,
        "score": score,
        "current": current,
        "start_time": abstime(at),
        "start_contest_time": reltime(contest.opens_at, at),
        "end_time": abstime(at),
        "end_contest_time": reltime(contest.opens_at, at),
    }


def judgements(data: ContestData, viewer: Viewer, now: str) -> list[dict[str, Any]]:
    """Every judgement the viewer sees, by submission in receipt order."""
    public, full = sight(data, now, False), sight(data, now, True)
    return [
        judgement
        for upload in data.uploads
        for judgement in judgements_of(
            data.contest,
            upload,
            data.by_submission.get(upload.id, ()),
            full if viewer.sees_all_of(upload.team_id) else public,
        )
    ]


def max_score(data: ContestData, seen: Sight) -> int:
    """The problem's `max_score`: the highest score of a judgement the viewer sees (Wordytaire
    has no ceiling a judge could state), so every judgement's score lies within it."""
    if data.tops is not None:
        return data.tops[seen.full]
    return max(
        (
            row.score
            for upload in data.uploads
            if seen.shows(upload)
            for row in data.by_submission.get(upload.id, ())
            if row.ruleset in seen.rulesets
        ),
        default=0,
    )


def _live(contest: Contest) -> Ruleset:
    return contest.lexicon_id, contest.rules_id


def problems(data: ContestData, viewer: Viewer, now: str) -> list[dict[str, Any]]:
    return [problem_object(data.contest, max_score(data, sight(data, now, viewer.full_board)))]


def configuration(
    data: ContestData, viewer: Viewer, now: str
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The configuration collections that hold objects, by notification type, as the viewer
    sees them (groups and organizations are always empty)."""
    return [
        ("judgement-types", list(JUDGEMENT_TYPES)),
        ("languages", languages(data.contest)),
        ("problems", problems(data, viewer, now)),
    ]


def submissions(data: ContestData) -> list[dict[str, Any]]:
    return [submission_object(data.contest, upload) for upload in data.uploads]


def teams(found: Iterable[Team]) -> list[dict[str, Any]]:
    return [team_object(team) for team in found]
