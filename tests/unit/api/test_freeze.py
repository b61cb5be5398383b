"""The scoreboard freeze: while a contest is frozen, no public route shows the verdict of an
upload received after its freeze time, nor what a rejudge applied during the freeze changed; a
team still sees its own, the organiser everything; the thaw reveals it all at once. Both games.

The clock is moved (`Shifted`), not waited for: the contest freezes half an hour from now, and
a test steps past that time to upload "after the freeze"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.public import SharedReads
from core import clock
from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain
from tests.unit.api.test_crosstiles_contest import passing_game, run_rejudge_work
from tests.unit.api.test_rejudge import WITHOUT_CAB

CONTEST = "day"
FREEZE_IN = timedelta(minutes=30)
# Wordytaire scores under the tiny list (and without "cab", the rejudge's fix).
CAB = b"0 0 2 0 cab\n"  # 15, then 0
CAT = b"0 0 2 0 cat\n"  # 9
TAB = b"0 0 2 0 tab\n"  # 13: the score no public answer may show while frozen
BAT_TEA = b"0 0 2 0 bat\n-1 1 0 1 tea\n"  # 10


class Shifted:
    """Stands in for `core.clock.now`: the wall clock moved on by `by`."""

    def __init__(self) -> None:
        self.by = timedelta(0)

    def __call__(self) -> str:
        return clock.format_time(datetime.now(UTC) + self.by)


class Monotonic:
    """The shared public reads' clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> Shifted:
    moved = Shifted()
    monkeypatch.setattr(clock, "now", moved)
    return moved


@pytest.fixture
def reads_clock(pipe: Pipeline) -> Monotonic:
    """The pipeline's shared public reads on a clock the test moves, unpaced."""
    moved = Monotonic()
    pipe.services.public = SharedReads(monotonic=moved, rate=0)
    return moved


