"""A process's log lines of events carry ids and facts, never a verdict: whoever runs the hosts
reads them, and a frozen contest's late scores must not reach them (the organiser reads every
verdict in the event log)."""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.pipeline_fixtures import ADMIN, Pipeline, TeamLogin, drain


def test_a_judged_upload_is_logged_without_its_score(pipe: Pipeline, team: TeamLogin) -> None:
    submission = pipe.accepted(team, b"-1 0 1 0 cat\n")["id"]
    with capture_logs() as lines:
        drain(pipe.services)
    judged = [line for line in lines if line["event"] == "submission.judged"]
    assert [line["submission"] for line in judged] == [submission]
    assert not {"score", "legal", "illegal"} & set(judged[0]), judged[0]
    events = pipe.client.get("/v1/events", headers=ADMIN).json()["events"]
    (logged,) = [e for e in events if e["type"] == "submission.judged"]
    assert logged["submission"] == submission and logged["score"] > 0  # the organiser's
