"""Both builds of the engine: the installed one (mypyc-compiled when built) and the pure source."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import judge.engine
from judge import Layout, Lexicon, Report

JudgeFn = Callable[[bytes, Lexicon, Layout], Report]


def _load_pure() -> JudgeFn:
    source = Path(__file__).resolve().parents[1] / "judge" / "engine.py"
    spec = importlib.util.spec_from_file_location("judge_engine_pure_source", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.judge  # type: ignore[no-any-return]


pure_judge: JudgeFn = _load_pure()
installed_judge: JudgeFn = judge.engine.judge
COMPILED = not str(judge.engine.__file__).endswith(".py")
ENGINES = {"installed": installed_judge, "pure": pure_judge}
