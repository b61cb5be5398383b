"""Both builds of Wordytaire's engine: the installed one (mypyc-compiled when built) and the pure
source; and what judging a corpus costs with the installed one, the engine the workers run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import judge.wordytaire.engine
import judge.wordytaire.report_lines
from devstack.plan import Corpus
from devstack.testing.sources import load_source
from judge import Lexicon
from judge.wordytaire import Layout, Report, default_layout

JudgeFn = Callable[[bytes, Lexicon, Layout], Report]

pure_judge: JudgeFn = load_source("judge/wordytaire/engine.py", "judge_engine_pure_source").judge
installed_judge: JudgeFn = judge.wordytaire.engine.judge
COMPILED = not str(judge.wordytaire.engine.__file__).endswith(".py")
ENGINES = {"installed": installed_judge, "pure": pure_judge}

# The report's line writer, compiled with the engine: both builds of it.
LineWriter = Callable[[Sequence[tuple[int, Any, int, int, str]], int, int, str], str]
LINE_WRITERS: dict[str, LineWriter] = {
    "installed": judge.wordytaire.report_lines.json_lines,
    "pure": load_source("judge/wordytaire/report_lines.py", "report_lines_pure_source").json_lines,
}
LINES_COMPILED = not str(judge.wordytaire.report_lines.__file__).endswith(".py")


def offline_judging_ms(corpus: Corpus, passes: int = 3) -> float:
    """CPU ms per submission to judge the corpus in this process, one core: median of passes."""
    layout, times = default_layout(), []
    for _ in range(passes):
        began = time.thread_time()
        for data in corpus.data:
            installed_judge(data, corpus.lexicon, layout)
        times.append(time.thread_time() - began)
    return 1000 * statistics.median(times) / len(corpus.data)
