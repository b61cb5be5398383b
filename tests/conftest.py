"""Shared fixtures: the real word lists from the cache `make lexicon` fills, a tiny lexicon, the
layout."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from devstack.testing.word_lists import cached_list
from devstack.testing.wordytaire_engines import ENGINES, JudgeFn
from judge import Lexicon
from judge.wordytaire import Layout, default_layout
from judge.wordytaire.generator import WordIndex

TINY_WORDS = {"cat", "cab", "at", "ate", "by", "jo", "to", "tab", "bat", "oat", "cyber", "zzz"}


# Suites that each drive whole stacks on the machine's cores, with bounds on how fast they
# recover: under `pytest -n` they run one after the other on one process, never side by side.
SERIAL_SUITES = ("cluster", "fault")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse tests that share an id: pytest-xdist would take them for one test and run it
    once."""
    repeated = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
    if repeated:
        raise pytest.UsageError(f"tests that share an id: {', '.join(repeated[:5])}")


def work_unit(nodeid: str) -> str:
    """What one process runs whole under `make test`: a module (its fixtures built once), or
    SERIAL_SUITES together, first in the queue (the cluster suite is collected first)."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    suite = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return "serial-suites" if suite in SERIAL_SUITES else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`pytest -n N --dist loadscope` (as `make test` runs) hands out `work_unit`s. (Since
    pytest 9.2 a test's id cannot be renamed, which `--dist loadgroup` relies on: its groups
    would be split across processes without a word.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return SuiteScheduling(config, log)


@pytest.fixture(scope="session")
def real_lexicon() -> Lexicon:
    return Lexicon.from_bytes(cached_list("words_alpha.txt").read_bytes())


@pytest.fixture(scope="session")
def old_lexicon() -> Lexicon:
    return Lexicon.from_bytes(cached_list("words_alpha_2020-08-24.txt").read_bytes())


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
