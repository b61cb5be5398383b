"""Rejudging after a word-list fix: previewed, applied atomically, full and affected-only agree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.public import FRESH_PER_WINDOW
from core.fakes import InMemoryPublisher
from core.judging import WorkerDeps
from core.rejudging import judge_batch, produce
from core.word_hashes import changed_hashes, signature, touches
from devstack.testing.pipeline import ADMIN, TINY_WORDS, Pipeline, drain, open_pipeline
from devstack.testing.word_lists import cached_list
from infra.rulesets import RulesetCache, worth_preloading
from infra.sql.rejudges import SqlRejudgeRuns
from judge import Lexicon
from judge.wordytaire import default_layout, judge
from judge.wordytaire.generator import WordIndex, generate

# Moves whose verdicts the real fix (+abled +cyber +nerdy -unneccessary) flips.
THROUGH_CYBER = b"-2 0 2 0 cyber\n0 0 0 3 crab\n"
THROUGH_UNNECCESSARY = b"-5 0 6 0 unneccessary\n0 -1 0 1 tub\n"
UNTOUCHED = b"-1 0 1 0 cat\n0 0 0 2 cab\n"


@pytest.fixture(scope="module")
def word_lists() -> tuple[bytes, bytes]:
    return (
        cached_list("words_alpha_2020-08-24.txt").read_bytes(),
        cached_list("words_alpha.txt").read_bytes(),
    )


@pytest.fixture(scope="module")
def corpus(word_lists: tuple[bytes, bytes]) -> list[bytes]:
    old = Lexicon.from_bytes(word_lists[0])
    index = WordIndex.build(old.words)
    generated = [
        generate(index, default_layout(), seed=500 + n, moves=150, illegal_share=0.2)
        for n in range(24)
    ]
    return [*generated, THROUGH_CYBER, THROUGH_UNNECCESSARY, UNTOUCHED, THROUGH_CYBER + UNTOUCHED]


def deps_for(pipe: Pipeline) -> WorkerDeps:
    services = pipe.services
    rulesets = RulesetCache(services.store, services.blobs, services.settings.home / "rulesets")
    publisher = services.intake.publisher
    assert isinstance(publisher, InMemoryPublisher)
    return WorkerDeps(
        services.store, SqlRejudgeRuns(services.store), services.blobs, rulesets, 5, 300.0,
        publisher.publish_batch,
    )  # fmt: skip


def run_rejudge_work(pipe: Pipeline) -> None:
    """Play the bulk queue: every producer, then every batch it published, as workers would."""
    publisher = pipe.publisher
    assert isinstance(publisher, InMemoryPublisher)
    deps = deps_for(pipe)
    for run_id in list(publisher.rejudges):
        produce(deps, run_id, publisher.publish_batch)
    for run_id, ids in list(publisher.batches):
        judge_batch(deps, run_id, ids)


def contest_judged_with_old_list(
    pipe: Pipeline, word_lists: tuple[bytes, bytes], corpus: list[bytes]
) -> list[str]:
    for name, words in (("old", word_lists[0]), ("fixed", word_lists[1])):
        response = pipe.client.post(
            "/v1/lexicons",
            params={"name": name},
            content=words,
            headers={**ADMIN, "Content-Type": "text/plain"},
        )
        assert response.status_code == 201, response.text
    pipe.add_contest(lexicon="old")
    teams = [pipe.add_team(f"team-{n}") for n in range(6)]
    ids = [pipe.accepted(teams[n % len(teams)], data)["id"] for n, data in enumerate(corpus)]
    drain(pipe.services)
    return ids


def start(pipe: Pipeline, mode: str) -> dict:
    response = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": mode}, headers=ADMIN
    )
    assert response.status_code == 202, response.text
    return dict(response.json())


def show(pipe: Pipeline, run_id: str) -> dict:
    response = pipe.client.get(f"/v1/rejudges/{run_id}", headers=ADMIN)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
def pipes(tmp_path: Path) -> Iterator[tuple[Pipeline, Pipeline]]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with open_pipeline(tmp_path / "a") as a, open_pipeline(tmp_path / "b") as b:
        yield a, b


def test_affected_only_and_full_give_identical_results_on_the_real_fix(
    pipes, word_lists, corpus
) -> None:
    full_pipe, affected_pipe = pipes
    full_ids = contest_judged_with_old_list(full_pipe, word_lists, corpus)
    affected_ids = contest_judged_with_old_list(affected_pipe, word_lists, corpus)
    full_run, affected_run = start(full_pipe, "full"), start(affected_pipe, "affected")
    run_rejudge_work(full_pipe)
    run_rejudge_work(affected_pipe)

    full, affected = show(full_pipe, full_run["id"]), show(affected_pipe, affected_run["id"])
    assert full["state"] == affected["state"] == "ready"
    assert full["done"] == affected["done"] == full["total"] == len(corpus)
    assert full["carried"] == 0 and affected["carried"] > len(corpus) // 2  # most untouched
    order = {sid: n for n, sid in enumerate(full_ids)}
    order |= {sid: n for n, sid in enumerate(affected_ids)}
    changes = [
        sorted((order[c["submission"]], c["old_score"], c["new_score"]) for c in run["changed"])
        for run in (full, affected)
    ]
    assert changes[0] == changes[1] and changes[0]
    assert full["rank_changes"] == affected["rank_changes"]

    # and both are what an independent judge says under the fixed list
    fixed = Lexicon.from_bytes(word_lists[1])
    expected = {n: judge(data, fixed, default_layout()).total for n, data in enumerate(corpus)}
    for pipe in pipes:
        assert (
            pipe.client.post(
                f"/v1/rejudges/{(full if pipe is full_pipe else affected)['id']}/apply",
                headers=ADMIN,
            ).status_code
            == 200
        )
        ids = full_ids if pipe is full_pipe else affected_ids
        assert [pipe.submission(sid)["score"] for sid in ids] == [
            expected[n] for n in range(len(corpus))
        ]


def test_nothing_visible_changes_until_apply_which_switches_everything_at_once(
    pipes, word_lists, corpus
) -> None:
    pipe, _ = pipes
    ids = contest_judged_with_old_list(pipe, word_lists, corpus)
    fixed_id = Lexicon.from_bytes(word_lists[1]).id
    cyber = ids[len(corpus) - 4]
    before_board = pipe.client.get("/v1/contests/open/leaderboard").json()
    before_score = pipe.submission(cyber)["score"]
    run = start(pipe, "affected")
    running = show(pipe, run["id"])
    # No preview of a half-judged contest: ranks over part of it would mislead.
    assert (running["state"], running["preview"]) == ("running", False)
    assert running["changed"] == running["rank_changes"] == []
    run_rejudge_work(pipe)
    preview = show(pipe, run["id"])
    assert (preview["state"], preview["preview"]) == ("ready", True)
    assert show(pipe, run["id"]) == preview  # asked again: the same (cached) preview
    assert any(
        c["submission"] == cyber and c["old_score"] == before_score for c in preview["changed"]
    )
    # Read by many: answered from the shared reads' last computation for the window.
    for _ in range(FRESH_PER_WINDOW + 2):
        assert pipe.client.get("/v1/contests/open/leaderboard").json() == before_board
        assert pipe.client.get("/v1/contests/open").json()["lexicon"] != fixed_id
    assert pipe.submission(cyber)["score"] == before_score

    applied = pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN)

    assert applied.status_code == 200 and applied.json()["state"] == "applied"
    new_score = next(c["new_score"] for c in preview["changed"] if c["submission"] == cyber)
    assert pipe.submission(cyber)["score"] == new_score
    assert pipe.submission(cyber)["lexicon"] == fixed_id
    # The apply's process shows it at once, however many were reading.
    assert pipe.client.get("/v1/contests/open").json()["lexicon"] == fixed_id
    kinds = [e["type"] for e in pipe.events() if e["type"].startswith("rejudge.")]
    assert kinds[0] == "rejudge.started" and kinds[-2:] == ["rejudge.ready", "rejudge.applied"]
    assert pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).status_code == 409


def test_cancel_keeps_everything_as_it_was_and_stops_queued_work(pipes, word_lists, corpus) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    before = pipe.client.get("/v1/contests/open/leaderboard").json()
    run = start(pipe, "full")
    deps = deps_for(pipe)
    produce(deps, run["id"], pipe.publisher.publish_batch)
    cancelled = pipe.client.post(f"/v1/rejudges/{run['id']}/cancel", headers=ADMIN)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert [judge_batch(deps, run["id"], ids) for _, ids in pipe.publisher.batches] == [0] * len(
        pipe.publisher.batches
    )
    assert pipe.client.get("/v1/contests/open/leaderboard").json() == before
    assert pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).status_code == 409
    assert pipe.events()[-1]["type"] == "rejudge.cancelled"


def test_asking_again_returns_the_open_run_and_redelivery_counts_once(
    pipes, word_lists, corpus
) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    first, again = start(pipe, "full"), start(pipe, "full")
    assert again["id"] == first["id"] and again["created"] is False
    run_rejudge_work(pipe)
    run_rejudge_work(pipe)  # every producer and batch delivered a second time
    shown = show(pipe, first["id"])
    assert shown["done"] == shown["total"] == len(corpus) and shown["state"] == "ready"
    assert sum(e["type"] == "rejudge.ready" for e in pipe.events()) == 1


def test_an_upload_during_an_open_run_is_judged_under_both_rulesets(
    pipes, word_lists, corpus
) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    run = start(pipe, "affected")
    run_rejudge_work(pipe)
    assert show(pipe, run["id"])["state"] == "ready"
    late = pipe.accepted(pipe.teams["team-0"], THROUGH_CYBER + b"\n")["id"]
    assert show(pipe, run["id"])["state"] == "running"  # one more to cover
    drain(pipe.services)
    judged = pipe.submission(late)  # at once, under the live list
    assert (judged["state"], judged["lexicon"]) == ("judged", Lexicon.from_bytes(word_lists[0]).id)
    assert show(pipe, run["id"])["state"] == "running"  # and, for the run, on the bulk queue
    assert pipe.publisher.batches[-1] == (run["id"], [late])
    run_rejudge_work(pipe)
    shown = show(pipe, run["id"])
    assert shown["state"] == "ready" and shown["total"] == len(corpus) + 1
    assert pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).status_code == 200
    assert pipe.submission(late)["score"] > 0  # cyber is a word now


def test_the_workers_diff_of_two_lexicons_is_kept_both_ways(pipes, word_lists, corpus) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    old, fixed = (Lexicon.from_bytes(words).id for words in word_lists)
    rulesets = deps_for(pipe).rulesets

    forward = rulesets.diff(old, fixed)

    assert forward == (frozenset({"abled", "cyber", "nerdy"}), frozenset({"unneccessary"}))
    assert rulesets.diff(fixed, old) == forward[::-1]
    assert rulesets.diff(old, fixed) is forward  # computed once


def test_lexicon_diff_and_bad_requests(pipes, word_lists, corpus) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    diff = pipe.client.get("/v1/lexicons/old/diff/fixed", headers=ADMIN).json()
    assert (diff["added"], diff["removed"]) == (["abled", "cyber", "nerdy"], ["unneccessary"])
    same = pipe.client.post("/v1/contests/open/rejudges", json={"lexicon": "old"}, headers=ADMIN)
    assert same.status_code == 409
    assert (
        pipe.client.post(
            "/v1/contests/open/rejudges", json={"lexicon": "nope"}, headers=ADMIN
        ).status_code
        == 422
    )
    assert (
        pipe.client.post(
            "/v1/contests/open/rejudges", json={"lexicon": "fixed", "mode": "some"}, headers=ADMIN
        ).status_code
        == 422
    )
    assert pipe.client.get("/v1/rejudges/nope", headers=ADMIN).status_code == 404
    team = pipe.teams["team-0"]
    assert (
        pipe.client.post(
            "/v1/contests/open/rejudges", json={"lexicon": "fixed"}, headers=team.headers
        ).status_code
        == 403
    )


@given(
    words=st.lists(st.text(alphabet="abcn", min_size=1, max_size=5), max_size=30),
    changed=st.frozensets(st.text(alphabet="abcn", min_size=1, max_size=5), max_size=40),
)
def test_a_submission_is_touched_exactly_when_it_holds_a_changed_word(
    words: list[str], changed: frozenset[str]
) -> None:
    # Exact but for a CRC-32 collision between two of these short words (one in 2**32 a pair).
    assert touches(signature(words), changed_hashes(changed)) == (not changed.isdisjoint(words))
    assert touches(None, changed_hashes(changed))  # never judged: judge it rather than guess


# -- what an applied run changed ------------------------------------------------------------

WITHOUT_CAB = tuple(word for word in TINY_WORDS if word != "cab")


def test_an_applied_runs_page_shows_what_apply_recorded_whoever_uploads_afterwards(
    pipe: Pipeline,
) -> None:
    pipe.accepted(pipe.add_team("ravens"), b"0 0 2 0 cab\n")
    pipe.accepted(pipe.add_team("owls"), b"0 0 2 0 cat\n")
    drain(pipe.services)
    pipe.add_lexicon(WITHOUT_CAB, name="tiny-fixed")
    run = pipe.client.post(
        "/v1/contests/open/rejudges", json={"lexicon": "tiny-fixed", "mode": "full"}, headers=ADMIN
    ).json()
    run_rejudge_work(pipe)
    previewed = show(pipe, run["id"])
    assert (previewed["state"], previewed["summary_recorded"], previewed["frozen_at"]) == (
        "ready",
        False,
        None,
    )
    assert pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN).status_code == 200
    applied = show(pipe, run["id"])
    assert applied["summary_recorded"] is True and applied["frozen_at"] == applied["updated_at"]
    assert (applied["changed"], applied["rank_changes"]) == (
        previewed["changed"],
        previewed["rank_changes"],
    )
    assert [(row["team"], row["old_rank"], row["new_rank"]) for row in applied["rank_changes"]] == [
        ("owls", 2, 1),
        ("ravens", 1, 2),
    ]

    for n in range(3):  # a load test's teams
        pipe.accepted(pipe.add_team(f"load-3a1fcc-{n}"), b"0 0 2 0 bat\n-1 1 0 1 tea\n")
    drain(pipe.services)

    assert show(pipe, run["id"]) == applied
    stored = pipe.services.rejudges.get(run["id"])
    assert stored is not None
    live = pipe.services.rejudges.rank_changes(stored)  # what the page showed before
    assert {row["team"] for row in live} >= {"load-3a1fcc-0", "load-3a1fcc-1", "load-3a1fcc-2"}


# -- uploads a run cannot judge -----------------------------------------------------------------


def test_a_rejudge_fails_a_missing_a_corrupt_and_an_oversized_upload_alone_and_can_be_applied(
    tmp_path: Path,
) -> None:
    with open_pipeline(tmp_path) as pipe:
        pipe.add_contest()
        pipe.add_lexicon(tuple(w for w in TINY_WORDS if w != "bat"), name="fixed")
        team = pipe.add_team("ravens")
        uploads = {
            "bat": b"0 0 2 0 bat\n",
            "missing": b"0 0 2 0 tea\n",
            "corrupt": b"0 0 2 0 tab\n",
            "oversized": b"a\n" * 5000,
        }
        ids = {name: pipe.accepted(team, data)["id"] for name, data in uploads.items()}
        drain(pipe.services)
        keys = {name: pipe.store.get_submission(sid).blob_key for name, sid in ids.items()}  # type: ignore[union-attr]
        del pipe.blobs.objects[keys["missing"]]
        pipe.blobs.objects[keys["corrupt"]] = b"0 0 2 0 eat\n"
        run = start(pipe, "full")
        deps = deps_for(pipe)
        deps.max_report_bytes = 100_000  # the oversized upload's report is past it
        produce(deps, run["id"], pipe.publisher.publish_batch)
        for run_id, batch in list(pipe.publisher.batches):
            judge_batch(deps, run_id, batch)

        ready = show(pipe, run["id"])
        assert (ready["state"], ready["done"], ready["total"]) == ("ready", 4, 4)
        assert ready["failed"] == 3
        assert {f["submission"]: f["reason"] for f in ready["failures"]} == {
            ids["missing"]: "upload_missing",
            ids["corrupt"]: "upload_corrupt",
            ids["oversized"]: "report_too_large",
        }
        assert {f["team"] for f in ready["failures"]} == {"ravens"}
        assert all(f["message"] and "/" not in f["message"] for f in ready["failures"])

        applied = pipe.client.post(f"/v1/rejudges/{run['id']}/apply", headers=ADMIN)

        assert applied.status_code == 200, applied.text
        assert pipe.submission(ids["bat"])["score"] == 0  # judged under the list without "bat"
        for name, reason in (
            ("missing", "upload_missing"),
            ("corrupt", "upload_corrupt"),
            ("oversized", "report_too_large"),
        ):
            seen = pipe.submission(ids[name])
            assert (seen["state"], seen["reason"], seen["score"]) == ("failed", reason, None)
            assert seen["failure"] and keys[name] not in seen["failure"]
        assert show(pipe, run["id"])["failed"] == 3  # still listed once applied


def test_a_registered_list_is_loaded_by_the_workers_at_once(pipes, word_lists, corpus) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    old, fixed = (Lexicon.from_bytes(words).id for words in word_lists)
    # Each registration asks the workers to load the list, before any rejudge needs it.
    assert pipe.publisher.preloaded[:2] == [old, fixed]

    pipe.publisher.down = True
    response = pipe.client.post(
        "/v1/lexicons",
        params={"name": "tiny-2"},
        content="".join(word + "\n" for word in TINY_WORDS).encode(),
        headers={**ADMIN, "Content-Type": "text/plain"},
    )
    assert response.status_code == 201, response.text  # registered with the broker down


def test_the_worker_parent_preloads_a_new_list_with_its_diffs(
    pipes, word_lists, corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    old, fixed = (Lexicon.from_bytes(words).id for words in word_lists)
    rulesets = deps_for(pipe).rulesets
    diffs = []
    real_diff = Lexicon.diff
    monkeypatch.setattr(
        Lexicon, "diff", lambda self, other: diffs.append(1) or real_diff(self, other)
    )

    assert rulesets.preload_more([old]) == [old]
    assert diffs == []  # nothing pinned yet to set it against
    assert rulesets.preload_more([old, fixed]) == [fixed]  # only what is not loaded yet
    assert rulesets.shares(old, fixed) and len(diffs) == 1
    assert rulesets.preload_more([fixed]) == []

    forward = rulesets.diff(old, fixed)
    assert forward == (frozenset({"abled", "cyber", "nerdy"}), frozenset({"unneccessary"}))
    assert rulesets.diff(fixed, old) == forward[::-1]
    assert len(diffs) == 1  # both ways found, worked out when the list was loaded


def test_a_worker_keeps_every_contests_list_and_the_two_newest(pipes, word_lists, corpus) -> None:
    pipe, _ = pipes
    contest_judged_with_old_list(pipe, word_lists, corpus)
    old, fixed = (Lexicon.from_bytes(words).id for words in word_lists)
    assert worth_preloading(pipe.store) == sorted([old, fixed])
    newer = []
    for extra in ("bet", "tie"):
        words = "".join(word + "\n" for word in (*TINY_WORDS, extra)).encode()
        response = pipe.client.post(
            "/v1/lexicons",
            params={"name": f"with-{extra}"},
            content=words,
            headers={**ADMIN, "Content-Type": "text/plain"},
        )
        assert response.status_code == 201, response.text
        newer.append(response.json()["id"])
    # The contest's list stays; of the registered ones, only the two newest.
    assert worth_preloading(pipe.store) == sorted([old, *newer])
