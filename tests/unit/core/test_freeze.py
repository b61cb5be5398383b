"""The freeze's rules as values: when a contest is frozen, which ruleset and which uploads its
public standings count, and the in-memory store's thaw."""

from __future__ import annotations

from dataclasses import replace

from core.fakes import InMemorySubmissionStore
from core.freeze import frozen, hidden, live_verdict_hidden, public_cut, public_ruleset
from tests.unit.core.conftest import Clock, make_contest

BEFORE = "2030-01-01T11:00:00.000000Z"
FREEZE = "2030-01-01T12:00:00.000000Z"
AFTER = "2030-01-01T13:00:00.000000Z"
THAWED = "2030-01-01T14:00:00.000000Z"

PLAIN = make_contest(lexicon_id="new", rules_id="layout")
FREEZING = replace(PLAIN, freeze_at=FREEZE)
REJUDGED = replace(FREEZING, frozen_lexicon_id="old", frozen_rules_id="layout")


def test_a_contest_is_frozen_from_its_freeze_time_until_it_is_thawed() -> None:
    assert [frozen(FREEZING, t) for t in (BEFORE, FREEZE, AFTER)] == [False, True, True]
    assert not frozen(replace(FREEZING, thawed_at=THAWED), AFTER)
    assert not frozen(PLAIN, AFTER)


def test_while_frozen_an_upload_from_the_freeze_time_on_is_hidden_and_one_before_is_not() -> None:
    assert (hidden(FREEZING, BEFORE, AFTER), hidden(FREEZING, FREEZE, AFTER)) == (False, True)
    assert not hidden(FREEZING, AFTER, BEFORE)  # not frozen yet
    assert not hidden(replace(FREEZING, thawed_at=THAWED), AFTER, THAWED)


def test_the_public_keeps_the_ruleset_a_rejudge_applied_during_the_freeze_replaced() -> None:
    assert public_ruleset(REJUDGED, AFTER) == ("old", "layout")
    assert public_ruleset(REJUDGED, BEFORE) == ("new", "layout")
    assert public_ruleset(replace(REJUDGED, thawed_at=THAWED), THAWED) == ("new", "layout")
    assert public_ruleset(FREEZING, AFTER) == ("new", "layout")
    assert live_verdict_hidden(REJUDGED, BEFORE, AFTER)  # judged again: its new verdict waits
    assert not live_verdict_hidden(FREEZING, BEFORE, AFTER)


def test_the_public_cut_before_the_freeze_is_now_and_after_it_the_freeze_time() -> None:
    assert public_cut(REJUDGED, BEFORE) == (("new", "layout"), BEFORE)
    assert public_cut(REJUDGED, AFTER) == (("old", "layout"), FREEZE)
    assert public_cut(PLAIN, AFTER) is None
    assert public_cut(replace(REJUDGED, thawed_at=THAWED), AFTER) is None


def test_the_in_memory_store_thaws_once_and_never_a_contest_without_a_freeze() -> None:
    store = InMemorySubmissionStore(Clock(AFTER))
    store.add_contest(replace(FREEZING, id="f"))
    store.add_contest(replace(PLAIN, id="p"))

    thawed = store.thaw_contest("f", by="admin")
    assert thawed is not None and thawed[1] is True and thawed[0].thawed_at is not None
    assert store.thaw_contest("f", by="admin") == (thawed[0], False)
    assert store.thaw_contest("p", by="admin") == (store.contests["p"], False)
    assert store.thaw_contest("nope", by="admin") is None
    assert [e["type"] for e in store.events] == ["contest.thawed"]
