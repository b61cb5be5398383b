"""Shared fixtures: the real word lists from the cache `make lexicon` fills, a tiny lexicon, the
layout."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from infra.settings import ClientSettings
from judge import Lexicon
from judge.wordytaire import Layout, default_layout
from judge.wordytaire.generator import WordIndex
from tests.engines import ENGINES, JudgeFn

# The cache as the project's own commands find it ($TILEJUDGE_LEXICON_CACHE, else the user's).
LISTS = ClientSettings.from_env().lexicon_cache
TINY_WORDS = {"cat", "cab", "at", "ate", "by", "jo", "to", "tab", "bat", "oat", "cyber", "zzz"}


def cached_list(name: str) -> Path:
    """A known word list from the cache (`make test` fills it first, through `make lexicon`)."""
    path = LISTS / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make lexicon` (tilejudge lexicon fetch) first")
    return path


shared_list = cached_list  # the name some test modules still import


# Suites that each drive whole stacks on the machine's cores, with bounds on how fast they
# recover: under `pytest -n` they run one after the other on one process, never side by side.
SERIAL_SUITES = ("cluster", "fault")


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group in its id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for `pytest -n N --dist loadgroup` (as `make test` runs): a module's tests on one
    process (its fixtures built once), and SERIAL_SUITES as one group, first in the queue."""
    here = Path(__file__).parent
    repeated = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
    if repeated:  # pytest-xdist's grouped runs would take them for one test and run it once
        raise pytest.UsageError(f"tests that share an id: {', '.join(repeated[:5])}")
    for item in items:
        suite = item.path.relative_to(here).parts[0]
        group = "serial-suites" if suite in SERIAL_SUITES else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


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
