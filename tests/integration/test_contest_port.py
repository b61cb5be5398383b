"""One behaviour suite for the contest port (`core.ports.ContestStore`), run on every
implementation: the in-memory fake (`core.fake_contests.InMemoryContestStore`), SQLite and
PostgreSQL (`infra.sql.store.SqlStore`). Each test states the contests, errors and events the
SQL adapter gives. The sides are in `store_port_sides.py`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.errors import Duplicate, MissingReference
from core.records import Contest
from tests.integration.port_sides import (
    CLOSES,
    FROZEN,
    LAYOUT,
    LEX2,
    OPENS,
    START,
    SUITE,
    side_fixture,
)
from tests.integration.port_sides import contest as seeded
from tests.integration.store_port_sides import FakeStores, SqlStores, Stores

pytestmark = SUITE
side = side_fixture(FakeStores, SqlStores)

LATER = "2030-01-03T00:00:00.000000Z"  # after every side's clock
FREEZE = "2030-01-02T12:00:00.000000Z"


def new_contest(contest_id: str, **changed: Any) -> Contest:
    fields: dict[str, Any] = {
        "id": contest_id, "title": f"Contest {contest_id}", "opens_at": OPENS, "closes_at": LATER,
        "lexicon_id": LEX2, "rules_id": LAYOUT, "created_at": START, "game": "wordytaire",
    }  # fmt: skip
    return Contest(**{**fields, **changed})


def created(contest: Contest, options: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "contest.created", "contest": contest.id, "title": contest.title,
        "opens_at": contest.opens_at, "closes_at": contest.closes_at,
        "lexicon": contest.lexicon_id, "layout": contest.rules_id, "game": contest.game,
        "freeze_at": contest.freeze_at, "options": options,
    }  # fmt: skip


def test_a_contest_is_created_once_read_back_and_listed_by_id(side: Stores) -> None:
    contests = side.contest_store
    plain = new_contest("b2")
    options = {"ratings": {"tau": 0.5}}
    played = new_contest(
        "a2", game="crosstiles", freeze_at=FREEZE, options='{"ratings": {"tau": 0.5}}'
    )

    assert contests.create_contest(plain) == plain
    assert contests.create_contest(played) == played

    assert contests.get_contest("b2") == plain and contests.get_contest("a2") == played
    assert contests.get_contest("nope") is None
    assert [c.id for c in contests.list_contests()] == ["a2", "b2", "c1", "f1", "g1"]
    assert contests.list_contests()[0] == played
    assert side.events("contest.") == [created(plain), created(played, options)]


def test_a_used_id_or_rules_not_registered_are_refused_and_nothing_is_written(
    side: Stores,
) -> None:
    contests = side.contest_store
    with pytest.raises(Duplicate, match=r"^contest 'c1' exists already$"):
        contests.create_contest(new_contest("c1"))  # the seeded contest's id
    for refused in (
        new_contest("n1", lexicon_id="no-such-list"),
        new_contest("n2", rules_id="no-such-layout"),
    ):
        with pytest.raises(MissingReference, match=r"is not registered$"):
            contests.create_contest(refused)
    assert contests.get_contest("n1") is None and contests.get_contest("n2") is None
    assert contests.get_contest("c1") == seeded("c1")  # as seeded
    assert side.events("contest.") == []


def test_closing_an_open_contest_ends_it_now_keeping_a_freeze_it_reached(side: Stores) -> None:
    contests = side.contest_store
    frozen = side.contest("f1")  # froze at FROZEN, before every side's clock

    closed = contests.close_contest("f1", by="admin")

    assert closed is not None
    contest, changed = closed
    assert changed and contest.closes_at > START and contest.closes_at < CLOSES
    assert contest == replace(frozen, closes_at=contest.closes_at)
    assert contest.freeze_at == FROZEN and contests.get_contest("f1") == contest
    assert contests.close_contest("f1", by="admin") == (contest, False)  # closed already
    assert contests.close_contest("nope", by="admin") is None
    assert side.events("contest.") == [
        {"type": "contest.closed", "contest": "f1", "closes_at": contest.closes_at,
         "was_to_close_at": CLOSES, "opens_at": OPENS, "by": "admin"},
    ]  # fmt: skip


def test_closing_a_contest_not_open_yet_opens_it_now_too_and_drops_a_freeze_not_reached(
    side: Stores,
) -> None:
    contests = side.contest_store
    later = new_contest("later", opens_at=LATER, closes_at="2030-01-04T00:00:00.000000Z")
    contests.create_contest(replace(later, freeze_at="2030-01-03T12:00:00.000000Z"))

    closed = contests.close_contest("later", by="organiser")

    assert closed is not None
    contest, changed = closed
    assert changed and contest.opens_at == contest.closes_at < LATER
    assert contest.freeze_at is None and contests.get_contest("later") == contest
    assert side.events("contest.closed") == [
        {"type": "contest.closed", "contest": "later", "closes_at": contest.closes_at,
         "was_to_close_at": later.closes_at, "opens_at": contest.opens_at, "by": "organiser"},
    ]  # fmt: skip


def test_a_frozen_contest_thaws_once_and_one_without_a_freeze_is_left_as_it_is(
    side: Stores,
) -> None:
    contests = side.contest_store

    thawed = contests.thaw_contest("f1", by="admin")

    assert thawed is not None
    contest, changed = thawed
    assert changed and contest.thawed_at is not None and contest.thawed_at > START
    assert contests.get_contest("f1") == contest
    assert contests.thaw_contest("f1", by="admin") == (contest, False)
    assert contests.thaw_contest("c1", by="admin") == (side.contest("c1"), False)
    assert contests.thaw_contest("nope", by="admin") is None
    assert side.events("contest.") == [
        {"type": "contest.thawed", "contest": "f1", "freeze_at": FROZEN,
         "thawed_at": contest.thawed_at, "by": "admin"},
    ]  # fmt: skip
