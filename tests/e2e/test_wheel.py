"""A built wheel carries the files the API serves: the dashboard's page and assets, and the
privacy page. The wheel is built from a copy of the sources (a checkout's `build/` may hold files
of an earlier build), installed into a scratch directory, and served from there by a Python that
runs outside the checkout, so nothing can come from the source tree instead.
"""

from __future__ import annotations

import html
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = (
    "static/dashboard.html",
    "static/dashboard.css",
    "static/dashboard.js",
    "static/dashboard_charts.js",
    "static/privacy.css",
    "static/swagger-init.js",
    "static/scoreboard.css",
    "static/scoreboard.js",
    "static/team.css",
    "static/team.js",
    "privacy.md",
)
SERVED = {
    "/dashboard": "static/dashboard.html",
    "/dashboard/static/dashboard.css": "static/dashboard.css",
    "/dashboard/static/dashboard.js": "static/dashboard.js",
    "/dashboard/static/dashboard_charts.js": "static/dashboard_charts.js",
    "/static/privacy.css": "static/privacy.css",
    "/pages/static/scoreboard.css": "static/scoreboard.css",
    "/pages/static/scoreboard.js": "static/scoreboard.js",
    "/team/static/team.css": "static/team.css",
    "/team/static/team.js": "static/team.js",
}
ADMIN_TOKEN = "wheel-test-admin-token"

# Run by the installed copy: which `api` it imported, which files its package holds, and what
# its app answers (its routes that read no store, and the page, with a stand-in for services).
PROBE = f"""
import json
from importlib import resources
from types import SimpleNamespace

from fastapi.testclient import TestClient

import api
from api.app import create_app
from api.public import SharedReads

files = resources.files("api")
# A stand-in for the services: any dashboard session is taken as signed in; public reads are
# shared and paced as the real services do.
sessions = SimpleNamespace(check=lambda cookie: object())
news = SimpleNamespace(start=lambda: None, stop=lambda: None)  # no Redis to hear from
services = SimpleNamespace(
    admin_token={ADMIN_TOKEN!r}, sessions=sessions, public=SharedReads(), token_news=news
)
app = create_app(services=services)
with TestClient(app, raise_server_exceptions=False) as client:
    client.cookies.set("tilejudge_admin", "a-session")
    served = {{
        path: [response.status_code, response.text]
        for path in {[*SERVED, "/privacy"]!r}
        for response in [client.get(path)]
    }}
print(json.dumps({{
    "api": api.__file__,
    "shipped": {{name: files.joinpath(name).is_file() for name in {list(SHIPPED)!r}}},
    "served": served,
}}))
"""


def test_an_installed_wheel_ships_and_serves_the_dashboard_files_and_the_privacy_page(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(copy_sources(tmp_path / "src"), tmp_path / "dist")
    site = tmp_path / "site"
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site),
         str(wheel)])  # fmt: skip

    found = probe(site, cwd=tmp_path)

    assert Path(found["api"]).resolve().is_relative_to(site.resolve()), found["api"]
    assert found["shipped"] == dict.fromkeys(SHIPPED, True)
    for path, name in SERVED.items():
        status, body = found["served"][path]
        assert status == 200, (path, body[:300])
        assert body == (ROOT / "api" / name).read_text(encoding="utf-8"), path
    status, page = found["served"]["/privacy"]
    assert status == 200, page[:300]
    first_line = (ROOT / "api" / "privacy.md").read_text(encoding="utf-8").splitlines()[0]
    assert f"<h1>{html.escape(first_line.removeprefix('# '))}</h1>" in page


def copy_sources(dest: Path) -> Path:
    """What a build reads: the project files and the packages pyproject.toml names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = [name.rstrip("*") for name in config["tool"]["setuptools"]["packages"]["find"]["include"]]  # fmt: skip
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, dest / name)
    for package in packages:
        shutil.copytree(
            ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.so")
        )
    return dest


def build_wheel(source: Path, out: Path) -> Path:
    if not can_build_wheels():
        pytest.fail(
            "building a wheel without build isolation needs the `wheel` package or "
            "setuptools >= 70.1 in this environment"
        )
    # TILEJUDGE_PURE=1: no mypyc compile, which this test does not need.
    built = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                 "--no-index", "-w", str(out), str(source)], env={"TILEJUDGE_PURE": "1"})  # fmt: skip
    # The build backend's own warnings (a deprecated pyproject.toml form, say) are the project's.
    warned = [line for line in built.splitlines() if "Warning" in line or "!!" in line]
    assert not warned, "\n".join(warned)
    [wheel] = out.glob("tilejudge-*.whl")
    with zipfile.ZipFile(wheel) as contents:
        assert any(name.endswith("licenses/LICENSE") for name in contents.namelist())
    return wheel


def can_build_wheels() -> bool:
    if importlib.util.find_spec("wheel") is not None:
        return True
    major, minor = (int(part) for part in importlib.metadata.version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1)  # setuptools carries bdist_wheel itself from 70.1


def probe(site: Path, cwd: Path) -> dict[str, Any]:
    """Run PROBE with only `site` added to the path (-P: not the working directory either)."""
    output = run([sys.executable, "-P", "-c", PROBE], env={"PYTHONPATH": str(site)}, cwd=cwd)
    found: dict[str, Any] = json.loads(output.splitlines()[-1])
    return found


def run(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | (env or {})
    environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(
        command, env=environ, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, (
        f"{command[:4]} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return done.stdout