def frozen_contest(pipe: Pipeline, contest: str = CONTEST, game: str = "wordytaire") -> None:
    """A contest open an hour either side of now, freezing half an hour from now."""
    now = datetime.now(UTC)
    body = {
        "id": contest, "title": "Contest day", "lexicon": "tiny", "game": game,
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
        "freeze_at": clock.format_time(now + FREEZE_IN),
    }  # fmt: skip
    response = pipe.client.post("/v1/contests", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    assert (response.json()["frozen"], response.json()["thawed_at"]) == (False, None)


def past_the_freeze(shifted: Shifted) -> None:
    shifted.by = FREEZE_IN + timedelta(minutes=1)


def board(pipe: Pipeline, headers: dict[str, str] | None = None, **params: Any) -> dict[str, Any]:
    response = pipe.client.get(
        f"/v1/contests/{CONTEST}/leaderboard", params=params, headers=headers or {}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def scores(found: dict[str, Any]) -> dict[str, int]:
    return {entry["team"]: entry["score"] for entry in found["entries"]}


def whole_board_pages(pipe: Pipeline, headers: dict[str, str] | None = None) -> list[str]:
    """Every page of the leaderboard, one entry a page, followed through `next`."""
    bodies = []
    url: str | None = f"/v1/contests/{CONTEST}/leaderboard?limit=1"
    while url is not None:
        response = pipe.client.get(url, headers=headers or {})
        assert response.status_code == 200, response.text
        bodies.append(response.text)
        url = response.json()["next"]
    return bodies


def public_bodies(pipe: Pipeline, watcher: TeamLogin) -> list[str]:
    """What every route answers without a token and with another team's, refusals included:
    those must say nothing either."""
    anyone: dict[str, str] = {}
    bodies = whole_board_pages(pipe) + whole_board_pages(pipe, watcher.headers)
    for path in (
        "/v1/contests",
        f"/v1/contests/{CONTEST}",
        "/v1/games",
        "/metrics",
        f"/v1/contests/{CONTEST}/results",
        "/v1/events",
        "/v1/stats",
        f"/dashboard/contests/{CONTEST}/leaderboard",
    ):
        for headers in (anyone, watcher.headers):
            bodies.append(pipe.client.get(path, headers=headers).text)
    return bodies


def readable_by(pipe: Pipeline, watcher: TeamLogin | None, submission_id: str) -> bool:
    """Whether a submission, its report or its receipt answers 200 to this team (or anyone)."""
    headers = watcher.headers if watcher is not None else {}
    answers = {
        pipe.client.get(f"/v1/submissions/{submission_id}{tail}", headers=headers).status_code
        for tail in ("", "/report", "/receipt")
    }
    assert len(answers) == 1, answers
    return answers == {200}


def score_values(body: str) -> set[int]:
    """Every number a JSON body gives as a score (none for a body that is not JSON)."""
    try:
        found = json.loads(body)
    except ValueError:
        return set()
    values: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if "score" in key and isinstance(value, int):
                    values.add(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(found)
    return values


# -- Wordytaire -------------------------------------------------------------------------------


@pytest.fixture
def day(pipe: Pipeline, shifted: Shifted) -> Iterator[dict[str, Any]]:
    """Ravens (15) and owls (9) upload before the freeze; after it, owls improve to 13 and
    ravens send a 10; all four judged."""
    frozen_contest(pipe)
    ravens, owls = pipe.add_team("ravens", CONTEST), pipe.add_team("owls", CONTEST)
    before = [pipe.accepted(ravens, CAB)["id"], pipe.accepted(owls, CAT)["id"]]
    drain(pipe.services)
    past_the_freeze(shifted)
    after = [pipe.accepted(owls, TAB)["id"], pipe.accepted(ravens, BAT_TEA)["id"]]
    drain(pipe.services)
    yield {"ravens": ravens, "owls": owls, "before": before, "tab": after[0], "after": after}


def test_while_frozen_the_public_board_counts_only_uploads_received_before_the_freeze(
    pipe: Pipeline, day: dict[str, Any]
) -> None:
    public = board(pipe)
    assert scores(public) == {"ravens": 15, "owls": 9}
    assert (public["frozen"], public["pending"]) == (True, 2)
    assert scores(board(pipe, day["ravens"].headers)) == {"ravens": 15, "owls": 9}
    shown = pipe.client.get(f"/v1/contests/{CONTEST}").json()
    assert shown["frozen"] is True and shown["freeze_at"] < clock.now()


def test_no_public_route_nor_another_teams_token_shows_a_verdict_received_after_the_freeze(
    pipe: Pipeline, day: dict[str, Any]
) -> None:
    bodies = public_bodies(pipe, day["ravens"])
    assert not any(day["tab"] in body for body in bodies)
    assert not any(13 in score_values(body) for body in bodies)
    assert any(15 in score_values(body) for body in bodies)  # the check can see a score
    assert not readable_by(pipe, day["ravens"], day["tab"])
    assert not readable_by(pipe, None, day["tab"])


def test_a_team_still_sees_its_own_results_and_the_organiser_sees_everything(
    pipe: Pipeline, day: dict[str, Any]
) -> None:
    own = pipe.client.get(f"/v1/submissions/{day['tab']}", headers=day["owls"].headers)
    assert own.status_code == 200 and own.json()["score"] == 13
    report = pipe.client.get(f"/v1/submissions/{day['tab']}/report", headers=day["owls"].headers)
    assert report.status_code == 200
    organiser = board(pipe, ADMIN)
    assert scores(organiser) == {"owls": 13, "ravens": 15}
    assert (organiser["frozen"], organiser["pending"]) == (True, 0)
    export = pipe.client.get(f"/v1/contests/{CONTEST}/results", headers=ADMIN).json()
    assert {row["submission"]: row["score"] for row in export["results"]}[day["tab"]] == 13
    assert pipe.submission(day["tab"])["score"] == 13


def test_a_rejudge_applied_during_the_freeze_changes_nothing_public_until_the_thaw(
    pipe: Pipeline, day: dict[str, Any]
) -> None:
    pipe.add_lexicon(WITHOUT_CAB, name="tiny-fixed")
    started = pipe.client.post(
        f"/v1/contests/{CONTEST}/rejudges", json={"lexicon": "tiny-fixed"}, headers=ADMIN
    )
    assert started.status_code == 202, started.text
    run_rejudge_work(pipe)
    applied = pipe.client.post(f"/v1/rejudges/{started.json()['id']}/apply", headers=ADMIN)
    assert applied.status_code == 200, applied.text
    contest = pipe.store.get_contest(CONTEST)
    tiny = pipe.store.find_lexicon("tiny")
    assert contest is not None and tiny is not None
    assert contest.frozen_lexicon_id == tiny.id != contest.lexicon_id

    assert scores(board(pipe)) == {"ravens": 15, "owls": 9}  # the cab still counts, publicly
    assert scores(board(pipe, ADMIN)) == {"owls": 13, "ravens": 10}
    cab = day["before"][0]
    ravens_own = pipe.client.get(f"/v1/submissions/{cab}", headers=day["ravens"].headers)
    assert ravens_own.json()["score"] == 0  # its own team sees its result under the fix

    thawed = pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN)
    assert thawed.status_code == 200 and thawed.json()["thawed"] is True
    assert scores(board(pipe)) == {"owls": 13, "ravens": 10}


def test_the_thaw_reveals_everything_at_once_and_thawing_again_changes_nothing(
    pipe: Pipeline, day: dict[str, Any], reads_clock: Monotonic
) -> None:
    for _ in range(10):  # a board many read: answered from the shared computation
        assert scores(board(pipe)) == {"ravens": 15, "owls": 9}

    thawed = pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN)

    assert thawed.status_code == 200, thawed.text
    assert (thawed.json()["thawed"], thawed.json()["frozen"]) == (True, False)
    public = board(pipe)  # in the same second: the thaw forgot the shared answer
    assert scores(public) == {"owls": 13, "ravens": 15}
    assert (public["frozen"], public["pending"]) == (False, 0)
    assert any(day["tab"] in body for body in public_bodies(pipe, day["ravens"]))
    assert pipe.client.get(f"/v1/contests/{CONTEST}").json()["thawed_at"] is not None
    again = pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN)
    assert again.status_code == 200 and again.json()["thawed"] is False
    thaws = [e for e in pipe.events() if e["type"] == "contest.thawed"]
    assert [e["contest"] for e in thaws] == [CONTEST]


