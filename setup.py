"""Compiles the rules engine with mypyc when it can; the pure-Python source stays the reference.

Set TILEJUDGE_PURE=1 to install without compiling. Everything else lives in pyproject.toml.
"""

import os

from setuptools import setup

ext_modules = []
if os.environ.get("TILEJUDGE_PURE") != "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(
        [
            "judge/wordytaire/engine.py",
            "judge/wordytaire/report_lines.py",
            "judge/crosstiles/engine.py",
            "judge/crosstiles/move_line.py",
            "judge/crosstiles/bag.py",
            "judge/crosstiles/grid.py",
            "judge/crosstiles/header.py",
        ],
        opt_level="3",
    )

setup(ext_modules=ext_modules)
