"""Results after the workers ran: scores, reports, the leaderboard and the event log behind them."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import BlobStoreUnavailable
from core.fakes import InMemoryBlobStore
from core.judging import Outcome, RetryLater, judge_group
from devstack.testing.pipeline import (
    ADMIN,
    TINY_WORDS,
    Pipeline,
    drain,
    open_pipeline,
    worker_deps,
)
from judge import Lexicon
from judge.wordytaire import default_layout, judge

TINY = Lexicon.from_words(list(TINY_WORDS))
CAT = b"0 0 2 0 cat\n"  # 9 points
CAT_ATE = b"-1 0 1 0 cat\n0 0 0 2 ate\n"  # 11
MIXED = b"0 0 2 0 dog\n0 0 2 0 cat\n5 5 6 5 at\n"  # 9, with two illegal lines
AT = b"0 0 1 0 at\n"  # 3
GARBAGE = b"garbage\n"  # 0, one malformed line

# team: its uploads, in the order they are sent (zebra's CAT comes before alpha's on purpose)
UPLOADS = [("zebra", CAT), ("alpha", CAT), ("mid", GARBAGE), ("zebra", AT), ("mid", CAT_ATE),
           ("alpha", MIXED), ("nil", GARBAGE)]  # fmt: skip


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipeline]:
    with open_pipeline(tmp_path) as pipeline:
        pipeline.add_contest("open")
        for name in ("zebra", "alpha", "mid", "nil", "idle"):
            pipeline.add_team(name)
        yield pipeline


@pytest.fixture
def judged(pipe: Pipeline) -> dict[str, bytes]:
    """Every upload of UPLOADS, judged: submission id -> its bytes."""
    sent = {pipe.accepted(pipe.teams[name], data)["id"]: data for name, data in UPLOADS}
    assert [outcome for _, outcome in drain(pipe.services)] == [Outcome.JUDGED] * len(sent)
    return sent


def test_a_judged_submission_carries_the_offline_judges_score(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    for submission_id, data in judged.items():
        expected = judge(data, TINY, default_layout())
        body = pipe.submission(submission_id)

        assert body["state"] == "judged"
        assert (body["score"], body["legal"], body["illegal"]) == (
            expected.total, expected.legal, expected.illegal,
        )  # fmt: skip
        assert (body["lexicon"], body["layout"]) == (TINY.id, default_layout().id)
        assert body["judged_at"] >= body["received_at"]
        assert body["failure"] is None


def test_a_move_list_shows_its_line_counts_beside_its_score_wherever_it_is_listed(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    waiting = pipe.accepted(pipe.teams["idle"], CAT)["id"]  # not judged yet: null counts
    listed = pipe.client.get("/v1/contests/open/submissions", headers=ADMIN).json()
    exported = pipe.client.get("/v1/contests/open/results", headers=ADMIN).json()
    counts = ("score", "legal", "illegal")

    rows = {row["id"]: row for row in listed["submissions"]}
    assert rows.keys() == {*judged, waiting}
    for sid, row in rows.items():
        shown = pipe.submission(sid)
        assert [row[k] for k in counts] == [shown[k] for k in counts]
        assert [row[k] for k in counts] == [(shown["result"] or {}).get(k) for k in counts]
    assert [rows[waiting][k] for k in counts] == [None, None, None]
    assert {row["submission"]: [row[k] for k in counts] for row in exported["results"]} == {
        sid: [row[k] for k in counts] for sid, row in rows.items()
    }


def test_the_owning_team_reads_its_result(pipe: Pipeline, judged: dict[str, bytes]) -> None:
    mine = next(sid for sid, data in judged.items() if data == CAT_ATE)

    response = pipe.client.get(f"/v1/submissions/{mine}", headers=pipe.teams["mid"].headers)

    assert response.status_code == 200
    assert response.json()["score"] == 11
    assert response.json()["team"] == pipe.teams["mid"].id


def test_the_report_is_the_spec_json_of_the_offline_judge(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    for submission_id, data in judged.items():
        response = pipe.client.get(f"/v1/submissions/{submission_id}/report", headers=ADMIN)

        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        report = response.json()
        expected = judge(data, TINY, default_layout()).to_json()
        assert {
            k: report[k] for k in ("total", "legal", "illegal", "lexicon", "layout", "lines")
        } == {k: expected[k] for k in ("total", "legal", "illegal", "lexicon", "layout", "lines")}
        assert report == {"submission": submission_id, "contest": "open", **expected}


def test_a_report_is_stored_gzipped_and_sent_so_only_to_a_client_that_accepts_gzip(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    submission_id = next(iter(judged))
    key = pipe.store.current_result(submission_id).report_key  # type: ignore[union-attr]
    url = f"/v1/submissions/{submission_id}/report"

    packed = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "gzip"})
    plain = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "identity"})

    stored = pipe.blobs.objects[key]
    assert stored[:2] == b"\x1f\x8b"
    assert len(stored) < len(plain.content)
    assert packed.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == packed.headers["vary"] == "Accept-Encoding"
    assert packed.json() == plain.json() == json.loads(gzip.decompress(stored))
    assert plain.json()["submission"] == submission_id


def test_a_report_stored_as_plain_json_before_reports_were_packed_is_served_alike(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    submission_id = next(iter(judged))
    key = pipe.store.current_result(submission_id).report_key  # type: ignore[union-attr]
    pipe.client.get(f"/v1/submissions/{submission_id}/report", headers=ADMIN)  # stores it
    pipe.blobs.objects[key] = legacy = gzip.decompress(pipe.blobs.objects[key])

    for accept in ("gzip", "identity"):
        response = pipe.client.get(
            f"/v1/submissions/{submission_id}/report", headers=ADMIN | {"Accept-Encoding": accept}
        )

        assert "content-encoding" not in response.headers
        assert response.content == legacy


def test_a_mixed_submissions_report_gives_a_reason_for_each_illegal_line(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    mixed = next(sid for sid, data in judged.items() if data == MIXED)

    lines = pipe.client.get(f"/v1/submissions/{mixed}/report", headers=ADMIN).json()["lines"]

    assert [(line["line"], line["ok"], line.get("reason")) for line in lines] == [
        (1, False, "not_in_dictionary"), (2, True, None), (3, False, "not_connected"),
    ]  # fmt: skip


def test_there_is_no_report_before_judging(pipe: Pipeline) -> None:
    accepted = pipe.accepted(pipe.teams["zebra"], CAT)

    response = pipe.client.get(f"/v1/submissions/{accepted['id']}/report", headers=ADMIN)

    assert response.status_code == 404
    assert "queued" in response.json()["detail"]


def test_the_leaderboard_ranks_best_scores_and_breaks_ties_by_the_earlier_receipt(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    board = pipe.client.get("/v1/contests/open/leaderboard")

    assert board.status_code == 200
    assert board.json()["contest"] == "open"
    entries = board.json()["entries"]
    assert [(e["rank"], e["team"], e["score"]) for e in entries] == [
        (1, "mid", 11), (2, "zebra", 9), (3, "alpha", 9), (4, "nil", 0),
    ]  # fmt: skip
    zebra, alpha = entries[1], entries[2]
    assert zebra["received_at"] < alpha["received_at"]
    assert judged[alpha["submission"]] == CAT  # alpha's first 9, not its later MIXED 9
    assert set(entries[0]) == {"rank", "team", "score", "submission", "received_at"}


def test_the_leaderboard_is_public_and_empty_before_anything_is_judged(pipe: Pipeline) -> None:
    pipe.accepted(pipe.teams["zebra"], CAT)

    board = pipe.client.get("/v1/contests/open/leaderboard")

    assert board.status_code == 200
    assert board.json() == {
        "contest": "open", "game": "wordytaire", "entries": [], "next": None,
        "frozen": False, "pending": 0,
    }  # fmt: skip


def all_events_by_pages(pipe: Pipeline, limit: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = pipe.client.get("/v1/events", params={"after": after, "limit": limit}, headers=ADMIN)
        assert page.status_code == 200
        body = page.json()
        assert len(body["events"]) <= limit
        if not body["events"]:
            assert body["next"] == after
            return found
        assert body["next"] == body["events"][-1]["id"]
        found += body["events"]
        after = body["next"]


def test_the_event_log_pages_in_order_with_after_limit_and_next(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    paged = all_events_by_pages(pipe, limit=4)

    assert paged == pipe.client.get("/v1/events?limit=1000", headers=ADMIN).json()["events"]
    ids = [event["id"] for event in paged]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert len(paged) > 4 * 3
    for event in paged:
        assert {"id", "ts", "type"} <= set(event)
        assert re.fullmatch(r"[a-z]+(\.[a-z]+)+", event["type"]), event["type"]


def test_event_paging_rejects_a_bad_limit(pipe: Pipeline) -> None:
    for query in ("limit=0", "limit=100000", "after=-1", "after=x"):
        response = pipe.client.get(f"/v1/events?{query}", headers=ADMIN)
        assert response.status_code == 422, query
        assert response.json()["error"] == "invalid"


def test_a_submissions_events_come_stored_queued_judging_judged(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    events = pipe.events()
    for submission_id, data in judged.items():
        own = [e for e in events if e.get("submission") == submission_id]

        assert [e["type"] for e in own] == [
            "submission.stored", "submission.queued", "submission.judging", "submission.judged",
        ]  # fmt: skip
        assert own[-1]["score"] == judge(data, TINY, default_layout()).total


def standing(judged: dict[str, Any]) -> tuple[int, str, str]:
    """Higher score first, then the earlier receipt."""
    return (-judged["score"], judged["received_at"], judged["submission"])


def test_replaying_the_events_alone_rebuilds_the_leaderboard(
    pipe: Pipeline, judged: dict[str, bytes]
) -> None:
    names: dict[str, str] = {}
    best: dict[str, dict[str, Any]] = {}
    for event in all_events_by_pages(pipe, limit=5):
        if event["type"] == "team.created":
            names[event["team"]] = event["name"]
        elif event["type"] == "submission.judged":
            held = best.get(event["team"])
            if held is None or standing(event) < standing(held):
                best[event["team"]] = event
    ranked = sorted(best.values(), key=standing)
    rebuilt = [
        {"rank": i, "team": names[e["team"]], "score": e["score"], "submission": e["submission"],
         "received_at": e["received_at"]}
        for i, e in enumerate(ranked, 1)
    ]  # fmt: skip

    assert rebuilt == pipe.client.get("/v1/contests/open/leaderboard").json()["entries"]


def test_a_duplicate_message_judges_nothing_twice(pipe: Pipeline, judged: dict[str, bytes]) -> None:
    before = pipe.events()

    again = drain(pipe.services)

    assert [outcome for _, outcome in again] == [Outcome.SKIPPED] * len(judged)
    assert pipe.events() == before
    judged_events = [e["submission"] for e in before if e["type"] == "submission.judged"]
    assert sorted(judged_events) == sorted(judged)


def test_a_lost_upload_ends_failed_with_a_reason_and_an_event(pipe: Pipeline) -> None:
    accepted = pipe.accepted(pipe.teams["zebra"], CAT)
    stored = pipe.store.get_submission(accepted["id"])
    assert stored is not None
    pipe.blobs.delete(stored.blob_key)

    assert drain(pipe.services) == [(accepted["id"], Outcome.FAILED)]

    body = pipe.submission(accepted["id"])
    assert body["state"] == "failed"
    assert body["score"] is None
    assert body["reason"] == "upload_missing"
    failed = [e for e in pipe.events() if e["type"] == "submission.failed"]
    assert [e["submission"] for e in failed] == [accepted["id"]]
    assert failed[0]["reason"].startswith("upload_missing")
    assert not [e for e in pipe.events() if e["type"] == "submission.judged"]
    assert pipe.client.get("/v1/contests/open/leaderboard").json()["entries"] == []


def test_stored_bytes_that_no_longer_match_their_sha256_fail_for_good_unjudged(
    pipe: Pipeline,
) -> None:
    accepted = pipe.accepted(pipe.teams["zebra"], CAT)
    (key,) = [k for k in pipe.blobs.objects if accepted["id"] in k]
    pipe.blobs.objects[key] = CAT_ATE  # damaged in storage: every read hands this back

    assert drain(pipe.services) == [(accepted["id"], Outcome.FAILED)]

    body = pipe.submission(accepted["id"])
    assert body["state"] == "failed"
    assert body["reason"] == "upload_corrupt"
    assert body["score"] is None


def test_an_outage_during_judging_releases_the_submission_for_a_retry(pipe: Pipeline) -> None:
    accepted = pipe.accepted(pipe.teams["zebra"], CAT)
    pipe.blobs.down = True

    with pytest.raises(RetryLater):
        drain(pipe.services)

    pipe.blobs.down = False
    assert pipe.state(accepted["id"]) == "queued"
    assert [e["type"] for e in pipe.events()][-1] == "submission.retrying"
    assert drain(pipe.services) == [(accepted["id"], Outcome.JUDGED)]
    assert pipe.submission(accepted["id"])["score"] == 9


# -- a message carrying a group of uploads ------------------------------------------------------


def send_group(pipe: Pipeline, uploads: list[tuple[str, bytes]]) -> list[str]:
    return [pipe.accepted(pipe.teams[name], data)["id"] for name, data in uploads]


def test_a_group_is_claimed_in_one_transaction_and_recorded_in_another_each_with_its_score(
    pipe: Pipeline,
) -> None:
    ids = send_group(pipe, [("zebra", CAT), ("alpha", MIXED), ("mid", GARBAGE)])
    before = len(pipe.events())

    outcomes = judge_group(worker_deps(pipe.services), ids, {ids[0]: CAT})

    assert outcomes == dict.fromkeys(ids, Outcome.JUDGED)
    assert [pipe.submission(sid)["score"] for sid in ids] == [9, 9, 0]
    after = [(e["type"], e["submission"]) for e in pipe.events()[before:]]
    assert after == [("submission.judging", sid) for sid in ids] + [
        ("submission.judged", sid) for sid in ids
    ]


def test_a_group_skips_what_is_judged_and_fails_only_the_upload_that_is_gone(
    pipe: Pipeline,
) -> None:
    done, lost, fresh = send_group(pipe, [("zebra", CAT), ("alpha", CAT), ("mid", CAT_ATE)])
    deps = worker_deps(pipe.services)
    assert judge_group(deps, [done]) == {done: Outcome.JUDGED}
    stored = pipe.store.get_submission(lost)
    assert stored is not None
    pipe.blobs.delete(stored.blob_key)

    outcomes = judge_group(deps, [done, lost, fresh, "no-such-submission"])

    assert outcomes == {
        done: Outcome.SKIPPED,
        lost: Outcome.FAILED,
        fresh: Outcome.JUDGED,
        "no-such-submission": Outcome.SKIPPED,
    }
    assert [pipe.state(sid) for sid in (done, lost, fresh)] == ["judged", "failed", "judged"]
    assert pipe.submission(fresh)["score"] == 11


class FailingAfter(InMemoryBlobStore):
    """S3 that takes `puts` more writes, then is out."""

    def __init__(self, inner: InMemoryBlobStore, puts: int) -> None:
        super().__init__()
        self.objects = inner.objects
        self.puts = puts

    def put(self, key: str, data: bytes, *args: Any, **kwargs: Any) -> None:
        if self.puts <= 0:
            raise BlobStoreUnavailable("S3 went away")
        self.puts -= 1
        super().put(key, data, *args, **kwargs)


def test_an_outage_in_mid_group_records_what_was_judged_and_retries_only_the_rest(
    pipe: Pipeline,
) -> None:
    ids = send_group(pipe, [("zebra", CAT), ("alpha", CAT_ATE), ("mid", AT)])
    deps = worker_deps(pipe.services)
    deps.blobs = FailingAfter(pipe.blobs, puts=1)  # the first report is written, then no more
    deps.defer_reports = False  # every report written as it is judged

    with pytest.raises(RetryLater) as raised:
        judge_group(deps, ids)

    assert raised.value.submission_ids == ids[1:]
    assert [pipe.state(sid) for sid in ids] == ["judged", "queued", "queued"]
    retrying = [e["submission"] for e in pipe.events() if e["type"] == "submission.retrying"]
    assert retrying == ids[1:]

    deps.blobs = pipe.blobs
    assert judge_group(deps, raised.value.submission_ids) == dict.fromkeys(ids[1:], Outcome.JUDGED)
    assert [pipe.submission(sid)["score"] for sid in ids] == [9, 11, 3]


def test_a_group_out_of_attempts_fails_for_good_without_a_retry(pipe: Pipeline) -> None:
    ids = send_group(pipe, [("zebra", CAT), ("alpha", AT)])
    deps = worker_deps(pipe.services)
    deps.max_attempts = 1
    pipe.blobs.down = True

    outcomes = judge_group(deps, ids)  # no RetryLater: nothing is left to retry

    assert outcomes == dict.fromkeys(ids, Outcome.FAILED)
    assert [pipe.state(sid) for sid in ids] == ["failed", "failed"]
