"""In-memory `ContestStore` and `TeamStore` for unit tests, and a `Caches` that records what it
was told to forget: the SQL store's rules (infra/sql/store.py, copies.py) over the tables of
the submission store fake they are given (one database, whose `down` and `failing` hold here
too), each call one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core.errors import Duplicate, MissingReference
from core.events import (
    ContestCreated,
    Event,
    SubmissionHandedOn,
    TeamCreated,
    TeamDeleted,
    TeamUpdated,
)
from core.fake_rejudges import InMemoryRejudgeStore
from core.fake_store import InMemorySubmissionStore
from core.records import Contest, DeletedTeam, Team
from core.states import SubmissionState
from core.store_rules import closing


class InMemoryContestStore:
    """Contests as the organiser creates, lists, closes and thaws them."""

    def __init__(self, db: InMemorySubmissionStore) -> None:
        self.db = db

    def create_contest(self, contest: Contest) -> Contest:
        db = self.db
        with db.write("create_contest") as pending:
            if contest.id in db.contests:  # a used key first, as SQL finds it first
                raise Duplicate(f"contest {contest.id!r} exists already")
            if contest.lexicon_id not in db.lexicons or contest.rules_id not in db.rules_data:
                raise MissingReference(
                    f"contest {contest.id!r}: its word list {contest.lexicon_id!r} or its rules "
                    f"data {contest.rules_id!r} is not registered"
                )
            db.contests[contest.id] = contest
            pending.append(
                ContestCreated(
                    contest=contest.id, title=contest.title, opens_at=contest.opens_at,
                    closes_at=contest.closes_at, lexicon=contest.lexicon_id,
                    layout=contest.rules_id, game=contest.game, freeze_at=contest.freeze_at,
                    options=contest.options_json() or None,
                )
            )  # fmt: skip
        return contest

    def get_contest(self, contest_id: str) -> Contest | None:
        return self.db.get_contest(contest_id)

    def list_contests(self) -> list[Contest]:
        with self.db.read("list_contests"):
            return sorted(self.db.contests.values(), key=lambda contest: contest.id)

    def close_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        """`infra.sql.store.SqlStore.close_contest`: its closing time becomes now (its opening
        time too, if it had not opened; a freeze not reached yet goes)."""
        db = self.db
        return db.change_contest("close_contest", contest_id, lambda c: closing(c, db.now(), by))

    def thaw_contest(self, contest_id: str, by: str) -> tuple[Contest, bool] | None:
        return self.db.thaw_contest(contest_id, by)


class InMemoryTeamStore:
    """Teams as the organiser and intake use them, and their deletion."""

    def __init__(self, db: InMemorySubmissionStore) -> None:
        self.db = db

    def create_team(self, team: Team) -> Team:
        db = self.db
        with db.write("create_team") as pending:
            if team.id in db.teams or any(
                (t.contest_id, t.name) == (team.contest_id, team.name)
                or t.token_hash == team.token_hash
                for t in db.teams.values()
            ):  # a used key first, as SQL finds it first
                raise Duplicate(f"team {team.name!r} exists already in contest {team.contest_id!r}")
            if team.contest_id not in db.contests:
                raise MissingReference(f"no contest {team.contest_id!r}")
            db.teams[team.id] = team
            pending.append(
                TeamCreated(
                    contest=team.contest_id, team=team.id, name=team.name,
                    uploads_logs=team.uploads_logs,
                )
            )  # fmt: skip
        return team

    def get_team(self, team_id: str) -> Team | None:
        return self.db.get_team(team_id)

    def team_by_token_hash(self, token_hash: str) -> Team | None:
        with self.db.read("team_by_token_hash"):
            return next((t for t in self.db.teams.values() if t.token_hash == token_hash), None)

    def team_with_contest(self, token_hash: str) -> tuple[Team, Contest] | None:
        with self.db.read("team_with_contest"):
            team = next((t for t in self.db.teams.values() if t.token_hash == token_hash), None)
            return (team, self.db.contests[team.contest_id]) if team is not None else None

    def contest_teams(self, contest_id: str) -> list[Team]:
        """The contest's teams, by name."""
        with self.db.read("contest_teams"):
            found = [t for t in self.db.teams.values() if t.contest_id == contest_id]
            return sorted(found, key=lambda team: team.name)

    def team_names(self, contest_id: str) -> dict[str, str]:
        return {team.id: team.name for team in self.contest_teams(contest_id)}

    def allow_logs(self, team_id: str, allowed: bool, by: str) -> Team | None:
        db = self.db
        with db.write("allow_logs") as pending:
            team = db.teams.get(team_id)
            if team is None or team.uploads_logs == allowed:
                return team
            changed = db.teams[team_id] = replace(team, uploads_logs=allowed)
            pending.append(
                TeamUpdated(contest=team.contest_id, team=team_id, uploads_logs=allowed, by=by)
            )  # fmt: skip
            return changed

    def delete_team(self, team_id: str, by: str) -> DeletedTeam:
        """`infra.sql.store.SqlStore.delete_team`: the team, its copies, its submissions with
        their results, word signatures and rejudge failures go, a shared one another team sent
        too passing to the earliest of them instead; open rejudge runs are counted again."""
        db = self.db
        with db.write("delete_team") as pending:
            team = db.teams.get(team_id)
            if team is None:
                return DeletedTeam([], [])
            copies = [copy for copy in db.copies.values() if copy.team_id == team_id]
            digests = {copy.sha256 for copy in copies}
            digests |= {s.sha256 for s in db.submissions.values() if s.team_id == team_id}
            keys = [copy.blob_key for copy in copies]
            for copy in copies:
                del db.copies[(copy.submission_id, team_id)]
            handed, handed_keys = self._hand_on(pending, team_id)
            keys += handed_keys
            own = [s.id for s in db.submissions.values() if s.team_id == team_id]
            keys += [db.submissions[sid].blob_key for sid in own]
            for sid in own:
                keys += self._drop_results(sid, keep=None)
                db.words.pop(sid, None)
                del db.submissions[sid]
            for failed in [key for key in db.run_failures if key[1] in own]:
                del db.run_failures[failed]
            del db.teams[team_id]
            InMemoryRejudgeStore(db).recount_open_runs(pending, team.contest_id)
            pending.append(
                TeamDeleted(
                    contest=team.contest_id, team=team_id, submissions_deleted=len(own),
                    submissions_handed_on=len(handed), by=by,
                )
            )  # fmt: skip
            return DeletedTeam(keys, handed, own + handed, sorted(digests))

    def _hand_on(self, pending: list[Event], team_id: str) -> tuple[list[str], list[str]]:
        """`infra.sql.copies.hand_on`: each shared submission the team sent first, that others
        sent too, passes to the earliest of them, back to `stored` and holding that team's
        copy; its result under the live ruleset stays until judged again, the others go.
        Returns the ids handed on, and the keys of the team's bytes and their reports."""
        db = self.db
        handed: list[str] = []
        keys: list[str] = []
        shared = [s for s in db.submissions.values() if s.team_id == team_id and s.shared]
        for sub in sorted(shared, key=lambda s: s.id):
            heirs = [copy for (sid, _), copy in db.copies.items() if sid == sub.id]
            if not heirs:
                continue
            heir = min(heirs, key=lambda copy: (copy.received_at, copy.team_id))
            contest = db.contests[sub.contest_id]
            keys.append(sub.blob_key)
            keys += self._drop_results(sub.id, keep=(contest.lexicon_id, contest.rules_id))
            db.submissions[sub.id] = replace(
                sub, team_id=heir.team_id, sha256=heir.sha256, size=heir.size,
                blob_key=heir.blob_key, received_at=heir.received_at,
                state=SubmissionState.STORED, state_at=db.now(), failure=None,
            )  # fmt: skip
            del db.copies[(sub.id, heir.team_id)]
            pending.append(
                SubmissionHandedOn(
                    submission=sub.id, contest=sub.contest_id, team=heir.team_id,
                    from_team=team_id, sha256=heir.sha256, received_at=heir.received_at,
                )
            )  # fmt: skip
            handed.append(sub.id)
        return handed, keys

    def _drop_results(self, submission_id: str, keep: tuple[str, str] | None) -> list[str]:
        """The report keys of every result of the submission; each goes but the one under
        the ruleset `keep`."""
        results = self.db.results
        mine = [key for key in results if key[0] == submission_id]
        reports = [results[key].result.report_key for key in mine]
        for key in mine:
            if key[1:] != keep:
                del results[key]
        return reports


class InMemoryCaches:
    """A `Caches` that records what it was told to forget, in order."""

    def __init__(self) -> None:
        self.teams: list[str] = []
        self.contests: list[str] = []
        self.standings: list[str] = []
        self.broker_copies: list[list[str]] = []

    def forget_team(self, team_id: str) -> None:
        self.teams.append(team_id)

    def forget_contest(self, contest_id: str) -> None:
        self.contests.append(contest_id)

    def forget_standings(self, contest_id: str) -> None:
        self.standings.append(contest_id)

    def forget_broker_copies(self, submission_ids: Sequence[str]) -> None:
        self.broker_copies.append(list(submission_ids))
