"""Both builds of the engine: the installed one (mypyc-compiled when built) and the pure source."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import judge.wordytaire.engine
import judge.wordytaire.report_lines
from judge import Lexicon
from judge.wordytaire import Layout, Report

JudgeFn = Callable[[bytes, Lexicon, Layout], Report]


def load_source(relative: str, name: str) -> ModuleType:
    """A module of the project loaded from its .py source, whether or not it is compiled."""
    source = Path(__file__).resolve().parents[1] / relative
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
