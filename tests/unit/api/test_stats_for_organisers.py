"""What /v1/stats adds for an organiser's next question: a rejudge run's rulesets by name (the
name a word list was last given before the run started), the scores and ranks it changes (the
preview's counts, computed once per state of the run) and a link to that preview; how busy
rejudging keeps the workers; each contest's leaderboard link; what a worker's task count
counts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from api.stats import StatsSnapshotter
from core import tuning
from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, drain
from infra.sql.dashboard import minute_floor
from infra.sql.rejudges import SqlRejudgeRuns
from judge.wordytaire import default_layout
from tests.unit.api.test_dashboard import StoreClock, pin_store_clock
from tests.unit.api.test_rejudge import run_rejudge_work

FIXED_WORDS = tuple(word for word in TINY_WORDS if word != "cab")  # the fix drops "cab"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which preview queries ran, in order."""
    seen: list[str] = []
    for name in ("changes", "rank_changes"):
        real = getattr(SqlRejudgeRuns, name)

        def spy(self: SqlRejudgeRuns, run: Any, _real: Any = real, _name: str = name) -> Any:
            seen.append(_name)
            return _real(self, run)

        monkeypatch.setattr(SqlRejudgeRuns, name, spy)
    return seen


@pytest.fixture
def store_clock(monkeypatch: pytest.MonkeyPatch) -> StoreClock:
    return pin_store_clock(monkeypatch)


def a_rejudge_that_drops_a_word(
    pipe: Pipeline, mode: str = "full", name: str = "tiny-fixed"
) -> str:
    """Two teams judged under `tiny`, the one ahead only thanks to "cab"; a rejudge under the
    list without it (registered as `name`), started (not yet judged)."""
    pipe.accepted(pipe.add_team("ravens"), b"0 0 2 0 cab\n")
    pipe.accepted(pipe.add_team("owls"), b"0 0 2 0 cat\n")
    drain(pipe.services)
    pipe.add_lexicon(FIXED_WORDS, name=name)
    started = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": name, "mode": mode}, headers=ADMIN
    )
    assert started.status_code == 202, started.text
    return str(started.json()["id"])


def snapshotter_of(pipe: Pipeline) -> StatsSnapshotter:
    services = pipe.services
    return StatsSnapshotter(
        services.dashboard, services.rejudges, pipe.store, services.queue_depths, None
    )


def the_run(snapshotter: StatsSnapshotter, run_id: str) -> dict[str, Any]:
    [run] = [row for row in snapshotter.compute()["rejudges"] if row["id"] == run_id]
    return run


def test_a_run_names_the_word_lists_and_layout_it_goes_from_and_to(pipe: Pipeline) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    run = the_run(snapshotter_of(pipe), run_id)

    lexicons = {row.name: row.id for row in pipe.store.all_lexicons()}
    layout = default_layout()
    assert run["from"]["lexicon"] == {"id": lexicons["tiny"], "name": "tiny", "names": ["tiny"]}
    assert run["to"]["lexicon"] == {
        "id": lexicons["tiny-fixed"],
        "name": "tiny-fixed",
        "names": ["tiny-fixed"],
    }
    named_layout = {"id": layout.id, "name": layout.name, "names": [layout.name]}
    assert run["from"]["layout"] == run["to"]["layout"] == named_layout
    assert run["mode"] == "full"
    assert run["preview_url"] == f"/v1/rejudges/{run_id}"


def test_a_list_registered_again_under_a_new_name_shows_the_name_the_run_was_started_with(
    pipe: Pipeline,
) -> None:
    pipe.add_lexicon(FIXED_WORDS, name="tiny-b")
    run_id = a_rejudge_that_drops_a_word(pipe, name="fixed")  # the same bytes, a second name
    pipe.add_lexicon(FIXED_WORDS, name="fixed-later")  # a third, given after the run started

    run = the_run(snapshotter_of(pipe), run_id)
    assert run["to"]["lexicon"]["name"] == "fixed"
    assert run["to"]["lexicon"]["names"] == ["tiny-b", "fixed", "fixed-later"]
    assert run["from"]["lexicon"]["name"] == "tiny"
    assert pipe.store.find_lexicon("fixed") is not None
    assert pipe.store.find_lexicon("fixed").id == run["to"]["lexicon"]["id"]  # type: ignore[union-attr]


