"""Rival logs of one Crosstiles game (the same seed and players, other turns) through the API:
an invalid or unfinished one never blocks the valid one, two valid ones are a dispute counted
for no one and shown to the organiser and the clubs that sent them, and the organiser settles
it (the API, the command line, the dashboard), after the close too."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from core import clock, transparency
from core.games import game
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, TeamLogin, drain, open_pipeline
from devstack.testing.word_lists import cached_list
from infra import api_client
from judge import Lexicon
from judge.crosstiles import default_board, generate, verify
from judge.crosstiles.identity import identity
from tests.unit.api.test_crosstiles_contest import logger, register, standings_of, words_of
from tests.unit.api.test_dashboard import sign_in

BOARD = default_board()
CONTEST = "xt"
SEED = "club-night-7"


@pytest.fixture(scope="module")
def full_list() -> Lexicon:
    return Lexicon.from_bytes(cached_list("crosstiles.txt").read_bytes())


@pytest.fixture(scope="module")
def rivals(full_list: Lexicon) -> list[bytes]:
    """Three whole valid games of one seed and players that disagree on every turn after the
    first racks, and a game of another seed."""
    logs = [generate(2, SEED, full_list, BOARD, rng_seed=n) for n in (1, 2, 3)]
    logs.append(generate(2, "another-night", full_list, BOARD, rng_seed=4))
    assert len({identity(log).match for log in logs[:3]}) == 1
    assert len({identity(log).key for log in logs[:3]}) == 3
    return logs


@pytest.fixture(scope="module")
def rival_words(rivals: list[bytes], full_list: Lexicon) -> Lexicon:
    return Lexicon.from_words({w for log in rivals for w in verify(log, full_list, BOARD).words})


@pytest.fixture
def pipe(tmp_path: Path, rival_words: Lexicon) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        register(pipeline, "rival-words", words_of(rival_words))
        pipeline.add_contest(CONTEST, lexicon="rival-words", game="crosstiles")
        yield pipeline


def prefix_of(log: bytes, lines: int = 8) -> bytes:
    """A log's first lines: its header and a few turns, a game not finished."""
    return b"".join(log.splitlines(keepends=True)[:lines])


