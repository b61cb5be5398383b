"""The organiser's writes on contests and teams: creating a contest (its rules data registered
on first use, the workers told to load its word list), closing and thawing one (what shows its
standings read afresh), creating a team (its token made here and shown once), changing one, and
deleting one (its bytes, the broker's copies, the caches and the worker hosts' copies
forgotten, the games it handed on judged again)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core import clock
from core.errors import Conflict, Invalid, NotFound, PublishFailed
from core.game import Game
from core.games import game
from core.ports import BlobStore, Caches, ContestStore, Publisher, RulesetStore, TeamStore
from core.records import Contest, DeletedTeam, Team
from core.registering import register_rules


@dataclass(frozen=True)
class ContestAsked:
    """A contest as the organiser asks for it, its times read."""

    id: str
    title: str
    opens_at: datetime
    closes_at: datetime
    lexicon: str  # a registered word list's id or name
    rules: str | None  # its game's rules data's id or name; None: the game's packaged one
    game: str
    freeze_at: datetime | None = None
    options: Mapping[str, Any] | None = None  # None: the game's defaults


def create_contest(
    asked: ContestAsked, *, contests: ContestStore, rulesets: RulesetStore, publisher: Publisher
) -> Contest:
    """The contest created (Duplicate for a used id), its word list and rules data checked to
    be registered; Invalid, naming what is wrong, for times out of order or data unknown."""
    opens, closes, freezes = asked.opens_at, asked.closes_at, asked.freeze_at
    if closes <= opens:
        raise Invalid("closes_at must be after opens_at")
    if freezes is not None and not opens <= freezes <= closes:
        raise Invalid("freeze_at must lie from opens_at to closes_at")
    lexicon = rulesets.find_lexicon(asked.lexicon)
    if lexicon is None:
        raise Invalid(f"no lexicon with id or name {asked.lexicon!r}; POST /v1/lexicons first")
    played = game(asked.game)
    options = played.contest_options(asked.options) if asked.options is not None else None
    contest = Contest(
        id=asked.id,
        title=asked.title,
        opens_at=clock.format_time(opens),
        closes_at=clock.format_time(closes),
        lexicon_id=lexicon.id,
        rules_id=_rules_id(rulesets, asked.rules, played),
        created_at=clock.now(),
        game=played.name,
        freeze_at=clock.format_time(freezes) if freezes is not None else None,
        options=json.dumps(options, sort_keys=True) if options is not None else None,
    )
    contests.create_contest(contest)
    with contextlib.suppress(PublishFailed):  # best effort: workers load it on demand anyway
        publisher.preload([contest.lexicon_id])
    return contest


def no_contest(contest_id: str) -> NotFound:
    return NotFound(f"no contest {contest_id[:64]!r}")


def no_team(team_id: str) -> NotFound:
    return NotFound(f"no team {team_id[:64]!r}")


def close_contest(
    contest_id: str, *, by: str, contests: ContestStore, caches: Caches
) -> tuple[Contest, bool]:
    """The contest closed now (its opening too, if it had not opened), and whether it was still
    to close: an upload received from now on is refused, in every API process at once."""
    found = contests.close_contest(contest_id, by=by)
    if found is None:
        raise no_contest(contest_id)
    caches.forget_contest(contest_id)
    caches.forget_standings(contest_id)
    return found


def thaw_contest(
    contest_id: str, *, by: str, contests: ContestStore, caches: Caches
) -> tuple[Contest, bool]:
    """The frozen standings revealed now, and whether this call thawed them (Conflict for a
    contest created without a freeze: there is nothing to thaw)."""
    contest = contests.get_contest(contest_id)
    if contest is None:
        raise no_contest(contest_id)
    if contest.freeze_at is None:
        raise Conflict(f"contest {contest_id!r} has no freeze to thaw (it was created without one)")
    thawed = contests.thaw_contest(contest_id, by=by)
    if thawed is None:
        raise no_contest(contest_id)
    caches.forget_standings(contest_id)
    return thawed


def token_hash(token: str) -> str:
    """What the store keeps of a team's token (never the token itself)."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_team(
    contest_id: str, name: str, *, uploads_logs: bool, contests: ContestStore, teams: TeamStore
) -> tuple[Team, str]:
    """A team of the contest and its token, which only this answer ever holds."""
    if contests.get_contest(contest_id) is None:
        raise no_contest(contest_id)
    token = "tj_" + secrets.token_urlsafe(32)  # never starts with "-", which CLIs misread
    team = Team(
        id=uuid.uuid4().hex,
        contest_id=contest_id,
        name=name,
        token_hash=token_hash(token),
        created_at=clock.now(),
        uploads_logs=uploads_logs,
    )
    return teams.create_team(team), token


def change_team(
    team_id: str, *, uploads_logs: bool, by: str, teams: TeamStore, caches: Caches
) -> Team:
    """The team's right to upload game logs granted or taken back, for every upload committed
    from now on in every API process."""
    team = teams.allow_logs(team_id, uploads_logs, by=by)
    if team is None:
        raise no_team(team_id)
    caches.forget_team(team_id)
    return team


def delete_team(
    team_id: str,
    *,
    by: str,
    teams: TeamStore,
    blobs: BlobStore,
    publisher: Publisher,
    caches: Caches,
) -> DeletedTeam:
    """Delete a team with its uploads, results and reports (rows, then objects). A game another
    team uploaded too stays, passed to the earliest such team and judged again from its copy.

    Its token is refused at once in every API process, its contest's standings are read
    afresh, and the bytes kept elsewhere go: the broker's copies of every upload it sent and
    the worker hosts' cached copies. The broker being down loses nothing that matters: a
    cached copy ages out, and the sweeper publishes a game handed on soon anyway."""
    team = teams.get_team(team_id)
    if team is None:
        raise no_team(team_id)
    deleted = teams.delete_team(team_id, by=by)
    caches.forget_team(team_id)
    caches.forget_standings(team.contest_id)
    for key in deleted.keys:
        blobs.delete(key)
    caches.forget_broker_copies(deleted.submissions)
    if deleted.digests:
        with contextlib.suppress(PublishFailed):
            publisher.forget_uploads(deleted.digests)
    for submission_id in deleted.handed_on:
        with contextlib.suppress(PublishFailed):
            publisher.publish(submission_id)
    return deleted


def _rules_id(rulesets: RulesetStore, wanted: str | None, played: Game) -> str:
    """The game's rules data named (a layout, a board), or its packaged one, registered on
    first use."""
    if wanted is None:
        rules = played.default_rules()
        register_rules(played, rules, name=rules.name, by="system", store=rulesets)
        return rules.id
    row = rulesets.find_rules(wanted, played.name)
    if row is None:
        raise Invalid(
            f"no {played.rules_noun} with id or name {wanted!r} for a {played.name} contest"
        )
    return str(row.id)
