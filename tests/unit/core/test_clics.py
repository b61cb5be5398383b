"""The Contest API's mapping: ranks as tilejudge ranks, rejudges as new judgements, what the
freeze hides from whom, and the event feed's lines and who sees them."""

from __future__ import annotations

import json
from dataclasses import replace

from core import clics, clics_scoreboard
from core.clics import Applied, ContestData, Judging, Role, Upload, Viewer
from core.clics_feed import Audience, Line, judgement_lines, snapshot
from core.records import Contest, Team
from core.states import SubmissionState

R1, R2 = ("lex1", "lay"), ("lex2", "lay")
OPENS, CLOSES = "2026-06-01T10:00:00.000000Z", "2026-06-01T15:00:00.000000Z"
FREEZE = "2026-06-01T14:00:00.000000Z"
BEFORE, DURING, AFTER = (
    "2026-06-01T12:00:00.000000Z",
    "2026-06-01T14:30:00.000000Z",
    "2026-06-01T16:00:00.000000Z",
)
CONTEST = Contest("c", "Contest", OPENS, CLOSES, R1[0], R1[1], OPENS, "wordytaire")
ADMIN, PUBLIC = Viewer(Role.ADMIN), Viewer()


def team(tid: str) -> Team:
    return Team(tid, "c", f"name-{tid}", "h" + tid, OPENS)


def upload(sid: str, tid: str, at: str, state: SubmissionState = SubmissionState.JUDGED) -> Upload:
    return Upload(sid, tid, at, state, at)


def data(
    uploads: list[Upload],
    judgings: list[Judging],
    contest: Contest = CONTEST,
    applied: tuple[Applied, ...] = (),
    teams: tuple[str, ...] = ("a", "b", "c"),
) -> ContestData:
    return ContestData(contest, applied, tuple(team(t) for t in teams), tuple(uploads),
                       tuple(judgings))  # fmt: skip


def judged(rid: int, sid: str, score: int, ruleset: tuple[str, str] = R1) -> Judging:
    return Judging(rid, sid, ruleset, score, "2026-06-01T12:00:01.000000Z")


def test_times_are_milliseconds_in_utc_and_contest_time_may_run_negative() -> None:
    assert clics.abstime("2026-06-01T12:00:00.123456Z") == "2026-06-01T12:00:00.123Z"
    assert clics.reltime(OPENS, "2026-06-03T11:02:03.004999Z") == "49:02:03.004"
    assert clics.reltime(OPENS, "2026-06-01T09:59:59.000000Z") == "-0:00:01.000"


def test_teams_rank_by_best_score_ties_to_the_earlier_receipt_and_the_rest_share_the_next_rank() -> (
    None
):
    found = data(
        [upload("s1", "a", "2026-06-01T11:00:00.000000Z"), upload("s2", "b", "2026-06-01T10:30:00.000000Z"),
         upload("s3", "a", "2026-06-01T11:30:00.000000Z"), upload("s4", "b", "2026-06-01T12:00:00.000000Z",
                                                                   SubmissionState.QUEUED)],
        [judged(1, "s1", 40), judged(2, "s2", 40), judged(3, "s3", 12)],
        teams=("a", "b", "c", "d"),
    )  # fmt: skip
    board = clics_scoreboard.scoreboard(found, PUBLIC, BEFORE)
    assert [(r["rank"], r["team_id"]) for r in board["rows"]] == [(1, "b"), (2, "a"), (3, "c"),
                                                                  (3, "d")]  # fmt: skip
    first = board["rows"][0]
    assert first["score"] == {"score": 40, "time": "0:30:00.000"}
    assert first["problems"][0] | {} == {"problem_id": "wordytaire", "num_judged": 1,
                                         "num_pending": 1, "score": 40, "time": "0:30:00.000"}  # fmt: skip
    assert board["rows"][2]["score"] == {"score": 0, "time": None}
    assert "time" not in board["rows"][2]["problems"][0]


def test_an_applied_rejudge_adds_current_judgements_and_keeps_the_old_ones_not_current() -> None:
    contest = replace(CONTEST, lexicon_id=R2[0])
    found = data([upload("s1", "a", BEFORE)], [judged(1, "s1", 5), judged(2, "s1", 9, R2)],
                 contest, (Applied(R1, R2, BEFORE),))  # fmt: skip
    shown = {j["id"]: (j["score"], j["current"]) for j in clics.judgements(found, PUBLIC, BEFORE)}
    assert shown == {"s1-0": (5, False), "s1-1": (9, True)}


def test_a_rejudge_not_applied_shows_nothing_and_a_failed_upload_is_a_judging_error() -> None:
    found = data(
        [upload("s1", "a", BEFORE), upload("s2", "b", BEFORE, SubmissionState.FAILED)],
        [judged(1, "s1", 5), judged(2, "s1", 9, R2)],
    )
    shown = {j["id"]: j["judgement_type_id"] for j in clics.judgements(found, ADMIN, BEFORE)}
    assert shown == {"s1-0": "AC", "s2-e": "JE"}
    rows = {r["team_id"]: r for r in clics_scoreboard.scoreboard(found, ADMIN, BEFORE)["rows"]}
    assert rows["b"]["problems"][0]["num_judged"] == 1 and rows["b"]["score"]["score"] == 0


