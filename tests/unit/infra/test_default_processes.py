"""How many processes the stack runs when nothing is set: one judging process a core (at least
two) beside the standby one, and API processes a quarter of the cores (at least two); what is
set wins, and the cores are those the process may run on."""

from __future__ import annotations

import os

import pytest

from infra import settings as settings_module
from infra.settings import Settings, default_api_workers, default_workers, usable_cores


@pytest.mark.parametrize(
    ("cores", "workers", "api_workers"),
    [(1, 2, 2), (2, 2, 2), (4, 4, 2), (16, 16, 4), (64, 64, 16)],
)
def test_the_defaults_follow_the_cores(cores: int, workers: int, api_workers: int) -> None:
    assert (default_workers(cores), default_api_workers(cores)) == (workers, api_workers)


def test_unset_the_settings_take_the_defaults_of_the_usable_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(settings_module, "usable_cores", lambda: 16)

    found = Settings.from_env({})

    assert (found.workers, found.standby_workers, found.api_workers) == (16, 1, 4)
    given = Settings.from_env({"TILEJUDGE_WORKERS": "3", "TILEJUDGE_API_WORKERS": "1"})
    assert (given.workers, given.api_workers) == (3, 1)


def test_the_usable_cores_are_those_of_the_process_affinity() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0))
