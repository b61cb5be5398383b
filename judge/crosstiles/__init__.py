"""Crosstiles game-log verification: pure, standard library only (CROSSTILES.md).

The one interface the pipeline uses: ``verify(log_bytes, lexicon, board) -> CrosstilesReport``.
"""

from judge.crosstiles.board import Board, BoardError, default_board
from judge.crosstiles.engine import verify
from judge.crosstiles.generator import corrupt, generate
from judge.crosstiles.report import CrosstilesReport, LogError, PlayerResult, Reason

__all__ = [
    "Board",
    "BoardError",
    "CrosstilesReport",
    "LogError",
    "PlayerResult",
    "Reason",
    "corrupt",
    "default_board",
    "generate",
    "verify",
]
