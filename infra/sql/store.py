"""The results store: every state change and its event are written in one transaction.

`SqlStore` composes its parts: the plumbing and event ordering (`infra.sql.base`), word lists and
layouts (`infra.sql.rulesets`), submissions (`infra.sql.submissions`), reads across them
(`infra.sql.standings`); contests and teams live here. What a game keeps beyond the result row
every game has is its own (`infra.sql.games`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, insert, select, update

from core import clock
from core.errors import Duplicate, MissingReference
from core.events import (
    ContestClosed,
    ContestCreated,
    ContestThawed,
    TeamCreated,
    TeamDeleted,
    TeamUpdated,
)
from core.records import Contest, DeletedTeam, Team
from infra.sql.columns import columns_of, fields_of
from infra.sql.copies import drop_team_copies, hand_on
from infra.sql.disputes import DisputesMixin
from infra.sql.engine import make_engine
from infra.sql.games import drop_details, rows_of
from infra.sql.results import recount_open_runs
from infra.sql.rulesets import RulesetsMixin
from infra.sql.schema import (
    contests,
    rejudge_failures,
    results,
    submission_copies,
    submissions,
    teams,
    word_hashes,
)
from infra.sql.sessions import SessionsMixin
from infra.sql.standings import StandingsMixin
from infra.sql.submissions import SubmissionsMixin
from infra.sql.transparency import TransparencyMixin

# Built once: building it (a label per contest column, the join) cost more than running it.
_TEAM_WITH_CONTEST = (
    select(*teams.c, *[column.label(f"contest__{column.name}") for column in contests.c])
    .join(contests, contests.c.id == teams.c.contest_id)
    .where(teams.c.token_hash == bindparam("token_hash"))
)


class SqlStore(
    RulesetsMixin,
    SubmissionsMixin,
    StandingsMixin,
    SessionsMixin,
    TransparencyMixin,
    DisputesMixin,
):
    @classmethod
    def from_url(cls, url: str) -> SqlStore:
        return cls(make_engine(url))

    # -- contests and teams -----------------------------------------------------------------

    def create_contest(self, contest: Contest) -> Contest:
        try:
            with self.write() as (conn, pending):
                conn.execute(insert(contests).values(**columns_of(contest.__dict__)))
                pending.append(
                    ContestCreated(
                        contest=contest.id,
                        title=contest.title,
                        opens_at=contest.opens_at,
                        closes_at=contest.closes_at,
                        lexicon=contest.lexicon_id,
                        layout=contest.rules_id,
                        game=contest.game,
                        freeze_at=contest.freeze_at,
                        options=contest.options_json() or None,
                    )
                )
        except MissingReference as exc:
            raise MissingReference(
                f"contest {contest.id!r}: its word list {contest.lexicon_id!r} or its rules data "
                f"{contest.rules_id!r} is not registered"
            ) from exc
        except Duplicate as exc:
            raise Duplicate(f"contest {contest.id!r} exists already") from exc
        return contest

    def get_contest(self, contest_id: str) -> Contest | None:
        with self.read() as conn:
            row = (
                conn.execute(select(contests).where(contests.c.id == contest_id)).mappings().first()
            )
            return Contest(**fields_of(row)) if row is not None else None

    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """Close a contest now: its closing time becomes the present (and its opening time
        too, if it had not opened), with a `contest.closed` event; (the contest, whether it
        was still to close), or None if there is no such contest.

        Intake's group commit reads the closing time in its own transaction, so uploads
        received from now on are refused in every API process at once. The row is locked
        before the time is taken: a group holding it has committed first, so none of its
        uploads was received after the closing time recorded."""
        with self.write() as (conn, pending):
            row = _locked_contest(conn, contest_id)
            if row is None:
                return None
            contest, now = Contest(**fields_of(row)), clock.now()
            if contest.closes_at <= now:
                return contest, False
            # Closed before its freeze time, it never froze: no freeze left after its end.
            freeze_at = contest.freeze_at if (contest.freeze_at or "") <= now else None
            closing = replace(
                contest, opens_at=min(contest.opens_at, now), closes_at=now, freeze_at=freeze_at
            )
            conn.execute(
                update(contests)
                .where(contests.c.id == contest_id)
                .values(
                    opens_at=closing.opens_at,
                    closes_at=closing.closes_at,
                    freeze_at=closing.freeze_at,
                )
            )
            pending.append(
                ContestClosed(
                    contest=contest_id,
                    closes_at=closing.closes_at,
                    was_to_close_at=contest.closes_at,
                    opens_at=closing.opens_at,
                    by=by,
                )
            )
            return closing, True

    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """Thaw a contest's standings now (`core.freeze`): its `thawed_at` becomes the present,
        with a `contest.thawed` event; (the contest, whether this call thawed it), or None if
        there is no such contest. A contest thawed already, or without a freeze, is left as it
        is. Before its freeze time, the thaw cancels the freeze: the standings never freeze."""
        with self.write() as (conn, pending):
            row = _locked_contest(conn, contest_id)
            if row is None:
                return None
            contest = Contest(**fields_of(row))
            if contest.freeze_at is None or contest.thawed_at is not None:
                return contest, False
            thawed = replace(contest, thawed_at=clock.now())
            conn.execute(
                update(contests)
                .where(contests.c.id == contest_id)
                .values(thawed_at=thawed.thawed_at)
            )
            pending.append(
                ContestThawed(
                    contest=contest_id,
                    freeze_at=contest.freeze_at,
                    thawed_at=thawed.thawed_at,
                    by=by,
                )
            )
            return thawed, True

    def list_contests(self) -> list[Contest]:
        with self.read() as conn:
            return [
                Contest(**fields_of(r))
                for r in conn.execute(select(contests).order_by(contests.c.id)).mappings()
            ]

    def create_team(self, team: Team) -> Team:
        try:
            with self.write() as (conn, pending):
                conn.execute(insert(teams).values(**team.__dict__))
                pending.append(
                    TeamCreated(
                        contest=team.contest_id,
                        team=team.id,
                        name=team.name,
                        uploads_logs=team.uploads_logs,
                    )
                )
        except MissingReference as exc:
            raise MissingReference(f"no contest {team.contest_id!r}") from exc
        except Duplicate as exc:
            raise Duplicate(
                f"team {team.name!r} exists already in contest {team.contest_id!r}"
            ) from exc
        return team

    def allow_logs(self, team_id: str, allowed: bool, by: str) -> Team | None:
        """Grant or take back a team's right to upload game logs; the team as it is now, or None
        if there is no such team. Intake's group commit reads the right in its transaction, so
        the change holds for every upload committed after this one, in every API process."""
        with self.write() as (conn, pending):
            row = (
                conn.execute(select(teams).where(teams.c.id == team_id).with_for_update())
                .mappings()
                .first()
            )
            if row is None:
                return None
            team = Team(**row)
            if team.uploads_logs == allowed:
                return team
            conn.execute(update(teams).where(teams.c.id == team_id).values(uploads_logs=allowed))
            pending.append(
                TeamUpdated(contest=team.contest_id, team=team_id, uploads_logs=allowed, by=by)
            )
            return replace(team, uploads_logs=allowed)

    def team_by_token_hash(self, token_hash: str) -> Team | None:
        with self.read() as conn:
            row = (
                conn.execute(select(teams).where(teams.c.token_hash == token_hash))
                .mappings()
                .first()
            )
            return Team(**row) if row is not None else None

    def team_with_contest(self, token_hash: str) -> tuple[Team, Contest] | None:
        """The team a token belongs to and its contest, in one query (intake asks)."""
        with self.read() as conn:
            row = conn.execute(_TEAM_WITH_CONTEST, {"token_hash": token_hash}).mappings().first()
        if row is None:
            return None
        team = Team(**{column.name: row[column.name] for column in teams.c})
        contest = Contest(**fields_of({c.name: row[f"contest__{c.name}"] for c in contests.c}))
        return team, contest

    def get_team(self, team_id: str) -> Team | None:
        with self.read() as conn:
            row = conn.execute(select(teams).where(teams.c.id == team_id)).mappings().first()
            return Team(**row) if row is not None else None

    def team_names(self, contest_id: str) -> dict[str, str]:
        with self.read() as conn:
            rows = conn.execute(
                select(teams.c.id, teams.c.name).where(teams.c.contest_id == contest_id)
            )
            return {r.id: r.name for r in rows}

    def contest_teams(self, contest_id: str) -> list[Team]:
        """The contest's teams, by name."""
        with self.read() as conn:
            rows = conn.execute(
                select(teams).where(teams.c.contest_id == contest_id).order_by(teams.c.name)
            ).mappings()
            return [Team(**row) for row in rows]

    # -- results in each game's own shape ---------------------------------------------------------

    def result_fields(self, game: str, result_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The game's own fields of each result (`infra.sql.games`)."""
        return rows_of(game).fields(self, result_ids) if result_ids else {}

    def standings(
        self,
        contest: Contest,
        ruleset: tuple[str, str] | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        """The contest's standings under its live ruleset (or the (lexicon id, rules id)
        given), in its game's own shape; with `before`, only of uploads received before that
        time (the public's while frozen, `core.freeze`), and how many came since: `pending`."""
        found = rows_of(contest.game).standings(self, contest.id, ruleset, before)
        if before is None:
            return found
        return {**found, "pending": self.received_since(contest.id, before)}

    def delete_team(self, team_id: str, by: str) -> DeletedTeam:
        """Delete a team, its submissions, results and copies of shared ones; a shared
        submission another team sent too passes to the earliest of them instead (`hand_on`).
        Returns the blob keys to remove, what was handed on, to be judged again, and the ids
        of every submission the team sent (the handed-on ones too)."""
        with self.write() as (conn, pending):
            team = conn.execute(select(teams).where(teams.c.id == team_id)).mappings().first()
            if team is None:
                return DeletedTeam([], [])
            # Before any is handed on: the bytes of one handed on go too (another team's
            # copy takes its place), and forgetting bytes a copy shares costs a cache miss.
            digests = list(
                conn.execute(
                    select(submission_copies.c.sha256).where(submission_copies.c.team_id == team_id)
                ).scalars()
            )
            digests += conn.execute(
                select(submissions.c.sha256).where(submissions.c.team_id == team_id)
            ).scalars()
            keys = drop_team_copies(conn, team_id)
            handed, handed_keys = hand_on(conn, pending, team_id)
            keys += handed_keys
            own = select(submissions.c.id).where(submissions.c.team_id == team_id)
            keys += [
                r.blob_key
                for r in conn.execute(
                    select(submissions.c.blob_key).where(submissions.c.team_id == team_id)
                )
            ]
            keys += [
                r.report_key
                for r in conn.execute(
                    select(results.c.report_key).where(results.c.submission_id.in_(own))
                )
            ]
            own_ids = list(conn.execute(own).scalars())
            judged = select(results.c.id).where(results.c.submission_id.in_(own))
            drop_details(conn, judged)
            conn.execute(results.delete().where(results.c.submission_id.in_(own)))
            conn.execute(word_hashes.delete().where(word_hashes.c.submission_id.in_(own)))
            conn.execute(rejudge_failures.delete().where(rejudge_failures.c.submission_id.in_(own)))
            conn.execute(submissions.delete().where(submissions.c.team_id == team_id))
            conn.execute(teams.delete().where(teams.c.id == team_id))
            recount_open_runs(conn, pending, team["contest_id"])
            pending.append(
                TeamDeleted(
                    contest=team["contest_id"],
                    team=team_id,
                    submissions_deleted=len(own_ids),
                    submissions_handed_on=len(handed),
                    by=by,
                )
            )
            handed_ids = [h.submission_id for h in handed]
            return DeletedTeam(keys, handed_ids, own_ids + handed_ids, sorted(set(digests)))


def _locked_contest(conn: Connection, contest_id: str) -> RowMapping | None:
    """The contest's row, locked until the transaction ends (PostgreSQL: FOR UPDATE)."""
    return (
        conn.execute(select(contests).where(contests.c.id == contest_id).with_for_update())
        .mappings()
        .first()
    )
