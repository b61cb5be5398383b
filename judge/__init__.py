"""Wordytaire rules engine: pure, standard library only.

The one interface the pipeline uses: ``judge(submission_bytes, lexicon, layout) -> Report``.
"""

from judge.engine import judge
from judge.layout import Layout, LayoutError, default_layout
from judge.lexicon import Lexicon, LexiconError
from judge.report import JUDGE_VERSION, Reason, Report, Verdict

__all__ = [
    "JUDGE_VERSION",
    "Layout",
    "LayoutError",
    "Lexicon",
    "LexiconError",
    "Reason",
    "Report",
    "Verdict",
    "default_layout",
    "judge",
]
