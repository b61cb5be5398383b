"""The Crosstiles verifier's tests share these fixtures: the word list, the board, each build."""

from __future__ import annotations

import pytest

from judge import Lexicon
from judge.crosstiles import Board, default_board
from tests.crosstiles_verifiers import VERIFIERS, VerifyFn, crosstiles_lexicon


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return crosstiles_lexicon()


@pytest.fixture(scope="module")
def board() -> Board:
    return default_board()


@pytest.fixture(params=sorted(VERIFIERS))
def verifier(request: pytest.FixtureRequest) -> VerifyFn:
    return VERIFIERS[request.param]
