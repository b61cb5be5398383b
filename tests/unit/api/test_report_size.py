"""A report costs what it says: the worker packs it as it is serialised, the API streams it a
bounded piece at a time, unpacking is capped, and runs of identical illegal lines collapse."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from api.routes.submissions import ReportUnreadable
from core import report_blobs
from core.judging import Outcome, judge_group
from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, TeamLogin, worker_deps
from judge import Lexicon
from judge.wordytaire import default_layout, judge

TINY = Lexicon.from_words(list(TINY_WORDS))
# Runs of identical illegal lines around legal ones, and a blank line inside a run.
REPEATED = b"a\n" * 5 + b"0 0 2 0 cat\n" + b"a\n\na\n" + b"0 0 1 0 at\n" + b"zzz 1\n" * 3


def _judged(pipe: Pipeline, team: TeamLogin, data: bytes) -> str:
    submission_id: str = pipe.accepted(team, data)["id"]
    assert judge_group(worker_deps(pipe.services), [submission_id]) == {
        submission_id: Outcome.JUDGED
    }
    return submission_id


def test_runs_collapse_consecutive_identical_illegal_lines_and_say_where_each_run_ends(
    pipe: Pipeline, team: TeamLogin
) -> None:
    submission_id = _judged(pipe, team, REPEATED)
    url = f"/v1/submissions/{submission_id}/report"

    full = pipe.client.get(url, headers=ADMIN).json()
    runs = pipe.client.get(url, params={"lines": "runs"}, headers=ADMIN).json()

    expected = judge(REPEATED, TINY, default_layout()).to_json()
    assert full == {"submission": submission_id, "contest": "open", **expected}
    assert {k: v for k, v in runs.items() if k != "lines"} == {
        k: v for k, v in full.items() if k != "lines"
    }
    malformed = "a move has 5 fields (x1 y1 x2 y2 word); this line has 1"
    assert runs["lines"] == [
        {"line": 1, "ok": False, "reason": "malformed", "detail": malformed,
         "through": 5, "count": 5},
        full["lines"][5],
        {"line": 7, "ok": False, "reason": "malformed", "detail": malformed,
         "through": 9, "count": 2},
        full["lines"][8],
        {"line": 11, "ok": False, "reason": "malformed",
         "detail": "a move has 5 fields (x1 y1 x2 y2 word); this line has 2",
         "through": 13, "count": 3},
    ]  # fmt: skip


def test_runs_are_sent_gzipped_to_a_client_that_accepts_gzip(
    pipe: Pipeline, team: TeamLogin
) -> None:
    submission_id = _judged(pipe, team, REPEATED)
    url = f"/v1/submissions/{submission_id}/report?lines=runs"

    packed = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "gzip"})
    plain = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "identity"})

    assert packed.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers
    assert packed.json() == plain.json()
    assert len(plain.json()["lines"]) == 5


def test_a_report_of_a_million_identical_lines_collapses_to_one_object(
    pipe: Pipeline, team: TeamLogin
) -> None:
    submission_id = _judged(pipe, team, b"a\n" * 1_048_000)

    runs = pipe.client.get(
        f"/v1/submissions/{submission_id}/report",
        params={"lines": "runs"},
        headers=ADMIN | {"Accept-Encoding": "identity"},
    )

    assert len(runs.content) < 2048
    assert runs.json()["lines"] == [
        {"line": 1, "ok": False, "reason": "malformed",
         "detail": "a move has 5 fields (x1 y1 x2 y2 word); this line has 1",
         "through": 1_048_000, "count": 1_048_000},
    ]  # fmt: skip
    assert runs.json()["illegal"] == 1_048_000


def test_an_unknown_lines_form_is_a_422(pipe: Pipeline, team: TeamLogin) -> None:
    submission_id = _judged(pipe, team, REPEATED)

    response = pipe.client.get(
        f"/v1/submissions/{submission_id}/report", params={"lines": "all"}, headers=ADMIN
    )

    assert response.status_code == 422


def test_a_stored_report_that_inflates_past_the_cap_is_cut_off_not_inflated(
    pipe: Pipeline, team: TeamLogin, monkeypatch: pytest.MonkeyPatch
) -> None:
    submission_id = _judged(pipe, team, REPEATED)
    key = pipe.store.current_result(submission_id).report_key  # type: ignore[union-attr]
    pipe.blobs.objects[key] = gzip.compress(b" " * (4 << 20), compresslevel=9)  # a 4 KiB bomb
    monkeypatch.setattr(report_blobs, "max_report_bytes", lambda _upload: 1 << 20)

    with pytest.raises(ReportUnreadable, match="unpacks to over 1048576 bytes"):
        pipe.client.get(
            f"/v1/submissions/{submission_id}/report",
            headers=ADMIN | {"Accept-Encoding": "identity"},
        )


def test_unpacking_gives_bounded_pieces_and_stops_at_the_cap() -> None:
    report = judge(b"a\n" * 100_000, TINY, default_layout())
    packed = report_blobs.pack_pieces(report.json_chunks(one_per_line=True), 1 << 30)
    size = len(b"".join(report.json_chunks(one_per_line=True)))

    pieces = list(
        report_blobs.unpacked([packed[i : i + 4096] for i in range(0, len(packed), 4096)], size)
    )

    assert max(map(len, pieces)) <= 256 * 1024
    assert json.loads(b"".join(pieces)) == report.to_json()
    with pytest.raises(report_blobs.ReportTooLarge):
        list(report_blobs.unpacked([packed], size - 1))


def test_a_truncated_stored_report_is_an_error_not_a_short_document() -> None:
    packed = report_blobs.pack(b'{"lines":[]}' * 1000)

    with pytest.raises(ValueError, match="ends before"):
        list(report_blobs.unpacked([packed[: len(packed) // 2]], 1 << 20))


def test_the_worker_packs_a_report_without_holding_its_whole_json() -> None:
    report = judge(b"a\n" * 200_000, TINY, default_layout())
    json_size = len(report.to_json_bytes())

    tracemalloc.start()
    try:
        packed = report_blobs.pack_pieces(report.json_chunks(one_per_line=True), 1 << 30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert json_size > 20_000_000
    assert peak < json_size / 4, f"packing peaked at {peak} bytes for {json_size} of JSON"
    assert json.loads(gzip.decompress(packed)) == report.to_json()


def test_lines_that_fail_alike_share_one_detail_string() -> None:
    report = judge(b"a\n" * 1000 + b"0 0 1 0 zz\n" * 1000, TINY, default_layout())

    details = {id(verdict.detail) for verdict in report.verdicts}

    assert len(details) == 2


def test_a_report_past_the_cap_fails_its_submission_with_a_reason_and_spares_the_rest(
    pipe: Pipeline, team: TeamLogin
) -> None:
    big = pipe.accepted(team, b"a\n" * 5000)["id"]
    small = pipe.accepted(team, b"0 0 2 0 cat\n")["id"]
    deps = worker_deps(pipe.services)
    deps.max_report_bytes = 100_000

    outcomes = judge_group(deps, [big, small])

    assert outcomes == {big: Outcome.FAILED, small: Outcome.JUDGED}
    failed = pipe.submission(big)
    assert failed["state"] == "failed"
    assert failed["reason"] == "report_too_large"
    assert not [key for key in pipe.blobs.objects if key.startswith(f"reports/{big}/")]


@pytest.mark.parametrize(
    "line", [b"a\n", b"\xff\n", b'"\n', b"a\r\n", b"x 0 0 0 a\n", b"0 0 0 0 a\n"]
)
def test_the_cap_on_a_report_covers_the_largest_report_an_upload_can_have(line: bytes) -> None:
    # Two-byte lines are the most verdicts an upload can hold; each kind is well inside the cap.
    upload = line * 2000
    report = judge(upload, TINY, default_layout())
    pieces = report.json_chunks({"submission": "s" * 32, "contest": "c" * 64}, one_per_line=True)

    size = len(b"".join(pieces))

    assert size < (report_blobs.max_report_bytes(len(upload)) - (1 << 20)) / 1.5
