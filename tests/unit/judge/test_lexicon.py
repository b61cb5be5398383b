"""The real word lists from the cache, lexicon ids and errors, and the layout as data."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from random import Random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devstack.testing.plain_judge import BAG_COUNTS, LETTER_POINTS, SPEC_BONUS_ROWS
from devstack.testing.word_lists import cached_list
from devstack.testing.wordytaire_engines import JudgeFn
from infra import lexicon_sources
from judge import Lexicon, LexiconError
from judge.lexicon import lexicon_id
from judge.wordytaire import Layout, LayoutError, Reason, default_layout
from judge.wordytaire.layout import BONUSES, LETTERS

JUDGE_LIST = lexicon_sources.JUDGE_LIST.file
OLD_LIST = lexicon_sources.BEFORE_FIX.file
PINS = {known.file: known for known in lexicon_sources.KNOWN_LISTS}
LISTS_DOC = Path(__file__).resolve().parents[3] / "docs" / "lexicons.md"


@pytest.mark.parametrize("known", lexicon_sources.KNOWN_LISTS, ids=lambda known: known.file)
def test_docs_lexicons_states_each_lists_pinned_digests_and_size(
    known: lexicon_sources.KnownList,
) -> None:
    text = LISTS_DOC.read_text()
    start = text.index(f"### `{known.file}`")
    end = text.find("\n#", start + 1)
    section = text[start : end if end > 0 else None]
    assert known.sha256 in section
    assert known.lexicon_id in section
    assert f"{known.words:,}" in section


@pytest.mark.parametrize("known", lexicon_sources.KNOWN_LISTS, ids=lambda known: known.file)
def test_each_cached_list_is_the_file_its_pin_describes(known: lexicon_sources.KnownList) -> None:
    data = cached_list(known.file).read_bytes()
    assert hashlib.sha256(data).hexdigest() == known.sha256


@pytest.mark.parametrize(
    ("fixture", "name"), [("real_lexicon", JUDGE_LIST), ("old_lexicon", OLD_LIST)]
)
def test_a_lexicon_id_is_the_pinned_digest_of_its_sorted_unique_words(
    request: pytest.FixtureRequest, fixture: str, name: str
) -> None:
    lexicon: Lexicon = request.getfixturevalue(fixture)
    assert lexicon.id == PINS[name].lexicon_id
    assert len(lexicon) == PINS[name].words


@pytest.mark.parametrize(
    ("fixture", "word", "legal"),
    [
        ("real_lexicon", "cyber", True),
        ("real_lexicon", "abled", True),
        ("real_lexicon", "nerdy", True),
        ("real_lexicon", "unneccessary", False),
        ("old_lexicon", "cyber", False),
        ("old_lexicon", "abled", False),
        ("old_lexicon", "nerdy", False),
        ("old_lexicon", "unneccessary", True),
    ],
)
def test_a_word_through_the_origin_is_legal_only_if_its_list_holds_it(
    engine: JudgeFn,
    request: pytest.FixtureRequest,
    layout: Layout,
    fixture: str,
    word: str,
    legal: bool,
) -> None:
    lexicon: Lexicon = request.getfixturevalue(fixture)
    (verdict,) = engine(f"0 0 {len(word) - 1} 0 {word}\n".encode(), lexicon, layout).verdicts
    assert verdict.ok is legal
    if not legal:
        assert verdict.reason is Reason.NOT_IN_DICTIONARY


def test_cyber_scores_its_letters_with_the_l2_on_its_b(
    engine: JudgeFn, real_lexicon, layout
) -> None:
    (verdict,) = engine(b"0 0 4 0 cyber", real_lexicon, layout).verdicts
    assert (verdict.score, verdict.tiles) == (4 + 5 + 5 * 2 + 1 + 2, 5)


def test_the_lexicon_fix_adds_three_words_and_removes_one(old_lexicon, real_lexicon) -> None:
    added, removed = old_lexicon.diff(real_lexicon)
    assert added == {"abled", "cyber", "nerdy"}
    assert removed == {"unneccessary"}
    assert real_lexicon.diff(old_lexicon) == (removed, added)


def test_the_crlf_upstream_form_has_the_same_id(real_lexicon: Lexicon) -> None:
    data = cached_list(JUDGE_LIST).read_bytes()
    crlf = data.replace(b"\n", b"\r\n")
    assert Lexicon.from_bytes(crlf).id == real_lexicon.id
    # Upstream's old list has no final line ending.
    assert Lexicon.from_bytes(crlf.removesuffix(b"\r\n")).id == real_lexicon.id


def test_order_duplicates_blank_lines_and_a_bom_do_not_change_the_id() -> None:
    plain = Lexicon.from_bytes(b"at\ncat\nzoo\n")
    assert plain.id == hashlib.sha256(b"at\ncat\nzoo\n").hexdigest()
    for variant in (
        b"zoo\ncat\nat",
        b"\xef\xbb\xbfcat\n\nat\r\nzoo\r\ncat\n\n",
        b"at\nat\ncat\nzoo",
    ):
        assert Lexicon.from_bytes(variant).id == plain.id
    assert Lexicon.from_words(["zoo", "at", "cat", "at"]).id == plain.id
    assert Lexicon.from_bytes(b"at\ncat\n").id != plain.id


@given(st.lists(st.from_regex(r"[a-z]{0,6}", fullmatch=True), max_size=40), st.randoms())
def test_any_order_of_any_words_has_the_id_spec_defines(words: list[str], rng: Random) -> None:
    rng.shuffle(words)
    spec = "".join(f"{word}\n" for word in sorted(set(words) - {""})).encode()
    found = Lexicon.from_bytes("\n".join(words).encode())
    assert found.id == hashlib.sha256(spec).hexdigest() == lexicon_id(found.words)
    assert found.words == frozenset(words) - {""}


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"cat\nDog\nbat\n", "line 2: 'Dog'"),
        (b"cat\ndog\ncaf\xc3\xa9\n", "line 3: 'café'"),
        (b"cat\r\n\r\nr2d2\r\n", "line 3: 'r2d2'"),
        (b"cat\nice cream\n", "line 2: 'ice cream'"),
        (b"cat\n dog\n", "line 2: ' dog'"),
        (b"cat\rdog\n", "line 1: 'cat\\rdog'"),
        (b"cat\n\xff\xfe\n", "line 2: "),
    ],
)
def test_a_bad_word_list_names_its_first_bad_line(data: bytes, line: str) -> None:
    with pytest.raises(LexiconError) as caught:
        Lexicon.from_bytes(data)
    assert str(caught.value).startswith(line)


@pytest.mark.parametrize("words", [["cat", "Dog"], ["café"], ["cat", ""], ["two words"]])
def test_words_that_are_not_lower_case_a_to_z_are_refused(words: list[str]) -> None:
    with pytest.raises(LexiconError):
        Lexicon.from_words(words)


# --- the layout ---------------------------------------------------------------------------------


def packaged_doc() -> dict[str, Any]:
    path = resources.files("judge") / "data" / "layouts" / "spec-2026.json"
    doc: dict[str, Any] = json.loads(path.read_bytes())
    return doc


def test_the_default_layout_is_the_spec_table_and_tile_set(layout: Layout) -> None:
    assert [list(row) for row in layout.bonus] == SPEC_BONUS_ROWS
    assert layout.points == LETTER_POINTS
    assert layout.bag == BAG_COUNTS
    assert sum(layout.bag.values()) == 10_000
    assert (
        layout.square(0, 0) == "."
        and layout.square(-2, 0) == "L2"
        and layout.square(8, -13) == "W3"
    )


def test_the_layout_id_ignores_name_description_and_formatting(layout: Layout) -> None:
    doc = packaged_doc()
    assert (
        Layout.from_mapping({**doc, "name": "renamed", "description": "reworded"}).id == layout.id
    )
    assert Layout.from_mapping({k: v for k, v in doc.items() if k != "description"}).id == layout.id
    assert Layout.from_json(json.dumps(doc, sort_keys=True)).id == layout.id
    assert Layout.from_json(layout.to_json()) == layout
    assert default_layout().id == layout.id


def test_changing_any_one_square_changes_the_layout_id(layout: Layout) -> None:
    doc = packaged_doc()
    ids = {layout.id}
    for y in range(5):
        for x in range(5):
            for other in sorted(set(BONUSES) - {doc["bonus"][y][x]}):
                bonus = [list(row) for row in doc["bonus"]]
                bonus[y][x] = other
                ids.add(Layout.from_mapping({**doc, "bonus": bonus}).id)
    assert len(ids) == 1 + 25 * 4


@pytest.mark.parametrize(("letter", "pair"), [("q", [10, 17]), ("q", [9, 18]), ("e", [1, 1077])])
def test_changing_a_letter_value_or_count_changes_the_layout_id(layout, letter, pair) -> None:
    doc = packaged_doc()
    changed = Layout.from_mapping({**doc, "letters": {**doc["letters"], letter: pair}})
    assert changed.id != layout.id


def _letters() -> dict[str, list[int]]:
    return {c: [1, 1] for c in LETTERS}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"\xff\xfe{",
        b"[]",
        b'"spec"',
        json.dumps({"bonus": [["."]], "letters": _letters()}).encode(),
        json.dumps({"period": 0, "bonus": [], "letters": _letters()}).encode(),
        json.dumps({"period": 65, "bonus": [["."] * 65] * 65, "letters": _letters()}).encode(),
        json.dumps({"period": True, "bonus": [["."]], "letters": _letters()}).encode(),
        json.dumps({"period": 1.0, "bonus": [["."]], "letters": _letters()}).encode(),
        json.dumps({"period": 2, "bonus": [[".", "."]], "letters": _letters()}).encode(),
        json.dumps({"period": 2, "bonus": [[".", "."], ["."]], "letters": _letters()}).encode(),
        json.dumps({"period": 1, "bonus": [["W4"]], "letters": _letters()}).encode(),
        json.dumps({"period": 1, "bonus": ".", "letters": _letters()}).encode(),
        json.dumps({"period": 1, "bonus": [["."]]}).encode(),
        json.dumps({"period": 1, "bonus": [["."]], "letters": {"a": [1, 1]}}).encode(),
        json.dumps(
            {"period": 1, "bonus": [["."]], "letters": {**_letters(), "A": [1, 1]}}
        ).encode(),
        json.dumps(
            {"period": 1, "bonus": [["."]], "letters": {**_letters(), "q": [1, -1]}}
        ).encode(),
        json.dumps({"period": 1, "bonus": [["."]], "letters": {**_letters(), "q": [1]}}).encode(),
        json.dumps(
            {"period": 1, "bonus": [["."]], "letters": {**_letters(), "q": [1, True]}}
        ).encode(),
        json.dumps({"period": 1, "bonus": [["."]], "letters": {**_letters(), "q": "1 1"}}).encode(),
    ],
)
def test_a_bad_layout_file_raises_layout_error(data: bytes) -> None:
    with pytest.raises(LayoutError):
        Layout.from_json(data)


@pytest.mark.parametrize("square", [["W2"], {"W2": 1}])
def test_an_unhashable_square_raises_layout_error(square: object) -> None:
    with pytest.raises(LayoutError):
        Layout.from_mapping({"period": 1, "bonus": [[square]], "letters": _letters()})
