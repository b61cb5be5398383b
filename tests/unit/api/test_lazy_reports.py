"""A light upload's report is made when it is first read (core.reports), and is byte for byte the
report the worker stored before it left them to be asked for: over generated uploads of both
games, the eager path's object and the lazy one's are compared, then served alike."""

from __future__ import annotations

import gzip
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from core import report_blobs, tuning
from core.errors import ReportPending, UnknownRuleset
from core.fakes import InMemoryBlobStore
from core.games import game
from core.judging import Outcome, judge_group
from core.reports import AskedReports, Reports
from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, open_pipeline, worker_deps
from devstack.testing.word_lists import cached_list
from infra.sql.schema import results
from judge import Lexicon
from judge.crosstiles import corrupt, default_board, verify
from judge.crosstiles import generate as generate_game
from judge.crosstiles.generator import CORRUPTIONS
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

TINY = Lexicon.from_words(list(TINY_WORDS))

# Lines the generator never writes: every reason, quotes and bytes JSON must escape, blanks.
ODD = (
    b'0 0 2 0 zzz\n\n7 7 7 9 cat\r\n0 0 0 0 \x01"\\\n\xff\xfe\n'
    + b"a\n" * 40
    + b'1 1 1 1 "quoted"\n'
    + b"0 0 14 0 "
    + b"q" * 15
    + b"\n"
)


@pytest.fixture(scope="module")
def enable() -> Lexicon:
    return Lexicon.from_bytes(cached_list("enable_2-16.txt").read_bytes())


@pytest.fixture(scope="module")
def move_lists(enable: Lexicon) -> list[bytes]:
    index = WordIndex.build(enable.words)
    rng = random.Random(27)
    made = [
        generate(index, default_layout(), seed=n, moves=rng.choice((5, 200, 3000)),
                 illegal_share=rng.choice((0.0, 0.1, 0.5)))
        for n in range(10)
    ]  # fmt: skip
    heavy = made[1] + b"a\n" * (tuning.HEAVY_BYTES // 2)  # made by a worker, when asked
    return [*made, ODD, made[1] + ODD, b"", b"\n", heavy]


def _eager_then_lazy(pipe: Pipeline, ids: list[str]) -> None:
    """Judge with every report stored (the path before reports were deferred), keep those
    objects, drop them, then read each report: made again, it is the same bytes."""
    deps = worker_deps(pipe.services)
    deps.defer_reports = False
    assert judge_group(deps, ids) == dict.fromkeys(ids, Outcome.JUDGED)
    keys = {sid: pipe.store.current_result(sid).report_key for sid in ids}  # type: ignore[union-attr]
    eager = {sid: pipe.blobs.objects.pop(keys[sid]) for sid in ids}

    for sid in ids:
        url = f"/v1/submissions/{sid}/report"
        plain = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "identity"})
        assert plain.status_code == 200, plain.text
        assert plain.content == gzip.decompress(eager[sid])
        assert pipe.blobs.objects[keys[sid]] == eager[sid]  # stored: later reads stream it
    url = f"/v1/submissions/{ids[0]}/report"  # (at most 30 reads a minute)
    packed = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.content == gzip.decompress(eager[ids[0]])  # (the client inflates it)


def test_wordytaire_reports_made_when_first_read_are_the_ones_the_worker_stored(
    tmp_path: Path, enable: Lexicon, move_lists: list[bytes]
) -> None:
    words = tuple(sorted(enable.words))
    with open_pipeline(tmp_path) as pipe:
        pipe.add_lexicon(words, name="enable")
        pipe.add_contest("open", lexicon="enable")
        teams = [pipe.add_team(f"t{n}") for n in range(len(move_lists))]
        ids = [pipe.accepted(t, data)["id"] for t, data in zip(teams, move_lists, strict=True)]
        assert all(report_blobs.deferrable(len(d), 1 << 30) for d in move_lists)

        _eager_then_lazy(pipe, ids)