def test_a_board_shared_as_the_freeze_time_passes_holds_no_later_verdict_and_freezes_within_its_window(
    pipe: Pipeline, shifted: Shifted, reads_clock: Monotonic
) -> None:
    frozen_contest(pipe)
    ravens, owls = pipe.add_team("ravens", CONTEST), pipe.add_team("owls", CONTEST)
    pipe.accepted(owls, CAT)
    drain(pipe.services)
    for _ in range(10):  # shared: the answer of the window's last computation
        assert board(pipe)["frozen"] is False

    past_the_freeze(shifted)  # no write marks the moment: the shared answer stays for its window
    tab = pipe.accepted(owls, TAB)["id"]
    pipe.accepted(ravens, CAB)
    drain(pipe.services)
    shared = board(pipe)
    assert shared["frozen"] is False and scores(shared) == {"owls": 9}

    reads_clock.now += 1.0  # the window ends
    fresh = board(pipe)
    assert (fresh["frozen"], fresh["pending"], scores(fresh)) == (True, 2, {"owls": 9})
    assert tab not in json.dumps(fresh)


# -- creating and thawing -----------------------------------------------------------------------


def test_a_freeze_outside_the_contests_window_is_refused_with_a_reason(pipe: Pipeline) -> None:
    now = datetime.now(UTC)
    body = {
        "id": "late", "title": "Late", "lexicon": "tiny",
        "opens_at": clock.format_time(now), "closes_at": clock.format_time(now + timedelta(hours=1)),
        "freeze_at": clock.format_time(now + timedelta(hours=2)),
    }  # fmt: skip
    refused = pipe.client.post("/v1/contests", json=body, headers=ADMIN)
    assert refused.status_code == 422
    assert "freeze_at must lie from opens_at to closes_at" in refused.text
    unzoned = pipe.client.post(
        "/v1/contests", json={**body, "freeze_at": "2030-01-01T12:00:00"}, headers=ADMIN
    )
    assert unzoned.status_code == 422 and "time zone" in unzoned.text
    assert pipe.store.get_contest("late") is None


def test_a_contest_without_a_freeze_has_nothing_to_thaw_and_only_the_organiser_thaws(
    pipe: Pipeline, team: TeamLogin
) -> None:
    refused = pipe.client.post("/v1/contests/open/thaw", headers=ADMIN)
    assert refused.status_code == 409 and "no freeze to thaw" in refused.text
    assert pipe.client.post("/v1/contests/nope/thaw", headers=ADMIN).status_code == 404
    assert pipe.client.post("/v1/contests/open/thaw", headers=team.headers).status_code == 403
    assert pipe.client.post("/v1/contests/open/thaw").status_code == 401
    shown = pipe.client.get("/v1/contests/open").json()
    assert (shown["freeze_at"], shown["frozen"]) == (None, False)


