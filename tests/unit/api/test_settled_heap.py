"""An API process that serves takes its startup heap out of the cyclic collector's sight; a
test's in-process app does not (it would keep every earlier test's garbage for good)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from api.app import settle_heap
from devstack.testing.pipeline import Pipeline


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_settling_the_heap_freezes_what_exists_and_leaves_what_comes_after(
    unfrozen: None,
) -> None:
    before = [[n] for n in range(1000)]  # containers the collector tracks

    settle_heap()
    after = [[n] for n in range(1000)]

    assert gc.get_freeze_count() >= len(before)
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(o) in tracked for o in before)
    assert all(id(o) in tracked for o in after)


def test_an_app_given_its_services_leaves_the_heap_alone(unfrozen: None, pipe: Pipeline) -> None:
    # `pipe` has started its app (lifespan and all) with the services it built.
    assert pipe.client.get("/healthz").status_code == 200

    assert gc.get_freeze_count() == 0
