"""Both builds of the engine: the installed one (mypyc-compiled when built) and the pure source."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import judge.wordytaire.engine
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
