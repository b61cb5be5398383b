"""How many API processes start when TILEJUDGE_API_WORKERS is not set."""

from __future__ import annotations

import os

import pytest

from infra.settings import Settings, SettingsError


@pytest.mark.parametrize(("cores", "processes"), [(1, 1), (2, 1), (3, 2), (4, 2), (64, 2)])
def test_the_default_is_one_process_on_two_cores_and_two_beyond(
    monkeypatch: pytest.MonkeyPatch, cores: int, processes: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert Settings.from_env({}).api_workers == processes


def test_the_cores_counted_are_those_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert Settings.from_env({}).api_workers == 1


def test_without_affinity_the_machines_cores_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert Settings.from_env({}).api_workers == 2


def test_a_set_value_wins_and_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert Settings.from_env({"TILEJUDGE_API_WORKERS": "3"}).api_workers == 3
    with pytest.raises(SettingsError, match="TILEJUDGE_API_WORKERS"):
        Settings.from_env({"TILEJUDGE_API_WORKERS": "0"})
