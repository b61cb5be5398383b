"""`rejudge show` and the preview after a run: a team without a rank before the run shows as
`new` (never Python's None), no line ends in spaces, and `rejudge --help` shows both forms of
the command."""

from __future__ import annotations

import io
from typing import Any

import pytest

from cli.games import cli_game
from cli.main import main

RUN = {"id": "r1", "state": "ready", "done": 4, "total": 4, "carried": 0}
SCORES = {
    **RUN,
    "changed": [{"submission": "s1", "team": "team-3", "old_score": 0, "new_score": 63919}],
    "rank_changes": [
        {"team": "team-3", "old_rank": 5, "new_rank": 3},
        {"team": "load-3a1fcc-0", "old_rank": None, "new_rank": 6},
        {"team": "gone", "old_rank": 7, "new_rank": None},
    ],
}
GAMES = {
    **RUN,
    "changed": [
        {
            "submission": "s1",
            "team": "north",
            "old_valid": False,
            "new_valid": True,
            "old_winners": [],
            "new_winners": ["ann"],
            "old_reason": "not_in_dictionary",
            "new_reason": None,
        },
    ],
    "rank_changes": [
        {"player": "ann", "old_rank": 2, "new_rank": 1, "old_wins": 1.0, "new_wins": 2.0},
        {"player": "zed", "old_rank": None, "new_rank": 3, "old_wins": None, "new_wins": 0.0},
    ],
}


def preview(game: str, run: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    cli_game(game).print_preview(run, out)
    return out.getvalue().split("\n")[:-1]


@pytest.mark.parametrize(("game", "run"), [("wordytaire", SCORES), ("crosstiles", GAMES)])
def test_no_preview_line_ends_in_spaces(game: str, run: dict[str, Any]) -> None:
    lines = preview(game, run)
    assert len(lines) > 3
    assert [line for line in lines if line != line.rstrip()] == []


def test_a_team_new_to_the_standings_shows_new_and_one_that_left_them_a_dash() -> None:
    lines = preview("wordytaire", SCORES)
    assert "None" not in "\n".join(lines)
    assert lines[-4:] == [
        "  team                   rank -> new",
        "  team-3                    5 -> 3",
        "  load-3a1fcc-0           new -> 6",
        "  gone                      7 -> -",
    ]


def test_a_player_new_to_the_standings_shows_new_and_no_wins_before() -> None:
    lines = preview("crosstiles", GAMES)
    assert "None" not in "\n".join(lines)
    assert lines[-1] == "  zed                     new -> 3           - -> 0"


def test_rejudge_help_shows_the_form_that_starts_a_run_and_the_one_that_acts_on_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["rejudge", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    forms = [
        line.removeprefix("usage:").strip() for line in usage.splitlines() if "tilejudge" in line
    ]
    assert forms[0].startswith("tilejudge rejudge --contest CONTEST --lexicon LEXICON ")
    assert forms[1].startswith("tilejudge rejudge {show,apply,cancel} RUN_ID ")
    assert "ACTION" not in usage


def test_each_action_has_its_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["rejudge", "cancel", "--help"])
    assert capsys.readouterr().out.startswith("usage: tilejudge rejudge cancel [-h] ")


@pytest.mark.parametrize("game", ["wordytaire", "crosstiles"])
def test_a_run_applied_before_summaries_were_kept_says_so_instead_of_counting_nothing(
    game: str,
) -> None:
    applied = {**RUN, "state": "applied", "summary_recorded": False, "changed": []}
    assert preview(game, applied) == [
        "rejudge r1: applied, 4/4 done (0 carried over), what it changed was not recorded "
        "(applied before summaries were kept)"
    ]
    recorded = {**applied, "summary_recorded": True}
    assert preview(game, recorded)[0].endswith(
        "(0 carried over), 0 " + ("scores change" if game == "wordytaire" else "games change")
    )


def test_one_change_is_counted_in_the_singular() -> None:
    one_game = {**GAMES, "rank_changes": []}
    assert preview("crosstiles", one_game)[0].endswith("(0 carried over), 1 game changes")
    one_score = {**SCORES, "rank_changes": []}
    assert preview("wordytaire", one_score)[0].endswith("(0 carried over), 1 score changes")