def test_crosstiles_reports_made_when_first_read_are_the_ones_the_worker_stored(
    tmp_path: Path,
) -> None:
    full = Lexicon.from_bytes(cached_list("crosstiles.txt").read_bytes())
    board = default_board()
    rng = random.Random(5)
    games = [
        generate_game(2 + n % 3, f"lazy-{n}", full, board, exchanges=n % 2 == 0,
                      passes=n % 3 == 0, timeouts=n % 4 == 1, rng_seed=n)
        for n in range(6)
    ]  # fmt: skip
    spoilt = [
        corrupt(generate_game(2, f"spoilt-{n}", full, board, rng_seed=100 + n), kind, rng)
        for n, kind in enumerate(sorted(CORRUPTIONS))
    ]
    used = {w for g in games for w in verify(g, full, board).words}
    with open_pipeline(tmp_path) as pipe:
        pipe.add_lexicon(tuple(sorted(used)), name="game-words")
        pipe.add_contest("xt", lexicon="game-words", game="crosstiles")
        team = pipe.add_team("club", contest="xt", uploads_logs=True)
        ids = list(dict.fromkeys(pipe.accepted(team, log)["id"] for log in games + spoilt))

        _eager_then_lazy(pipe, ids)


@pytest.fixture
def judged(pipe: Pipeline) -> Iterator[str]:
    team = pipe.add_team("ravens")
    submission_id: str = pipe.accepted(team, b"0 0 2 0 cat\n0 0 0 2 cab\nzz\n")["id"]
    assert judge_group(worker_deps(pipe.services), [submission_id]) == {
        submission_id: Outcome.JUDGED
    }
    yield submission_id


def test_a_light_uploads_report_is_not_stored_until_it_is_read(pipe: Pipeline, judged: str) -> None:
    key = pipe.store.current_result(judged).report_key  # type: ignore[union-attr]
    assert key not in pipe.blobs.objects

    first = pipe.client.get(f"/v1/submissions/{judged}/report", headers=ADMIN)
    runs = pipe.client.get(f"/v1/submissions/{judged}/report?lines=runs", headers=ADMIN)

    assert first.status_code == runs.status_code == 200
    assert key in pipe.blobs.objects
    expected = judge(b"0 0 2 0 cat\n0 0 0 2 cab\nzz\n", TINY, default_layout())
    assert first.json() == {"submission": judged, "contest": "open", **expected.to_json()}
    assert runs.json()["lines"][-1]["reason"] == "malformed"


def test_a_result_the_running_judge_does_not_reproduce_gets_no_report_but_a_409(
    pipe: Pipeline, judged: str
) -> None:
    with pipe.store.engine.begin() as conn:
        conn.execute(
            update(results).where(results.c.submission_id == judged).values(judge_version="0")
        )

    response = pipe.client.get(f"/v1/submissions/{judged}/report", headers=ADMIN)

    assert response.status_code == 409
    assert "judge version 0" in response.json()["detail"]
    assert not [key for key in pipe.blobs.objects if key.startswith(f"reports/{judged}/")]


