"""Both builds of the engine against devstack/testing/plain_judge.py, a second, plain reading of
SPEC."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devstack.testing.plain_judge import plain_judge
from devstack.testing.wordytaire_engines import ENGINES, JudgeFn
from judge import Lexicon
from judge.wordytaire import Layout, Report
from judge.wordytaire.generator import WordIndex, generate
from judge.wordytaire.layout import BONUSES, LETTERS
from tests.strategies import any_bytes, submissions
from tests.unit.judge.test_properties import crowded_games

examples = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def engine_view(report: Report) -> dict[str, Any]:
    """The engine's report in plain_judge's shape: its extra "detail" key left out."""
    lines = []
    for verdict in report.verdicts:
        line = verdict.to_json()
        line.pop("detail", None)
        lines.append(line)
    return {
        "total": report.total,
        "legal": report.legal,
        "illegal": report.illegal,
        "lines": lines,
        "bag_left": report.bag_left,
    }


def plain_view(data: bytes, words: frozenset[str], bonus_rows: Any = None) -> dict[str, Any]:
    result = plain_judge(data, words, bonus_rows)
    return {key: result[key] for key in ("total", "legal", "illegal", "lines", "bag_left")}


def first_difference(data: bytes, ours: dict[str, Any], plain: dict[str, Any]) -> str:
    """A readable account of where two reports part: the line, its text, both verdicts."""
    for mine, theirs in zip(ours["lines"], plain["lines"], strict=False):
        if mine != theirs:
            number = min(mine["line"], theirs["line"])
            text = data.split(b"\n")[number - 1]
            return f"line {number} {text!r}: engine {mine}, plain {theirs}"
    return f"engine {ours}\nplain {plain}"


def assert_same_as_plain(
    engine: JudgeFn, data: bytes, lexicon: Lexicon, layout: Layout, bonus_rows: Any = None
) -> None:
    ours = engine_view(engine(data, lexicon, layout))
    plain = plain_view(data, lexicon.words, bonus_rows)
    assert ours == plain, first_difference(data, ours, plain)


# --- generated submissions with the real lexicon -----------------------------------------------

SEEDS = 2_000
FULL_BAG_SEEDS = 30


def slid(data: bytes, seed: int) -> bytes:
    """The same game with about half its move lines slid one cell up, down, left or right.

    The bot only ever connects by crossing a tile; slid copies of its words lie alongside
    others, so they connect edge to edge only (SPEC check 8), clash, or float free.
    """
    rng = random.Random(seed)
    lines = []
    for line in data.splitlines():
        fields = line.split()
        numbers = fields[:4]
        if (
            len(fields) == 5
            and all(f.lstrip(b"-").isdigit() for f in numbers)
            and rng.random() < 0.5
        ):
            dx, dy = rng.choice([(1, 0), (-1, 0), (0, 1), (0, -1)])
            x1, y1, x2, y2 = map(int, numbers)
            line = b"%d %d %d %d %s" % (x1 + dx, y1 + dy, x2 + dx, y2 + dy, fields[4])
        lines.append(line)
    return b"".join(line + b"\n" for line in lines)


@pytest.fixture(scope="module")
def generated(word_index: WordIndex, layout: Layout) -> list[tuple[str, bytes]]:
    """2,000 short games with 30% illegal lines, 30 that use up the bag, and each one slid."""
    corpus = [
        (
            f"seed {seed}, 60 moves",
            generate(word_index, layout, seed=seed, moves=60, illegal_share=0.3),
        )
        for seed in range(SEEDS)
    ]
    corpus += [
        (
            f"seed {seed}, full bag",
            generate(word_index, layout, seed=seed, moves=6000, illegal_share=0.1),
        )
        for seed in range(FULL_BAG_SEEDS)
    ]
    corpus += [
        (f"{name}, slid", slid(data, seed)) for seed, (name, data) in enumerate(list(corpus))
    ]
    return corpus


@pytest.fixture(scope="module")
def plain_verdicts(
    generated: list[tuple[str, bytes]], real_lexicon: Lexicon
) -> list[dict[str, Any]]:
    return [plain_view(data, real_lexicon.words) for _, data in generated]


def test_a_few_generated_games_judge_as_the_plain_judge_does(
    engine: JudgeFn, word_index: WordIndex, real_lexicon: Lexicon, layout: Layout
) -> None:
    for seed in range(20):
        data = generate(word_index, layout, seed=seed, moves=60, illegal_share=0.3)
        assert_same_as_plain(engine, data, real_lexicon, layout)
        assert_same_as_plain(engine, slid(data, seed), real_lexicon, layout)
    data = generate(word_index, layout, seed=0, moves=6000, illegal_share=0.1)
    assert_same_as_plain(engine, data, real_lexicon, layout)


@pytest.mark.slow
@pytest.mark.parametrize("build", sorted(ENGINES))
def test_thousands_of_generated_games_judge_as_the_plain_judge_does(
    build: str,
    generated: list[tuple[str, bytes]],
    plain_verdicts: list[dict[str, Any]],
    real_lexicon: Lexicon,
    layout: Layout,
) -> None:
    engine = ENGINES[build]
    moves = 0
    for (name, data), plain in zip(generated, plain_verdicts, strict=True):
        ours = engine_view(engine(data, real_lexicon, layout))
        assert ours == plain, f"{name}: {first_difference(data, ours, plain)}"
        moves += len(ours["lines"])
    # The corpus is what it claims to be: many moves, every verdict kind, most of a bag used.
    assert moves > 2 * SEEDS * 60 * 0.9
    reasons = {line.get("reason", "ok") for plain in plain_verdicts for line in plain["lines"]}
    assert len(reasons) == 12
    full_bag = plain_verdicts[SEEDS : SEEDS + FULL_BAG_SEEDS]
    assert all(sum(p["bag_left"].values()) < 2_000 for p in full_bag)


# --- hypothesis submissions with the tiny lexicon -----------------------------------------------


@examples
@given(data=st.one_of(submissions, crowded_games(), any_bytes))
def test_any_submission_judges_as_the_plain_judge_does(engine: JudgeFn, tiny, layout, data) -> None:
    assert_same_as_plain(engine, data, tiny, layout)


@examples
@given(data=st.one_of(crowded_games(), any_bytes))
def test_both_builds_give_identical_reports_details_included(tiny, layout, data) -> None:
    installed, pure = (ENGINES[build](data, tiny, layout) for build in ("installed", "pure"))
    assert installed == pure
    assert installed.to_json() == pure.to_json()


# --- random bonus tables ----------------------------------------------------------------------

squares = st.sampled_from(sorted(BONUSES))
bonus_tables = st.lists(st.lists(squares, min_size=5, max_size=5), min_size=5, max_size=5)


def with_bonus(layout: Layout, table: list[list[str]]) -> Layout:
    letters = {c: [layout.points[c], layout.bag[c]] for c in LETTERS}
    return Layout.from_mapping({"period": 5, "bonus": table, "letters": letters})


@examples
@given(table=bonus_tables, data=st.one_of(crowded_games(), submissions))
def test_any_bonus_table_scores_as_the_plain_judge_does(
    engine: JudgeFn, tiny, layout, table, data
) -> None:
    assert_same_as_plain(engine, data, tiny, with_bonus(layout, table), table)


@settings(examples, max_examples=100)
@given(table=bonus_tables, seed=st.integers(0, 10**6))
def test_generated_games_on_any_bonus_table_score_as_the_plain_judge_does(
    engine: JudgeFn, word_index: WordIndex, real_lexicon: Lexicon, layout, table, seed
) -> None:
    custom = with_bonus(layout, table)
    data = generate(word_index, custom, seed=seed, moves=120, illegal_share=0.2)
    assert_same_as_plain(engine, data, real_lexicon, custom, table)
