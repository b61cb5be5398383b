"""The dashboard's count of what a rejudge run changes (`api.stats.PreviewCounts`): a ready run's
follows the data under its two rulesets, an applied run's is the one `apply` recorded."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select

from api.stats import PreviewCounts
from devstack.testing.pipeline import ADMIN, Pipeline, drain
from infra.sql.rejudges import SqlRejudgeRuns
from infra.sql.schema import rejudge_runs, rejudge_summaries
from tests.unit.api.test_rejudge import WITHOUT_CAB, run_rejudge_work


def run_row(pipe: Pipeline, run_id: str) -> dict[str, Any]:
    """The run's row as the dashboard's read hands it over."""
    with pipe.store.read() as conn:
        return dict(
            conn.execute(select(rejudge_runs).where(rejudge_runs.c.id == run_id)).mappings().one()
        )


def a_ready_run_with_an_upload_judged_only_under_the_fix(pipe: Pipeline) -> str:
    """Ravens lead thanks to "cab" until a run under the list without it, judged through; the
    hawks' upload (received before the run) is judged by the run but not yet live."""
    pipe.accepted(pipe.add_team("ravens"), b"0 0 2 0 cab\n")
    pipe.accepted(pipe.add_team("owls"), b"0 0 2 0 cat\n")
    drain(pipe.services)
    pipe.accepted(pipe.add_team("hawks"), b"0 0 2 0 cab\n")
    pipe.add_lexicon(WITHOUT_CAB, name="tiny-fixed")
    started = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "tiny-fixed", "mode": "full"}, headers=ADMIN
    )
    assert started.status_code == 202, started.text
    run_rejudge_work(pipe)
    return str(started.json()["id"])


def test_a_ready_runs_counts_follow_an_upload_judged_live_after_the_run_was_judged_through(
    pipe: Pipeline,
) -> None:
    run_id = a_ready_run_with_an_upload_judged_only_under_the_fix(pipe)
    counts = PreviewCounts(pipe.services.rejudges)
    ready = run_row(pipe, run_id)
    assert ready["state"] == "ready"
    # Hawks have no result under the old list yet: in the new ranks only.
    assert counts.counts(ready) == {"scores": 1, "ranks": 3}

    drain(pipe.services)  # the hawks' upload judged live, under the old list

    assert run_row(pipe, run_id) == ready  # nothing of the run's own row moved
    assert counts.counts(ready) == {"scores": 2, "ranks": 3}


def test_an_applied_runs_counts_are_those_apply_recorded_whatever_is_uploaded_after(
    pipe: Pipeline,
) -> None:
    run_id = a_ready_run_with_an_upload_judged_only_under_the_fix(pipe)
    drain(pipe.services)
    counts = PreviewCounts(pipe.services.rejudges)
    ready = counts.counts(run_row(pipe, run_id))
    assert pipe.client.post(f"/v1/rejudges/{run_id}/apply", headers=ADMIN).status_code == 200
    applied = run_row(pipe, run_id)
    assert counts.counts(applied) == ready == {"scores": 2, "ranks": 3}

    for n in range(3):  # a load test's teams, judged under the new list only
        pipe.accepted(pipe.add_team(f"load-3a1fcc-{n}"), b"0 0 2 0 bat\n")
    drain(pipe.services)

    assert counts.counts(applied) == ready
    another_process = PreviewCounts(SqlRejudgeRuns(pipe.store))
    assert another_process.counts(applied) == ready
    stored = pipe.services.rejudges.get(run_id)
    assert stored is not None and len(pipe.services.rejudges.rank_changes(stored)) == 6  # live


def test_a_run_applied_before_summaries_were_recorded_counts_nothing(pipe: Pipeline) -> None:
    run_id = a_ready_run_with_an_upload_judged_only_under_the_fix(pipe)
    assert pipe.client.post(f"/v1/rejudges/{run_id}/apply", headers=ADMIN).status_code == 200
    with pipe.store.write() as (conn, _):  # as a run applied before migration 0010 stands
        conn.execute(delete(rejudge_summaries).where(rejudge_summaries.c.run_id == run_id))

    assert PreviewCounts(SqlRejudgeRuns(pipe.store)).counts(run_row(pipe, run_id)) is None
    shown = pipe.client.get(f"/v1/rejudges/{run_id}", headers=ADMIN).json()
    assert (shown["preview"], shown["summary_recorded"], shown["changed"]) == (False, False, [])
