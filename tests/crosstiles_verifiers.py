"""Both builds of the Crosstiles verifier (the installed one, mypyc-compiled when built, and the
source), and the Crosstiles word list read once a session."""

from __future__ import annotations

import functools
from collections.abc import Callable

import judge.crosstiles.engine
from devstack.testing.sources import load_source
from devstack.testing.word_lists import cached_list
from judge import Lexicon
from judge.crosstiles import Board, CrosstilesReport, verify

VerifyFn = Callable[[bytes, Lexicon, Board], CrosstilesReport]

COMPILED = not str(judge.crosstiles.engine.__file__).endswith(".py")
# The installed verifier and, when that is compiled, the source.
VERIFIERS: dict[str, VerifyFn] = {"installed": verify}
if COMPILED:
    VERIFIERS["pure"] = load_source(
        "judge/crosstiles/engine.py", "crosstiles_engine_pure_source"
    ).verify


@functools.cache
def crosstiles_lexicon() -> Lexicon:
    """The Crosstiles word list, read once per test session."""
    return Lexicon.from_bytes(cached_list("crosstiles.txt").read_bytes())