def board(pipe: Pipeline, headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = pipe.client.get(f"/v1/contests/{CONTEST}/leaderboard", headers=headers or {})
    assert response.status_code == 200, response.text
    return dict(response.json())


def disputes(pipe: Pipeline, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = pipe.client.get(f"/v1/contests/{CONTEST}/disputes", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["disputes"])


def settle(pipe: Pipeline, match: str, submission: str, headers: dict[str, str] = ADMIN) -> Any:
    return pipe.client.post(
        f"/v1/contests/{CONTEST}/disputes/{match}/settle",
        json={"submission": submission},
        headers=headers,
    )


def close(pipe: Pipeline) -> None:
    response = pipe.client.post(f"/v1/contests/{CONTEST}/close", headers=ADMIN)
    assert response.status_code == 200, response.text


def disputed_pair(pipe: Pipeline, rivals: list[bytes]) -> tuple[TeamLogin, TeamLogin, str, str]:
    """Two clubs' rival valid logs of one game, judged: the clubs, then the logs' ids."""
    ravens, owls = logger(pipe, "ravens"), logger(pipe, "owls")
    first = pipe.accepted(ravens, rivals[0])["id"]
    second = pipe.accepted(owls, rivals[1])["id"]
    drain(pipe.services)
    return ravens, owls, first, second


# -- invalid against valid: no organiser needed ------------------------------------------------


def test_a_prefix_uploaded_first_does_not_block_the_real_log_which_counts(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    """The review's attack: the seed is public once the game ends; a club that knows it and
    the nicks uploads an 8-line prefix first. The real log is taken (not 409) and counts; the
    prefix is its uploader's invalid log."""
    spoiler, ravens = logger(pipe, "spoiler"), logger(pipe, "ravens")
    prefix = pipe.upload(spoiler, prefix_of(rivals[0]))
    assert prefix.status_code == 202, prefix.text

    real = pipe.upload(ravens, rivals[0])

    assert real.status_code == 202, real.text
    assert real.json()["id"] != prefix.json()["id"]
    drain(pipe.services)
    shown = board(pipe)
    assert shown["players"] == standings_of([verify(rivals[0], rival_words, BOARD)])
    assert [row["submission"] for row in shown["invalid"]] == [prefix.json()["id"]]
    assert shown["invalid"][0]["team"] == "spoiler" and shown["invalid"][0]["reason"]
    assert shown["disputed"] == 0
    assert disputes(pipe, ADMIN) == []


def test_after_a_prefix_the_real_log_sent_in_time_counts_and_one_sent_late_is_refused_as_late(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    spoiler, ravens, owls = logger(pipe, "spoiler"), logger(pipe, "ravens"), logger(pipe, "owls")
    pipe.accepted(spoiler, prefix_of(rivals[0]))
    real = pipe.accepted(ravens, rivals[0])["id"]
    drain(pipe.services)
    close(pipe)

    again = pipe.upload(ravens, rivals[0])
    late = pipe.upload(owls, rivals[1])

    assert again.status_code == 202 and again.json()["id"] == real  # its answer, retried
    assert late.status_code == 403 and "closed" in late.json()["detail"]
    assert board(pipe)["players"] == standings_of([verify(rivals[0], rival_words, BOARD)])


# -- valid against valid: a dispute -----------------------------------------------------------


def test_two_valid_logs_that_disagree_count_for_no_one_and_are_shown_to_both_clubs_alone(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    ravens, owls, first, second = disputed_pair(pipe, rivals)
    larks = logger(pipe, "larks")
    other = pipe.accepted(larks, rivals[3])["id"]
    drain(pipe.services)

    shown = board(pipe)
    assert shown["players"] == standings_of([verify(rivals[3], rival_words, BOARD)])
    assert shown["disputed"] == 1 and shown["invalid"] == []
    listed = disputes(pipe, ADMIN)
    assert [d["match"] for d in listed] == [identity(rivals[0]).match]
    logs = listed[0]["logs"]
    assert [(log["submission"], log["teams"]) for log in logs] == [
        (first, ["ravens"]), (second, ["owls"])
    ]  # fmt: skip
    assert all(log["winners"] for log in logs)
    assert disputes(pipe, ravens.headers) == listed
    assert disputes(pipe, owls.headers) == listed
    assert disputes(pipe, larks.headers) == []  # not a party to it
    assert other not in {log["submission"] for log in logs}
    pipe.add_contest("elsewhere", lexicon="rival-words", game="crosstiles")
    stranger = logger_in(pipe, "stranger", "elsewhere")
    refused = pipe.client.get(f"/v1/contests/{CONTEST}/disputes", headers=stranger.headers)
    assert refused.status_code == 403


def logger_in(pipe: Pipeline, name: str, contest: str) -> TeamLogin:
    return pipe.add_team(name, contest=contest, uploads_logs=True)


def test_the_organiser_settles_after_the_close_and_the_settlement_is_an_event_and_a_log_entry(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    ravens, _, first, second = disputed_pair(pipe, rivals)
    match = identity(rivals[0]).match
    assert match is not None
    close(pipe)

    assert settle(pipe, match, second, headers=ravens.headers).status_code == 403
    settled = settle(pipe, match, second)

    assert settled.status_code == 200, settled.text
    assert settled.json() == {
        "contest": CONTEST, "match": match, "chosen": second, "passed_over": [first],
        "changed": True,
    }  # fmt: skip
    shown = board(pipe)
    assert shown["players"] == standings_of([verify(rivals[1], rival_words, BOARD)])
    assert shown["disputed"] == 0 and disputes(pipe, ADMIN) == []
    events = [e for e in pipe.events() if e["type"] == "dispute.settled"]
    assert [(e["submission"], e["match"], e["passed_over"], e["by"]) for e in events] == [
        (second, match, [first], "admin")
    ]
    entries, _ = pipe.store.log_entries(CONTEST, 0, 10_000)
    settled_entries = [
        entry for entry in map(transparency.decode, entries) if entry["type"] == "settled"
    ]
    assert settled_entries == [{"v": 1, "type": "settled", "submission": second, "match": match}]
    # The same settlement again changes nothing and records nothing.
    assert settle(pipe, match, second).json()["changed"] is False
    assert len([e for e in pipe.events() if e["type"] == "dispute.settled"]) == 1


def test_a_settlement_is_refused_for_an_invalid_log_a_log_of_another_game_or_a_lone_log(
    pipe: Pipeline, rivals: list[bytes]
) -> None:
    spoiler = logger(pipe, "spoiler")
    prefix = pipe.accepted(spoiler, prefix_of(rivals[0]))["id"]
    _, _, first, _ = disputed_pair(pipe, rivals)
    lone = pipe.accepted(spoiler, rivals[3])["id"]
    drain(pipe.services)
    match, lone_match = identity(rivals[0]).match, identity(rivals[3]).match
    assert match is not None and lone_match is not None

    invalid = settle(pipe, match, prefix)
    foreign = settle(pipe, match, lone)
    alone = settle(pipe, lone_match, lone)
    unknown_game = settle(pipe, "0" * 64, first)
    bad_key = settle(pipe, "not-a-key", first)

    assert invalid.status_code == 422 and "invalid log" in invalid.json()["detail"]
    assert foreign.status_code == 404 and "not a log of game" in foreign.json()["detail"]
    assert alone.status_code == 409 and "nothing to settle" in alone.json()["detail"]
    assert unknown_game.status_code == 404
    assert bad_key.status_code == 422
    assert board(pipe)["disputed"] == 1


def test_a_valid_log_uploaded_after_a_settlement_disputes_the_game_again_with_the_chosen_one(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    _, _, first, second = disputed_pair(pipe, rivals)
    match = identity(rivals[0]).match
    assert match is not None
    assert settle(pipe, match, first).status_code == 200

    third = pipe.accepted(logger(pipe, "larks"), rivals[2])["id"]
    drain(pipe.services)

    assert board(pipe)["players"] == []
    logs = disputes(pipe, ADMIN)[0]["logs"]
    assert [log["submission"] for log in logs] == [first, third]  # the passed-over one stays so
    assert settle(pipe, match, third).json()["passed_over"] == sorted([first, second])
    assert board(pipe)["players"] == standings_of([verify(rivals[2], rival_words, BOARD)])


def test_the_public_board_of_a_frozen_contest_shows_no_dispute_made_after_the_freeze(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = datetime.now(UTC)
    body = {
        "id": "fz", "title": "Frozen", "lexicon": "rival-words", "game": "crosstiles",
        "opens_at": clock.format_time(now - timedelta(hours=1)),
        "closes_at": clock.format_time(now + timedelta(hours=1)),
        "freeze_at": clock.format_time(now + timedelta(minutes=30)),
    }  # fmt: skip
    assert pipe.client.post("/v1/contests", json=body, headers=ADMIN).status_code == 201
    ravens, owls = logger_in(pipe, "ravens", "fz"), logger_in(pipe, "owls", "fz")
    pipe.accepted(ravens, rivals[0])
    drain(pipe.services)
    later = clock.format_time(now + timedelta(minutes=31))
    monkeypatch.setattr(clock, "now", lambda: later)  # past the freeze
    pipe.accepted(owls, rivals[1])
    drain(pipe.services)

    public = pipe.client.get("/v1/contests/fz/leaderboard").json()
    organiser = pipe.client.get("/v1/contests/fz/leaderboard", headers=ADMIN).json()

    assert public["players"] == standings_of([verify(rivals[0], rival_words, BOARD)])
    assert public["disputed"] == 0 and public["pending"] == 1
    assert organiser["players"] == [] and organiser["disputed"] == 1


# -- the command line and the dashboard ---------------------------------------------------------


def test_the_dispute_commands_list_and_settle_a_game(
    pipe: Pipeline,
    rivals: list[bytes],
    rival_words: Lexicon,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_connect = api_client.connect
    monkeypatch.setattr(
        api_client,
        "connect",
        lambda *a, **k: real_connect(*a, **(k | {"transport": pipe.client._transport})),
    )
    ravens, _, first, second = disputed_pair(pipe, rivals)

    def run(*argv: str, token: str = ADMIN_TOKEN) -> tuple[int, str, str]:
        environ = {"TILEJUDGE_HOME": "/nonexistent", "TILEJUDGE_ADMIN_TOKEN": token}
        code = main([*argv, "--url", "http://testserver", "--token", token], environ=environ)
        out, err = capsys.readouterr()
        return code, out, err

    code, listed, _ = run("dispute", "list", "--contest", CONTEST, token=ravens.token)
    assert code == 0
    assert f"game {identity(rivals[0]).match}:" in listed
    assert first in listed and second in listed and "ravens" in listed and "owls" in listed

    code, out, _ = run("dispute", "settle", "--contest", CONTEST, first)
    assert code == 0 and f"{first} counts; passed over: {second}" in out
    assert board(pipe)["players"] == standings_of([verify(rivals[0], rival_words, BOARD)])
    assert run("dispute", "list", "--contest", CONTEST)[1] == f"no disputed games in {CONTEST}\n"
    code, _, err = run("dispute", "settle", "--contest", CONTEST, second)
    assert code == 2 and "not a log of a disputed game" in err


def test_the_dashboard_leaderboard_page_lists_a_dispute_and_settles_it_with_a_form(
    pipe: Pipeline, rivals: list[bytes], rival_words: Lexicon
) -> None:
    _, _, first, second = disputed_pair(pipe, rivals)
    match = identity(rivals[0]).match
    page_url = f"/dashboard/contests/{CONTEST}/leaderboard"
    assert sign_in(pipe).status_code == 303

    page = pipe.client.get(page_url)
    action = f"/dashboard/contests/{CONTEST}/disputes/{match}/settle"
    assert page.status_code == 200 and "<script" not in page.text
    assert f'action="{action}"' in page.text and f'value="{second}"' in page.text
    foreign = pipe.client.post(
        action, data={"submission": second}, headers={"Origin": "http://elsewhere.example"}
    )
    assert foreign.status_code == 403

    done = pipe.client.post(action, data={"submission": second}, follow_redirects=False)

    assert done.status_code == 303 and done.headers["location"] == page_url
    assert board(pipe)["players"] == standings_of([verify(rivals[1], rival_words, BOARD)])
    assert 'data-field="disputes">none' in pipe.client.get(page_url).text
    settled = [e for e in pipe.events() if e["type"] == "dispute.settled"]
    assert [(e["submission"], e["passed_over"], e["by"]) for e in settled] == [
        (second, [first], "dashboard")
    ]


# -- the transparency log -------------------------------------------------------------------------


def test_the_transparency_log_implies_the_served_standings_through_a_dispute_and_its_settlements(
    pipe: Pipeline, rivals: list[bytes], tmp_path: Path
) -> None:
    """Each verdict entry of a game log names its match, and a `settled` entry passes over the
    rival logs uploaded before it: the standings the log implies are those served, disputed,
    settled and disputed again, and the audit finds nothing."""
    from cli.audit import audit
    from tests.unit.api.test_transparency import entries, get, sequence

    def implied_players() -> list[dict[str, Any]]:
        sequence(pipe)
        replayed = transparency.implied(enumerate(entries(pipe, CONTEST)))
        assert replayed.problems == []
        return game("crosstiles").log_standings(replayed.live())["players"]

    spoiler = logger(pipe, "spoiler")
    pipe.accepted(spoiler, prefix_of(rivals[0]))
    _, _, first, _ = disputed_pair(pipe, rivals)
    pipe.accepted(spoiler, rivals[3])
    drain(pipe.services)
    match = identity(rivals[0]).match
    assert match is not None
    logged = entries(pipe, CONTEST)
    assert all("match" not in e for e in logged if e["type"] == "upload")
    verdicts = [e for e in logged if e["type"] == "verdict"]
    assert {e.get("match") for e in verdicts} == {match, identity(rivals[3]).match}

    assert implied_players() == board(pipe, ADMIN)["players"]  # the dispute counted nowhere
    assert settle(pipe, match, first).status_code == 200
    assert implied_players() == board(pipe, ADMIN)["players"]  # the chosen log counted
    pipe.accepted(logger(pipe, "larks"), rivals[2])
    drain(pipe.services)
    assert implied_players() == board(pipe, ADMIN)["players"]  # disputed again

    key = pipe.client.get(f"/v1/contests/{CONTEST}/log/key").text.strip()
    found = audit(get(pipe), CONTEST, key=key, seen_dir=tmp_path, err=io.StringIO(), settle=0)
    assert found.problems == [], found
    assert any("players" in line for line in found.passed)
