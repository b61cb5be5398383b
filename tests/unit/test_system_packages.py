"""The README names every Debian package `make test` and `make run` may install: each one an
`apt-get install` line of the Makefile names, in a target `test` or `run` depends on."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALL = re.compile(r"apt-get install (?:-\S+ )*(?P<packages>[a-z0-9][a-z0-9 .+-]*?);? *\}?$")


def makefile_targets() -> dict[str, tuple[list[str], str]]:
    """Each target's prerequisites and recipe (its lines, joined)."""
    targets: dict[str, tuple[list[str], str]] = {}
    current = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        # A phony target, or a file target named by a variable (`$(AXE): ...`).
        rule = re.match(r"^([a-z][\w-]*|\$\([A-Z_]+\)):(?!=)(.*)$", line)
        if rule:
            current = rule.group(1)
            targets[current] = (rule.group(2).replace("|", " ").split(), "")
        elif line.startswith("\t") and current is not None:
            prerequisites, recipe = targets[current]
            targets[current] = (prerequisites, recipe + line.strip().rstrip("\\") + "\n")
        elif not line.startswith("\t"):
            current = None
    return targets


def installed_by(target: str, targets: dict[str, tuple[list[str], str]]) -> set[str]:
    """The Debian packages `make TARGET` may install, through its prerequisites too."""
    seen: set[str] = set()
    packages: set[str] = set()
    waiting = [target]
    while waiting:
        name = waiting.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        prerequisites, recipe = targets[name]
        waiting += prerequisites
        for line in recipe.splitlines():
            found = INSTALL.search(line)
            if found:
                packages.update(found.group("packages").split())
    return packages


def test_the_readme_names_every_package_make_test_and_make_run_may_install() -> None:
    targets = makefile_targets()
    packages = installed_by("test", targets) | installed_by("run", targets)
    assert {"chromium", "npm", "golang-go", "patroni", "php-cli"} <= packages, packages
    readme = (ROOT / "README.md").read_text()
    assert [name for name in sorted(packages) if f"`{name}`" not in readme] == []


def test_make_test_installs_php_for_the_clics_consistency_check_only_when_missing() -> None:
    targets = makefile_targets()
    assert "clics-tools" in targets["test"][0]
    assert "command -v php" in targets["clics-tools"][1]
    assert installed_by("clics-tools", targets) == {"php-cli"}


def test_every_package_the_makefile_installs_comes_without_what_it_merely_recommends() -> None:
    lines = [line for line in (ROOT / "Makefile").read_text().splitlines() if INSTALL.search(line)]
    assert lines, "the Makefile installs no Debian package: the test reads it wrongly"
    assert [line.strip() for line in lines if "--no-install-recommends" not in line] == []
