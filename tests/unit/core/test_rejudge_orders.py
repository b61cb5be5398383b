"""The organiser's orders to rejudge runs against the fakes: a start finds what it names and
publishes a new run's producer once, an apply has the changed standings read afresh, and a
refused order changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.errors import Invalid, NotFound, RejudgeRefused
from core.fake_contests import InMemoryCaches, InMemoryContestStore
from core.fake_ruleset_store import InMemoryRulesetStore
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemorySubmissionStore,
)
from core.rejudge_orders import RejudgeStarted, apply_rejudge, cancel_rejudge, start_rejudge
from core.states import RejudgeMode, RejudgeState
from judge import Lexicon
from tests.unit.core.conftest import LAYOUT, TINY, stored

FIXED = Lexicon.from_words(TINY.words - {"tab"})


@pytest.fixture
def ruleset_store(store: InMemorySubmissionStore) -> InMemoryRulesetStore:
    """The rules store, with the list FIXED registered as "fixed"."""
    store.add_lexicon(
        id=FIXED.id,
        name="fixed",
        words=len(FIXED),
        size=1,
        blob_key="k",
        source="t",
        created_by="t",
    )
    return InMemoryRulesetStore(store)


def start(
    store: InMemorySubmissionStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest_id: str = "wt",
    lexicon: str = "fixed",
    rules: str | None = None,
) -> RejudgeStarted:
    return start_rejudge(
        contest_id,
        lexicon=lexicon,
        rules=rules,
        mode=RejudgeMode.AFFECTED,
        by="admin",
        contests=InMemoryContestStore(store),
        rulesets=ruleset_store,
        runs=rejudges,
        publisher=publisher,
    )


def test_a_rejudge_starts_under_the_list_named_and_its_producer_is_published_once(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    stored(store, blobs, b"0 0 2 0 cat\n")

    started = start(store, ruleset_store, rejudges, publisher)
    again = start(store, ruleset_store, rejudges, publisher)

    run = started.run
    assert started.created and not again.created and again.run.id == run.id
    assert (run.lexicon_id, run.rules_id, run.mode, run.state, run.created_by) == (
        FIXED.id, LAYOUT.id, RejudgeMode.AFFECTED, RejudgeState.RUNNING, "admin",
    )  # fmt: skip
    assert publisher.rejudges == [run.id]


def test_a_rejudge_takes_the_rules_data_named_among_its_contests_games(
    store: InMemorySubmissionStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    ruleset_store.add_rules(id="L2", name="fixed", content="{}", created_by="a", game="wordytaire")
    ruleset_store.add_rules(id="B2", name="board", content="{}", created_by="a", game="crosstiles")

    started = start(store, ruleset_store, rejudges, publisher, rules="fixed")

    assert (started.run.lexicon_id, started.run.rules_id) == (FIXED.id, "L2")
    with pytest.raises(
        Invalid, match=r"^no layout with id or name 'board' for a wordytaire contest$"
    ):
        start(store, ruleset_store, rejudges, publisher, rules="board")


@pytest.mark.parametrize(
    ("contest_id", "lexicon", "refused", "sentence"),
    [
        ("gone", "fixed", NotFound, "no contest 'gone'"),
        ("wt", "unheard", Invalid, "no lexicon with id or name 'unheard'"),
    ],
)
def test_a_rejudge_naming_what_is_not_there_is_refused_and_nothing_starts(
    store: InMemorySubmissionStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    contest_id: str,
    lexicon: str,
    refused: type[Exception],
    sentence: str,
) -> None:
    with pytest.raises(refused) as raised:
        start(store, ruleset_store, rejudges, publisher, contest_id=contest_id, lexicon=lexicon)

    assert str(raised.value) == sentence
    assert rejudges.list_runs("wt") == [] and publisher.rejudges == []


def test_a_rejudge_starts_with_the_broker_down_its_producer_left_to_the_sweeper(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    stored(store, blobs, b"0 0 2 0 cat\n")
    publisher.down = True

    started = start(store, ruleset_store, rejudges, publisher)

    assert started.created and rejudges.open_runs("wt") == [started.run]


def test_applying_a_ready_run_switches_the_contest_and_has_its_standings_read_afresh(
    store: InMemorySubmissionStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    run = start(store, ruleset_store, rejudges, publisher).run  # no submission: ready at once

    applied = apply_rejudge(run.id, by="admin", runs=rejudges, caches=caches)

    assert applied.state == RejudgeState.APPLIED
    assert store.contests["wt"].lexicon_id == FIXED.id
    assert caches.standings == ["wt"]


def test_an_apply_refused_has_nothing_read_afresh(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    stored(store, blobs, b"0 0 2 0 cat\n")
    run = start(store, ruleset_store, rejudges, publisher).run  # running: one to judge

    with pytest.raises(RejudgeRefused):
        apply_rejudge(run.id, by="admin", runs=rejudges, caches=caches)

    assert caches.standings == [] and store.contests["wt"].lexicon_id == TINY.id


def test_a_cancelled_run_is_closed_and_a_new_start_opens_another(
    store: InMemorySubmissionStore,
    blobs: InMemoryBlobStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    stored(store, blobs, b"0 0 2 0 cat\n")
    run = start(store, ruleset_store, rejudges, publisher).run

    cancelled = cancel_rejudge(run.id, by="admin", runs=rejudges)
    restarted = start(store, ruleset_store, rejudges, publisher)

    assert cancelled.state == RejudgeState.CANCELLED and rejudges.open_runs("wt") == [restarted.run]
    assert restarted.created and publisher.rejudges == [run.id, restarted.run.id]


def test_rules_not_found_are_named_as_the_contests_game_names_them(
    store: InMemorySubmissionStore,
    ruleset_store: InMemoryRulesetStore,
    rejudges: InMemoryRejudgeStore,
    publisher: InMemoryPublisher,
) -> None:
    ruleset_store.add_rules(id="B1", name="board", content="{}", created_by="a", game="crosstiles")
    contests = InMemoryContestStore(store)
    wordytaire = contests.get_contest("wt")
    assert wordytaire is not None
    contests.create_contest(
        replace(wordytaire, id="ct", game="crosstiles", lexicon_id=FIXED.id, rules_id="B1")
    )

    with pytest.raises(
        Invalid, match=r"^no board with id or name 'spec' for a crosstiles contest$"
    ):
        start(store, ruleset_store, rejudges, publisher, contest_id="ct", rules="spec")
    assert rejudges.open_runs() == []
