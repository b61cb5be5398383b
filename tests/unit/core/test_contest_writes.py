"""Closing and thawing a contest, creating and changing a team, against the fakes: what each
refuses, what it writes and what it leaves to forget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.contests import change_team, close_contest, create_team, thaw_contest, token_hash
from core.errors import Conflict, Duplicate, NotFound
from core.fake_contests import InMemoryCaches, InMemoryContestStore, InMemoryTeamStore
from core.fakes import InMemorySubmissionStore
from tests.unit.core.conftest import IN_TIME, make_contest


def test_closing_a_contest_closes_it_once_and_forgets_its_tokens_and_standings(
    contests: InMemoryContestStore, caches: InMemoryCaches
) -> None:
    closed, was_open = close_contest("wt", by="admin", contests=contests, caches=caches)
    again, still_open = close_contest("wt", by="admin", contests=contests, caches=caches)

    assert was_open and not still_open
    assert closed.closes_at > IN_TIME and again == closed
    assert (caches.contests, caches.standings) == (["wt", "wt"], ["wt", "wt"])
    with pytest.raises(NotFound, match="no contest 'nope'"):
        close_contest("nope", by="admin", contests=contests, caches=caches)
    assert caches.contests == ["wt", "wt"]  # nothing to forget for a contest that is not


def test_thawing_reveals_a_frozen_contest_once_and_refuses_one_without_a_freeze(
    store: InMemorySubmissionStore, contests: InMemoryContestStore, caches: InMemoryCaches
) -> None:
    store.add_contest(replace(make_contest("fz"), freeze_at=IN_TIME))

    assert thaw_contest("fz", by="admin", contests=contests, caches=caches)[1] is True
    assert thaw_contest("fz", by="admin", contests=contests, caches=caches)[1] is False
    assert caches.standings == ["fz", "fz"]
    with pytest.raises(Conflict, match="has no freeze to thaw"):
        thaw_contest("wt", by="admin", contests=contests, caches=caches)
    with pytest.raises(NotFound):
        thaw_contest("nope", by="admin", contests=contests, caches=caches)
    assert caches.standings == ["fz", "fz"]


def test_a_team_is_created_with_a_token_only_its_answer_holds(
    contests: InMemoryContestStore, teams: InMemoryTeamStore
) -> None:
    team, token = create_team("wt", "owls", uploads_logs=True, contests=contests, teams=teams)
    other, other_token = create_team(
        "wt", "larks", uploads_logs=False, contests=contests, teams=teams
    )

    assert token.startswith("tj_") and token != other_token and team.id != other.id
    assert teams.get_team(team.id) == team
    assert team.token_hash == token_hash(token) and token not in repr(team)
    assert (team.contest_id, team.name, team.uploads_logs) == ("wt", "owls", True)
    with pytest.raises(Duplicate):
        create_team("wt", "owls", uploads_logs=False, contests=contests, teams=teams)
    with pytest.raises(NotFound, match="no contest 'nope'"):
        create_team("nope", "owls", uploads_logs=False, contests=contests, teams=teams)


def test_changing_a_team_grants_the_right_and_forgets_its_token_everywhere(
    teams: InMemoryTeamStore, caches: InMemoryCaches
) -> None:
    changed = change_team("ravens", uploads_logs=True, by="admin", teams=teams, caches=caches)

    assert changed.uploads_logs is True and teams.get_team("ravens") == changed
    assert caches.teams == ["ravens"]
    with pytest.raises(NotFound, match="no team 'nope'"):
        change_team("nope", uploads_logs=True, by="admin", teams=teams, caches=caches)
    assert caches.teams == ["ravens"]
