"""Schemathesis drives every operation of the app's own OpenAPI schema, in-process, with the
admin token and both valid and invalid inputs: no answer is a 5xx (bar the deliberate 503 of a
readiness probe whose dependency is missing), and every answer matches what the schema says of
it (status code, content type, body).

The pipeline behind it is the unit tests' (SQLite in a temporary directory, in-memory S3 and
broker), holding a contest, a team and a judged submission so that real ids exist to be found.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from devstack.testing.pipeline import ADMIN, Pipeline, drain, open_pipeline

CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class AppUnderTest:
    """Forwards to the app the fixture builds. The schema is read at collection time, from an
    app that is never started (building one opens nothing); the cases run against this one.
    (schemathesis.pytest.from_fixture would avoid this, but fails on pytest 9: no `_nodeid`.)"""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert self.app is not None, "the `pipe` fixture sets the app before any case runs"
        await self.app(scope, receive, send)


APP = AppUnderTest()
schema = schemathesis.openapi.from_dict(create_app().openapi())
schema.app = APP


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path_factory.mktemp("schemathesis")) as pipeline:
        pipeline.add_contest("open")
        team = pipeline.add_team("ravens")
        pipeline.accepted(team, b"0 0 2 0 cat\n")
        drain(pipeline.services)
        APP.app = pipeline.client.app
        yield pipeline
        APP.app = None


def no_server_error(ctx: Any, response: Any, case: Any) -> bool | None:
    """Like schemathesis' not_a_server_error, but /readyz may say 503: the in-memory pipeline
    has no Redis, and saying so is that probe's job."""
    deliberate = response.status_code == 503 and case.operation.path == "/readyz"
    if response.status_code >= 500 and not deliberate:
        raise AssertionError(f"{response.status_code} from {case.operation.label}: {response.text}")
    return None


EXAMPLES = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same cases every run, so a failure reproduces
)
# One test an operation, each with an id of its own (schemathesis' `parametrize` gives all of an
# operation's tests one id, which pytest-xdist's grouped runs would take for one test).
OPERATIONS = {
    operation.label: operation for operation in (r.ok() for r in schema.get_all_operations())
}


def run_cases(label: str, checks: list[Any]) -> None:
    @EXAMPLES
    @given(case=OPERATIONS[label].as_strategy())
    def each(case: Any) -> None:
        case.call_and_validate(headers=ADMIN, checks=checks)

    each()


@pytest.mark.parametrize("label", list(OPERATIONS))
def test_no_operation_answers_5xx_to_any_input(label: str, pipe: Pipeline) -> None:
    run_cases(label, [no_server_error])


@pytest.mark.parametrize("label", list(OPERATIONS))
def test_every_answer_has_a_status_content_type_and_body_the_schema_documents(
    label: str, pipe: Pipeline
) -> None:
    run_cases(label, CONFORMANCE)
