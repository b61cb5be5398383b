"""Hypothesis properties of the rules engine that hold for any submission, on both builds."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from devstack.testing.wordytaire_engines import JudgeFn
from judge import Lexicon
from judge.wordytaire import Layout, Report, Verdict
from judge.wordytaire.layout import LETTERS
from tests import strategies
from tests.conftest import TINY_WORDS
from tests.strategies import any_bytes, submissions

BOM = b"\xef\xbb\xbf"
BAG_SIZE = 10_000

# The `engine` fixture is function-scoped but stateless, so sharing it across examples is safe.
properties = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
blank_lines = st.sampled_from([b"", b" ", b"\t", b" \t  ", b"\t\t ", b"\r", b" \r"])


def _move(x: int, y: int, across: bool, word: str) -> bytes:
    x2, y2 = (x + len(word) - 1, y) if across else (x, y + len(word) - 1)
    return f"{x} {y} {x2} {y2} {word}".encode()


_words = st.sampled_from(sorted(TINY_WORDS))
crowded_moves = st.builds(_move, st.integers(-3, 2), st.integers(-3, 2), st.booleans(), _words)


@st.composite
def opening_moves(draw: st.DrawFn) -> bytes:
    word = draw(_words)
    at = draw(st.integers(0, len(word) - 1))
    across = draw(st.booleans())
    return _move(-at if across else 0, 0 if across else -at, across, word)


@st.composite
def crowded_games(draw: st.DrawFn) -> bytes:
    """Games that open on the origin and keep playing in a 6x6 patch around it.

    `submissions` seldom gets past its first line (a first word must cover the origin), so its
    boards stay nearly empty; here the board fills up, and moves connect, conflict, replay
    earlier lines (no new tiles) and reuse tiles often. A mix of other lines rides along.
    """
    lines = [draw(opening_moves())]
    for kind in draw(st.lists(st.integers(0, 9), max_size=30)):
        if kind < 7:
            lines.append(draw(crowded_moves))
        elif kind == 7:
            lines.append(draw(st.sampled_from(lines)))
        else:
            lines.append(draw(strategies.lines))
    return b"\n".join(lines)


inputs = st.one_of(any_bytes, crowded_games())


def check_invariants(report: Report, layout: Layout) -> None:
    """What every report must satisfy, whatever the bytes were."""
    legal = [v for v in report.verdicts if v.ok]
    assert report.total == sum(v.score for v in legal)
    assert report.tiles_placed == sum(v.tiles for v in legal)
    assert all(v.score > 0 and v.tiles > 0 for v in legal)
    assert all(v.score == 0 and v.tiles == 0 and v.detail for v in report.verdicts if not v.ok)
    assert report.legal + report.illegal == len(report.verdicts)
    assert sum(report.reasons().values()) == report.illegal
    bag = sum(layout.bag.values())
    assert report.tiles_placed <= bag
    assert report.tiles_placed + sum(report.bag_left.values()) == bag
    assert all(0 <= report.bag_left[c] <= layout.bag[c] for c in LETTERS)
    numbers = [v.line for v in report.verdicts]
    assert numbers == sorted(set(numbers)) and all(n >= 1 for n in numbers)


@properties
@given(data=st.one_of(inputs, st.binary(max_size=2000)))
def test_no_input_makes_judge_raise(engine: JudgeFn, tiny: Lexicon, layout: Layout, data) -> None:
    report = engine(data, tiny, layout)
    json.dumps(report.to_json())
    check_invariants(report, layout)


@properties
@given(data=st.one_of(submissions, crowded_games()))
def test_the_default_bag_holds_every_tile_placed_or_left(
    engine: JudgeFn, tiny, layout, data
) -> None:
    report = engine(data, tiny, layout)
    assert report.tiles_placed <= BAG_SIZE
    assert report.tiles_placed + sum(report.bag_left.values()) == BAG_SIZE
    assert report.total == sum(v.score for v in report.verdicts if v.ok)


small_bags = st.dictionaries(st.sampled_from(LETTERS), st.integers(0, 3)).map(
    lambda counts: {c: counts.get(c, 0) for c in LETTERS}
)


@properties
@given(data=st.one_of(submissions, crowded_games()), bag=small_bags)
def test_a_small_bag_is_never_overdrawn(engine: JudgeFn, tiny, layout, data, bag) -> None:
    doc = {
        "period": layout.period,
        "bonus": [list(row) for row in layout.bonus],
        "letters": {c: [layout.points[c], bag[c]] for c in LETTERS},
    }
    small = Layout.from_mapping(doc)
    check_invariants(engine(data, tiny, small), small)


@properties
@given(data=inputs)
def test_crlf_judges_exactly_like_lf(engine: JudgeFn, tiny, layout, data) -> None:
    # A line of the LF form that ends in "\r" would lose that "\r" as a line ending.
    assume(b"\r\n" not in data)
    crlf = data.replace(b"\n", b"\r\n")
    assert engine(crlf, tiny, layout) == engine(data, tiny, layout)


@properties
@given(data=inputs, inserts=st.lists(st.tuples(st.integers(0, 10**6), blank_lines), max_size=8))
def test_blank_lines_only_shift_line_numbers(engine: JudgeFn, tiny, layout, data, inserts) -> None:
    numbered: list[tuple[int | None, bytes]] = list(enumerate(data.split(b"\n"), 1))
    first = 1 if data.startswith(BOM) else 0  # a BOM counts only at the very start
    for position, blank in inserts:
        numbered.insert(first + position % (len(numbered) + 1 - first), (None, blank))
    padded = b"\n".join(line for _, line in numbered)
    moved = {old: new for new, (old, _) in enumerate(numbered, 1) if old is not None}

    before = engine(data, tiny, layout)
    after = engine(padded, tiny, layout)
    assert after.verdicts == tuple(v._replace(line=moved[v.line]) for v in before.verdicts)
    assert (after.total, after.bag_left, after.words) == (
        before.total,
        before.bag_left,
        before.words,
    )


@properties
@given(data=inputs, cut=st.integers(0, 10**6), newline=st.booleans())
def test_a_verdict_depends_only_on_the_lines_before_it(
    engine: JudgeFn, tiny, layout, data, cut, newline
) -> None:
    lines = data.split(b"\n")
    keep = cut % (len(lines) + 1)
    prefix = b"\n".join(lines[:keep]) + (b"\n" if newline and keep else b"")

    whole = engine(data, tiny, layout)
    part = engine(prefix, tiny, layout)
    expected: tuple[Verdict, ...] = tuple(v for v in whole.verdicts if v.line <= keep)
    assert part.verdicts == expected
    assert part.total == sum(v.score for v in expected if v.ok)


@properties
@given(data=inputs)
def test_judging_is_deterministic(engine: JudgeFn, tiny, layout, data) -> None:
    first = engine(data, tiny, layout)
    second = engine(bytes(data), tiny, layout)
    assert first == second
    assert first.to_json() == second.to_json()


@properties
@given(data=inputs)
def test_the_fast_json_bytes_equal_the_json_dict(engine: JudgeFn, tiny, layout, data) -> None:
    report = engine(data, tiny, layout)
    assert json.loads(report.to_json_bytes()) == report.to_json()
