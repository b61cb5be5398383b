"""A Crosstiles contest in the pipeline: its game fixed at creation, logs only from teams allowed
to send them, each judged exactly as the offline verifier judges it, one submission per log
whoever sends it, standings of the players, and rejudging after the word list is corrected."""

from __future__ import annotations

import contextlib
import hashlib
import io
import random
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from cli.client import format_leaderboard
from cli.games.crosstiles import print_preview
from cli.main import main
from core import clock
from core.fakes import InMemoryPublisher
from core.games import game
from core.judging import Outcome, WorkerDeps
from core.rejudging import judge_batch, produce
from devstack import demo
from devstack.testing.pipeline import (
    ADMIN,
    ADMIN_TOKEN,
    Pipeline,
    TeamLogin,
    drain,
    open_pipeline,
)
from devstack.testing.word_lists import cached_list
from infra import api_client
from infra.rulesets import RulesetCache
from infra.sql.rejudges import SqlRejudgeRuns
from judge import Lexicon
from judge.crosstiles import CrosstilesReport, corrupt, default_board, generate, verify
from judge.crosstiles.bag import Bag
from judge.crosstiles.board import TILE_NAMES
from judge.crosstiles.generator import CORRUPTIONS
from judge.crosstiles.identity import identity
from judge.crosstiles.ratings import RatingRules, Seat, contest_ratings, shown
from judge.wordytaire import default_layout

BOARD = default_board()
CONTEST = "xt"


def passing_game(seed: str, nicks: tuple[str, ...]) -> tuple[bytes, list[int]]:
    """A valid log of a game in which everyone passes until it ends (six scoreless turns);
    each player's final score is minus the value of the rack dealt to them."""
    bag = Bag(BOARD.counts, seed)
    racks = ["".join(TILE_NAMES[code] for code in bag.draw(7)) for _ in nicks]
    lines = ["#crosstiles 1", f"#seed {seed}"]
    lines += [f"#player{n} {nick}" for n, nick in enumerate(nicks, 1)]
    lines += [f">{nicks[t % len(nicks)]}: {racks[t % len(nicks)]} - +0 0" for t in range(6)]
    values = [sum(BOARD.values[TILE_NAMES.index(tile)] for tile in rack) for rack in racks]
    lines += [
        f">{nick}: {rack} ({rack}) -{value} {-value}"
        for nick, rack, value in zip(nicks, racks, values, strict=True)
    ]
    return "".join(line + "\n" for line in lines).encode(), values


def drawn_game() -> bytes:
    """A two-player game that ends level: both players hold racks of the same value."""
    for n in range(1000):
        log, values = passing_game(f"level-{n}", ("ann", "bob"))
        if values[0] == values[1]:
            return log
    raise AssertionError("no seed below 1000 deals two racks of the same value")


@pytest.fixture(scope="module")
def word_lists() -> dict[str, bytes]:
    return {
        "enable_2-16": cached_list("enable_2-16.txt").read_bytes(),
        "crosstiles": cached_list("crosstiles.txt").read_bytes(),
    }


@pytest.fixture(scope="module")
def full_list(word_lists: dict[str, bytes]) -> Lexicon:
    return Lexicon.from_bytes(word_lists["crosstiles"])


@pytest.fixture(scope="module")
def games(full_list: Lexicon) -> list[bytes]:
    """Whole valid games played with the full Crosstiles list (so some spell the British way),
    two to four players, with exchanges, passes and missed deadlines in turn."""
    return [
        generate(
            2 + n % 3,
            f"pipeline-{n}",
            full_list,
            BOARD,
            exchanges=n % 2 == 0,
            passes=n % 3 == 0,
            timeouts=n % 4 == 1,
            rng_seed=n,
        )
        for n in range(24)
    ]


@pytest.fixture(scope="module")
def game_words(games: list[bytes], full_list: Lexicon) -> Lexicon:
    """A small list under which every generated game is valid: the words they make."""
    return Lexicon.from_words({w for g in games for w in verify(g, full_list, BOARD).words})


@pytest.fixture(scope="module")
def bad_logs(full_list: Lexicon) -> list[bytes]:
    """One log spoilt in each way the corrupter knows, each of a game of its own (a spoilt
    copy of a game uploaded whole would be a rival log of it)."""
    rng = random.Random(7)
    return [
        corrupt(generate(2 + n % 3, f"spoilt-{n}", full_list, BOARD, rng_seed=n), kind, rng)
        for n, kind in enumerate(sorted(CORRUPTIONS))
    ]


