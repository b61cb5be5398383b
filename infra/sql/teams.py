"""Teams in the results store (the `core.ports.TeamStore` port): created, read by id or token,
allowed game logs, and deleted with everything they sent, each change with its event in the
same transaction."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Connection, bindparam, insert, select, update

from core.errors import Duplicate, MissingReference
from core.events import TeamCreated, TeamDeleted, TeamUpdated
from core.records import Contest, DeletedTeam, Team
from infra.sql.base import StoreBase
from infra.sql.columns import fields_of
from infra.sql.copies import drop_team_copies, hand_on
from infra.sql.games import drop_details
from infra.sql.results import recount_open_runs
from infra.sql.schema import (
    contests,
    rejudge_failures,
    results,
    submission_copies,
    submissions,
    teams,
    word_hashes,
)

# Built once: building it (a label per contest column, the join) cost more than running it.
_TEAM_WITH_CONTEST = (
    select(*teams.c, *[column.label(f"contest__{column.name}") for column in contests.c])
    .join(contests, contests.c.id == teams.c.contest_id)
    .where(teams.c.token_hash == bindparam("token_hash"))
)


class SqlTeams(StoreBase):
    """`core.ports.TeamStore` in SQL."""

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
            return team_by_id(conn, team_id)

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


def team_by_id(conn: Connection, team_id: str) -> Team | None:
    """A team by id, on an open connection: `SqlTeams` and `SqlSubmissions` read it."""
    row = conn.execute(select(teams).where(teams.c.id == team_id)).mappings().first()
    return Team(**row) if row is not None else None
