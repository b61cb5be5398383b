"""`tilejudge audit --token`: the results a team is served of its own submissions (with the
admin token, every submission's) are compared with their latest outcomes in the transparency
log, so a result row changed in SQL that is no team's best, and so on no standings, is caught
by the team it belongs to; during a freeze too, with the team's own sealed entries."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from cli.audit import SEALED_HEADER, Audit, audit, report, sealed_leaf
from devstack.testing.pipeline import ADMIN, ADMIN_TOKEN, Pipeline, TeamLogin, drain
from infra.sql.games import drop_details
from infra.sql.schema import log_entries, results, submissions, word_hashes
from tests.unit.api.test_transparency import entries, judged_contest, sequence

CAT_AT = b"0 0 2 0 cat\n0 1 0 2 at\n"


def fetch(pipe: Pipeline, token: str | None) -> Any:
    """`tilejudge audit`'s reads, with the token as the CLI sends it."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(path: str) -> tuple[int, bytes, int | None]:
        answer = pipe.client.get(path, headers=headers)
        assert answer.status_code in (200, 403), (path, answer.status_code, answer.text)
        return answer.status_code, answer.content, sealed_leaf(answer.headers.get(SEALED_HEADER))

    return get


def run_audit(pipe: Pipeline, token: str | None, contest: str = "open") -> Audit:
    key = pipe.client.get(f"/v1/contests/{contest}/log/key").text.strip()
    return audit(
        fetch(pipe, token),
        contest,
        key=key,
        seen_dir=None,
        err=io.StringIO(),
        settle=0,
        served=token is not None,
    )


def logged_scores(pipe: Pipeline, contest: str = "open") -> dict[str, int]:
    return {
        e["submission"]: e["result"]["score"]
        for e in entries(pipe, contest)
        if e["type"] == "verdict"
    }


def second_best(pipe: Pipeline) -> tuple[TeamLogin, str, int]:
    """The owls' submission that is not their best, and its logged score."""
    owls = pipe.teams["owls"]
    scores = logged_scores(pipe)
    mine = [row["id"] for row in listed(pipe, owls.headers)["submissions"]]
    assert len(mine) == 2
    low = min(mine, key=lambda sid: scores[sid])
    assert scores[low] < max(scores[sid] for sid in mine)
    return owls, low, scores[low]