def test_a_result_whose_word_list_is_gone_gets_a_409_not_a_report(
    pipe: Pipeline, judged: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(lexicon_id: str) -> Lexicon:
        raise UnknownRuleset(f"no lexicon {lexicon_id}")

    monkeypatch.setattr(pipe.services.reports.rulesets, "lexicon", gone)

    response = pipe.client.get(f"/v1/submissions/{judged}/report", headers=ADMIN)

    assert response.status_code == 409
    assert "no longer stored" in response.json()["detail"]


def test_a_result_whose_upload_is_gone_gets_a_409_naming_no_key(
    pipe: Pipeline, judged: str
) -> None:
    sub = pipe.store.get_submission(judged)
    assert sub is not None
    del pipe.blobs.objects[sub.blob_key]

    response = pipe.client.get(f"/v1/submissions/{judged}/report", headers=ADMIN)

    assert response.status_code == 409
    assert "upload is gone or damaged" in response.json()["detail"]
    assert sub.blob_key not in response.text


class Asks:
    """`core.reports.ReportAsks` as a list: the requests sent, and a refusal to give back."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.pending: set[str] = set()
        self.refusals: dict[str, str] = {}

    def ask(self, submission_id: str) -> str | None:
        if submission_id in self.refusals:
            return self.refusals[submission_id]
        if submission_id not in self.pending:
            self.pending.add(submission_id)
            self.sent.append(submission_id)
        return None

    def refused(self, submission_id: str, reason: str) -> None:
        self.pending.discard(submission_id)
        self.refusals[submission_id] = reason

    def done(self, submission_id: str) -> None:
        self.pending.discard(submission_id)


HEAVY_UPLOAD = b"0 0 2 0 cat\n" + b"a\n" * (tuning.HEAVY_BYTES // 2)


def _judged_heavy(pipe: Pipeline) -> tuple[str, str]:
    """A heavy upload judged, its report left to be asked for: its id and report key."""
    submission_id = pipe.accepted(pipe.add_team("heavy"), HEAVY_UPLOAD)["id"]
    assert judge_group(worker_deps(pipe.services), [submission_id]) == {
        submission_id: Outcome.JUDGED
    }
    key = pipe.store.current_result(submission_id).report_key  # type: ignore[union-attr]
    assert key not in pipe.blobs.objects
    return submission_id, key


def _worker_side(pipe: Pipeline, asks: Asks) -> AskedReports:
    """What a worker runs for an asked report, on the pipeline's store and bucket."""
    api = pipe.services.reports
    reports = Reports(api.store, api.blobs, api.rulesets, api.max_report_bytes)
    return AskedReports(reports, pipe.store.current_result, asks)


def test_a_heavy_uploads_report_is_asked_of_a_worker_once_and_served_when_it_is_made(
    pipe: Pipeline,
) -> None:
    asks = Asks()
    pipe.services.reports.asks = asks
    submission_id, key = _judged_heavy(pipe)
    url = f"/v1/submissions/{submission_id}/report"

    first = pipe.client.get(url, headers=ADMIN)
    again = pipe.client.get(url, headers=ADMIN)

    assert first.status_code == again.status_code == 202
    assert first.headers["retry-after"] == "2"
    assert first.json()["error"] == "report_pending"
    assert asks.sent == [submission_id]  # one request while it is pending
    assert key not in pipe.blobs.objects  # the API judged nothing

    assert _worker_side(pipe, asks).make(submission_id) == "made"
    served = pipe.client.get(url, headers=ADMIN | {"Accept-Encoding": "identity"})

    assert served.status_code == 200
    expected = judge(HEAVY_UPLOAD, TINY, default_layout())
    assert served.json() == {"submission": submission_id, "contest": "open", **expected.to_json()}
    assert not asks.pending and asks.sent == [submission_id]


def test_a_heavy_report_a_worker_cannot_make_is_a_409_with_its_reason(pipe: Pipeline) -> None:
    asks = Asks()
    pipe.services.reports.asks = asks
    submission_id, key = _judged_heavy(pipe)
    sub = pipe.store.get_submission(submission_id)
    assert sub is not None
    del pipe.blobs.objects[sub.blob_key]
    url = f"/v1/submissions/{submission_id}/report"
    assert pipe.client.get(url, headers=ADMIN).status_code == 202

    assert _worker_side(pipe, asks).make(submission_id) == "refused"
    answer = pipe.client.get(url, headers=ADMIN)

    assert answer.status_code == 409
    assert "upload is gone or damaged" in answer.json()["detail"]
    assert key not in pipe.blobs.objects


def test_a_report_asked_for_a_submission_since_deleted_is_dropped(pipe: Pipeline) -> None:
    asks = Asks()
    pipe.services.reports.asks = asks
    submission_id, key = _judged_heavy(pipe)
    assert (
        pipe.client.get(f"/v1/submissions/{submission_id}/report", headers=ADMIN).status_code == 202
    )
    team = pipe.store.get_submission(submission_id).team_id  # type: ignore[union-attr]
    assert pipe.client.delete(f"/v1/teams/{team}", headers=ADMIN).status_code == 200

    assert _worker_side(pipe, asks).make(submission_id) == "gone"
    assert not asks.pending and key not in pipe.blobs.objects


def test_without_a_broker_a_heavy_report_is_made_by_its_reader(pipe: Pipeline) -> None:
    assert pipe.services.reports.asks is None  # the in-process stack has no workers to ask
    submission_id, key = _judged_heavy(pipe)

    answer = pipe.client.get(f"/v1/submissions/{submission_id}/report", headers=ADMIN)

    assert answer.status_code == 200
    assert key in pipe.blobs.objects


def test_the_team_page_says_a_heavy_report_is_being_made(pipe: Pipeline) -> None:
    pipe.services.reports.asks = Asks()
    submission_id, _ = _judged_heavy(pipe)
    sub = pipe.store.get_submission(submission_id)
    result = pipe.store.current_result(submission_id)
    assert sub is not None and result is not None

    with pytest.raises(ReportPending) as pending:
        pipe.services.reports.stream(sub, result)

    assert pending.value.retry_after == 2


@pytest.mark.parametrize(
    "line",
    [b"a\n", b"\n", b"\xff\n", b'"\n', b"\x01\n", b"a\r\n", b"x 0 0 0 a\n", b"0 0 0 0 a\n",
     b"0 0 0 0 " + b"q" * 200 + b"\n", b"0 0 0 0 " + b"\x01" * 200 + b"\n",
     b'0 0 14 0 "' + b"\\" * 200 + b"\n", b"\x01" * 300 + b"\n"],
)  # fmt: skip
def test_the_bound_on_a_deferred_report_holds_for_the_worst_lines(line: bytes) -> None:
    # Deferring skips the worker's cap check only where this bound is under the cap.
    tiny = Lexicon.from_words(["cat", "at", "ate"])
    upload = line * max(1, 4000 // len(line))
    report = judge(upload, tiny, default_layout())
    pieces = report.json_chunks({"submission": "s" * 32, "contest": "c" * 64}, one_per_line=True)

    size = len(b"".join(pieces))

    assert size * 2 < report_blobs.most_report_bytes(len(upload))


def test_the_bound_on_a_deferred_report_holds_for_game_logs_and_their_corruptions() -> None:
    full = Lexicon.from_bytes(cached_list("crosstiles.txt").read_bytes())
    board, played, rng = default_board(), game("crosstiles"), random.Random(9)
    logs = [generate_game(4, "bound", full, board, exchanges=True, passes=True, rng_seed=1)]
    logs += [corrupt(logs[0], kind, rng) for kind in sorted(CORRUPTIONS)]
    logs += [b"\x01" * 300 + b"\n", b"a\n" * 2000, b'"\\' * 1000]
    for log in logs:
        judged = played.judge(log, full, played.default_rules(), "k" * 64)

        size = len(b"".join(judged.report({"submission": "s" * 32, "contest": "c" * 64})))

        assert size * 2 < report_blobs.most_report_bytes(len(log))


class DeletesTheTeamOnPut(InMemoryBlobStore):
    """The bucket, but the team is deleted just as a report is stored."""

    def __init__(self, pipe: Pipeline, team_id: str) -> None:
        super().__init__()
        self.objects = pipe.blobs.objects
        self._pipe, self._team_id = pipe, team_id

    def put(self, key: str, data: bytes, *args: Any, **kwargs: Any) -> None:
        super().put(key, data, *args, **kwargs)
        deleted = self._pipe.client.delete(f"/v1/teams/{self._team_id}", headers=ADMIN)
        assert deleted.status_code == 200, deleted.text


def test_a_report_made_while_its_team_is_deleted_is_not_left_behind(
    pipe: Pipeline, judged: str
) -> None:
    sub = pipe.store.get_submission(judged)
    result = pipe.store.current_result(judged)
    assert sub is not None and result is not None
    reports = pipe.services.reports
    reports.blobs = DeletesTheTeamOnPut(pipe, sub.team_id)

    reports.make(sub, result)

    assert pipe.store.get_submission(judged) is None
    assert not [key for key in pipe.blobs.objects if judged in key]
