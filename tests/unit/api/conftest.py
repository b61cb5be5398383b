"""The API tests' common fixtures: an in-process pipeline with an open contest, and a team."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.testing.pipeline import Pipeline, TeamLogin, open_pipeline


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    """The pipeline with the contest "open" (open for an hour either side of now)."""
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest("open")
        yield pipeline


@pytest.fixture
def team(pipe: Pipeline) -> TeamLogin:
    return pipe.add_team("ravens")