def test_rejudge_judgings_are_counted_beside_the_judged_rate_not_in_it(
    pipe: Pipeline, store_clock: StoreClock
) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    run_rejudge_work(pipe)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert the_run(snapshotter_of(pipe), run_id)["done"] == 2
    assert stats["rejudged_per_minute"] == 2 and stats["totals"]["rejudged_last_minute"] == 2
    assert stats["series"]["rejudged"][-1] == 2 and sum(stats["series"]["rejudged"]) == 2
    # The uploads' own judgings, once each: the Judged figure still says whether intake keeps up.
    assert stats["judged_per_minute"] == 2 and stats["series"]["judged"][-1] == 2


def test_results_a_run_carries_over_unchanged_are_not_counted_as_rejudged(
    pipe: Pipeline, store_clock: StoreClock
) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe, mode="affected")
    run_rejudge_work(pipe)
    run = the_run(snapshotter_of(pipe), run_id)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert (run["done"], run["carried"]) == (2, 1)  # "cat" is judged again, "cab"'s is copied
    assert stats["rejudged_per_minute"] == 1 and stats["series"]["rejudged"][-1] == 1


def test_a_minute_of_rejudging_is_charted_in_its_own_minute(
    pipe: Pipeline, store_clock: StoreClock
) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    store_clock.at = minute_floor(store_clock.at) + timedelta(minutes=3, seconds=5)
    run_rejudge_work(pipe)
    store_clock.at += timedelta(minutes=2)
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert the_run(snapshotter_of(pipe), run_id)["done"] == 2
    assert stats["series"]["rejudged"][-3:] == [2, 0, 0]
    assert stats["rejudged_per_minute"] == 0


def test_a_running_run_counts_no_changes_yet(pipe: Pipeline, calls: list[str]) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    run = the_run(snapshotter_of(pipe), run_id)

    assert run["state"] == "running" and run["changes"] is None
    assert calls == []


def test_a_ready_run_shows_the_previews_counts_of_changed_scores_and_ranks(
    pipe: Pipeline,
) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    snapshotter = snapshotter_of(pipe)
    run_rejudge_work(pipe)

    run = the_run(snapshotter, run_id)
    preview = pipe.client.get(run["preview_url"], headers=ADMIN).json()
    assert run["state"] == preview["state"] == "ready"
    assert run["changes"] == {
        "scores": len(preview["changed"]),
        "ranks": len(preview["rank_changes"]),
    }
    assert run["changes"] == {"scores": 1, "ranks": 2}  # ravens lose "cab" and the lead


def test_the_counts_are_computed_once_while_ready_and_kept_as_recorded_once_applied(
    pipe: Pipeline, calls: list[str]
) -> None:
    run_id = a_rejudge_that_drops_a_word(pipe)
    snapshotter = snapshotter_of(pipe)
    run_rejudge_work(pipe)

    for _ in range(3):
        ready = the_run(snapshotter, run_id)
    assert calls == ["changes", "rank_changes"]
    assert pipe.client.post(f"/v1/rejudges/{run_id}/apply", headers=ADMIN).status_code == 200
    for _ in range(3):
        applied = the_run(snapshotter, run_id)
    assert applied["state"] == "applied" and applied["changes"] == ready["changes"]
    assert calls == ["changes", "rank_changes"]  # an applied run's are those `apply` recorded


def test_each_contest_links_its_leaderboard(pipe: Pipeline) -> None:
    pipe.add_contest("second-round")
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    links = {contest["id"]: contest["leaderboard_url"] for contest in stats["contests"]}
    assert links == {
        "open": "/v1/contests/open/leaderboard",
        "second-round": "/v1/contests/second-round/leaderboard",
    }
    assert pipe.client.get(links["open"]).status_code == 200


def test_stats_say_how_many_submissions_a_worker_task_holds(pipe: Pipeline) -> None:
    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert stats["task_sizes"] == {
        "uploads_per_message": tuning.GROUP_MOST,
        "submissions_per_rejudge_batch": tuning.REJUDGE_BATCH_MOST,
    }
