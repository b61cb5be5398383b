"""One behaviour suite for the team port (`core.ports.TeamStore`), run on every implementation:
the in-memory fake (`core.fake_contests.InMemoryTeamStore`), SQLite and PostgreSQL
(`infra.sql.store.SqlStore`). Each test states the teams, deletions, errors and events the SQL
adapter gives. The sides are in `store_port_sides.py`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import Duplicate, MissingReference
from core.records import DeletedTeam, Team
from core.states import SubmissionState
from tests.integration.port_sides import LAYOUT, LEX2, START, SUITE, at, judged, side_fixture
from tests.integration.store_port_sides import ANN_WINS, FakeStores, SqlStores, Stores

pytestmark = SUITE
side = side_fixture(FakeStores, SqlStores)


def test_a_team_is_created_once_and_found_by_id_token_and_contest(side: Stores) -> None:
    teams = side.team_store
    delta = Team("team-delta", "c1", "delta", "hash-delta", START)
    namesake = Team("team-delta-f1", "f1", "delta", "hash-delta-f1", START, uploads_logs=True)

    assert teams.create_team(delta) == delta
    assert teams.create_team(namesake) == namesake  # a name is unique within its contest only

    alpha = side.teams["alpha"]
    assert teams.get_team("team-delta") == delta and teams.get_team("nope") is None
    assert teams.team_by_token_hash("hash-delta-f1") == namesake
    assert teams.team_by_token_hash("nope") is None
    assert teams.team_with_contest("hash-delta") == (delta, side.contest("c1"))
    assert teams.team_with_contest("nope") is None
    assert teams.contest_teams("c1") == [alpha, side.teams["beta"], delta]  # by name
    assert teams.contest_teams("nope") == []
    assert teams.team_names("c1") == {alpha.id: "alpha", "team-beta": "beta", delta.id: "delta"}
    assert teams.team_names("nope") == {}
    assert side.events("team.") == [
        {"type": "team.created", "contest": "c1", "team": delta.id, "name": "delta",
         "uploads_logs": False},
        {"type": "team.created", "contest": "f1", "team": namesake.id, "name": "delta",
         "uploads_logs": True},
    ]  # fmt: skip


def test_a_used_id_name_or_token_and_a_contest_that_is_not_there_are_refused(
    side: Stores,
) -> None:
    teams = side.team_store
    for refused in (
        Team("team-alpha", "f1", "other", "hash-other", START),  # its id
        Team("team-other", "c1", "alpha", "hash-other", START),  # its name in its contest
        Team("team-other", "f1", "other", "hash-alpha", START),  # its token
    ):
        with pytest.raises(Duplicate, match="exists already"):
            teams.create_team(refused)
    with pytest.raises(MissingReference, match=r"^no contest 'nope'$"):
        teams.create_team(Team("team-other", "nope", "other", "hash-other", START))
    assert teams.get_team("team-other") is None
    assert side.events("team.") == []


def test_a_teams_right_to_upload_logs_changes_with_one_event_a_change(side: Stores) -> None:
    teams = side.team_store
    alpha = side.teams["alpha"]

    allowed = teams.allow_logs(alpha.id, True, by="admin")

    assert allowed == replace(alpha, uploads_logs=True) == teams.get_team(alpha.id)
    assert teams.allow_logs(alpha.id, True, by="admin") == allowed  # as it is already
    assert teams.allow_logs(alpha.id, False, by="organiser") == alpha
    assert teams.allow_logs("nope", True, by="admin") is None
    assert side.events("team.") == [
        {"type": "team.updated", "contest": "c1", "team": alpha.id, "uploads_logs": True,
         "by": "admin"},
        {"type": "team.updated", "contest": "c1", "team": alpha.id, "uploads_logs": False,
         "by": "organiser"},
    ]  # fmt: skip


def test_deleting_a_team_removes_its_uploads_and_results_and_recounts_the_open_runs(
    side: Stores,
) -> None:
    gone = [side.upload("alpha", received_at=at(n)) for n in (1, 2)]
    kept = side.upload("beta", received_at=at(3))
    for sub in (*gone, kept):
        side.judge_live(sub, 10)
    run, _ = side.rejudges.start("c1", LEX2, LAYOUT, "full", "admin")
    rejudged = [(sub.id, judged(sub, LEX2, 20)) for sub in (gone[0], kept)]
    assert side.rejudges.record_batch(run, rejudged) == 2  # gone[1] is still to judge

    deleted = side.team_store.delete_team("team-alpha", by="admin")

    assert sorted(deleted.keys) == sorted(
        [s.blob_key for s in gone]
        + [f"reports/{s.id}/lex-1.json" for s in gone]
        + [f"reports/{gone[0].id}/lex-2.json"]
    )
    assert (deleted.handed_on, sorted(deleted.submissions)) == ([], sorted(s.id for s in gone))
    assert deleted.digests == sorted(s.sha256 for s in gone)
    assert side.team_store.get_team("team-alpha") is None
    assert side.team_store.contest_teams("c1") == [side.teams["beta"]]
    assert [side.store.get_submission(s.id) for s in gone] == [None, None]
    assert side.submission(kept.id).state == SubmissionState.JUDGED
    recounted = side.rejudges.get(run.id)  # what is left of it is judged: ready
    assert recounted is not None and recounted.state == "ready"
    assert (recounted.total, recounted.done) == (1, 1)
    assert side.team_store.delete_team("team-alpha", by="admin") == DeletedTeam([], [])
    assert side.events("team.", "rejudge.progress", "rejudge.ready") == [
        {"type": "rejudge.progress", "rejudge": run.id, "contest": "c1", "done": 2, "total": 3},
        {"type": "rejudge.ready", "rejudge": run.id, "contest": "c1", "done": 1, "total": 1,
         "carried": 0},
        {"type": "team.deleted", "contest": "c1", "team": "team-alpha",
         "submissions_deleted": 2, "submissions_handed_on": 0, "by": "admin"},
    ]  # fmt: skip


def test_a_game_the_deleted_team_sent_first_passes_to_the_earliest_copy_and_its_copies_go(
    side: Stores,
) -> None:
    shared, first = side.game_log("a", "k1", received_at=at(1))
    heir, copy = side.game_log("b", "k1", received_at=at(2))  # b's copy of a's game
    theirs, _ = side.game_log("b", "k2", received_at=at(3))
    _, own_copy = side.game_log("a", "k2", received_at=at(4))  # a's copy of b's game
    side.judge_log(shared, ANN_WINS)
    before = side.submission(shared)
    assert heir == shared and (before.team_id, before.sha256) == ("team-a", first.sha256)

    deleted = side.team_store.delete_team("team-a", by="admin")

    assert deleted.handed_on == [shared] and deleted.submissions == [shared]
    assert sorted(deleted.keys) == sorted([first.blob_key, f"reports/{shared}", own_copy.blob_key])
    assert deleted.digests == sorted([first.sha256, own_copy.sha256])
    handed = side.submission(shared)
    assert handed == replace(
        before, team_id="team-b", sha256=copy.sha256, blob_key=copy.blob_key,
        received_at=at(2), state=SubmissionState.STORED, state_at=handed.state_at,
    )  # fmt: skip
    assert side.submission(theirs).team_id == "team-b"
    assert side.events("team.deleted", "submission.handed_on") == [
        {"type": "submission.handed_on", "submission": shared, "contest": "g1",
         "team": "team-b", "from_team": "team-a", "sha256": copy.sha256,
         "received_at": at(2)},
        {"type": "team.deleted", "contest": "g1", "team": "team-a",
         "submissions_deleted": 0, "submissions_handed_on": 1, "by": "admin"},
    ]  # fmt: skip
