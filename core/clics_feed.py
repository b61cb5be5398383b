"""The Contest API's event feed, derived from tilejudge's append-only event log: which CLICS
objects each logged event changes, their notifications rendered once for every kind of viewer
(each line tagged with who may see it), and the snapshot a follower starts with.

A notification carries the object as it is when rendered (the spec asks that the latest one
for an object be its current state, not a history). The `token` of a line is the id of the
logged event it comes from, given on the last line a follower gets of that event: resuming
with `since_token` replays every event after it, so nothing is missed, at worst repeated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core import clics
from core.clics import ContestData, Role, Sight, Upload, Viewer
from core.events import EventType
from core.records import Contest


@dataclass(frozen=True)
class Logged:
    """A row of the event log, as far as the feed reads it."""

    id: int
    type: str
    contest_id: str | None
    team_id: str | None
    submission_id: str | None


class Audience(StrEnum):
    """Who sees a line: everyone; the organiser alone; the public and every team; the
    organiser and the line's team; the public and every team but the line's."""

    ALL = "all"
    ADMIN = "admin"
    PUBLIC = "public"
    FULL = "full"
    PUBLIC_BUT = "public_but"


@dataclass(frozen=True)
class Line:
    """A notification not yet finished: its JSON without the closing brace (a token may
    follow), the logged event it comes from, its contest and who sees it."""

    source: int
    contest: str
    audience: Audience
    team: str | None
    body: bytes

    def seen_by(self, viewer: Viewer) -> bool:
        audience = self.audience
        if audience is Audience.ALL:
            return True
        if viewer.role is Role.ADMIN:
            return audience in (Audience.ADMIN, Audience.FULL)
        if audience is Audience.PUBLIC:
            return True
        if audience is Audience.PUBLIC_BUT:
            return viewer.team_id is None or viewer.team_id != self.team
        return audience is Audience.FULL and viewer.team_id == self.team


def finish(body: bytes, token: int | None) -> bytes:
    """A line as sent: with its token, if it carries one, and its newline."""
    if token is None:
        return body + b"}\n"
    return body + b',"token":"' + str(token).encode() + b'"}\n'


def body(kind: str, object_id: str | None, data: object) -> bytes:
    head = json.dumps({"type": kind, "id": object_id, "data": data}, separators=(",", ":"))
    return head[:-1].encode()


# -- what a logged event changes -------------------------------------------------------------


class Change(StrEnum):
    CONTEST = "contest"  # the contest object and its state
    TEAM = "team"
    TEAM_GONE = "team_gone"  # a team deleted, with its submissions and judgements
    SUBMISSION = "submission"
    JUDGEMENTS = "judgements"  # one submission's
    ALL_JUDGEMENTS = "all_judgements"  # the thaw, a rejudge applied


CHANGES: dict[str, tuple[Change, ...]] = {
    EventType.CONTEST_CLOSED: (Change.CONTEST,),
    EventType.CONTEST_THAWED: (Change.CONTEST, Change.ALL_JUDGEMENTS),
    EventType.REJUDGE_APPLIED: (Change.ALL_JUDGEMENTS,),
    EventType.TEAM_CREATED: (Change.TEAM,),
    EventType.TEAM_DELETED: (Change.TEAM_GONE,),
    EventType.SUBMISSION_STORED: (Change.SUBMISSION,),
    EventType.SUBMISSION_JUDGED: (Change.JUDGEMENTS,),
    EventType.SUBMISSION_FAILED: (Change.JUDGEMENTS,),
}
JUDGING = frozenset({Change.TEAM_GONE, Change.JUDGEMENTS, Change.ALL_JUDGEMENTS})
PUBLIC = Viewer()


@dataclass
class Wanted:
    """What the store must read of one contest to render a page of logged events."""

    submissions: set[str] = field(default_factory=set)
    everything: bool = False  # every submission (a thaw, a rejudge applied)
    tops: bool = False  # the highest scores, for the problem's max_score
    gone_teams: set[str] = field(default_factory=set)


def wanted(page: Iterable[Logged], contests: Iterable[str] | None = None) -> dict[str, Wanted]:
    """Per contest (of `contests`, or any), what rendering `page` needs read."""
    found: dict[str, Wanted] = {}
    watched = None if contests is None else set(contests)
    for logged in page:
        changes = CHANGES.get(logged.type, ())
        cid = logged.contest_id
        if not changes or cid is None or (watched is not None and cid not in watched):
            continue
        want = found.setdefault(cid, Wanted())
        want.everything |= Change.ALL_JUDGEMENTS in changes
        want.tops |= bool(JUDGING.intersection(changes))
        if logged.submission_id is not None:
            want.submissions.add(logged.submission_id)
        if Change.TEAM_GONE in changes and logged.team_id is not None:
            want.gone_teams.add(logged.team_id)
    return found


@dataclass(frozen=True)
class Read:
    """What the store read of one contest for a page: the data, and the ids of the
    submissions each deleted team had (its logged uploads)."""

    data: ContestData
    gone: dict[str, tuple[str, ...]]


# -- rendering -------------------------------------------------------------------------------


@dataclass
class Renderer:
    """Renders pages of logged events into lines. Remembers the problem object it last
    rendered per contest and sight, so the max_score is sent again only when it changes."""

    problems: dict[tuple[str, bool], bytes] = field(default_factory=dict)

    def render(self, page: Sequence[Logged], reads: dict[str, Read], now: str) -> list[Line]:
        lines: list[Line] = []
        for logged in page:
            read = reads.get(logged.contest_id or "")
            if read is None:
                continue
            changes = CHANGES.get(logged.type, ())
            made = [line for change in changes for line in _lines(change, logged, read, now)]
            lines.extend(made)
            if JUDGING.intersection(changes):
                public = any(line.seen_by(PUBLIC) for line in made)
                lines.extend(self._problems(logged.id, read.data, now, public))
        return lines

    def _problems(self, source: int, data: ContestData, now: str, public: bool) -> Iterator[Line]:
        """The problem, for each sight whose `max_score` changed. For the public's only when
        the event changed something the public sees: the judging of an upload the freeze
        hides sends the public nothing, not even the problem unchanged (which would tell
        when it was judged); a follower's fresh renderer has no earlier problem to compare."""
        cid = data.contest.id
        rendered = {
            full: body("problems", clics.game_of(data.contest).problem_id, clics.problem_object(
                data.contest, clics.max_score(data, clics.sight(data, now, full))))
            for full in (True, False)
        }  # fmt: skip
        changed = {
            full
            for full, b in rendered.items()
            if (full or public) and self.problems.get((cid, full)) != b
        }
        for full in changed:
            self.problems[cid, full] = rendered[full]
        if changed == {True, False} and rendered[True] == rendered[False]:
            yield Line(source, cid, Audience.ALL, None, rendered[True])
            return
        for full in sorted(changed, reverse=True):
            yield Line(source, cid, Audience.ADMIN if full else Audience.PUBLIC, None,
                       rendered[full])  # fmt: skip


