"""Wordytaire rules engine: pure, standard library only (docs/rules/wordytaire.md).

The one interface the pipeline uses: ``judge(submission_bytes, lexicon, layout) -> Report``.
"""

from judge.wordytaire.engine import judge
from judge.wordytaire.layout import Layout, LayoutError, default_layout
from judge.wordytaire.report import JUDGE_VERSION, Reason, Report, Verdict

__all__ = [
    "JUDGE_VERSION",
    "Layout",
    "LayoutError",
    "Reason",
    "Report",
    "Verdict",
    "default_layout",
    "judge",
]
