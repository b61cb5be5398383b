"""A module of the project loaded from its .py source, beside the build the installation holds
(compiled with mypyc where it was built so): the tests and benchmarks run both."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_source(relative: str, name: str) -> ModuleType:
    """The module at `relative` (to the project's root), loaded from its source as `name`,
    whether or not it is compiled."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