def listed(pipe: Pipeline, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    answer = pipe.client.get("/v1/contests/open/submissions", headers=headers, params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def set_score(pipe: Pipeline, submission_id: str, score: int) -> None:
    with pipe.store.engine.begin() as conn:
        conn.execute(
            update(results).where(results.c.submission_id == submission_id).values(score=score)
        )


def test_an_untouched_contest_passes_the_audit_with_a_teams_token_and_the_admins(
    pipe: Pipeline,
) -> None:
    ravens, owls, _ = judged_contest(pipe)
    for token, counted in ((ravens.token, 1), (owls.token, 2), (ADMIN_TOKEN, 3)):
        found = run_audit(pipe, token)
        assert found.problems == [], found
        assert any(
            "results served match the log's latest outcomes" in line and f"({counted}:" in line
            for line in found.passed
        ), found
        assert any("standings served match" in line for line in found.passed)


def test_a_changed_result_that_is_no_best_is_caught_by_its_team_and_the_organiser(
    pipe: Pipeline,
) -> None:
    ravens, _, _ = judged_contest(pipe)
    owls, changed, score = second_best(pipe)
    set_score(pipe, changed, score - 1)
    served = pipe.client.get(f"/v1/submissions/{changed}", headers=owls.headers).json()
    assert served["score"] == score - 1  # what the team is shown

    assert run_audit(pipe, None).problems == []  # on no standings: the public cannot see it
    assert run_audit(pipe, ravens.token).problems == []  # not the ravens'
    for token in (owls.token, ADMIN_TOKEN):
        found = run_audit(pipe, token)
        assert found.problems == [
            f'submission {changed} is served {{"score": {score - 1}}}, its latest logged '
            f'verdict says {{"score": {score}}}'
        ], found
        assert report(found, io.StringIO(), io.StringIO()) == 1


def test_a_submission_served_without_its_logged_verdict_and_one_not_served_are_named(
    pipe: Pipeline,
) -> None:
    judged_contest(pipe)
    owls, changed, _ = second_best(pipe)
    with pipe.store.engine.begin() as conn:  # its result gone, and its game's rows with it
        drop_details(conn, select(results.c.id).where(results.c.submission_id == changed))
        conn.execute(results.delete().where(results.c.submission_id == changed))
    found = run_audit(pipe, owls.token)
    assert len(found.problems) == 1 and found.problems[0].startswith(
        f"submission {changed} is served no result (judged), its latest logged verdict is"
    ), found
    with pipe.store.engine.begin() as conn:  # the row gone, as by a hand in the database
        conn.execute(word_hashes.delete().where(word_hashes.c.submission_id == changed))
        conn.execute(submissions.delete().where(submissions.c.id == changed))
    for token in (owls.token, ADMIN_TOKEN):
        assert run_audit(pipe, token).problems == [
            f"submission {changed} of team {owls.id} is in the log, but not served"
        ]


def test_a_team_lists_its_own_submissions_only_as_each_is_served(pipe: Pipeline) -> None:
    _, owls, ids = judged_contest(pipe)
    mine = listed(pipe, owls.headers)
    assert mine["team"] == owls.id and mine["next"] is None
    assert [row["id"] for row in mine["submissions"]] == sorted(ids[1:])
    for row in mine["submissions"]:
        shown = pipe.client.get(f"/v1/submissions/{row['id']}", headers=owls.headers).json()
        assert {k: v for k, v in row.items() if k != "sealed"} == shown
        assert row["sealed"] == []
    # The ravens' result is neither listed to the owls nor readable by them.
    assert ids[0] not in {row["id"] for row in mine["submissions"]}
    assert pipe.client.get(f"/v1/submissions/{ids[0]}", headers=owls.headers).status_code == 404

    organiser = listed(pipe, ADMIN)
    assert organiser["team"] is None
    assert [row["id"] for row in organiser["submissions"]] == sorted(ids)
    first = listed(pipe, ADMIN, limit=2)
    assert len(first["submissions"]) == 2 and first["next"] == first["submissions"][-1]["id"]
    rest = listed(pipe, ADMIN, limit=2, after=first["next"])
    assert [row["id"] for row in first["submissions"] + rest["submissions"]] == sorted(ids)

    pipe.add_contest("other")
    stranger = pipe.add_team("stranger", contest="other")
    path = "/v1/contests/open/submissions"
    assert pipe.client.get(path, headers=stranger.headers).status_code == 404
    assert pipe.client.get(path).status_code == 401
    assert pipe.client.get(path, params={"limit": 501}, headers=ADMIN).status_code == 422
    assert pipe.client.get(path, params={"after": "x y"}, headers=ADMIN).status_code == 422
    assert pipe.client.get("/v1/contests/nope/submissions", headers=ADMIN).status_code == 404


def test_during_a_freeze_a_team_audits_its_own_sealed_verdicts(
    pipe: Pipeline, shifted: Any
) -> None:
    from tests.unit.api.test_freeze import CONTEST, TAB, frozen_contest, past_the_freeze

    frozen_contest(pipe)
    ravens = pipe.add_team("ravens", contest=CONTEST)
    owls = pipe.add_team("owls", contest=CONTEST)
    pipe.accepted(ravens, CAT_AT)
    pipe.accepted(owls, CAT_AT)
    drain(pipe.services)
    past_the_freeze(shifted)
    after = pipe.accepted(ravens, TAB)["id"]
    drain(pipe.services)
    sequence(pipe)

    public = run_audit(pipe, None, CONTEST)
    assert public.problems == [] and public.withheld > 0, public
    assert not any("results served" in line for line in public.passed)
    sealed = pipe.client.get(f"/v1/contests/{CONTEST}/submissions", headers=ravens.headers).json()[
        "submissions"
    ]
    # The verdict after the freeze alone is sealed: the ravens read it, the public may not.
    assert {row["id"]: len(row["sealed"]) for row in sealed}[after] == 1
    assert sum(len(row["sealed"]) for row in sealed) == 1
    for token in (ravens.token, ADMIN_TOKEN):
        found = run_audit(pipe, token, CONTEST)
        assert found.problems == [], found
        assert any("results served match" in line for line in found.passed), found

    score = logged_scores(pipe, CONTEST)[after]  # the organiser reads every entry
    set_score(pipe, after, score + 5)
    assert run_audit(pipe, None, CONTEST).problems == []  # the public audit is unchanged
    assert run_audit(pipe, owls.token, CONTEST).problems == []
    caught = (
        f'submission {after} is served {{"score": {score + 5}}}, its latest logged verdict '
        f'says {{"score": {score}}}'
    )
    assert run_audit(pipe, ravens.token, CONTEST).problems == [caught]
    # The organiser reads every entry: the standings it is served differ too (now a best).
    assert caught in run_audit(pipe, ADMIN_TOKEN, CONTEST).problems


def test_a_sealed_entry_served_to_its_team_must_hash_to_its_leaf(
    pipe: Pipeline, shifted: Any
) -> None:
    from tests.unit.api.test_freeze import CONTEST, TAB, frozen_contest, past_the_freeze

    frozen_contest(pipe)
    ravens = pipe.add_team("ravens", contest=CONTEST)
    past_the_freeze(shifted)
    after = pipe.accepted(ravens, TAB)["id"]
    drain(pipe.services)
    sequence(pipe)
    with pipe.store.engine.begin() as conn:
        leaf, entry = conn.execute(
            select(log_entries.c.leaf, log_entries.c.entry).where(
                log_entries.c.sealed, log_entries.c.submission_id == after
            )
        ).one()
        conn.execute(
            update(log_entries)
            .where(log_entries.c.contest_id == CONTEST, log_entries.c.leaf == leaf)
            .values(entry=bytes(entry).replace(b'"score":13', b'"score":14'))
        )
    set_score(pipe, after, 14)
    found = run_audit(pipe, ravens.token, CONTEST)
    assert found.problems[0] == (
        f"the sealed entry {leaf} served with {after} does not hash to leaf {leaf} of the "
        "signed tree"
    ), found


@pytest.fixture
def shifted(monkeypatch: pytest.MonkeyPatch) -> Any:
    from core import clock
    from tests.unit.api.test_freeze import Shifted

    moved = Shifted()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def test_the_command_fails_with_a_teams_token_on_a_changed_result_it_is_served(
    pipe: Pipeline,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from cli.main import main
    from infra import api_client

    real_connect = api_client.connect

    def connect(*args: Any, **kwargs: Any) -> api_client.Client:
        return real_connect(*args, **(kwargs | {"transport": pipe.client._transport}))

    monkeypatch.setattr(api_client, "connect", connect)
    judged_contest(pipe)
    owls, changed, score = second_best(pipe)
    set_score(pipe, changed, score - 1)
    key = pipe.client.get("/v1/contests/open/log/key").text.strip()
    environ = {"TILEJUDGE_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    argv = ["audit", "--contest", "open", "--key", key, "--url", "http://testserver"]

    assert main(argv, environ=environ) == 0  # the public's audit
    capsys.readouterr()
    assert main([*argv, "--token", owls.token], environ=environ) == 1
    err = capsys.readouterr().err
    assert f"tilejudge: audit: submission {changed} is served" in err, err


@pytest.mark.parametrize("change", ["rejudge", "team_deleted", "close"])
def test_the_audit_with_a_token_passes_after_a_rejudge_a_team_deletion_and_the_close(
    pipe: Pipeline, change: str
) -> None:
    ravens, owls, _ = judged_contest(pipe)
    if change == "rejudge":
        from tests.unit.api.test_rejudge import run_rejudge_work

        response = pipe.client.post(
            "/v1/lexicons",
            params={"name": "fixed"},
            content=b"cat\nat\nate\ntea\neat\ntab\nbat\n",  # no "cab", "by"
            headers={**ADMIN, "Content-Type": "text/plain"},
        )
        assert response.status_code == 201, response.text
        run = pipe.client.post(
            "/v1/contests/open/rejudges", json={"lexicon": "fixed"}, headers=ADMIN
        ).json()
        run_rejudge_work(pipe)
        applied = pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN)
        assert applied.status_code == 200, applied.text
    elif change == "team_deleted":
        assert pipe.client.delete(f"/v1/teams/{owls.id}", headers=ADMIN).status_code in (200, 204)
    else:
        assert pipe.client.post("/v1/contests/open/close", headers=ADMIN).status_code == 200
    sequence(pipe)
    tokens = [ravens.token, ADMIN_TOKEN] + ([] if change == "team_deleted" else [owls.token])
    for token in tokens:
        found = run_audit(pipe, token)
        assert found.problems == [], found
        assert any("results served match" in line for line in found.passed), found
