"""Shared fixtures: the real word lists from ../shared/lexicons, a tiny lexicon, the layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge import Lexicon
from judge.wordytaire import Layout, default_layout
from judge.wordytaire.generator import WordIndex
from tests.engines import ENGINES, JudgeFn

SHARED = Path(__file__).resolve().parents[2] / "shared" / "lexicons"
TINY_WORDS = {"cat", "cab", "at", "ate", "by", "jo", "to", "tab", "bat", "oat", "cyber", "zzz"}


def shared_list(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: the real word lists live in ../shared/lexicons")
    return path


@pytest.fixture(scope="session")
def real_lexicon() -> Lexicon:
    return Lexicon.from_bytes(shared_list("words_alpha.txt").read_bytes())


@pytest.fixture(scope="session")
def old_lexicon() -> Lexicon:
    return Lexicon.from_bytes(shared_list("words_alpha_2020-08-24.txt").read_bytes())


@pytest.fixture(scope="session")
def word_index(real_lexicon: Lexicon) -> WordIndex:
    return WordIndex.build(real_lexicon.words)


@pytest.fixture(scope="session")
def tiny() -> Lexicon:
    return Lexicon.from_words(TINY_WORDS)


@pytest.fixture(scope="session")
def layout() -> Layout:
    return default_layout()


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> JudgeFn:
    return ENGINES[request.param]
