"""A process's log lines of events carry ids and facts, never a verdict: whoever runs the hosts
reads them, and a frozen contest's late scores must not reach them (the organiser reads every
verdict in the event log)."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.testing.pipeline import ADMIN, Pipeline, TeamLogin, drain
from infra.sql import base


class Lines:
    """Stands in for the store's logger: what each committed event's line would carry."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append({"event": event, **fields})


def test_a_judged_upload_is_logged_without_its_score(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    submission = pipe.accepted(team, b"-1 0 1 0 cat\n")["id"]
    logged = Lines()
    monkeypatch.setattr(base, "log", logged)
    drain(pipe.services)
    judged = [line for line in logged.lines if line["event"] == "submission.judged"]
    assert [line["submission"] for line in judged] == [submission]
    assert not {"score", "legal", "illegal"} & set(judged[0]), judged[0]
    events = pipe.client.get("/v1/events", headers=ADMIN).json()["events"]
    (event,) = [e for e in events if e["type"] == "submission.judged"]
    assert event["submission"] == submission and event["score"] > 0  # the organiser's