def test_thawing_before_the_freeze_time_cancels_the_freeze(
    pipe: Pipeline, shifted: Shifted
) -> None:
    frozen_contest(pipe)
    owls = pipe.add_team("owls", CONTEST)
    assert pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN).json()["thawed"]
    past_the_freeze(shifted)
    pipe.accepted(owls, TAB)
    drain(pipe.services)
    assert scores(board(pipe)) == {"owls": 13}
    assert board(pipe)["frozen"] is False


# -- Crosstiles ---------------------------------------------------------------------------------


def test_a_frozen_crosstiles_contest_hides_later_game_logs_from_the_public_and_other_teams(
    pipe: Pipeline, shifted: Shifted
) -> None:
    frozen_contest(pipe, game="crosstiles")
    club, rivals = (pipe.add_team(name, CONTEST, uploads_logs=True) for name in ("club", "rivals"))
    early, _ = passing_game("early", ("ann", "bob"))
    pipe.accepted(club, early)
    drain(pipe.services)
    past_the_freeze(shifted)
    late, _ = passing_game("late", ("cyd", "dot"))
    spoilt = passing_game("spoilt", ("eve", "fay"))[0].replace(b"+0 0", b"+7 7", 1)
    late_id = pipe.accepted(club, late)["id"]
    spoilt_id = pipe.accepted(club, spoilt)["id"]
    drain(pipe.services)
    assert pipe.submission(spoilt_id)["result"]["valid"] is False

    public = board(pipe)
    assert {p["nick"] for p in public["players"]} == {"ann", "bob"}
    assert (public["invalid"], public["frozen"], public["pending"]) == ([], True, 2)
    bodies = public_bodies(pipe, rivals)
    for secret in ("cyd", "dot", "eve", "fay", late_id, spoilt_id):
        assert not any(secret in body for body in bodies), secret
    assert not readable_by(pipe, rivals, late_id) and not readable_by(pipe, rivals, spoilt_id)
    organiser = board(pipe, ADMIN)
    assert {p["nick"] for p in organiser["players"]} == {"ann", "bob", "cyd", "dot"}
    assert [g["submission"] for g in organiser["invalid"]] == [spoilt_id]
    own = pipe.client.get(f"/v1/submissions/{late_id}", headers=club.headers)
    assert own.status_code == 200 and own.json()["result"]["valid"] is True

    # A team that sends the same game shares its submission, and so may read it.
    again = pipe.upload(rivals, late)
    assert again.status_code == 202 and again.json()["id"] == late_id
    assert readable_by(pipe, rivals, late_id) and not readable_by(pipe, rivals, spoilt_id)

    assert pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN).status_code == 200
    thawed = board(pipe)
    assert {p["nick"] for p in thawed["players"]} == {"ann", "bob", "cyd", "dot"}
    assert [g["submission"] for g in thawed["invalid"]] == [spoilt_id]
    assert readable_by(pipe, rivals, spoilt_id)


def test_the_shared_reads_never_mix_the_organisers_board_with_the_publics(
    pipe: Pipeline, day: dict[str, Any], reads_clock: Monotonic
) -> None:
    for _ in range(10):
        assert scores(board(pipe, ADMIN))["owls"] == 13
        assert scores(board(pipe))["owls"] == 9


def test_a_contest_closed_before_its_freeze_time_never_freezes(pipe: Pipeline) -> None:
    """Closed early, a contest has no freeze left after its end: nothing to thaw, and a
    rejudge applied afterwards shows at once."""
    frozen_contest(pipe)
    closed = pipe.client.post(f"/v1/contests/{CONTEST}/close", headers=ADMIN)
    assert closed.status_code == 200, closed.text
    shown = pipe.client.get(f"/v1/contests/{CONTEST}").json()
    assert (shown["freeze_at"], shown["frozen"]) == (None, False)
    assert pipe.client.post(f"/v1/contests/{CONTEST}/thaw", headers=ADMIN).status_code == 409
