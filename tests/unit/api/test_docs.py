"""/docs and /redoc are built from files the API serves itself (the pinned fastapi-offline
wheel's Swagger UI and ReDoc bundles), under a policy that lets them load nothing from elsewhere."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.routes.docs import ASSETS, STATIC_PREFIX
from devstack.testing.pipeline import Pipeline, open_pipeline

BUNDLES = resources.files("fastapi_offline") / "static"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with open_pipeline(tmp_path) as pipe:
        yield pipe.client


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_reference_pages_load_everything_from_this_origin(
    client: TestClient, page: str
) -> None:
    response = client.get(page)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    urls = re.findall(r'(?:src|href|spec-url|data-openapi-url)="([^"]*)"', response.text)
    assert urls and all(url.startswith((f"{STATIC_PREFIX}/", "/openapi.json")) for url in urls)
    assert "/openapi.json" in urls
    assert "http" not in response.text.lower().replace("http-equiv", "")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "http" not in policy and "*" not in policy


def test_swagger_ui_runs_no_inline_script(client: TestClient) -> None:
    response = client.get("/docs")

    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", response.text, re.S)
    assert [attributes for attributes, _ in scripts if "src=" not in attributes] == []
    assert all(body.strip() == "" for _, body in scripts)
    assert "unsafe" not in response.headers["content-security-policy"]


def test_redoc_may_inject_styles_and_start_its_search_worker_and_nothing_more(
    client: TestClient,
) -> None:
    policy = client.get("/redoc").headers["content-security-policy"]

    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["style-src"] == "'self' 'unsafe-inline'"
    assert directives["worker-src"] == "blob:"
    assert directives["script-src"] == "'self'"


def test_every_asset_comes_from_an_installed_package(client: TestClient) -> None:
    for name, (source, media_type) in ASSETS.items():
        response = client.get(f"{STATIC_PREFIX}/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"].startswith(media_type), name
        assert response.headers["x-content-type-options"] == "nosniff"
        if name != "redoc.standalone.js":
            assert response.content == source.read_bytes(), name
    assert (BUNDLES / "swagger-ui-bundle.js").is_file()


def test_the_served_redoc_bundle_asks_no_cdn_for_its_logo(client: TestClient) -> None:
    shipped = (BUNDLES / "redoc.standalone.js").read_bytes()
    served = client.get(f"{STATIC_PREFIX}/redoc.standalone.js").content

    assert b"cdn.redoc.ly" in shipped  # what the patch is for
    assert b"cdn.redoc.ly" not in served
    assert len(served) == len(shipped) - len(b"https://cdn.redoc.ly/redoc/logo-mini.svg") + len(
        b"data:,"
    )


def test_an_unchanged_asset_is_answered_304_by_its_etag(client: TestClient) -> None:
    first = client.get(f"{STATIC_PREFIX}/swagger-ui.css")
    again = client.get(
        f"{STATIC_PREFIX}/swagger-ui.css", headers={"If-None-Match": first.headers["etag"]}
    )

    assert again.status_code == 304 and again.content == b""
    stale = client.get(f"{STATIC_PREFIX}/swagger-ui.css", headers={"If-None-Match": '"other"'})
    assert stale.status_code == 200 and stale.content == first.content


@pytest.mark.parametrize("name", ["missing.js", "..%2Fapp.py", "swagger-init.js.map"])
def test_only_the_listed_assets_are_served(client: TestClient, name: str) -> None:
    response = client.get(f"{STATIC_PREFIX}/{name}")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_the_schema_is_still_served_and_does_not_list_the_pages(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        schema = _schema(pipe)

    assert "/v1/contests/{contest}/submissions" in schema["paths"]
    assert not {"/docs", "/redoc", f"{STATIC_PREFIX}/{{name}}"} & set(schema["paths"])


def _schema(pipe: Pipeline) -> dict[str, dict[str, object]]:
    response = pipe.client.get("/openapi.json")
    assert response.status_code == 200
    found: dict[str, dict[str, object]] = response.json()
    return found


# -- the Authorize button: the schema's security schemes ------------------------------------


def test_the_schema_declares_bearer_tokens_for_the_admin_and_the_teams(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        schemes: dict[str, Any] = _schema(pipe)["components"]["securitySchemes"]

    for name in ("adminToken", "teamToken", "metricsToken"):
        assert schemes[name]["type"] == "http" and schemes[name]["scheme"] == "bearer"
        assert schemes[name]["description"]


def test_operations_name_the_token_they_take(tmp_path: Path) -> None:
    with open_pipeline(tmp_path) as pipe:
        schema: dict[str, Any] = _schema(pipe)

    def security(path: str, method: str) -> Any:
        return schema["paths"][path][method].get("security")

    admin, team = [{"adminToken": []}], [{"teamToken": []}]
    assert security("/v1/contests", "post") == admin
    assert security("/v1/rejudges/{run_id}/apply", "post") == admin
    assert security("/v1/stats", "get") == admin
    assert security("/v1/contests/{contest}/submissions", "post") == team
    assert security("/v1/submissions/{submission_id}", "get") == team + admin
    assert security("/metrics", "get") == [{}, {"metricsToken": []}, {"adminToken": []}]
    for public in ("/v1/contests/{contest}/leaderboard", "/healthz", "/v1/games"):
        assert security(public, "get") is None
    assert "security" not in schema  # no requirement for all: public operations stay public


def test_exactly_the_operations_that_require_a_token_refuse_a_call_without_one(
    tmp_path: Path,
) -> None:
    """The schema checked against the API: an operation whose every alternative names a token
    answers 401 without one, and no other does."""
    with open_pipeline(tmp_path) as pipe:
        paths: dict[str, Any] = _schema(pipe)["paths"]
        for path, operations in paths.items():
            url = re.sub(r"\{[^}]+\}", "x", path)
            for method, operation in operations.items():
                needs_token = all(operation.get("security", [{}]))
                answer = pipe.client.request(method, url)
                assert (answer.status_code == 401) is needs_token, (method, path, answer.text)
