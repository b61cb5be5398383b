"""Creating a contest and deleting a team against the fakes: what each checks before it writes,
and everything a deletion leaves to forget (objects, caches, the broker's and the worker hosts'
copies) or to judge again (the games handed on)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core import clock
from core.contests import ContestAsked, create_contest, delete_team
from core.errors import Duplicate, Invalid, NotFound
from core.events import EventType
from core.fake_contests import InMemoryCaches, InMemoryContestStore, InMemoryTeamStore
from core.fake_ruleset_store import InMemoryRulesetStore
from core.fakes import (
    InMemoryBlobStore,
    InMemoryPublisher,
    InMemoryRejudgeStore,
    InMemorySubmissionStore,
)
from core.judging import WorkerDeps, judge_group
from core.records import Contest, DeletedTeam, Submission
from core.states import RejudgeMode, SubmissionState
from judge import Lexicon
from tests.unit.core.conftest import (
    CLOSES,
    IN_TIME,
    LATE,
    LAYOUT,
    OPENS,
    TINY,
    make_team,
    upload,
)

FIXED = Lexicon.from_words(TINY.words - {"tab"})


@pytest.fixture
def ruleset_store(store: InMemorySubmissionStore) -> InMemoryRulesetStore:
    """The rules store, with TINY registered as "tiny"."""
    store.add_lexicon(
        id=TINY.id, name="tiny", words=len(TINY), size=1, blob_key="k", source="t", created_by="t"
    )
    return InMemoryRulesetStore(store)


def asked(contest_id: str = "new", **changed: object) -> ContestAsked:
    fields: dict[str, object] = {
        "id": contest_id,
        "title": "A new one",
        "opens_at": clock.parse_time(OPENS),
        "closes_at": clock.parse_time(CLOSES),
        "lexicon": "tiny",
        "rules": None,
        "game": "wordytaire",
    }
    return ContestAsked(**{**fields, **changed})  # type: ignore[arg-type]


def create(
    wanted: ContestAsked,
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
) -> Contest:
    return create_contest(wanted, contests=contests, rulesets=ruleset_store, publisher=publisher)


def test_a_contest_is_created_under_the_list_named_with_its_games_packaged_rules_registered(
    store: InMemorySubmissionStore,
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
) -> None:
    made = create(asked(), contests, ruleset_store, publisher)

    assert made == contests.get_contest("new")
    assert (made.lexicon_id, made.rules_id, made.options) == (TINY.id, LAYOUT.id, None)
    [registered] = ruleset_store.all_rules("wordytaire")
    assert (registered.id, registered.created_by) == (LAYOUT.id, "system")
    assert publisher.preloaded == [TINY.id]  # the workers load its list before any upload
    assert store.events[-1]["type"] == EventType.CONTEST_CREATED


def test_a_contest_takes_rules_data_registered_before_by_name(
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
) -> None:
    ruleset_store.add_rules(
        id="L2", name="fixed", content="{}", created_by="admin", game="wordytaire"
    )

    made = create(asked(rules="fixed"), contests, ruleset_store, publisher)

    assert made.rules_id == "L2"


@pytest.mark.parametrize(
    ("changed", "sentence"),
    [
        ({"closes_at": clock.parse_time(OPENS)}, "closes_at must be after opens_at"),
        ({"freeze_at": clock.parse_time(LATE)}, "freeze_at must lie from opens_at to closes_at"),
        ({"lexicon": "other"}, "no lexicon with id or name 'other'; POST /v1/lexicons first"),
        ({"rules": "mine"}, "no layout with id or name 'mine' for a wordytaire contest"),
        ({"options": {"ratings": {}}}, "a Wordytaire contest takes no options (given 'ratings')"),
    ],
)  # fmt: skip
def test_a_contest_asked_wrongly_is_refused_with_what_is_wrong_and_nothing_is_written(
    store: InMemorySubmissionStore,
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
    changed: dict[str, object],
    sentence: str,
) -> None:
    with pytest.raises(Invalid) as refused:
        create(asked(**changed), contests, ruleset_store, publisher)

    assert str(refused.value) == sentence
    assert contests.get_contest("new") is None
    assert publisher.preloaded == []


def test_a_contests_options_are_kept_as_its_game_completed_them_in_canonical_json(
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
) -> None:
    made = create(
        asked(game="crosstiles", options={"ratings": {"tau": 0.4}}),
        contests,
        ruleset_store,
        publisher,
    )

    options = made.options
    assert json.loads(options)["ratings"]["tau"] == 0.4
    assert options == json.dumps(json.loads(options), sort_keys=True)


def test_a_used_contest_id_is_a_duplicate_and_a_broker_down_refuses_no_contest(
    contests: InMemoryContestStore,
    ruleset_store: InMemoryRulesetStore,
    publisher: InMemoryPublisher,
) -> None:
    publisher.down = True
    assert contests.get_contest("later") is None

    create(asked("later"), contests, ruleset_store, publisher)  # its list is loaded on demand

    with pytest.raises(Duplicate):
        create(asked("later"), contests, ruleset_store, publisher)
    assert [c.id for c in contests.list_contests()] == ["later", "wt"]


# -- deleting a team ---------------------------------------------------------------------------


def delete(
    team_id: str,
    teams: InMemoryTeamStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> DeletedTeam:
    return delete_team(
        team_id, by="admin", teams=teams, blobs=blobs, publisher=publisher, caches=caches
    )


def allow_logs(store: InMemorySubmissionStore, teams: InMemoryTeamStore, *added: str) -> None:
    """The teams added, and "ravens", may upload game logs."""
    for name in added:
        store.add_team(make_team(name, uploads_logs=True))
    teams.allow_logs("ravens", True, by="admin")


def sent(
    store: InMemorySubmissionStore, blobs: InMemoryBlobStore, team: str, data: bytes, **shared: str
) -> Submission:
    """An upload of the team to "wt", stored; with `game_key`, a game log others may send too."""
    submission = replace(upload(blobs, data, team=team), **shared)
    [row] = store.store_submissions([submission])
    assert row is None or row.id == submission.id
    return submission


def test_deleting_a_team_removes_its_uploads_and_reports_and_forgets_what_is_kept_elsewhere(
    deps: WorkerDeps,
    store: InMemorySubmissionStore,
    teams: InMemoryTeamStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    store.add_team(make_team("owls"))
    gone = [sent(store, blobs, "ravens", f"0 0 2 0 {w}\n".encode()) for w in ("cat", "tea")]
    kept = sent(store, blobs, "owls", b"0 0 2 0 bat\n")
    judge_group(deps, [s.id for s in [*gone, kept]])
    reports = {key[0]: kept_result.result.report_key for key, kept_result in store.results.items()}

    deleted = delete("ravens", teams, blobs, publisher, caches)

    assert sorted(deleted.submissions) == sorted(s.id for s in gone)
    assert deleted.handed_on == []
    assert not any(s.blob_key in blobs.objects or reports[s.id] in blobs.objects for s in gone)
    assert kept.blob_key in blobs.objects
    assert teams.get_team("ravens") is None and set(store.submissions) == {kept.id}
    assert caches.teams == ["ravens"] and caches.standings == ["wt"]
    assert caches.broker_copies == [deleted.submissions]
    assert sorted(publisher.forgotten) == sorted(s.sha256 for s in gone)
    event = {k: v for k, v in store.events[-1].items() if k not in ("id", "ts")}
    assert event == {
        "type": EventType.TEAM_DELETED, "contest": "wt", "team": "ravens",
        "submissions_deleted": 2, "submissions_handed_on": 0, "by": "admin",
    }  # fmt: skip


def test_a_game_the_deleted_team_sent_first_passes_to_the_earliest_other_sender_to_judge_again(
    store: InMemorySubmissionStore,
    teams: InMemoryTeamStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    allow_logs(store, teams, "owls", "larks")
    first = sent(store, blobs, "ravens", b"game one", game_key="g1")
    later = "2030-01-01T13:00:00.000000Z"
    larks = replace(upload(blobs, b"game 1", team="larks", received_at=later), game_key="g1")
    owls = replace(upload(blobs, b"game  1", team="owls"), game_key="g1")
    assert store.store_submissions([larks, owls]) == [None, None]  # kept as copies

    deleted = delete("ravens", teams, blobs, publisher, caches)

    assert deleted.handed_on == [first.id]
    heir = store.submissions[first.id]
    assert (heir.team_id, heir.blob_key, heir.received_at) == ("owls", owls.blob_key, IN_TIME)
    assert heir.state == SubmissionState.STORED
    assert first.blob_key not in blobs.objects and owls.blob_key in blobs.objects
    assert publisher.published == [first.id]  # judged again now, not when the sweeper looks
    assert list(store.copies) == [(first.id, "larks")]


def test_a_broker_down_leaves_a_deletion_whole(
    store: InMemorySubmissionStore,
    teams: InMemoryTeamStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    allow_logs(store, teams, "owls")
    first = sent(store, blobs, "ravens", b"game one", game_key="g1")
    sent(store, blobs, "owls", b"game 1", game_key="g1")
    publisher.down = True

    deleted = delete("ravens", teams, blobs, publisher, caches)

    assert deleted.handed_on == [first.id]
    assert publisher.forgotten == [] and publisher.asked == [first.id]
    assert teams.get_team("ravens") is None and caches.teams == ["ravens"]


def test_deleting_a_team_counts_an_open_rejudge_run_again(
    store: InMemorySubmissionStore,
    teams: InMemoryTeamStore,
    rejudges: InMemoryRejudgeStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    store.add_team(make_team("owls"))
    sent(store, blobs, "ravens", b"0 0 2 0 cat\n")
    sent(store, blobs, "owls", b"0 0 2 0 tea\n")
    run, _ = rejudges.start("wt", FIXED.id, LAYOUT.id, RejudgeMode.FULL)
    assert run.total == 2

    delete("ravens", teams, blobs, publisher, caches)

    found = rejudges.get(run.id)
    assert found is not None and found.total == 1


def test_an_unknown_team_is_not_found_and_nothing_is_forgotten(
    teams: InMemoryTeamStore,
    blobs: InMemoryBlobStore,
    publisher: InMemoryPublisher,
    caches: InMemoryCaches,
) -> None:
    with pytest.raises(NotFound, match="no team 'crows'"):
        delete("crows", teams, blobs, publisher, caches)

    assert (caches.teams, caches.standings, caches.broker_copies) == ([], [], [])
