"""Fair judging between teams: a heavy upload goes in a message of its own at a lower priority
than light ones, lower again for each heavy upload its team sent just before, so a team that
floods waits behind its own work and another team's upload does not."""

from __future__ import annotations

import pytest

from core import tuning
from core.group_commit import HeavyCounts
from core.messages import HEAVY_PRIORITIES, LIGHT_PRIORITY, heavy_priority
from devstack.testing.pipeline import Pipeline, TeamLogin

HEAVY = b"a\n" * (tuning.HEAVY_BYTES // 2 + 1)
LIGHT = b"0 0 2 0 cat\n"


def _heavy(n: int) -> bytes:
    return HEAVY + b"0 0 1 0 at\n" * n  # distinct bytes: the same bytes twice are one upload


def test_a_flooding_teams_heavy_uploads_sink_and_another_teams_upload_goes_first(
    pipe: Pipeline, team: TeamLogin
) -> None:
    other = pipe.add_team("owls")
    flood = [pipe.accepted(team, _heavy(n))["id"] for n in range(5)]
    light = pipe.accepted(other, LIGHT)["id"]
    heavy = pipe.accepted(other, _heavy(0))["id"]

    priorities = pipe.publisher.priorities

    assert [priorities[sid] for sid in flood] == [3, 6, 9, 9, 9]
    assert priorities[light] == LIGHT_PRIORITY
    assert priorities[heavy] == 3  # the other team's first heavy one: ahead of the flood's second
    assert all(group == [sid] for sid in flood for group in pipe.publisher.groups if sid in group)


def test_light_uploads_still_share_messages_and_a_heavy_one_rides_alone(
    pipe: Pipeline, team: TeamLogin
) -> None:
    ids = [pipe.accepted(team, LIGHT + b"0 0 1 0 at\n" * n)["id"] for n in range(3)]
    big = pipe.accepted(team, _heavy(0))["id"]

    assert {pipe.publisher.priorities[sid] for sid in ids} == {LIGHT_PRIORITY}
    assert [big] in pipe.publisher.groups
    assert not [group for group in pipe.publisher.groups if big in group and len(group) > 1]


def test_an_upload_of_exactly_the_heavy_threshold_is_light(pipe: Pipeline, team: TeamLogin) -> None:
    edge = (b"a\n" * tuning.HEAVY_BYTES)[: tuning.HEAVY_BYTES]

    sid = pipe.accepted(team, edge)["id"]

    assert pipe.publisher.priorities[sid] == LIGHT_PRIORITY


def test_a_team_quiet_for_the_window_is_back_to_the_first_heavy_priority() -> None:
    now = [0.0]
    counts = HeavyCounts(now=lambda: now[0])

    sent = [counts.priority("ravens") for _ in range(4)]
    now[0] += tuning.HEAVY_WINDOW_S + 1

    assert sent == [3, 6, 9, 9]
    assert counts.priority("ravens") == 3
    assert counts.priority("owls") == 3


def test_the_counts_keep_a_bounded_number_of_teams(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tuning, "HEAVY_TEAMS_KEPT", 3)
    counts = HeavyCounts(now=lambda: 0.0)
    for n in range(10):
        counts.priority(f"team-{n}")
    counts.priority("team-9")

    assert counts.teams() == 3
    assert counts.priority("team-0") == 3  # forgotten: counted afresh
    assert counts.priority("team-9") == 9


def test_heavy_priorities_run_from_first_to_last_and_stay_at_the_last() -> None:
    assert [heavy_priority(n) for n in range(6)] == [3, 6, 9, 9, 9, 9]
    assert min(HEAVY_PRIORITIES) > LIGHT_PRIORITY
