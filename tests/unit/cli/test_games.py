"""Each game's command-line side, found by its name: a game with a module of its own under
`cli.games`, and one without (or one the client does not know), which is shown as teams
ranked by score, its report as JSON, and has no offline command."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.client import format_leaderboard
from cli.games import TeamRanked, cli_game, game_help
from cli.games.crosstiles import Crosstiles
from cli.games.wordytaire import Wordytaire
from cli.main import main
from core import games


class Toy:
    """A game registered in `core.games` with no module under `cli.games`."""

    name = "toy"
    rules_noun = "board"
    shared_uploads = True
    words_vary = False
    rules_errors: tuple[type[Exception], ...] = ()


@pytest.fixture
def toy() -> Iterator[str]:
    games.register(Toy())  # type: ignore[arg-type]  # only what the command line reads
    cli_game.cache_clear()
    yield "toy"
    games.unregister("toy")
    cli_game.cache_clear()


def test_each_registered_game_finds_its_own_module() -> None:
    assert isinstance(cli_game("wordytaire"), Wordytaire)
    assert isinstance(cli_game("crosstiles"), Crosstiles)


def test_only_a_game_whose_uploads_name_players_shows_the_teams_upload_rights(toy: str) -> None:
    assert cli_game("crosstiles").shows_upload_rights
    assert not cli_game("wordytaire").shows_upload_rights
    assert cli_game(toy).shows_upload_rights  # Toy's uploads are shared
    assert not cli_game("chess").shows_upload_rights


def test_a_game_without_a_module_and_one_the_client_does_not_know_are_ranked_by_score(
    toy: str,
) -> None:
    assert type(cli_game(toy)) is TeamRanked
    assert type(cli_game("chess")) is TeamRanked  # named by a newer server
    board = {
        "contest": "c",
        "game": toy,
        "entries": [{"rank": 1, "team": "t", "score": 7, "received_at": "T"}],
    }
    assert format_leaderboard(board, "c").splitlines() == [
        "rank  team  score  received_at",
        "   1  t         7  T",
    ]
    assert format_leaderboard({"contest": "c", "game": "chess", "entries": []}, "c") == (
        "no judged submissions in contest c yet\n"
    )


def test_a_game_without_a_module_prints_a_report_as_indented_json(toy: str) -> None:
    out = io.StringIO()
    report = {"submission": "s", "contest": "c", "moves": [1, 2]}

    cli_game(toy).print_report("s", None, report, out)

    assert out.getvalue() == json.dumps(report, indent=2) + "\n"


def test_the_game_option_lists_every_registered_game_with_the_default_first(toy: str) -> None:
    assert game_help() == "wordytaire (the default), crosstiles or toy"


def test_judge_and_generate_say_a_game_without_a_module_has_no_offline_command(
    toy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "upload.txt"
    path.write_text("x\n")

    assert main(["judge", "--game", toy, str(path)], {}) == 2
    assert "--game toy has no offline command" in capsys.readouterr().err
    assert main(["generate", "--game", toy, "--seed", "1"], {}) == 2
    assert "--game toy has no offline command" in capsys.readouterr().err
    assert main(["judge", "--game", toy, str(path), "--board", "b"], {}) == 2
    assert capsys.readouterr().err == "tilejudge: --board: not an option of --game toy\n"


def test_a_crosstiles_preview_with_nothing_changed_counts_games_not_scores() -> None:
    run = {"id": "r", "state": "ready", "total": 4, "done": 4, "carried": 1}
    out = io.StringIO()

    cli_game("crosstiles").print_preview({**run, "changed": [], "rank_changes": []}, out)

    assert out.getvalue() == "rejudge r: ready, 4/4 done (1 carried over), 0 games change\n"
