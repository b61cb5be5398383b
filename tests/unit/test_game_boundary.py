"""A game is a plug-in in the API's static files and the benchmarks too: the dashboard's script,
styles and pages name no game (a file named after one may), and take each game's words from
`/v1/stats` (`api.pages.games.words`); a benchmark that names a game in code is named after it.
The project's other Python modules are checked by `test_architecture`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.stats import games_words
from core.games import register, unregister
from core.games.wordytaire import Wordytaire
from tests.unit.test_architecture import GAME_NAMES, ROOT, names_a_game

STATIC = ROOT / "api" / "static"
BENCHMARKS = ROOT / "benchmarks"


def files_not_named_after_a_game(folder: Path, pattern: str = "*") -> list[Path]:
    """The files under `folder` that match `pattern`, in no file or folder named after a game."""
    return [
        path
        for path in sorted(folder.rglob(pattern))
        if path.is_file()
        and not any(GAME_NAMES.search(part) for part in path.relative_to(folder).parts)
    ]


def static_files_naming_a_game(folder: Path, root: Path = ROOT) -> list[str]:
    """Where a file under `folder`, in no file or folder named after a game, names one: a
    Python module as `names_a_game` reads it, any other file in any line of its text."""
    found = []
    for path in files_not_named_after_a_game(folder):
        if path.suffix == ".py":
            found += names_a_game(path, root)
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        found += [
            f"{path.relative_to(root)}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1)
            if GAME_NAMES.search(line)
        ]
    return found


def test_the_static_files_name_no_game_but_in_files_named_after_one() -> None:
    assert any(STATIC.glob("*.js")), "no static files found: the path is wrong"
    assert static_files_naming_a_game(STATIC) == []


def test_the_static_finder_sees_a_planted_name_but_not_in_files_named_after_a_game(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "static"
    (folder / "crosstiles").mkdir(parents=True)
    (folder / "page.js").write_text('const a = 1;\nif (game === "CrossTiles") a = 2;\n')
    (folder / "page.css").write_text(".game { color: red; }\n")
    (folder / "wordytaire.css").write_text(".wordytaire { color: red; }\n")
    (folder / "crosstiles" / "board.js").write_text('const game = "crosstiles";\n')
    (folder / "helper.py").write_text('"""For Wordytaire."""\nGAME = "wordytaire"\n')

    found = static_files_naming_a_game(folder, tmp_path)

    assert found == [
        "static/helper.py:2: wordytaire",
        'static/page.js:2: if (game === "CrossTiles") a = 2;',
    ]


def benchmarks_naming_a_game(folder: Path, root: Path = ROOT) -> list[str]:
    """Where a module under `folder`, in no file or folder named after a game, names one in
    code, as `names_a_game` reads it."""
    return [
        hit
        for path in files_not_named_after_a_game(folder, "*.py")
        for hit in names_a_game(path, root)
    ]


def test_the_benchmarks_name_no_game_but_in_modules_named_after_one() -> None:
    assert any(BENCHMARKS.glob("*.py")), "no benchmarks found: the path is wrong"
    assert benchmarks_naming_a_game(BENCHMARKS) == []


def test_the_benchmark_finder_sees_a_planted_name_but_not_in_modules_named_after_a_game(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "benchmarks"
    (folder / "helpers").mkdir(parents=True)
    (folder / "crosstiles").mkdir()
    (folder / "pipeline.py").write_text('"""Times Wordytaire."""\nfrom core.games import DEFAULT\n')
    (folder / "rejudge.py").write_text("from judge.wordytaire import default_layout\n")
    (folder / "helpers" / "site.py").write_text('GAME = "CrossTiles"\n')
    (folder / "wordytaire_judge.py").write_text("from judge.wordytaire import judge\n")
    (folder / "crosstiles" / "speed.py").write_text('GAME = "crosstiles"\n')
    (folder / "notes.txt").write_text("wordytaire\n")

    found = benchmarks_naming_a_game(folder, tmp_path)

    assert found == [
        "benchmarks/helpers/site.py:1: CrossTiles",
        "benchmarks/rejudge.py:1: judge.wordytaire default_layout",
    ]


# -- the words the dashboard takes from /v1/stats -------------------------------------------


def test_each_game_gives_the_dashboard_the_words_it_showed_for_that_game() -> None:
    words = games_words()

    assert words["wordytaire"] == {
        "rules_noun": "layout",
        "leaderboard": "each team's best score, ranked",
        "scores": ("score", "scores"),
        "ranks": ("rank", "ranks"),
        "preview": "the scores and ranks that change, team by team",
    }
    assert words["crosstiles"] == {
        "rules_noun": "board",
        "leaderboard": "the players of its valid game logs, ranked, and its invalid logs",
        "scores": ("game", "games"),
        "ranks": ("player's standing", "players' standings"),
        "preview": "the games whose verdict or winners change, and the players whose standing "
        "moves",
    }


class Renamed(Wordytaire):
    """A game of its own name, with no page module: as a game from outside the project."""

    name = "renamed"
    rules_noun = "scheme"


@pytest.fixture
def renamed() -> Iterator[None]:
    register(Renamed())
    try:
        yield
    finally:
        unregister(Renamed.name)


@pytest.mark.usefixtures("renamed")
def test_a_game_without_a_page_module_is_spoken_of_as_a_team_ranking_with_its_own_rules() -> None:
    words = games_words()

    assert words["renamed"] == words["wordytaire"] | {"rules_noun": "scheme"}