def register(pipe: Pipeline, name: str, words: bytes) -> str:
    response = pipe.client.post(
        "/v1/lexicons", params={"name": name}, content=words,
        headers={**ADMIN, "Content-Type": "text/plain"},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def words_of(lexicon: Lexicon) -> bytes:
    return "".join(word + "\n" for word in sorted(lexicon.words)).encode()


@pytest.fixture
def pipe(tmp_path: Path, game_words: Lexicon) -> Iterator[Pipeline]:
    """A Crosstiles contest judged with the generated games' own words."""
    with open_pipeline(tmp_path) as pipeline:
        register(pipeline, "game-words", words_of(game_words))
        pipeline.add_contest(CONTEST, lexicon="game-words", game="crosstiles")
        yield pipeline


def logger(pipe: Pipeline, name: str) -> TeamLogin:
    return pipe.add_team(name, contest=CONTEST, uploads_logs=True)


def sent(pipe: Pipeline, team: TeamLogin, logs: list[bytes]) -> list[str]:
    ids = [pipe.accepted(team, log)["id"] for log in logs]
    assert {outcome for _, outcome in drain(pipe.services)} == {Outcome.JUDGED}
    return ids


def report_of(pipe: Pipeline, submission_id: str) -> dict[str, Any]:
    response = pipe.client.get(f"/v1/submissions/{submission_id}/report", headers=ADMIN)
    assert response.status_code == 200, response.text
    return dict(response.json())


def standings_of(reports: list[CrosstilesReport]) -> list[dict[str, Any]]:
    """The standings the offline verifier's reports make: by player, games, wins (1/k each
    in a k-way tie) and spread (score minus the best other score), ranked; each player's
    Glicko-2 rating over the valid games in the order given (the order they were uploaded)."""
    table: dict[str, list[Any]] = {}
    games = [
        [Seat(p.nick, p.score, p.removed) for p in report.players]
        for report in reports
        if report.valid
    ]
    ratings = contest_ratings(games)
    for report in reports:
        if not report.valid:
            continue
        for player in report.players:
            others = max(p.score for p in report.players if p is not player)
            row = table.setdefault(player.nick, [0, Fraction(0), 0])
            row[0] += 1
            if player.nick in report.winners:
                row[1] += Fraction(1, len(report.winners))
            row[2] += player.score - others
    ranked = sorted(table.items(), key=lambda item: (-item[1][1], -item[1][2], item[0]))
    return [
        {
            "rank": n,
            "nick": nick,
            "games": played,
            "wins": float(wins),
            "spread": spread,
            **shown(ratings[nick]),
        }
        for n, (nick, (played, wins, spread)) in enumerate(ranked, 1)
    ]


def standing_moves(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The players whose rank, games, wins or spread differ, with both, by their new rank."""
    old, new = {r["nick"]: r for r in before}, {r["nick"]: r for r in after}
    fields = ("rank", "games", "wins", "spread")
    return [
        {
            "player": nick,
            **{f"old_{f}": old[nick][f] if nick in old else None for f in fields},
            **{f"new_{f}": new[nick][f] if nick in new else None for f in fields},
        }
        for nick in sorted(
            old.keys() | new.keys(), key=lambda n: (new.get(n, {}).get("rank", 1e9), n)
        )
        if old.get(nick) != new.get(nick)
    ]


# -- the contest and who may upload -----------------------------------------------------------


def test_a_contest_is_created_with_its_game_board_and_word_list_fixed(
    pipe: Pipeline, game_words: Lexicon
) -> None:
    pipe.add_contest("plain")

    shown = pipe.client.get(f"/v1/contests/{CONTEST}").json()
    listed = {c["id"]: c["game"] for c in pipe.client.get("/v1/contests").json()["contests"]}

    assert (shown["game"], shown["layout"], shown["lexicon"]) == (
        "crosstiles", BOARD.id, game_words.id,
    )  # fmt: skip
    assert listed == {CONTEST: "crosstiles", "plain": "wordytaire"}
    boards = pipe.client.get("/v1/boards", headers=ADMIN).json()["boards"]
    assert [(b["id"], b["name"]) for b in boards] == [(BOARD.id, BOARD.name)]
    layouts = pipe.client.get("/v1/layouts", headers=ADMIN).json()["layouts"]
    assert [row["id"] for row in layouts] == [default_layout().id]  # no board among them
    body = {"id": "odd", "title": "Odd", "lexicon": "game-words", "opens_at": shown["opens_at"],
            "closes_at": shown["closes_at"]}  # fmt: skip
    # A Wordytaire layout is no board, and a game the server does not know is refused.
    as_board = {**body, "game": "crosstiles", "layout": default_layout().id}
    assert pipe.client.post("/v1/contests", json=as_board, headers=ADMIN).status_code == 422
    unknown = {**body, "game": "chess"}
    assert pipe.client.post("/v1/contests", json=unknown, headers=ADMIN).status_code == 422


def test_a_team_not_allowed_to_upload_logs_is_refused_and_a_grant_takes_effect_at_once(
    pipe: Pipeline, games: list[bytes]
) -> None:
    team = pipe.add_team("plain", contest=CONTEST)

    refused = pipe.upload(team, games[0])

    assert refused.status_code == 403
    assert "may not upload game logs" in refused.json()["detail"]
    assert pipe.uploads() == {} and pipe.publisher.asked == []
    granted = pipe.client.patch(f"/v1/teams/{team.id}", json={"uploads_logs": True}, headers=ADMIN)
    assert granted.status_code == 200 and granted.json()["uploads_logs"] is True
    assert pipe.upload(team, games[0]).status_code == 202
    listed = pipe.client.get(f"/v1/contests/{CONTEST}/teams", headers=ADMIN).json()
    assert listed["game"] == "crosstiles"
    assert listed["teams"] == [{"id": team.id, "name": "plain", "uploads_logs": True}]
    assert [e["uploads_logs"] for e in pipe.events() if e["type"] == "team.updated"] == [True]


def test_a_right_taken_back_holds_even_where_the_team_is_still_remembered(
    pipe: Pipeline, games: list[bytes]
) -> None:
    team = logger(pipe, "ravens")
    assert pipe.upload(team, games[0]).status_code == 202  # remembered now, with the right

    # Taken back as another API process would: this one's memory of the team is not told.
    assert pipe.store.allow_logs(team.id, False, by="admin") is not None
    refused = pipe.upload(team, games[1])

    assert refused.status_code == 403
    assert len(pipe.uploads()) == 1  # the refused upload's bytes were deleted again


def test_the_same_log_from_two_teams_is_one_submission_that_both_may_read(
    pipe: Pipeline, games: list[bytes]
) -> None:
    first, second = logger(pipe, "ravens"), logger(pipe, "owls")
    pipe.add_contest("other")
    stranger = pipe.add_team("stranger", contest="other")

    original = pipe.upload(first, games[3])
    again = pipe.upload(second, games[3])

    assert original.status_code == again.status_code == 202
    # The same submission; each club's receipt names its own upload's leaf in the log.
    assert {**again.json(), "log_leaf": None} == {**original.json(), "log_leaf": None}
    assert again.json()["log_leaf"] == original.json()["log_leaf"] + 1
    assert again.headers["x-tilejudge-duplicate"] == "true"
    assert len(pipe.uploads()) == 2  # the second club's copy is kept beside the game
    sid = original.json()["id"]
    drain(pipe.services)
    for team in (first, second):
        shown = pipe.client.get(f"/v1/submissions/{sid}", headers=team.headers)
        assert shown.status_code == 200 and shown.json()["team"] == first.id
    assert pipe.client.get(f"/v1/submissions/{sid}", headers=stranger.headers).status_code == 404


def test_the_dashboard_names_each_contests_game(pipe: Pipeline) -> None:
    pipe.add_contest("plain")

    stats = pipe.client.get("/v1/stats", headers=ADMIN).json()

    assert {c["id"]: c["game"] for c in stats["contests"]} == {
        CONTEST: "crosstiles",
        "plain": "wordytaire",
    }


# -- judging ----------------------------------------------------------------------------------


def test_valid_and_invalid_logs_are_judged_exactly_as_the_offline_verifier_judges_them(
    pipe: Pipeline, games: list[bytes], bad_logs: list[bytes], game_words: Lexicon
) -> None:
    logs = games[:6] + bad_logs
    ids = sent(pipe, logger(pipe, "ravens"), logs)

    for sid, log in zip(ids, logs, strict=True):
        expected = verify(log, game_words, BOARD)
        assert report_of(pipe, sid) == {"submission": sid, "contest": CONTEST, **expected.to_json()}
        shown = pipe.submission(sid)
        winning = max((p.score for p in expected.players if p.nick in expected.winners), default=0)
        error = expected.error.to_json() if expected.error else None
        assert (shown["state"], shown["score"]) == ("judged", None)
        # A game log's result is in its own fields: it has none of a move list's.
        assert not {"legal", "illegal", "tiles"} & set(shown)
        assert shown["result"] == {
            "valid": expected.valid, "turns": expected.turns, "winning_score": winning,
            "winners": list(expected.winners), "error": error,
        }  # fmt: skip
        assert (shown["lexicon"], shown["layout"]) == (game_words.id, BOARD.id)
    assert sum(not verify(log, game_words, BOARD).valid for log in bad_logs) >= 8
    # Nor does a game log's row in the export, or in the contest's pages of submissions.
    exported = pipe.client.get(f"/v1/contests/{CONTEST}/results", headers=ADMIN).json()
    listed = pipe.client.get(f"/v1/contests/{CONTEST}/submissions", headers=ADMIN).json()
    for row in exported["results"] + listed["submissions"]:
        assert row["result"] is not None and not {"legal", "illegal", "tiles"} & set(row)
    assert len(exported["results"]) == len(listed["submissions"]) == len(logs)


def test_the_standings_rank_players_by_wins_a_draw_counting_half_then_by_spread(
    pipe: Pipeline, games: list[bytes], bad_logs: list[bytes], game_words: Lexicon
) -> None:
    draw = drawn_game()
    logs = [*games[:10], draw, *bad_logs[:3]]
    ids = sent(pipe, logger(pipe, "ravens"), logs)
    reports = [verify(log, game_words, BOARD) for log in logs]

    board = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard")

    assert board.status_code == 200
    body = board.json()
    assert (body["contest"], body["game"]) == (CONTEST, "crosstiles")
    assert body["players"] == standings_of(reports)
    keys = [(-p["wins"], -p["spread"], p["nick"]) for p in body["players"]]
    assert keys == sorted(keys)
    # The drawn game alone: each of its two winners has half a win from it.
    drawn = standings_of([verify(draw, game_words, BOARD)])
    assert [{k: row[k] for k in ("rank", "nick", "games", "wins", "spread")} for row in drawn] == [
        {"rank": 1, "nick": "ann", "games": 1, "wins": 0.5, "spread": 0},
        {"rank": 2, "nick": "bob", "games": 1, "wins": 0.5, "spread": 0},
    ]
    # A draw between two new players moves neither rating, and makes both surer alike.
    assert [row["rating"] for row in drawn] == [1500.0, 1500.0]
    assert drawn[0]["deviation"] == drawn[1]["deviation"] < 350
    assert body["invalid"] == [
        {"submission": sid, "team": "ravens", **report.error.to_json()}
        for sid, report in zip(ids, reports, strict=True)
        if report.error is not None
    ]
    assert len(body["invalid"]) >= 2


def test_the_leaderboard_command_prints_players_and_invalid_games(
    pipe: Pipeline, games: list[bytes], bad_logs: list[bytes]
) -> None:
    sent(pipe, logger(pipe, "ravens"), [*games[:4], bad_logs[0]])
    body = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()

    printed = format_leaderboard(body, CONTEST).splitlines()

    assert printed[0].split() == ["rank", "player", "games", "wins", "spread", "rating", "RD"]
    assert [line.split()[1] for line in printed[1 : 1 + len(body["players"])]] == [
        p["nick"] for p in body["players"]
    ]
    bad = body["invalid"][0]
    assert any(bad["submission"] in line and bad["reason"] in line for line in printed)


def test_deleting_the_team_that_sent_a_log_takes_its_players_off_the_standings(
    pipe: Pipeline, games: list[bytes]
) -> None:
    team = logger(pipe, "ravens")
    sent(pipe, team, games[:3])
    assert pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()["players"]

    assert pipe.client.delete(f"/v1/teams/{team.id}", headers=ADMIN).status_code == 200

    board = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()
    assert (board["players"], board["invalid"]) == ([], [])


def byte_variants(log: bytes) -> list[bytes]:
    """Four other spellings of one game, as the verifier reads them alike: with a BOM and CRLF
    line ends, with a `#note` line in front, with blank lines and notes between the turns, and
    with wider spacing between the fields."""
    lines = log.decode().split("\n")
    spaced = "\n".join(
        line.replace(" ", "   ") if line.startswith(">") else line for line in lines
    ).encode()
    noted = "\n".join(
        part
        for line in lines
        for part in ([line, "", "#note well played"] if line.startswith(">") else [line])
    ).encode()
    return [
        b"\xef\xbb\xbf" + log.replace(b"\n", b"\r\n"),
        b"#note uploaded again\n" + log,
        noted,
        spaced,
    ]


def test_five_spellings_of_one_game_from_two_clubs_are_one_game_in_the_standings(
    pipe: Pipeline, games: list[bytes], game_words: Lexicon
) -> None:
    first, second = logger(pipe, "ravens"), logger(pipe, "owls")
    variants = byte_variants(games[0])
    assert len({games[0], *variants}) == 5  # five different uploads, byte for byte

    answers = [pipe.upload(first, games[0])]
    answers += [
        pipe.upload(team, log) for team, log in zip((first, second, second, first), variants)
    ]
    drain(pipe.services)

    assert {a.status_code for a in answers} == {202}
    assert {a.json()["id"] for a in answers} == {answers[0].json()["id"]}
    assert [a.headers.get("x-tilejudge-duplicate") for a in answers] == [None] + ["true"] * 4
    players = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()["players"]
    assert players == standings_of([verify(games[0], game_words, BOARD)])
    assert {p["games"] for p in players} == {1}  # one game played, counted once
    # The first club's bytes, and one copy of the second club's (its first spelling).
    assert len(pipe.uploads()) == 2


def test_a_spoilt_log_of_a_game_sent_after_it_is_kept_as_invalid_and_the_game_still_counts(
    pipe: Pipeline, games: list[bytes], game_words: Lexicon
) -> None:
    first, second = logger(pipe, "ravens"), logger(pipe, "owls")
    original = pipe.upload(first, games[0]).json()["id"]
    same = identity(games[0])
    spoilt = [corrupt(games[0], kind, random.Random(3)) for kind in sorted(CORRUPTIONS)]
    other_turns = next(
        log for log in spoilt if identity(log).match == same.match and identity(log).key != same.key
    )  # fmt: skip

    rival = pipe.upload(second, other_turns)

    assert rival.status_code == 202 and rival.json()["id"] != original
    assert len(pipe.uploads()) == 2  # both logs kept: the standings tell which counts
    drain(pipe.services)
    board = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()
    assert board["players"] == standings_of([verify(games[0], game_words, BOARD)])
    assert [row["submission"] for row in board["invalid"]] == [rival.json()["id"]]
    assert board["disputed"] == 0


def test_deleting_the_first_club_to_upload_a_game_keeps_it_for_the_other_club(
    pipe: Pipeline, games: list[bytes], game_words: Lexicon
) -> None:
    first, second = logger(pipe, "ravens"), logger(pipe, "owls")
    sid = pipe.upload(first, games[1]).json()["id"]
    solo = pipe.upload(first, games[2]).json()["id"]
    copy = byte_variants(games[1])[0]
    assert pipe.upload(second, copy).json()["id"] == sid
    drain(pipe.services)

    deleted = pipe.client.delete(f"/v1/teams/{first.id}", headers=ADMIN)
    drain(pipe.services)

    assert deleted.status_code == 200 and deleted.json()["handed_on"] == [sid]
    shown = pipe.client.get(f"/v1/submissions/{sid}", headers=second.headers).json()
    assert (shown["team"], shown["state"]) == (second.id, "judged")
    assert pipe.client.get(f"/v1/submissions/{solo}", headers=ADMIN).status_code == 404
    assert list(pipe.uploads().values()) == [copy]  # the deleted club's bytes are gone
    # ... and the worker hosts' upload caches are asked to forget them, the copy kept.
    assert sorted(pipe.publisher.forgotten) == sorted(
        hashlib.sha256(game).hexdigest() for game in (games[1], games[2])
    )
    report = report_of(pipe, sid)  # judged again from the copy the game now stands on
    assert report == {
        "submission": sid,
        "contest": CONTEST,
        **verify(copy, game_words, BOARD).to_json(),
    }
    board = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()
    assert board["players"] == standings_of([verify(games[1], game_words, BOARD)])


def test_after_the_close_a_club_may_still_upload_a_game_the_contest_has_but_no_new_one(
    pipe: Pipeline, games: list[bytes]
) -> None:
    first, second = logger(pipe, "ravens"), logger(pipe, "owls")
    sid = pipe.upload(first, games[4]).json()["id"]
    assert pipe.client.post(f"/v1/contests/{CONTEST}/close", headers=ADMIN).status_code == 200

    late_copy = pipe.upload(second, b"#note sent after the close\n" + games[4])
    late_new = pipe.upload(second, games[5])

    assert late_copy.status_code == 202 and late_copy.json()["id"] == sid
    assert late_copy.headers["x-tilejudge-duplicate"] == "true"
    assert late_new.status_code == 403
    assert len(pipe.uploads()) == 2  # the game's bytes and the late club's copy of it


# -- rejudging after the word list is corrected -------------------------------------------------


def deps_for(pipe: Pipeline) -> WorkerDeps:
    services = pipe.services
    rulesets = RulesetCache(services.store, services.blobs, services.settings.home / "rulesets")
    return WorkerDeps(
        services.store, SqlRejudgeRuns(services.store), services.blobs, rulesets, 5, 300.0,
        pipe.publisher.publish_batch,
    )  # fmt: skip


def run_rejudge_work(pipe: Pipeline) -> None:
    """Play the bulk queue: every producer, then every batch it published."""
    publisher = pipe.publisher
    assert isinstance(publisher, InMemoryPublisher)
    deps = deps_for(pipe)
    for run_id in list(publisher.rejudges):
        produce(deps, run_id, publisher.publish_batch)
    for run_id, ids in list(publisher.batches):
        judge_batch(deps, run_id, ids)
    publisher.rejudges.clear()
    publisher.batches.clear()


def rejudged(pipe: Pipeline, lexicon: str, mode: str) -> dict[str, Any]:
    """A run to `lexicon`, judged through; its preview."""
    started = pipe.client.post(
        f"/v1/contests/{CONTEST}/rejudges", json={"lexicon": lexicon, "mode": mode}, headers=ADMIN
    )
    assert started.status_code == 202, started.text
    run_rejudge_work(pipe)
    shown = pipe.client.get(f"/v1/rejudges/{started.json()['id']}", headers=ADMIN).json()
    assert shown["state"] == "ready" and shown["preview"] is True
    return dict(shown)


def verdict(report: CrosstilesReport) -> tuple[bool, list[str]]:
    return report.valid, list(report.winners)


def reason(report: CrosstilesReport) -> str | None:
    return None if report.error is None else report.error.reason.value


@pytest.fixture
def pipes(tmp_path: Path) -> Iterator[tuple[Pipeline, Pipeline]]:
    (tmp_path / "full").mkdir()
    (tmp_path / "affected").mkdir()
    with open_pipeline(tmp_path / "full") as full, open_pipeline(tmp_path / "affected") as part:
        yield full, part


def test_the_british_spellings_fix_rejudged_affected_only_equals_a_full_rejudge_and_applies(
    pipes: tuple[Pipeline, Pipeline],
    word_lists: dict[str, bytes],
    full_list: Lexicon,
    games: list[bytes],
    bad_logs: list[bytes],
) -> None:
    logs = [*games, drawn_game(), *bad_logs[:4]]
    enable = Lexicon.from_bytes(word_lists["enable_2-16"])
    before = [verify(log, enable, BOARD) for log in logs]
    after = [verify(log, full_list, BOARD) for log in logs]
    flipped = {n for n in range(len(logs)) if verdict(before[n]) != verdict(after[n])}
    assert flipped, "the corpus must hold games that use British spellings"
    order: dict[str, int] = {}
    previews = {}
    for pipe, mode in zip(pipes, ("full", "affected"), strict=True):
        for name, words in word_lists.items():
            register(pipe, name, words)
        pipe.add_contest(CONTEST, lexicon="enable_2-16", game="crosstiles")
        ids = sent(pipe, logger(pipe, "ravens"), logs)
        order |= {sid: n for n, sid in enumerate(ids)}
        board_before = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()
        assert board_before["players"] == standings_of(before)

        previews[mode] = rejudged(pipe, "crosstiles", mode)

        # Nothing visible changes before `apply`; then everything does, at once.
        assert pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json() == board_before
        applied = pipe.client.post(f"/v1/rejudges/{previews[mode]['id']}/apply", headers=ADMIN)
        assert applied.status_code == 200 and applied.json()["state"] == "applied"
        board_after = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard").json()
        assert board_after["players"] == standings_of(after)
        assert len(board_after["invalid"]) == sum(not r.valid for r in after)
        lexicons = []
        for sid in ids:
            report = report_of(pipe, sid)
            lexicons.append(report.pop("lexicon"))
            expected = after[order[sid]].to_json()
            del expected["lexicon"]
            assert report == {"submission": sid, "contest": CONTEST, **expected}
        # A result carried over keeps the report it had: the same verdict, written under the
        # list the game was first judged with.
        carried = previews[mode]["carried"]
        assert sorted(lexicons) == sorted(
            [full_list.id] * (len(ids) - carried) + [enable.id] * carried
        )

    full, affected = previews["full"], previews["affected"]
    assert full["carried"] == 0 and 0 < affected["carried"] <= len(logs) - len(flipped)
    assert {order[c["submission"]] for c in full["changed"]} == flipped
    for preview in (full, affected):
        changes = sorted(
            (order[c["submission"]], c["old_valid"], c["new_valid"], c["old_winners"],
             c["new_winners"], c["old_reason"], c["new_reason"])
            for c in preview["changed"]
        )  # fmt: skip
        assert changes == sorted(
            (n, before[n].valid, after[n].valid, list(before[n].winners), list(after[n].winners),
             reason(before[n]), reason(after[n]))
            for n in flipped
        )  # fmt: skip
    assert full["rank_changes"] == affected["rank_changes"] != []
    assert full["rank_changes"] == standing_moves(standings_of(before), standings_of(after))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_preview(full)  # as `tilejudge rejudge show` prints it
    shown = printed.getvalue().splitlines()
    assert shown[0].endswith(f"{len(flipped)} games change")
    for change in full["changed"]:
        (line,) = [line for line in shown if change["submission"] in line]
        winners = ", ".join(change["new_winners"])
        assert line.endswith(f"invalid: {change['old_reason']} -> won by {winners}")


def test_words_a_log_reaches_only_under_the_corrected_list_count_for_a_later_fix(
    tmp_path: Path,
    word_lists: dict[str, bytes],
    full_list: Lexicon,
    games: list[bytes],
) -> None:
    """Judged first under ENABLE, a game with a British word stops there; under the corrected
    list it goes on and makes later words. A later fix that removes one of those must find it,
    though the game's first judging never looked that word up."""
    enable = Lexicon.from_bytes(word_lists["enable_2-16"])
    stopped = [g for g in games if not verify(g, enable, BOARD).valid]
    game = stopped[0]
    early = set(verify(game, enable, BOARD).words)
    late = sorted(set(verify(game, full_list, BOARD).words) - early)
    assert late
    trimmed = Lexicon.from_words(full_list.words - {late[-1]})
    with open_pipeline(tmp_path) as pipe:
        for name, words in word_lists.items():
            register(pipe, name, words)
        register(pipe, "trimmed", words_of(trimmed))
        pipe.add_contest(CONTEST, lexicon="enable_2-16", game="crosstiles")
        (sid,) = sent(pipe, logger(pipe, "ravens"), [game])
        first = rejudged(pipe, "crosstiles", "affected")
        assert (
            pipe.client.post(f"/v1/rejudges/{first['id']}/apply", headers=ADMIN).status_code == 200
        )

        second = rejudged(pipe, "trimmed", "affected")

        assert second["carried"] == 0  # judged again, not carried over
        stats = pipe.client.get("/v1/stats", headers=ADMIN).json()
        (shown,) = [run for run in stats["rejudges"] if run["id"] == second["id"]]
        assert shown["game"] == "crosstiles"
        assert shown["changes"] == {
            "scores": len(second["changed"]),
            "ranks": len(second["rank_changes"]),
        }
        assert len(second["changed"]) == 1
        assert (
            pipe.client.post(f"/v1/rejudges/{second['id']}/apply", headers=ADMIN).status_code == 200
        )
        expected = verify(game, trimmed, BOARD)
        assert not expected.valid
        assert report_of(pipe, sid) == {"submission": sid, "contest": CONTEST, **expected.to_json()}


def test_a_rejudge_under_a_layout_of_the_other_game_is_refused(pipe: Pipeline) -> None:
    response = pipe.client.post(
        f"/v1/contests/{CONTEST}/rejudges",
        json={"lexicon": "game-words", "layout": default_layout().id},
        headers=ADMIN,
    )
    assert response.status_code == 422
    assert response.json()["detail"].startswith("no board with id or name")


# -- the command line ---------------------------------------------------------------------------


def test_the_organiser_makes_a_crosstiles_contest_and_allows_its_teams_from_the_command_line(
    pipe: Pipeline,
    tmp_path: Path,
    games: list[bytes],
    bad_logs: list[bytes],
    game_words: Lexicon,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_connect = api_client.connect
    monkeypatch.setattr(
        api_client,
        "connect",
        lambda *a, **k: real_connect(*a, **(k | {"transport": pipe.client._transport})),
    )

    def run(*argv: str) -> str:
        environ = {"TILEJUDGE_HOME": "/nonexistent", "TILEJUDGE_ADMIN_TOKEN": ADMIN_TOKEN}
        code = main([*argv, "--url", "http://testserver"], environ=environ)
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    run(
        "contest", "create", "cli", "--title", "Games", "--lexicon", "game-words",
        "--game", "crosstiles", "--opens", "2020-01-01T00:00:00Z",
        "--closes", "2099-12-24T18:00:00Z",
    )  # fmt: skip
    shown = dict(line.split(None, 1) for line in run("contest", "show", "cli").splitlines())
    token = run("team", "add", "ravens", "--contest", "cli", "--uploads-logs").strip()
    run("team", "add", "owls", "--contest", "cli")
    listed = [line.split() for line in run("team", "list", "--contest", "cli").splitlines()]

    assert (shown["game"], shown["layout"]) == ("crosstiles", BOARD.id)
    assert {name: may for _, name, may in listed[1:]} == {"ravens": "yes", "owls": "no"}
    ids = {name: team_id for team_id, name, _ in listed[1:]}
    ravens = TeamLogin(ids["ravens"], "ravens", token, "cli")
    valid = pipe.accepted(ravens, games[0])["id"]
    invalid = pipe.accepted(ravens, bad_logs[0])["id"]
    drain(pipe.services)
    log = tmp_path / "game.gcg"
    log.write_bytes(bad_logs[0])
    valid_report = run("report", valid).splitlines()
    invalid_report = run("report", invalid, "--file", str(log)).splitlines()
    expected = verify(bad_logs[0], game_words, BOARD).error
    assert expected is not None
    assert valid_report[0] == f"{valid}: valid, {verify(games[0], game_words, BOARD).turns} turns"
    assert valid_report[2].startswith("  winners: ")
    assert invalid_report[0].startswith(
        f"{invalid}: invalid at line {expected.line} ({expected.reason}): '"
    )
    assert invalid_report[1] == f"  {expected.detail}"
    said = run("team", "allow-logs", ravens.id, "--no")
    assert said == f"team ravens ({ravens.id}) may not upload game logs\n"
    assert pipe.upload(ravens, games[1]).status_code == 403


# -- the demo -----------------------------------------------------------------------------------


def test_the_demo_loads_a_crosstiles_contest_of_generated_games_a_few_of_them_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fewer and shorter games than the demo plays, and a Wordytaire list a tenth of the size
    # (with crosstiles.txt beside it, where the demo looks for it): the same contests, sooner.
    monkeypatch.setattr(demo, "MOVES", 60)
    monkeypatch.setattr(demo, "GAMES", 5)
    monkeypatch.setattr(demo, "SPOILT", {1: "score", 3: "truncate"})
    lists = tmp_path / "lists"
    lists.mkdir()
    words = cached_list("words_alpha_2020-08-24.txt").read_bytes().splitlines(keepends=True)
    (lists / "words.txt").write_bytes(b"".join(words[::10]))
    shutil.copy(cached_list("crosstiles.txt"), lists / "crosstiles.txt")
    home = tmp_path / "home"
    home.mkdir()
    with open_pipeline(tmp_path) as pipe:
        load = lambda: demo.load_demo(  # noqa: E731
            "http://testserver", ADMIN_TOKEN, lists / "words.txt", home,
            transport=pipe.client._transport, wait=False,
        )  # fmt: skip
        load()
        load()  # a restart finds the contests, clubs and uploads made already
        drain(pipe.services)

        contest = pipe.client.get(f"/v1/contests/{demo.GAMES_CONTEST}").json()
        board = pipe.client.get(f"/v1/contests/{demo.GAMES_CONTEST}/leaderboard").json()
        teams = pipe.client.get(f"/v1/contests/{demo.GAMES_CONTEST}/teams", headers=ADMIN).json()[
            "teams"
        ]

    assert (contest["game"], contest["layout"]) == ("crosstiles", BOARD.id)
    assert {(t["name"], t["uploads_logs"]) for t in teams} == {(c, True) for c in demo.CLUBS}
    assert len(board["players"]) >= 2
    assert sum(p["games"] for p in board["players"]) >= 2 * len(demo.CLUBS) * (
        demo.GAMES - len(demo.SPOILT)
    )
    reasons = sorted(g["reason"] for g in board["invalid"])
    assert {"score_mismatch", "unfinished"} <= set(reasons)
    assert len(reasons) == len(demo.CLUBS) * len(demo.SPOILT)


def test_the_transparency_log_implies_the_served_standings_a_shared_game_counted_once(
    pipe: Pipeline, games: list[bytes], bad_logs: list[bytes], game_words: Lexicon, tmp_path: Path
) -> None:
    """A game log's verdict entry holds what the standings add up (players, shares of the win,
    spreads; an invalid log's line and reason, not its detail), the same read back from its
    rows as taken from the judged result; the audit recomputes the served standings."""
    from cli.audit import audit
    from tests.unit.api.test_transparency import entries, get, sequence

    club, other = logger(pipe, "club"), logger(pipe, "other club")
    sent(pipe, club, games[:6] + bad_logs[:3])
    for log in games[4:8]:  # two of them the first club sent already
        pipe.accepted(other, log)
    drain(pipe.services)
    sequence(pipe)
    verdicts = [e for e in entries(pipe, CONTEST) if e["type"] == "verdict"]
    assert len(verdicts) == 6 + 3 + 2
    assert any(e["result"]["error"] is not None for e in verdicts)
    assert all("detail" not in (e["result"]["error"] or {}) for e in verdicts)
    played = game("crosstiles")
    for log in games[:2]:
        judged = played.judge(log, game_words, BOARD, "")
        assert played.log_result(judged.result) in [e["result"] for e in verdicts]

    key = pipe.client.get(f"/v1/contests/{CONTEST}/log/key").text.strip()
    found = audit(get(pipe), CONTEST, key=key, seen_dir=tmp_path, err=io.StringIO(), settle=0)
    assert found.problems == [], found
    assert any("players" in line for line in found.passed)
    assert any("invalid" in line for line in found.passed)


def test_a_contest_sets_where_ratings_start_and_the_standings_and_the_audit_follow(
    tmp_path: Path, games: list[bytes], game_words: Lexicon
) -> None:
    from tests.unit.api.test_transparency import run_audit, sequence

    options = {"ratings": {"rating": 1200, "tau": 0.3}}
    (tmp_path / "rated").mkdir()
    with open_pipeline(tmp_path / "rated") as pipe:
        register(pipe, "game-words", words_of(game_words))
        now = datetime.now(UTC)
        body = {
            "id": "rated", "title": "Rated", "lexicon": "game-words", "game": "crosstiles",
            "opens_at": clock.format_time(now - timedelta(hours=1)),
            "closes_at": clock.format_time(now + timedelta(hours=1)), "options": options,
        }  # fmt: skip
        created = pipe.client.post("/v1/contests", json=body, headers=ADMIN)
        assert created.status_code == 201, created.text
        completed = {"rating": 1200.0, "deviation": 350.0, "volatility": 0.06, "tau": 0.3}
        assert created.json()["options"] == {"ratings": completed}
        assert pipe.client.get("/v1/contests/rated").json()["options"] == {"ratings": completed}
        sent(pipe, pipe.add_team("ravens", contest="rated", uploads_logs=True), games[:6])
        reports = [verify(log, game_words, BOARD) for log in games[:6]]

        players = pipe.client.get("/v1/contests/rated/leaderboard").json()["players"]
        rules = RatingRules(rating=1200, tau=0.3)
        ratings = contest_ratings(
            [[Seat(p.nick, p.score, p.removed) for p in r.players] for r in reports if r.valid],
            rules,
        )
        assert [(p["nick"], p["rating"]) for p in players] == [
            (p["nick"], shown(ratings[p["nick"]])["rating"]) for p in players
        ]
        defaults = contest_ratings(
            [[Seat(p.nick, p.score, p.removed) for p in r.players] for r in reports if r.valid]
        )
        assert any(ratings[nick] != defaults[nick] for nick in ratings)  # the options count
        sequence(pipe)
        assert run_audit(pipe, tmp_path / "seen", "rated").problems == []


@pytest.mark.parametrize(
    ("game_name", "options", "sentence"),
    [
        ("crosstiles", {"ratings": {"rating": -5}}, "ratings.rating must be over 0"),
        ("crosstiles", {"ratings": {"tau": "high"}}, "ratings.tau must be a number"),
        ("crosstiles", {"ratings": {"k": 1}}, "ratings take rating, deviation, volatility"),
        ("crosstiles", {"elo": {}}, "a Crosstiles contest takes the option ratings, not 'elo'"),
        ("wordytaire", {"ratings": {}}, "a Wordytaire contest takes no options"),
    ],
)
def test_options_a_game_does_not_take_are_refused_with_a_sentence(
    pipe: Pipeline, game_name: str, options: dict[str, Any], sentence: str
) -> None:
    now = datetime.now(UTC)
    body = {
        "id": "other", "title": "Other", "lexicon": "game-words", "game": game_name,
        "opens_at": clock.format_time(now), "options": options,
        "closes_at": clock.format_time(now + timedelta(hours=1)),
    }  # fmt: skip
    refused = pipe.client.post("/v1/contests", json=body, headers=ADMIN)
    assert refused.status_code == 422, refused.text
    assert sentence in refused.json()["detail"]
    assert pipe.client.get("/v1/contests/other").status_code == 404