def _lines(change: Change, logged: Logged, read: Read, now: str) -> Iterator[Line]:
    data, source = read.data, logged.id
    cid = data.contest.id
    everyone = Audience.ALL
    if change is Change.CONTEST:
        yield Line(source, cid, everyone, None, body("contest", None, clics.contest_object(
            data.contest)))  # fmt: skip
        yield Line(source, cid, everyone, None, body("state", None, clics.state_object(
            data.contest, now)))  # fmt: skip
    elif change is Change.TEAM:
        team = next((t for t in data.teams if t.id == logged.team_id), None)
        if team is not None:
            yield Line(source, cid, everyone, None, body("teams", team.id, clics.team_object(team)))
    elif change is Change.TEAM_GONE and logged.team_id is not None:
        places = len(clics.history(data))
        for sid in read.gone.get(logged.team_id, ()):
            for jid in [clics.judgement_id(sid, p) for p in range(places)] + [clics.failed_id(sid)]:
                yield Line(source, cid, everyone, None, body("judgements", jid, None))
            yield Line(source, cid, everyone, None, body("submissions", sid, None))
        yield Line(source, cid, everyone, None, body("teams", logged.team_id, None))
    elif change is Change.SUBMISSION:
        upload = _upload(data, logged.submission_id)
        if upload is not None:
            submission = clics.submission_object(data.contest, upload)
            yield Line(source, cid, everyone, None, body("submissions", upload.id, submission))
    elif change is Change.JUDGEMENTS:
        upload = _upload(data, logged.submission_id)
        if upload is not None:
            yield from judgement_lines(source, data, upload, now)
    elif change is Change.ALL_JUDGEMENTS:
        for upload in data.uploads:
            yield from judgement_lines(source, data, upload, now)


def _upload(data: ContestData, submission_id: str | None) -> Upload | None:
    return data.upload_by_id.get(submission_id or "")


def judgement_lines(source: int, data: ContestData, upload: Upload, now: str) -> Iterator[Line]:
    """An upload's judgements as the organiser and its team see them, and as everyone else
    does: one line for both where they agree."""
    rows = data.by_submission.get(upload.id, ())
    full = _by_id(data, upload, rows, clics.sight(data, now, True))
    public = _by_id(data, upload, rows, clics.sight(data, now, False))
    cid, team = data.contest.id, upload.team_id
    for jid, shown in full.items():
        seen = public.get(jid)
        if seen == shown:
            yield Line(source, cid, Audience.ALL, None, body("judgements", jid, shown))
            continue
        yield Line(source, cid, Audience.FULL, team, body("judgements", jid, shown))
        if seen is not None:
            yield Line(source, cid, Audience.PUBLIC_BUT, team, body("judgements", jid, seen))


def _by_id(
    data: ContestData, upload: Upload, rows: Sequence[clics.Judging], seen: Sight
) -> dict[str, dict[str, Any]]:
    return {j["id"]: j for j in clics.judgements_of(data.contest, upload, rows, seen)}


# -- the snapshot a follower starts from -----------------------------------------------------


def snapshot(data: ContestData, viewer: Viewer, now: str) -> Iterator[bytes]:
    """Every object the viewer sees, as notifications without tokens, each object on a line
    of its own (none for a whole collection, see `docs/clics.md`): configuration first, then
    each submission followed by its judgements (so no line names an object not yet sent)."""
    contest = data.contest
    yield body("contest", None, clics.contest_object(contest))
    for kind, objects in clics.configuration(data, viewer, now):
        for item in objects:
            yield body(kind, item["id"], item)
    for team in data.teams:
        yield body("teams", team.id, clics.team_object(team))
    yield body("state", None, clics.state_object(contest, now))
    public, full = clics.sight(data, now, False), clics.sight(data, now, True)
    for upload in data.uploads:
        yield body("submissions", upload.id, clics.submission_object(contest, upload))
        seen = full if viewer.sees_all_of(upload.team_id) else public
        for judgement in clics.judgements_of(
            contest, upload, data.by_submission.get(upload.id, ()), seen
        ):
            yield body("judgements", judgement["id"], judgement)


def state_line(contest: Contest, now: str) -> bytes:
    return body("state", None, clics.state_object(contest, now))