def frozen_contest() -> ContestData:
    """Frozen, with a rejudge applied during the freeze; a's upload came after the freeze."""
    contest = replace(CONTEST, lexicon_id=R2[0], freeze_at=FREEZE, frozen_lexicon_id=R1[0],
                      frozen_rules_id=R1[1])  # fmt: skip
    return data(
        [upload("s1", "a", DURING), upload("s2", "b", BEFORE)],
        [judged(1, "s1", 50), judged(2, "s1", 60, R2), judged(3, "s2", 7), judged(4, "s2", 8, R2)],
        contest, (Applied(R1, R2, DURING),),
    )  # fmt: skip


def test_while_frozen_the_public_sees_pre_freeze_verdicts_under_the_ruleset_it_had() -> None:
    found = frozen_contest()
    assert clics.state_object(found.contest, AFTER)["frozen"] == clics.abstime(FREEZE)
    public = clics.judgements(found, PUBLIC, AFTER)
    assert [(j["id"], j["score"], j["current"]) for j in public] == [("s2-0", 7, True)]
    board = clics_scoreboard.scoreboard(found, PUBLIC, AFTER)
    assert [(r["team_id"], r["score"]["score"], r["problems"][0]["num_pending"])
            for r in board["rows"]] == [("b", 7, 0), ("a", 0, 1), ("c", 0, 0)]  # fmt: skip
    assert clics.problems(found, PUBLIC, AFTER)[0]["max_score"] == 7


def test_while_frozen_a_team_sees_its_own_verdicts_and_the_organiser_everything() -> None:
    found = frozen_contest()
    mine = clics.judgements(found, Viewer(Role.TEAM, "a"), AFTER)
    assert {(j["id"], j["current"]) for j in mine} == {("s1-0", False), ("s1-1", True),
                                                       ("s2-0", True)}  # fmt: skip
    assert (
        clics_scoreboard.scoreboard(found, Viewer(Role.TEAM, "a"), AFTER)["rows"][0]["team_id"]
        == "b"
    )
    board = clics_scoreboard.scoreboard(found, ADMIN, AFTER)
    assert [(r["team_id"], r["score"]["score"]) for r in board["rows"][:2]] == [("a", 60),
                                                                                ("b", 8)]  # fmt: skip
    assert clics.problems(found, ADMIN, AFTER)[0]["max_score"] == 60


def test_the_thaw_shows_everyone_what_the_organiser_sees() -> None:
    found = frozen_contest()
    thawed = replace(found, contest=replace(found.contest, thawed_at=AFTER))
    assert clics.judgements(thawed, PUBLIC, AFTER) == clics.judgements(thawed, ADMIN, AFTER)
    state = clics.state_object(thawed.contest, AFTER)
    assert state["frozen"] and state["thawed"] == clics.abstime(AFTER)


def test_a_judgement_the_freeze_changes_is_sent_to_each_side_as_it_sees_it() -> None:
    found = frozen_contest()
    lines = list(judgement_lines(9, found, found.uploads[1], AFTER))
    shown = {(line.audience, json.loads(line.body + b"}")["data"]["current"]) for line in lines}
    assert shown == {(Audience.FULL, False), (Audience.PUBLIC_BUT, True), (Audience.FULL, True)}
    hidden = list(judgement_lines(9, found, found.uploads[0], AFTER))
    assert {line.audience for line in hidden} == {Audience.FULL}


def test_each_line_reaches_only_its_audience() -> None:
    def sees(audience: Audience, viewer: Viewer) -> bool:
        return Line(1, "c", audience, "a", b"{").seen_by(viewer)

    mine, other = Viewer(Role.TEAM, "a"), Viewer(Role.TEAM, "b")
    assert [sees(a, ADMIN) for a in Audience] == [True, True, False, True, False]
    assert [sees(a, PUBLIC) for a in Audience] == [True, False, True, False, True]
    assert [sees(a, mine) for a in Audience] == [True, False, True, True, False]
    assert [sees(a, other) for a in Audience] == [True, False, True, False, True]


def test_the_snapshot_sends_a_submission_before_its_judgements() -> None:
    events = [json.loads(b + b"}") for b in snapshot(frozen_contest(), PUBLIC, AFTER)]
    kinds = [e["type"] for e in events]
    assert kinds[:5] == ["contest", "judgement-types", "judgement-types", "languages",
                         "problems"]  # fmt: skip
    seen: set[str] = set()
    for event in events:
        if event["type"] == "submissions":
            seen.add(event["id"])
        if event["type"] == "judgements":
            assert event["data"]["submission_id"] in seen
